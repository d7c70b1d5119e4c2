#!/usr/bin/python3
"""Host cost per guest I/O on the path users run, one change at a time,
side by side in one run.

NVMe 4 KiB random reads at QD32 (io_uring, blkgen) in the default
scenario's guest (scenarios/default.toml: its [guest], its NVMe drive's
kind and backing, its job; only the job's runtime is --seconds), in four
steps (STEPS):
  a. stock QEMU (qemu_variant.stock(): Debian's source with only the
     patches its build needs), realtime mode, no device model: the
     reference every ratio is to;
  b. blklab's QEMU, deterministic mode, the zero-latency profile: each
     read completes before the submitting thread sleeps, a path no drive
     takes;
  c. blklab's QEMU, deterministic mode, tests/profiles/ssd-read-100us.toml:
     about 100 us per read on 4 dies, so QD32 gives about 30K reads per
     guest second, one every ~33 us, and the guest spends about 1 us on
     each (the job's usr_cpu + sys_cpu, printed per round as guest_cpu_pct,
     is about 3%): the vCPU idles between completions, so nearly every read
     takes the whole path a real drive gives (a virtual-clock timer, an
     interrupt, a wake-up from idle). With ssd-read-20us.toml in its place
     the drive gives about 165K reads per guest second and the vCPU is busy
     about 18% of the time, so more completions find it awake and skip the
     wake-up;
  d. blklab's QEMU, deterministic mode, the default scenario's own drive
     (samsung-970evoplus-1t, precondition = "full").

The steps alternate (a b c d, a b c d, ... for --rounds), one VM at a time,
so that whatever else loads the host hits every step alike. Each is one
cell of `blklab run` (--accel tcg). Per step and round: the guest's I/O
count (the job's total_ios), the workload's host wall seconds
(host.workload_wall_seconds: from the console's "blklab: workload start"
to "workload end", so boot and teardown do not count) and `perf stat`
counts of the cell's QEMU process over the same window (perf_window.py):
instructions (user and kernel), task-clock and context switches. The
table gives each step's median over the rounds of the cost per guest I/O,
and its ratio to step a. Instruction counts hardly move with the host's
load; task-clock (CPU time of all QEMU's threads, so it can exceed the
wall time) moves less than wall time, which also counts the time a
preempted thread waits. Where the host's perf cannot count instructions
(no hardware PMU, as in a VM without a virtual PMU) that column says n/a
and the run says why. perf's counters cost a little at each of QEMU's
context switches, so a little more in the steps that switch more.

Needs blklab's builds (`make qemu image cmake`, which make bench-io-path
runs) and perf (Debian's linux-perf, `make deps`; as root, or with
kernel.perf_event_paranoid <= 1).
The stock build takes 5-10 minutes the first time, then is cached.

With --kind ahci-hd or virtio-blk the same drive sits behind AHCI (NCQ,
32 commands) or virtio-blk in every step instead of NVMe.

With --baseline DIR (a BLKLAB_BUILD directory: qemu/ and images/, as
build/ has them) every blklab step also runs on that build, right before
the same step on BLKLAB_BUILD (or build/), its row marked "(baseline)":
a change to QEMU measured against the build before it, in one run.

With --steps KEYS only those steps run (--steps c with --baseline: the
100 us drive on both builds); ratios are to the first step run.

Usage: tests/bench/io-path-cost.py [--rounds 3] [--seconds 2] [--kind nvme|ahci-hd|virtio-blk]
                                   [--baseline DIR] [--steps abcd]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import tomllib
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PYTHON = "/usr/bin/python3"
DEFAULT_SCENARIO = REPO / "scenarios" / "default.toml"
sys.path.insert(0, str(Path(__file__).resolve().parent))

import perf_window  # noqa: E402
import qemu_variant  # noqa: E402


@dataclass(frozen=True)
class Step:
    key: str
    label: str
    qemu: str  # "stock" or "blklab"
    mode: str
    # The drive's profile keys in place of the default scenario's (None:
    # the default scenario's own).
    drive: dict[str, str] | None


STEPS = [
    Step("a", "stock QEMU, realtime, no model", "stock", "realtime", {}),
    Step("b", "blklab, deterministic, zero-latency", "blklab", "deterministic",
         {"profile": "zero-latency"}),
    Step("c", "blklab, deterministic, ssd-read-100us", "blklab", "deterministic",
         {"profile": str(REPO / "tests" / "profiles" / "ssd-read-100us.toml")}),
    Step("d", "blklab, deterministic, default drive", "blklab", "deterministic", None),
]


def select_steps(keys: str) -> list[Step]:
    """The steps --steps names, in STEPS' order."""
    if not keys or set(keys) - {s.key for s in STEPS}:
        raise ValueError(f"--steps {keys!r}: give one or more of "
                         f"{', '.join(s.key for s in STEPS)}")
    return [s for s in STEPS if s.key in keys]


def with_baseline(steps: list[Step]) -> list[Step]:
    """The steps with each blklab step preceded by the same step on the
    baseline build (key suffixed "0")."""
    out = []
    for s in steps:
        if s.qemu == "blklab":
            out.append(Step(s.key + "0", s.label + " (baseline)", "baseline", s.mode, s.drive))
        out.append(s)
    return out

# Per guest I/O, as the table prints them: name, column heading, format.
METRICS = [("wall_us", "wall us", "{:9.1f}"), ("instructions", "instr", "{:9.0f}"),
           ("task_clock_us", "task us", "{:9.1f}"), ("context_switches", "ctx sw", "{:9.3f}")]


def toml_value(v: object) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, list):
        return "[" + ", ".join(toml_value(x) for x in v) + "]"
    raise TypeError(f"no TOML for {v!r}")


def toml_table(header: str, table: dict) -> str:
    return "\n".join([header] + [f"{k} = {toml_value(v)}" for k, v in table.items()]) + "\n"


KINDS = ("nvme", "ahci-hd", "virtio-blk")


def scenario(step: Step, seconds: int, kind: str = "nvme") -> str:
    """The default scenario cut to its NVMe drive (behind `kind`), the
    scheduler none and one job of `seconds` guest seconds, with the step's
    mode and drive."""
    default = tomllib.loads(DEFAULT_SCENARIO.read_text())
    (drive,) = [d for d in default["device"] if d["kind"] == "nvme"]
    drive = dict(drive, kind=kind, name=kind.split("-")[0] + "0")
    if step.drive is not None:
        drive = {k: v for k, v in drive.items() if k not in ("profile", "precondition")}
        drive.update(step.drive)
    (job,) = default["job"]
    head = {k: v for k, v in default["scenario"].items() if k in ("workload", "seeds")}
    head.update(schedulers=["none"], repeats=1, mode=step.mode, timeout_s=3600)
    return "\n".join([toml_table("[scenario]", head),
                      # Booted, not restored: perf_window counts the first QEMU
                      # the run starts, and a restored cell's is the one that
                      # saves the guest.
                      toml_table("[guest]", dict(default["guest"], boot="cold")),
                      toml_table("[[device]]", drive),
                      toml_table("[[job]]", dict(job, runtime=f"{seconds}s"))])


def run_cell(tmp: Path, build: Path, step: Step, seconds: int, rnd: int, kind: str) -> dict:
    """One cell of the step: its I/Os, workload wall seconds and counts."""
    tag = f"{step.key}-r{rnd}"
    scen = tmp / f"{tag}.toml"
    scen.write_text(scenario(step, seconds, kind))
    out = tmp / tag
    log = tmp / f"{tag}.log"
    env = dict(os.environ, BLKLAB_BUILD=str(build), PYTHONPATH=str(REPO / "harness"))
    with open(log, "w") as f:
        proc = subprocess.Popen([PYTHON, "-m", "blklab", "run", str(scen), "--accel", "tcg",
                                 "--jobs", "1", "--out", str(out), "--no-report"],
                                env=env, cwd=REPO, stdout=f, stderr=subprocess.STDOUT)
        try:
            counts = perf_window.count_workload(proc)
        finally:
            proc.wait()
    cells = list(out.glob("cell-*.json"))
    if proc.returncode != 0 or len(cells) != 1 or counts is None:
        kept = Path(tempfile.mkdtemp(prefix=f"io-path-cost-{tag}-"))
        if out.exists():
            shutil.copytree(out, kept / tag)
        for f in (scen, log):
            shutil.copy2(f, kept)
        sys.exit(f"io-path-cost: step {tag} failed (files kept in {kept}):\n"
                 + log.read_text()[-4000:])
    cell = json.loads(cells[0].read_text())
    job = cell["workload"]["jobs"][0]
    m = {"ios": job["read"]["total_ios"], "wall_s": cell["host"]["workload_wall_seconds"],
         "instructions": counts.instructions, "task_clock_ms": counts.task_clock_ms,
         "context_switches": counts.context_switches, "perf_window_s": counts.window_s,
         "guest_cpu_pct": round(job.get("usr_cpu", 0) + job.get("sys_cpu", 0), 1)}
    print(f"  {tag}: {m}", file=sys.stderr)
    return m


def per_io(m: dict) -> dict[str, float | None]:
    """One round's host cost per guest I/O."""
    ios = m["ios"]

    def each(v: float | None, scale: float = 1.0) -> float | None:
        return None if v is None or not ios else v * scale / ios

    return {"wall_us": each(m["wall_s"], 1e6), "instructions": each(m["instructions"]),
            "task_clock_us": each(m["task_clock_ms"], 1e3),
            "context_switches": each(m["context_switches"])}


def median(values: list[float | None]) -> float | None:
    """The median, or None if any round has no value."""
    return None if not values or None in values else statistics.median(values)


def table(steps: list[Step], rounds: dict[str, list[dict]]) -> list[str]:
    """Per step, the median over its rounds of each cost per guest I/O and
    its ratio to the first step."""
    medians = {s.key: {name: median([per_io(m)[name] for m in rounds[s.key]])
                       for name, _, _ in METRICS} for s in steps}
    ref = medians[steps[0].key]
    width = max(42, *(len(f"{s.key}. {s.label}") for s in steps))
    head = f"{'step':{width}} {'I/Os':>8}" + "".join(f" {h:>9} {'x ' + steps[0].key:>6}"
                                                     for _, h, _ in METRICS)
    lines = [head]
    for s in steps:
        ios = statistics.median(m["ios"] for m in rounds[s.key])
        row = f"{s.key + '. ' + s.label:{width}} {ios:8.0f}"
        for name, _, fmt in METRICS:
            v, r = medians[s.key][name], ref[name]
            row += f" {fmt.format(v) if v is not None else 'n/a':>9}"
            row += f" {f'{v / r:6.2f}' if v is not None and r else 'n/a':>6}"
        lines.append(row)
    return lines


def against_baseline(steps: list[Step], rounds: dict[str, list[dict]]) -> list[str]:
    """Per blklab step run on both builds, the ratio of each median cost
    per guest I/O on BLKLAB_BUILD to the same on the baseline build."""
    lines = [f"{'step':6}" + "".join(f" {h + ' x base':>16}" for _, h, _ in METRICS)]
    for s in steps:
        if s.qemu != "baseline":
            continue
        new_key = s.key[:-1]
        row = f"{new_key:6}"
        for name, _, _ in METRICS:
            base = median([per_io(m)[name] for m in rounds[s.key]])
            new = median([per_io(m)[name] for m in rounds[new_key]])
            row += f" {f'{new / base:.3f}' if base and new is not None else 'n/a':>16}"
        lines.append(row)
    return lines


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=3, help="alternations of the steps")
    ap.add_argument("--seconds", type=int, default=2, help="guest seconds of each job")
    ap.add_argument("--kind", choices=KINDS, default="nvme",
                    help="the drive's front end (default nvme)")
    ap.add_argument("--baseline", type=Path, metavar="DIR",
                    help="a second blklab build directory (qemu/, images/): every blklab step "
                         "also runs on it, alternated with BLKLAB_BUILD's")
    ap.add_argument("--steps", default="".join(s.key for s in STEPS), metavar="KEYS",
                    help="the steps to run, by key (default abcd); ratios are to the first "
                         "one given")
    args = ap.parse_args()
    try:
        steps = select_steps(args.steps)
    except ValueError as e:
        sys.exit(f"io-path-cost: {e}")
    if args.baseline is not None:
        if not (args.baseline / "qemu" / "bin" / "qemu-system-x86_64").exists():
            sys.exit(f"io-path-cost: no QEMU build at {args.baseline / 'qemu'}")
        steps = with_baseline(steps)
    try:
        no_instructions = perf_window.check_perf()
    except perf_window.PerfError as e:
        sys.exit(f"io-path-cost: {e}")
    if no_instructions:
        print(f"io-path-cost: {no_instructions}; the instructions column says n/a",
              file=sys.stderr)
    with tempfile.TemporaryDirectory(prefix="io-path-cost-") as t:
        tmp = Path(t)
        stock = any(s.qemu == "stock" for s in steps)
        builds = {"stock": qemu_variant.stock(tmp, "io-path-cost",
                                              lambda m: print(m, file=sys.stderr))
                  if stock else None,
                  "blklab": qemu_variant.blklab_build(), "baseline": args.baseline}
        rounds: dict[str, list[dict]] = {s.key: [] for s in steps}
        try:
            for rnd in range(1, args.rounds + 1):
                for s in steps:
                    rounds[s.key].append(run_cell(tmp, builds[s.qemu], s, args.seconds, rnd,
                                                  args.kind))
        except perf_window.PerfError as e:
            sys.exit(f"io-path-cost: {e}")
    print(f"host cost per guest I/O: {args.kind} 4 KiB randread QD32, io_uring, blkgen, the default "
          f"scenario's guest, {args.seconds} s jobs; median of {args.rounds} round(s), "
          f"steps alternated")
    print("(wall: host us of workload wall time; instr: QEMU's instructions; task: QEMU's "
          "task-clock us; ctx sw: its context switches)")
    if args.baseline is not None:
        print(f"(baseline) rows: the build in {args.baseline}")
    for line in table(steps, rounds):
        print(line)
    if args.baseline is not None:
        print("this build against the baseline, median per guest I/O:")
        for line in against_baseline(steps, rounds):
            print(line)
    if no_instructions:
        print(f"instructions: n/a, {no_instructions}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
