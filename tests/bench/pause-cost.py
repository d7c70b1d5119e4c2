#!/usr/bin/python3
"""What [guest] pause_ns (QEMU's -icount pause=NS) saves the host: a
scenario at a fast guest CPU (--rate, default the default preset's) with
parallel vCPU clocks, once with a PAUSE one instruction's time
(pause_ns = 0) and once with it taking --pause ns (default the preset's), side by
side in one run.

At a fast rate the guest's spin-wait loops run many instructions per ns of
virtual time: the kernel's local APIC timer calibration alone spins on
RDTSC and PAUSE for 100 ms of it at boot. Both variants run at the same
time, each its cells one at a time, so that they share whatever else loads
the host. Per cell the script prints the host wall seconds of the whole
cell (boot to halt, host.wall_seconds) and of its workload phase
(host.workload_wall_seconds) for each variant, then the ratios of the
totals.

Usage: tests/bench/pause-cost.py [--scenario FILE] [--short] [--rate R] [--pause NS] [--keep DIR]
(default: scenarios/default.toml, its short form with --short)
"""

from __future__ import annotations

import argparse
import concurrent.futures
import importlib.util
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "harness"))
from bench_dirs import add_keep_option, bench_dirs  # noqa: E402
from blklab.scenario import CALIBRATED_CPU_RATE, CALIBRATED_PAUSE_NS  # noqa: E402

# The same runner as vcpu-clocks-cost.py: one `blklab run`, its cells by id.
_spec = importlib.util.spec_from_file_location(
    "vcpu_clocks_cost", Path(__file__).resolve().parent / "vcpu-clocks-cost.py")
_vcc = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_vcc)
REPO = _vcc.REPO


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--scenario", type=Path, default=REPO / "scenarios" / "default.toml")
    p.add_argument("--short", action="store_true", help="run the scenario's short form")
    p.add_argument("--rate", type=float, default=CALIBRATED_CPU_RATE,
                   help=f"cpu_rate of both variants (default {CALIBRATED_CPU_RATE:g})")
    p.add_argument("--pause", type=int, default=CALIBRATED_PAUSE_NS,
                   help=f"pause_ns of the second variant (default {CALIBRATED_PAUSE_NS})")
    add_keep_option(p)
    args = p.parse_args()
    if args.pause <= 0:
        sys.exit("pause-cost: --pause must be a positive number of ns")
    with bench_dirs(args.keep, "pause-cost-") as (tmp, out):
        out.mkdir(parents=True, exist_ok=True)
        variants = {"pause_ns=0": 0, f"pause_ns={args.pause}": args.pause}
        with concurrent.futures.ThreadPoolExecutor(len(variants)) as pool:
            futures = {label: pool.submit(_vcc.run, args.scenario,
                                          ["vcpu_clocks=parallel", f"cpu_rate={args.rate:g}",
                                           f"pause_ns={pause}"],
                                          out / label.replace("=", "-"), args.short)
                       for label, pause in variants.items()}
            runs = {v: f.result() for v, f in futures.items()}
        print(f"cpu_rate {args.rate:g}, parallel clocks; host wall seconds per cell")
        print(f"{'cell':28} {'variant':14} {'cell s':>8} {'workload s':>11}")
        totals = {v: [0.0, 0.0] for v in variants}
        first = next(iter(variants))
        for cid in runs[first]:
            for v in variants:
                cell = runs[v].get(cid)
                if cell is None:
                    continue
                whole = cell["host"].get("wall_seconds") or 0.0
                work = cell["host"].get("workload_wall_seconds") or 0.0
                totals[v][0] += whole
                totals[v][1] += work
                print(f"{cid:28} {v:14} {whole:8.1f} {work:11.1f}")
        for v, (whole, work) in totals.items():
            print(f"{'total':28} {v:14} {whole:8.1f} {work:11.1f}")
        (a_whole, a_work), (b_whole, b_work) = totals.values()
        if b_whole and b_work:
            print(f"pause_ns=0 / pause_ns={args.pause}: whole cell {a_whole / b_whole:.2f}x, "
                  f"workload {a_work / b_work:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
