#!/usr/bin/python3
"""Where a restored cell's host time goes before its workload, by phase.

Runs a scenario (default tests/bench/restore-cost.toml) with `blklab run
--jobs 1` on a BLKLAB_BUILD directory whose QEMU is a wrapper around the
given build's: a QEMU that restores (-incoming) runs under `perf record
-e cpu-clock -g -k CLOCK_REALTIME` with QEMU's own trace of the restore
and of the device model's requests (loadvm_state_setup, vm_state_notify,
device_model_submit; -msg timestamp=on stamps them on the same clock).
For each restored cell it prints four phases, their wall seconds, the
CPU seconds perf sampled in them (all QEMU's threads) and their commonest
leaf functions:
  start     the wrapper's exec to loadvm_state_setup: QEMU's start, device
            realize, the device model's creation;
  restore   to the VM running: reading the saved guest into RAM;
  guest to first I/O  the guest's instructions after the job point up to
            the model's first request (the job bundle, the driver's bind,
            the start of its probe);
  guest to workload   up to the first request beyond the disk's first MiB
            (the workload's first read; the probe's reads and the partition
            scan read the first blocks).
CPU seconds move less with the host's load than wall seconds; read those.
The wrapper is a different QEMU binary to the harness, so its guests are
booted and saved once under their own snapshot keys (cells that boot are
not listed).

Needs perf (as root or kernel.perf_event_paranoid <= 1) and a build
(`make qemu image cmake`).

Usage: tests/bench/restore-phases.py [--build DIR] [--scenario TOML] [--keep DIR]
       tests/bench/restore-phases.py --logs DIR/logs
"""

from __future__ import annotations

import argparse
import collections
import os
import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PYTHON = "/usr/bin/python3"
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_dirs import add_keep_option, bench_dirs  # noqa: E402

RATE = 1999  # perf samples per CPU second
TRACES = ["loadvm_state_setup", "vm_state_notify", "device_model_submit"]
WRAPPER = """#!/bin/sh
# tests/bench/restore-phases.py: a restoring QEMU under perf, with its trace.
case " $* " in *" -incoming "*)
  L=$BLKLAB_PHASES_LOGS/qemu.$$
  {{ date +%s.%N; printf '%s\\n' "$@"; }} > $L.exec
  exec perf record -q -e cpu-clock -F {rate} -g -k CLOCK_REALTIME -o $L.perf -- {qemu} "$@" \\
    -msg timestamp=on {traces} -D $L.qlog ;;
esac
exec {qemu} "$@"
"""


def wrapped_build(build: Path, into: Path) -> Path:
    """A BLKLAB_BUILD directory like `build` whose QEMU is the wrapper."""
    qemu = (build / "qemu").resolve()
    (into / "qemu" / "bin").mkdir(parents=True)
    for p in qemu.iterdir():
        if p.name != "bin":
            (into / "qemu" / p.name).symlink_to(p)
    for p in (qemu / "bin").iterdir():
        if p.name != "qemu-system-x86_64":
            (into / "qemu" / "bin" / p.name).symlink_to(p)
    w = into / "qemu" / "bin" / "qemu-system-x86_64"
    w.write_text(WRAPPER.format(rate=RATE, qemu=qemu / "bin" / "qemu-system-x86_64",
                                traces=" ".join(f"-trace {t}" for t in TRACES)))
    w.chmod(0o755)
    for name in ("images", "cmake", "apps"):
        if (build / name).exists():
            (into / name).symlink_to((build / name).resolve())
    return into


def marks_of(qlog: Path) -> dict[str, float]:
    marks: dict[str, float] = {}
    for line in qlog.read_text().splitlines():
        m = re.match(r"\d+@([\d.]+):(\w+) ?(.*)", line)
        if not m:
            continue
        t, ev, rest = float(m.group(1)), m.group(2), m.group(3)
        if ev == "loadvm_state_setup":
            marks.setdefault("setup", t)
        elif ev == "vm_state_notify" and rest.startswith("running 1"):
            marks.setdefault("running", t)
        elif ev == "device_model_submit":
            marks.setdefault("first_io", t)
            if int(re.search(r"offset (\d+)", rest).group(1)) >= 1 << 20:
                marks.setdefault("workload", t)
    return marks


def phases(base: Path) -> list[tuple[str, float, float, list[tuple[str, int]]]]:
    """(phase, wall s, CPU s, commonest leaves) of one restored QEMU."""
    m = marks_of(Path(f"{base}.qlog"))
    t0 = float(Path(f"{base}.exec").read_text().split("\n")[0])
    bounds = [("start", t0, m["setup"]), ("restore", m["setup"], m["running"]),
              ("guest to first I/O", m["running"], m["first_io"]),
              ("guest to workload", m["first_io"], m["workload"])]
    script = subprocess.run(["perf", "script", "-i", f"{base}.perf",
                             "-F", "time,ip,sym,dso"],
                            capture_output=True, text=True, check=True).stdout
    counts: collections.Counter[str] = collections.Counter()
    leaves: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
    for block in script.split("\n\n"):
        lines = [x for x in block.splitlines() if x.strip()]
        head = re.match(r"\s*([\d.]+):", lines[0]) if lines else None
        if not head:
            continue
        t = float(head.group(1))
        leaf = lines[1].split(None, 1)[1] if len(lines) > 1 else "?"
        sym = leaf.split(" (")[0]
        if sym == "[unknown]":  # translated guest code: perf-PID.map
            sym = "translated code" if "perf-" in leaf else "[unknown]"
        for name, a, b in bounds:
            if a <= t < b:
                counts[name] += 1
                leaves[name][sym] += 1
    return [(name, b - a, counts[name] / RATE, leaves[name].most_common(5))
            for name, a, b in bounds]


def report(logs: Path) -> None:
    """One table per restoring QEMU logged in `logs`, in launch order."""
    execs = sorted(logs.glob("qemu.*.exec"),
                   key=lambda p: float(p.read_text().split("\n")[0]))
    for exec_log in execs:
        base = exec_log.parent / exec_log.stem  # qemu.PID
        argv = exec_log.read_text().split("\n")[1:]
        device = next((a.split(",")[0] for a in argv if "devmodel-profile=" in a), "?")
        if any(a.startswith("ich9-ahci,") for a in argv):
            device += " on ahci"
        print(f"{base.name} ({device})")
        print(f"  {'phase':<20} {'wall s':>7} {'cpu s':>6}  commonest leaves (share of the phase)")
        for name, wall, cpu, top in phases(base):
            total = max(1, round(cpu * RATE))
            print(f"  {name:<20} {wall:7.2f} {cpu:6.2f}  "
                  + ", ".join(f"{sym} {100 * k / total:.0f}%" for sym, k in top))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", type=Path, default=REPO / "build")
    ap.add_argument("--scenario", type=Path, default=Path(__file__).resolve().parent
                    / "restore-cost.toml")
    ap.add_argument("--logs", type=Path,
                    help="print the tables of an earlier run's logs (--keep DIR's logs/) "
                         "and run nothing")
    add_keep_option(ap)
    args = ap.parse_args()
    if args.logs is not None:
        report(args.logs)
        return 0
    if not (args.build / "qemu" / "bin" / "qemu-system-x86_64").exists():
        ap.error(f"--build {args.build}: no qemu/bin/qemu-system-x86_64 (make qemu image cmake)")
    with bench_dirs(args.keep, "restore-phases-") as (scratch, out):
        build = wrapped_build(args.build, scratch / "build")
        logs = out / "logs"
        logs.mkdir(parents=True)
        run = out / "run"
        env = dict(os.environ, BLKLAB_BUILD=str(build), PYTHONPATH=str(REPO / "harness"),
                   BLKLAB_PHASES_LOGS=str(logs))
        with open(out / "run.log", "wb") as f:
            rc = subprocess.call([PYTHON, "-m", "blklab", "run", str(args.scenario.resolve()),
                                  "--jobs", "1", "--accel", "tcg", "--no-report",
                                  "--out", str(run)],
                                 env=env, cwd=REPO / "harness", stdout=f, stderr=subprocess.STDOUT)
        if rc != 0:
            print(f"blklab run exited {rc}: see {out}/run.log", file=sys.stderr)
            return 1
        report(logs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
