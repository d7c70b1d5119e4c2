#!/usr/bin/python3
"""blkgen's IOPS over fio's for the same job in the guest (issue 6's target:
at least 1.3).

Deterministic mode, zero-latency NVMe profile, 4 KiB random reads at QD32
with io_uring and O_DIRECT: the device costs nothing and virtual time is
instruction count, so IOPS measure the guest instructions each tool spends
per I/O. Both cells boot the same guest image on the same device model and
differ only in the workload program; run side by side in one invocation.

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
profile = "zero-latency"

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


def iops(tmp: Path, workload: str, seconds: int, vcpus: int) -> float:
    scenario = tmp / f"{workload}.toml"
    scenario.write_text(SCENARIO.format(workload=workload, seconds=seconds, vcpus=vcpus))
    out = tmp / workload
    env = dict(os.environ, PYTHONPATH=str(REPO / "harness"))
    proc = subprocess.run([sys.executable, "-m", "blklab", "run", str(scenario), "--out",
                           str(out)], env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        kept = Path(tempfile.mkdtemp(prefix=f"blklab-bench-{workload}-"))
        shutil.copytree(out, kept, dirs_exist_ok=True)
        sys.exit(f"{workload}: blklab run failed (run kept in {kept}):\n{proc.stdout}{proc.stderr}")
    (cell,) = [json.loads(p.read_text()) for p in out.glob("cell-*.json")]
    job = cell["workload"]["jobs"][0]
    print(f"  {workload}: {job['read']['iops']:.0f} IOPS, {job['read']['total_ios']} I/Os, "
          f"usr {job['usr_cpu']:.1f}% sys {job['sys_cpu']:.1f}%", file=sys.stderr)
    return job["read"]["iops"]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=int, default=2, help="virtual seconds of each job")
    ap.add_argument("--vcpus", type=int, default=1)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="blklab-bench-") as t:
        b = iops(Path(t), "blkgen", args.seconds, args.vcpus)
        f = iops(Path(t), "fio", args.seconds, args.vcpus)
    print(f"4 KiB randread QD32 io_uring, zero-latency NVMe, deterministic, "
          f"{args.vcpus} vCPU: blkgen {b:.0f} IOPS, fio {f:.0f} IOPS")
    print(f"ratio blkgen/fio = {b / f:.2f} (target >= 1.3)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
