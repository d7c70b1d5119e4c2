#!/usr/bin/python3
"""blkgen's IOPS over fio's for the same job in the guest (issue 6's target:
at least 1.3), on both floor profiles.

Deterministic mode, 4 KiB random reads at QD32 with io_uring and O_DIRECT,
virtual time is instruction count, so IOPS measure the guest instructions
each tool spends per I/O, on two paths:

- zero-latency: each completion arrives before the thread sleeps, a path no
  drive gives (no sleep, no wake-up): the tools' cost alone;
- fixed-10us: each request takes 10 us, so the thread sleeps and is woken
  by the completion as under every real drive: what the tool costs there.

Each pair of cells boots the same guest image on the same device model and
differs only in the workload program; all four run in one invocation.

Usage: tests/bench/blkgen-vs-fio.py [--seconds 2] [--vcpus 1]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

SCENARIO = """
[scenario]
schedulers = ["none"]
mode = "deterministic"
workload = "{workload}"
timeout_s = 1800

[guest]
vcpus = {vcpus}

[[device]]
name = "d"
kind = "nvme"
backing = "null"
profile = "{profile}"

[[job]]
name = "randread"
rw = "randread"
bs = "4k"
iodepth = 32
ioengine = "io_uring"
direct = true
runtime = "{seconds}s"
time_based = true
"""


PROFILES = ("zero-latency", "fixed-10us")


def iops(tmp: Path, workload: str, profile: str, seconds: int, vcpus: int) -> float:
    scenario = tmp / f"{workload}-{profile}.toml"
    scenario.write_text(SCENARIO.format(workload=workload, profile=profile, seconds=seconds,
                                        vcpus=vcpus))
    out = tmp / f"{workload}-{profile}"
    env = dict(os.environ, PYTHONPATH=str(REPO / "harness"))
    proc = subprocess.run([sys.executable, "-m", "blklab", "run", str(scenario), "--out",
                           str(out)], env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        kept = Path(tempfile.mkdtemp(prefix=f"blklab-bench-{workload}-"))
        shutil.copytree(out, kept, dirs_exist_ok=True)
        sys.exit(f"{workload}: blklab run failed (run kept in {kept}):\n{proc.stdout}{proc.stderr}")
    (cell,) = [json.loads(p.read_text()) for p in out.glob("cell-*.json")]
    job = cell["workload"]["jobs"][0]
    print(f"  {workload}, {profile}: {job['read']['iops']:.0f} IOPS, {job['read']['total_ios']} I/Os, "
          f"usr {job['usr_cpu']:.1f}% sys {job['sys_cpu']:.1f}%", file=sys.stderr)
    return job["read"]["iops"]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=int, default=2, help="virtual seconds of each job")
    ap.add_argument("--vcpus", type=int, default=1)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="blklab-bench-") as t:
        figures = {(w, p): iops(Path(t), w, p, args.seconds, args.vcpus)
                   for p in PROFILES for w in ("blkgen", "fio")}
    print(f"4 KiB randread QD32 io_uring, NVMe, deterministic, {args.vcpus} vCPU:")
    for p in PROFILES:
        b, f = figures[("blkgen", p)], figures[("fio", p)]
        path = ("completion before the thread sleeps" if p == "zero-latency"
                else "the thread sleeps and is woken, as under a real drive")
        print(f"  {p} ({path}): blkgen {b:.0f} IOPS, fio {f:.0f} IOPS, "
              f"ratio blkgen/fio = {b / f:.2f} (target >= 1.3)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
