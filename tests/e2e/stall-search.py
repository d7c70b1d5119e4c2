#!/usr/bin/python3
"""The slowest read of test_icount_smp.py's stall scenario at each memory
size given: which guests' timelines meet the round-robin stall that
test_two_vcpus_do_not_stall_each_other shows (its comment names the sizes
this found). Each size is one restored cell, two at a time; the run
directories are kept under --out.

Usage: tests/e2e/stall-search.py [--quantum NS] [--out DIR] MIB [MIB ...]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from conftest import cells_of, run_blklab  # noqa: E402
from test_icount_smp import stall_scenario  # noqa: E402


def slowest_read(memory_mib: int, quantum_ns: int | None, out: Path) -> str:
    d = out / str(memory_mib)
    d.mkdir(parents=True)
    scenario = d / "stall.toml"
    scenario.write_text(stall_scenario(memory_mib, quantum_ns))
    proc = run_blklab("run", str(scenario), "--out", str(d / "run"), "--no-report")
    if proc.returncode != 0:
        return f"{memory_mib:6} MiB  failed: {(proc.stderr or proc.stdout).strip()[-300:]}"
    (cell,) = cells_of(d / "run").values()
    (job,) = cell["workload"]["jobs"]
    read = job["read"]
    return (f"{memory_mib:6} MiB  slowest read {read['clat_ns']['max'] / 1e6:8.3f} ms  "
            f"{read['total_ios']:7} reads")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("sizes", nargs="+", type=int, metavar="MIB", help="guest memory sizes")
    p.add_argument("--quantum", type=int, help="vcpu_quantum_ns (default: unbounded turns)")
    p.add_argument("--out", type=Path, help="where the runs go (default: a new temporary "
                   "directory); it must not hold runs of the same sizes")
    args = p.parse_args()
    out = args.out or Path(tempfile.mkdtemp(prefix="stall-search-"))
    taken = [m for m in args.sizes if (out / str(m)).exists()]
    if taken:
        sys.exit(f"stall-search: {out} already holds runs of {', '.join(map(str, taken))} MiB")
    print(f"runs in {out}")
    with ThreadPoolExecutor(max_workers=2) as pool:
        for line in pool.map(lambda m: slowest_read(m, args.quantum, out), args.sizes):
            print(line, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
