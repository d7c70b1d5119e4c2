#!/usr/bin/python3
"""What parallel vCPU clocks and a faster guest CPU cost the host: a scenario
with [guest] vcpu_clocks = "shared" against the same with "parallel" (QEMU's
-icount parallel=on) at the same cpu_rate, and "parallel" again at a second
rate (--rate, default 2), side by side in one run.

All variants run at the same time, each its cells one at a time, so that
they share whatever else loads the host. Per cell the script prints host
wall seconds of the workload phase (host.workload_wall_seconds), the
virtual seconds it covered (the jobs' runtime), the guest I/Os it
completed, and from them host seconds per virtual second and host us per
guest I/O; then the ratios of the totals: parallel / shared at the
scenario's rate, and the second rate / the scenario's rate, both parallel.
Parallel vCPUs and a faster guest CPU do more guest work per virtual
second, so per virtual second they may cost more host time even when they
cost less per I/O.

Usage: tests/bench/vcpu-clocks-cost.py [--scenario FILE] [--short] [--rate R] [--keep DIR]
(default: scenarios/default.toml, its short form with --short)
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import os
import subprocess
import sys
from pathlib import Path

from bench_dirs import add_keep_option, bench_dirs

REPO = Path(__file__).resolve().parents[2]
PYTHON = "/usr/bin/python3"


def scenario_rate(path: Path) -> float:
    """The scenario's cpu_rate in effect (its preset's when it sets none)."""
    sys.path.insert(0, str(REPO / "harness"))
    from blklab import scenario
    return scenario.load(path).guest.cpu_rate


def run(scenario: Path, guest: list[str], out: Path, short: bool) -> dict[str, dict]:
    env = dict(os.environ, PYTHONPATH=str(REPO / "harness"))
    cmd = [PYTHON, "-m", "blklab", "run", str(scenario), "--jobs", "1", "--out", str(out),
           "--no-report"] + [f"--guest={g}" for g in guest] + (["--short"] if short else [])
    proc = subprocess.run(cmd, env=env, cwd=REPO, capture_output=True, text=True)
    if proc.returncode not in (0, 1):  # 1: an expectation failed; the cells are there
        sys.exit(f"vcpu-clocks-cost: run failed:\n{proc.stdout}\n{proc.stderr}")
    return {p.name[len("cell-"):-len(".json")]: json.loads(p.read_text())
            for p in sorted(out.glob("cell-*.json"))}


def figures(cell: dict) -> tuple[float, float, int]:
    """(host seconds of the workload, virtual seconds, guest I/Os)."""
    jobs = (cell.get("workload") or {}).get("jobs", [])
    virtual = max((j.get("job_runtime", 0) for j in jobs), default=0) / 1000.0
    ios = sum(j.get(d, {}).get("total_ios", 0) for j in jobs for d in ("read", "write", "trim"))
    return cell["host"].get("workload_wall_seconds") or 0.0, virtual, ios


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--scenario", type=Path, default=REPO / "scenarios" / "default.toml")
    p.add_argument("--short", action="store_true", help="run the scenario's short form")
    p.add_argument("--rate", type=float, default=2.0,
                   help="the second cpu_rate, run with parallel clocks (default 2)")
    add_keep_option(p)
    args = p.parse_args()
    with bench_dirs(args.keep, "vcpu-clocks-cost-") as (tmp, out):
        out.mkdir(parents=True, exist_ok=True)
        rate = scenario_rate(args.scenario)
        # label -> (vcpu_clocks, cpu_rate)
        variants = {f"shared-r{rate:g}": ("shared", rate),
                    f"parallel-r{rate:g}": ("parallel", rate),
                    f"parallel-r{args.rate:g}": ("parallel", args.rate)}
        if len(variants) < 3:
            sys.exit(f"vcpu-clocks-cost: --rate {args.rate:g} is the scenario's own rate")
        with concurrent.futures.ThreadPoolExecutor(len(variants)) as pool:
            futures = {label: pool.submit(run, args.scenario,
                                          [f"vcpu_clocks={clocks}", f"cpu_rate={r:g}"],
                                          out / label, args.short)
                       for label, (clocks, r) in variants.items()}
            runs = {v: f.result() for v, f in futures.items()}
        print(f"{'cell':28} {'variant':15} {'host s':>8} {'virtual s':>10} {'I/Os':>9} "
              f"{'host s/virt s':>14} {'host us/IO':>11}")
        totals = {v: [0.0, 0.0, 0] for v in variants}
        first = next(iter(variants))
        for cid in runs[first]:
            for v in variants:
                if cid not in runs[v]:
                    continue
                host, virtual, ios = figures(runs[v][cid])
                t = totals[v]
                t[0] += host
                t[1] += virtual
                t[2] += ios
                print(f"{cid:28} {v:15} {host:8.1f} {virtual:10.3f} {ios:9d} "
                      f"{host / virtual if virtual else 0:14.1f} "
                      f"{1e6 * host / ios if ios else 0:11.1f}")
        for v in variants:
            host, virtual, ios = totals[v]
            print(f"{'total':28} {v:15} {host:8.1f} {virtual:10.3f} {ios:9d} "
                  f"{host / virtual if virtual else 0:14.1f} {1e6 * host / ios if ios else 0:11.1f}")
        shared, par, fast = (totals[v] for v in variants)
        for name, a, b in ((f"parallel / shared at rate {rate:g}", par, shared),
                           (f"rate {args.rate:g} / rate {rate:g}, parallel", fast, par)):
            if all(a) and all(b):
                print(f"{name}: host s per virtual s {(a[0] / a[1]) / (b[0] / b[1]):.2f}x, "
                      f"host us per guest I/O {(a[0] / a[2]) / (b[0] / b[2]):.2f}x, "
                      f"guest I/Os per virtual s {(a[2] / a[1]) / (b[2] / b[1]):.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
