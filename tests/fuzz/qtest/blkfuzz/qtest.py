"""One QEMU under the qtest accelerator, driven over its stdio qtest channel.

QEMU runs with `-machine <type>,accel=qtest -qtest stdio`: no vCPU executes,
the fuzzer plays the guest by reading and writing memory and I/O ports and
steps QEMU_CLOCK_VIRTUAL itself (docs/devel/qtest.rst in QEMU's source has
the protocol). Every command waits for its answer, so QEMU's main loop runs
its bottom halves between two commands as it would between two guest
accesses. stderr goes to a file and is classified when the run ends.

A run ends in one verdict (`Verdict`): "ok", or a failure kind with the lines
that show it. QEMU dying by a signal, an assertion or abort message, a
sanitizer report, QEMU exiting on its own, no answer within the timeout
("hang"), or QEMU that keeps using the CPU once the guest is done ("busy")
are failures. Not thread-safe; one VM per thread.
"""

import ctypes
import dataclasses
import os
import re
import select
import shutil
import signal
import subprocess
import time

# stderr lines that mean QEMU broke a rule even if it then exited cleanly.
FATAL_RE = re.compile(
    r"Assertion .* failed|assertion failed|ERROR:.*:[0-9]+:|"
    r"ERROR: AddressSanitizer|runtime error:|LeakSanitizer|"
    r"hardware error|Aborted|Segmentation fault|Bail out!|"
    r"qemu_mutex_lock|Co-routine re-entered|BUG:")


def _die_with_parent():
    """In the child before exec: QEMU under qtest does not exit when its
    qtest channel closes, so have the kernel kill it with the fuzzer."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(1, signal.SIGKILL)           # PR_SET_PDEATHSIG


STARTUP_TIMEOUT = 90.0              # seconds, for QEMU's first answer

# check_idle(): a glance at QEMU's CPU use; while it is busy, virtual time
# moves on in batches of steps, as a guest that idles would let it, and a
# glance after each batch; then a longer look.
IDLE_GLANCE_S = 0.1
IDLE_STEP_NS = 10_000_001           # off any timer's period, so no timer is due at once
IDLE_STEPS_PER_GLANCE = 10
IDLE_SETTLE_S = 10.0                # host time a busy QEMU gets to settle
IDLE_CONFIRM_S = 1.0
# Of one thread's time, on a CPU or waiting in a run queue for one: a busy
# loop is runnable all the time however loaded the host is (its CPU share
# falls with the load: 20-33% was seen beside two VMs on 2 cores), a
# sleeping process never.
BUSY_SHARE = 0.5


def runnable_seconds(pid):
    """Time the threads of `pid` have spent on a CPU or runnable in a run
    queue (/proc/PID/task/TID/schedstat, fields 1 and 2, in ns), in s.
    A thread that exits meanwhile drops out of the sum."""
    total = 0
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                on_cpu, waiting = f.read().split()[:2]
        except OSError:
            continue
        total += int(on_cpu) + int(waiting)
    return total / 1e9


def busy_share(pid, seconds):
    """The share of `seconds` that `pid`'s threads spent wanting a CPU
    (running or runnable), summed over its threads: about 1 for a thread
    that spins whatever the host's load, 0 for one that sleeps."""
    before = runnable_seconds(pid)
    time.sleep(seconds)
    return max(0.0, runnable_seconds(pid) - before) / seconds


class QemuGone(Exception):
    """QEMU stopped answering: it exited (or was killed) or timed out."""

    def __init__(self, kind, detail):
        super().__init__(f"{kind}: {detail}")
        self.kind = kind          # "died", "hang" or "busy"
        self.detail = detail


@dataclasses.dataclass
class Verdict:
    kind: str                     # ok, signal, assert, sanitizer, exit, hang, busy
    detail: str                   # one line: the signal, the message
    stderr_tail: str              # the last lines of QEMU's stderr
    command: str = ""             # the last qtest command sent
    stderr_path: str = ""         # QEMU's stderr, kept for a failure

    @property
    def ok(self):
        return self.kind == "ok"

    def signature(self):
        """What makes two failures the same bug, for minimising: the kind and
        the message without addresses, pids or numbers that vary."""
        text = re.sub(r"0x[0-9a-fA-F]+|[0-9]+", "N", self.detail)
        return f"{self.kind}: {text}"


class QTestVM:
    """QEMU with a qtest channel on stdio, as a context manager.

    `cmd("readl 0x1000")` returns the answer's words after "OK" as a string;
    a "FAIL"/"ERR" answer raises ValueError (the fuzzer only sends valid
    commands, so it is a harness bug); a dead or silent QEMU raises QemuGone.
    """

    def __init__(self, binary, args, stderr_path, timeout=10.0, env=None):
        self.binary = binary
        self.args = list(args)
        self.stderr_path = stderr_path
        self.timeout = timeout
        self.env = env
        self.proc = None
        self.last_command = ""
        self.commands = 0
        self._buf = b""
        self._gone = None
        self.stdout_noise = []

    def command_line(self):
        return [self.binary, "-qtest", "stdio", "-qtest-log", "none",
                "-display", "none", "-nodefaults", "-no-user-config",
                "-no-shutdown", *self.args]

    def __enter__(self):
        self._stderr = open(self.stderr_path, "wb")
        self.proc = subprocess.Popen(
            self.command_line(), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=self._stderr, env=self.env, start_new_session=True,
            preexec_fn=_die_with_parent)
        return self

    def __exit__(self, *exc):
        self.stop()
        return False

    # -- protocol --

    def _readline(self, deadline, wait):
        fd = self.proc.stdout.fileno()
        while b"\n" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise QemuGone("hang", f"no answer in {wait:g} s")
            ready, _, _ = select.select([fd], [], [], left)
            if not ready:
                continue
            chunk = os.read(fd, 65536)
            if not chunk:
                raise QemuGone("died", "qtest channel closed")
            self._buf += chunk
        line, self._buf = self._buf.split(b"\n", 1)
        return line.decode("ascii", "replace")

    def cmd(self, line):
        """Sends one qtest command and returns what follows its "OK"."""
        if self._gone:
            raise self._gone
        self.last_command = line
        self.commands += 1
        try:
            self.proc.stdin.write(line.encode("ascii") + b"\n")
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError) as e:
            self._gone = QemuGone("died", f"write failed: {e}")
            raise self._gone from None
        # The first answer also waits for QEMU to start: opening a profile
        # that preconditions a large SSD takes seconds.
        wait = (self.timeout if self.commands > 1
                else max(6 * self.timeout, STARTUP_TIMEOUT))
        deadline = time.monotonic() + wait
        try:
            while True:
                answer = self._readline(deadline, wait)
                if answer.startswith("IRQ "):
                    continue            # asynchronous, from irq_intercept
                if answer.startswith(("OK", "FAIL", "ERR")):
                    break
                # Anything else is QEMU talking on stdout as it dies (GLib's
                # g_assert prints "Bail out! ..." there): keep it.
                self.stdout_noise.append(answer)
        except QemuGone as e:
            self._gone = e
            raise
        if answer == "OK" or answer.startswith("OK "):
            return answer[3:]
        raise ValueError(f"qtest: {line!r} -> {answer!r}")

    # -- helpers for the fuzzers --

    def outb(self, port, v):
        self.cmd(f"outb 0x{port:x} 0x{v & 0xff:x}")

    def outw(self, port, v):
        self.cmd(f"outw 0x{port:x} 0x{v & 0xffff:x}")

    def outl(self, port, v):
        self.cmd(f"outl 0x{port:x} 0x{v & 0xffffffff:x}")

    def inb(self, port):
        return int(self.cmd(f"inb 0x{port:x}"), 16)

    def inw(self, port):
        return int(self.cmd(f"inw 0x{port:x}"), 16)

    def inl(self, port):
        return int(self.cmd(f"inl 0x{port:x}"), 16)

    def write_n(self, addr, size, v):
        """A `size`-byte (1, 2, 4, 8) access: MMIO goes to the device."""
        op = {1: "writeb", 2: "writew", 4: "writel", 8: "writeq"}[size]
        self.cmd(f"{op} 0x{addr:x} 0x{v & ((1 << 8 * size) - 1):x}")

    def read_n(self, addr, size):
        op = {1: "readb", 2: "readw", 4: "readl", 8: "readq"}[size]
        return int(self.cmd(f"{op} 0x{addr:x}"), 16)

    def writel(self, addr, v):
        self.write_n(addr, 4, v)

    def readl(self, addr):
        return self.read_n(addr, 4)

    def memwrite(self, addr, data):
        if data:
            self.cmd(f"write 0x{addr:x} 0x{len(data):x} 0x{bytes(data).hex()}")

    def memread(self, addr, size):
        hexdata = self.cmd(f"read 0x{addr:x} 0x{size:x}")
        return bytes.fromhex(hexdata[2:])

    def memset(self, addr, size, v=0):
        self.cmd(f"memset 0x{addr:x} 0x{size:x} 0x{v:x}")

    def clock_step(self, ns=None):
        """Steps QEMU_CLOCK_VIRTUAL by `ns`, or to the next timer; the new time."""
        answer = self.cmd("clock_step" if ns is None else f"clock_step {ns}")
        return int(answer)

    # -- the end --

    def check_idle(self):
        """Raises QemuGone("busy") if QEMU keeps using the CPU with nothing
        to do. Under qtest no vCPU runs and the virtual clock moves only when
        told, so once the guest is done a healthy QEMU sleeps in its main
        loop. A bottom half or timer that re-arms itself forever still lets
        QEMU answer every command; only its wanting the CPU shows it
        (busy_share(): running or runnable, so a loaded host hides nothing).

        One thing looks the same and is not a bug: a QEMU_CLOCK_VIRTUAL
        timer due a few nanoseconds or microseconds after the frozen virtual
        time (the PIT's next edge, a held completion) makes the main loop
        poll with that timeout, over and over. And work that waits makes a
        chain of them: a completion's bottom half runs only once a step has
        ended, and what it starts (a DMA that waited for the bounce buffer,
        the next queued NCQ command) holds its own completion microseconds
        later, so each step moves the chain on by one link. So a QEMU seen
        busy gets virtual time as a guest that idles would give it, in
        10 ms steps, with a glance after every IDLE_STEPS_PER_GLANCE steps,
        for up to IDLE_SETTLE_S of host time; it is busy only if it still
        spins then. A timer that re-arms itself forever, however short its
        period, is still due when the time is up.

        Finite work takes its time too: a DMA into memory that is not RAM
        goes through the address space's 4 KiB bounce buffer, and when
        other requests hold all but a few bytes of it, it moves those few
        bytes per block request; an ahci input kept QEMU busy 3 s that way."""
        if self.proc.poll() is not None:
            return
        try:
            if busy_share(self.proc.pid, IDLE_GLANCE_S) < BUSY_SHARE:
                return
            settle = time.monotonic() + IDLE_SETTLE_S
            while time.monotonic() < settle:
                for _ in range(IDLE_STEPS_PER_GLANCE):
                    self.clock_step(IDLE_STEP_NS)
                if busy_share(self.proc.pid, IDLE_GLANCE_S) < BUSY_SHARE:
                    return
            share = busy_share(self.proc.pid, IDLE_CONFIRM_S)
        except OSError:             # it exited meanwhile: verdict() says how
            return
        if share >= BUSY_SHARE:
            self.last_command = "(none: idle after the last command)"
            raise QemuGone("busy", f"QEMU wanted a CPU {share:.0%} of {IDLE_CONFIRM_S:g} s "
                           f"after the guest's last command, and had {IDLE_SETTLE_S:g} s "
                           "and virtual time to settle (a busy loop)")

    def stop(self):
        """Ends QEMU as a user would (SIGTERM), escalating to SIGKILL."""
        if self.proc is None or self.proc.returncode is not None:
            return
        if self.proc.poll() is None:
            try:
                self.proc.stdin.close()
            except OSError:
                pass
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=self.timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._stderr.close()

    def backtrace(self):
        """The main thread's stack of a QEMU that stopped answering, from
        gdb if there is one (empty otherwise)."""
        if not shutil.which("gdb"):
            return ""
        try:
            out = subprocess.run(
                ["gdb", "-p", str(self.proc.pid), "-batch", "-nx",
                 "-ex", "thread 1", "-ex", "bt 40"],
                capture_output=True, text=True, timeout=60).stdout
        except (subprocess.SubprocessError, OSError):
            return ""
        return "\n".join(ln for ln in out.splitlines() if ln.startswith("#"))

    def verdict(self, gone=None, backtrace=True):
        """Stops QEMU if it is still running and says how the run ended.

        `gone` is the QemuGone that ended the run, if one did. A QEMU that
        answered to the end must exit with status 0 on SIGTERM.
        """
        hung = gone is not None and gone.kind in ("hang", "busy")
        stacks = ""
        if hung and self.proc.poll() is None and backtrace:
            stacks = self.backtrace()
            # Ask for a core-like report before killing: SIGABRT makes a
            # sanitizer build print where it was.
            self.proc.send_signal(signal.SIGABRT)
            try:
                self.proc.wait(timeout=self.timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if gone is not None and not hung:
            try:
                self.proc.wait(timeout=self.timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.stop()
        rc = self.proc.returncode
        with open(self.stderr_path, "rb") as f:
            err = f.read().decode("utf-8", "replace")
        lines = self.stdout_noise + err.splitlines()
        tail = "\n".join(lines[-40:])
        fatal = [ln for ln in lines if FATAL_RE.search(ln)]
        last = self.last_command

        if hung and gone.kind == "busy":
            return Verdict("busy", gone.detail, stacks or tail, last)
        if hung:
            return Verdict("hang", f"no answer to {last!r}: {gone.detail}",
                           stacks or tail, last)
        if any(re.search(r"Sanitizer|runtime error:", ln) for ln in fatal):
            first = next(ln for ln in fatal
                         if re.search(r"Sanitizer|runtime error:", ln))
            # The report's first frame in a device (or the model) names the
            # bug better than its kind does.
            frames = [m.groups() for m in map(re.compile(
                r"#\d+ 0x[0-9a-f]+ in (\S+) (\S*)").search,
                lines[lines.index(first):]) if m]
            frame = next((f for f, path in frames
                          if re.search(r"(^|/)hw/.*\.c:|devmodel/src/", path)),
                         frames[0][0] if frames else "")
            detail = re.sub(r"^==\d+==", "", first.strip())
            detail = re.sub(r" on address .*| at pc .*", "", detail)
            return Verdict("sanitizer", f"{detail} in {frame}" if frame
                           else detail, tail, last)
        if any(re.search(r"[Aa]ssertion|ERROR:", ln) for ln in fatal):
            first = next(ln for ln in fatal
                         if re.search(r"[Aa]ssertion|ERROR:", ln))
            return Verdict("assert", first.strip(), tail, last)
        if rc is not None and rc < 0:
            name = signal.Signals(-rc).name
            detail = fatal[0].strip() if fatal else f"killed by {name}"
            return Verdict("signal", f"{name}: {detail}", tail, last)
        if fatal:
            return Verdict("assert", fatal[0].strip(), tail, last)
        if gone is not None or rc != 0:
            return Verdict("exit", f"QEMU exited with status {rc}", tail, last)
        return Verdict("ok", "", tail, last)
