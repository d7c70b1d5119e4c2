#!/usr/bin/python3
"""What determinism costs the host: one scenario in blklab's deterministic
mode against the same scenario under plain icount, side by side in one run.

- deterministic: the QEMU of `make qemu` (the whole patch series).
- plain icount: the same -icount, -rtc and guest flags on a QEMU built from
  the series without blklab's determinism patches (see docs/determinism.md):
  no trace points, NVMe queue processing in bottom halves, round-robin turns
  that move when the vCPU thread is kicked. It is built once by
  qemu-patches/build-qemu.sh from a copy of the series and cached like any
  other build (about 10 minutes the first time).

Both variants run at the same time, each its cells one at a time, so that
they share whatever else loads the host; the script prints each cell's host
wall time (boot, workload and teardown: host.wall_seconds) and the workload
phase alone (host.workload_wall_seconds), with the ratio of the totals.

Usage: tests/bench/determinism-cost.py [--scenario FILE] [--keep DIR]
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PYTHON = "/usr/bin/python3"
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_dirs import add_keep_option, bench_dirs  # noqa: E402
import qemu_variant  # noqa: E402
# The patches of the series that are about determinism (docs/determinism.md).
DETERMINISM_PATCHES = (
    "trace-log-every-event-that-reaches-the-guest",
    "hw-nvme-under-icount-process-queues-from-the-virtual",
    "accel-tcg-keep-a-vCPU-s-round-robin-share-when-it-is",
    "accel-tcg-end-a-round-robin-pass-once-every-vCPU-has",
    "icount-without-sleep-warp-the-virtual-clock-in-the-v",
)

SCENARIO = """
[scenario]
name = "determinism-cost"
schedulers = ["none", "bfq"]
mode = "deterministic"
timeout_s = 3600

[guest]
vcpus = 2
memory_mib = 512

[[device]]
name = "nvme0"
kind = "nvme"
backing = "null"
profile = "samsung-970evoplus-1t"
size_gib = 1

[[device]]
name = "sata0"
kind = "ahci-hd"
backing = "null"
profile = "hdd-7200-desktop-1t"
size_gib = 1

[[job]]
name = "mixed"
rw = "randrw"
rwmixread = 70
bs = "4k"
iodepth = 16
ioengine = "io_uring"
direct = true
runtime = "1s"
time_based = true
"""


def run(scenario: Path, build: Path, out: Path) -> tuple[float, dict[str, dict]]:
    env = dict(os.environ, BLKLAB_BUILD=str(build), PYTHONPATH=str(REPO / "harness"))
    started = time.monotonic()
    proc = subprocess.run([PYTHON, "-m", "blklab", "run", str(scenario), "--jobs", "1",
                           "--out", str(out), "--no-report"], env=env, cwd=REPO,
                          capture_output=True, text=True)
    wall = time.monotonic() - started
    if proc.returncode != 0:
        sys.exit(f"determinism-cost: run failed:\n{proc.stdout}\n{proc.stderr}")
    cells = {p.name[len("cell-"):-len(".json")]: json.loads(p.read_text())
             for p in sorted(out.glob("cell-*.json"))}
    return wall, cells


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--scenario", type=Path, help="scenario file (default: NVMe + AHCI, 2 cells each)")
    add_keep_option(p)
    args = p.parse_args()
    with bench_dirs(args.keep, "determinism-cost-") as (tmp, out):
        scenario = args.scenario
        if scenario is None:
            scenario = tmp / "determinism-cost.toml"
            scenario.write_text(SCENARIO)
        plain = qemu_variant.build(tmp, "plain", qemu_variant.series_without(
            DETERMINISM_PATCHES, "determinism-cost"))
        variants = {"deterministic": REPO / "build", "plain icount": plain}
        with concurrent.futures.ThreadPoolExecutor(len(variants)) as pool:
            futures = {name: pool.submit(run, scenario, build, out / name.replace(" ", "-"))
                       for name, build in variants.items()}
            runs = {name: f.result() for name, f in futures.items()}
        print(f"{'cell':32} {'variant':14} {'wall s':>8} {'workload s':>11}")
        totals = {name: [0.0, 0.0] for name in runs}
        for cid in runs["deterministic"][1]:
            for name, (_, cells) in runs.items():
                host = cells[cid]["host"]
                wl = host.get("workload_wall_seconds") or 0.0
                totals[name][0] += host["wall_seconds"]
                totals[name][1] += wl
                print(f"{cid:32} {name:14} {host['wall_seconds']:8.1f} {wl:11.2f}")
        for name, (wall, _) in runs.items():
            print(f"{'total':32} {name:14} {totals[name][0]:8.1f} {totals[name][1]:11.2f}"
                  f"   (run: {wall:.1f} s)")
        det, plain_t = totals["deterministic"], totals["plain icount"]
        print(f"deterministic / plain icount: wall {det[0] / plain_t[0]:.2f}x, "
              f"workload {det[1] / plain_t[1]:.2f}x" if plain_t[0] and plain_t[1] else "")
    return 0


if __name__ == "__main__":
    sys.exit(main())
