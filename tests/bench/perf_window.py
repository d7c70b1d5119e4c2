"""`perf stat` counts of a cell's QEMU over its guest's workload window only:
from the console's "blklab: workload start" line to "blklab: workload end"
(or QEMU's exit), the window of a cell's host.workload_wall_seconds.

perf attaches to the QEMU that a `blklab run` process starts, with its
counters disabled, once the guest has begun to write its console (the
vCPU threads exist by then; threads started later inherit the counters),
and enables and disables them through a control FIFO when the harness's
own console watcher (blklab.vm.ConsoleWatch) sees each line. Needs Debian's
linux-perf (`make deps`) and, unless run as root,
kernel.perf_event_paranoid <= 1 (the QEMU's kernel-side counts).
"""

from __future__ import annotations

import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "harness"))

from blklab.vm import ConsoleWatch  # noqa: E402

EVENTS = ("instructions", "task-clock", "context-switches")
POLL_S = 0.01  # how often the console is read while waiting for a line
ACK_TIMEOUT_S = 5.0
CONSOLE_OPTION = "file,id=console,path="


class PerfError(Exception):
    """perf cannot count here; the message names what is missing."""


@dataclass
class Counts:
    """One window's counts, user and kernel side together; None where the
    host's perf cannot count the event (instructions without a hardware
    PMU, as in a VM that has no virtual PMU)."""
    instructions: int | None
    task_clock_ms: float | None
    context_switches: int | None
    window_s: float  # host seconds between enabling and disabling the counters


def check_perf() -> str | None:
    """Raises PerfError if perf is missing or may not count another process's
    kernel side; returns why instructions are not counted here, or None
    when they are."""
    if shutil.which("perf") is None:
        raise PerfError("perf is not installed: install Debian's linux-perf (`make deps` does)")
    try:
        paranoid = int(Path("/proc/sys/kernel/perf_event_paranoid").read_text())
    except (OSError, ValueError) as e:
        raise PerfError(f"cannot read /proc/sys/kernel/perf_event_paranoid: {e}") from None
    if os.geteuid() != 0 and paranoid > 1:
        raise PerfError(f"kernel.perf_event_paranoid is {paranoid}: counting QEMU's kernel side "
                        "needs 1 or less (sysctl -w kernel.perf_event_paranoid=1) or root")
    proc = subprocess.run(["perf", "stat", "-x,", "-e", ",".join(EVENTS), "--", "true"],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        raise PerfError(f"`perf stat` does not run here:\n{proc.stderr.strip()}")
    counts = parse(proc.stderr)
    if counts.get("task-clock") is None or counts.get("context-switches") is None:
        raise PerfError(f"`perf stat` counts no task-clock or context-switches:\n{proc.stderr}")
    if counts.get("instructions") is None:
        return ("perf cannot count instructions on this host (no hardware PMU the kernel "
                "drives: a VM without a virtual PMU?)")
    return None


def parse(text: str) -> dict[str, float | None]:
    """perf stat -x, output: event name -> count (task-clock in ms), None
    where perf says <not supported> or <not counted>."""
    out: dict[str, float | None] = {}
    for line in text.splitlines():
        fields = line.split(",")
        if len(fields) < 3 or line.startswith("#"):
            continue
        name = fields[2].split(":")[0]
        if name in EVENTS:
            try:
                out[name] = float(fields[0])
            except ValueError:
                out[name] = None
    return out


def _children(pid: int) -> list[int]:
    kids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
            kids.append(int(entry.name))
    return kids


def _qemu_of(parent: subprocess.Popen) -> tuple[int, Path] | None:
    """The QEMU child of `parent` and its console log, once it has exec'ed;
    None while there is none."""
    for pid in _children(parent.pid):
        try:
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().decode().split("\0")
        except OSError:
            continue
        if not Path(argv[0]).name.startswith("qemu-system-"):
            continue
        for arg in argv:
            if arg.startswith(CONSOLE_OPTION):
                return pid, Path(arg[len(CONSOLE_OPTION):].replace(",,", ","))
    return None


def _wait(what: str, ready, running, timeout_s: float) -> bool:
    """Polls until ready() is true (True) or running() is false (False)."""
    until = time.monotonic() + timeout_s
    while not ready():
        if not running():
            return False
        if time.monotonic() > until:
            raise PerfError(f"no {what} within {timeout_s:.0f} s")
        time.sleep(POLL_S)
    return True


class _Control:
    """perf stat's --control FIFOs: send a command, wait for its ack."""

    def __init__(self, tmp: Path):
        self.ctl_path, self.ack_path = tmp / "perf-ctl", tmp / "perf-ack"
        for p in (self.ctl_path, self.ack_path):
            p.unlink(missing_ok=True)
            os.mkfifo(p)
        # Read-write, so neither open blocks and a write never meets a
        # FIFO without reader.
        self.ctl = os.open(self.ctl_path, os.O_RDWR)
        self.ack = os.open(self.ack_path, os.O_RDWR)

    def option(self) -> str:
        return f"--control=fifo:{self.ctl_path},{self.ack_path}"

    def send(self, command: str, perf: subprocess.Popen) -> None:
        os.write(self.ctl, command.encode() + b"\n")
        until = time.monotonic() + ACK_TIMEOUT_S
        while perf.poll() is None and time.monotonic() < until:
            if select.select([self.ack], [], [], POLL_S)[0]:
                os.read(self.ack, 64)
                return
        if perf.poll() is None:
            raise PerfError(f"perf did not acknowledge '{command}' within {ACK_TIMEOUT_S:.0f} s")

    def close(self) -> None:
        os.close(self.ctl)
        os.close(self.ack)


def count_workload(parent: subprocess.Popen, timeout_s: float = 3600) -> Counts | None:
    """Counts the QEMU that `parent` (a `blklab run` of one cell) starts over
    its workload window; None if `parent` ends first or the guest never
    starts its workload (the caller reports the run's own error)."""
    found: list[tuple[int, Path]] = []

    def qemu_found() -> bool:
        q = _qemu_of(parent)
        if q:
            found.append(q)
        return bool(q)

    if not _wait("QEMU process", qemu_found, lambda: parent.poll() is None, 600):
        return None
    pid, console = found[0]
    alive = Path(f"/proc/{pid}").exists

    def console_begun() -> bool:
        try:
            return console.stat().st_size > 0
        except FileNotFoundError:
            return False

    if not _wait("console output", console_begun, alive, 600):
        return None
    with tempfile.TemporaryDirectory(prefix="perf-window-") as t:
        return _count(pid, ConsoleWatch(console), Path(t), timeout_s)


def _count(pid: int, watch: ConsoleWatch, tmp: Path, timeout_s: float) -> Counts | None:
    alive = Path(f"/proc/{pid}").exists
    control = _Control(tmp)
    out = tmp / "perf-stat.csv"
    perf = subprocess.Popen(["perf", "stat", "-x,", "-e", ",".join(EVENTS), "-D", "-1",
                             control.option(), "-p", str(pid), "-o", str(out)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)

    def seen(name: str):
        def ready() -> bool:
            watch.poll()
            return name in watch.seen
        return ready

    try:
        if not _wait("'blklab: workload start'", seen("workload_start"), alive, timeout_s):
            return None
        control.send("enable", perf)
        enabled = time.monotonic()
        _wait("'blklab: workload end'", seen("workload_end"), alive, timeout_s)
        control.send("disable", perf)
        window = time.monotonic() - enabled
    finally:
        if perf.poll() is None:
            perf.send_signal(signal.SIGINT)
        _, err = perf.communicate(timeout=30)
        control.close()
    counts = parse(out.read_text() if out.exists() else "")
    if counts.get("task-clock") is None:
        raise PerfError(f"perf stat -p {pid} counted nothing:\n{err}")
    instructions, switches = counts.get("instructions"), counts.get("context-switches")
    return Counts(instructions=None if instructions is None else int(instructions),
                  task_clock_ms=counts["task-clock"],
                  context_switches=None if switches is None else int(switches),
                  window_s=round(window, 3))
