#!/usr/bin/python3
"""A restored cell's host time before its workload, per front end.

Runs tests/bench/restore-cost.toml (one drive per front end: NVMe, IDE,
AHCI, virtio-blk; none and mq-deadline; a QD4 100 ms random read job) with
`blklab run --jobs 1 --accel tcg` and reads each cell's
host.seconds_to_workload (from QEMU's start to the guest's "workload
start" line, as the harness saw it). Only cells restored from a snapshot
that an earlier cell made count: the cell that boots the guest and saves
it is left out (its QEMU did not restore).

Each BUILD is a BLKLAB_BUILD directory (qemu/, images/, cmake/, as build/
has them), run with this checkout's harness, or a checkout (a directory
with harness/ and build/: /work/main), run with its own harness and build,
for a harness change. Given two, the runs alternate between them, A B A B ...,
one VM at a time, so that whatever else loads the host hits both alike.
The table gives, per build and front end, the median over the rounds and
cells, with each round's figures, and the host's load average at each
run's start (the machine may be shared: read the load beside the times).

Usage: tests/bench/restore-cost.py [--rounds 3] [--keep DIR] [BUILD [BUILD]]
       (no BUILD: build/ only)
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PYTHON = "/usr/bin/python3"
SCENARIO = Path(__file__).resolve().parent / "restore-cost.toml"
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_dirs import add_keep_option, bench_dirs  # noqa: E402


def restored_times(run_dir: Path) -> dict[str, list[float]]:
    """Each front end's seconds_to_workload over the run's restored cells
    (made_by_this_cell false), in cell order."""
    out: dict[str, list[float]] = {}
    cells = sorted(run_dir.glob("cell-*.json"))
    if not cells:
        raise RuntimeError(f"{run_dir}: no cell-*.json: the run failed (see run.log there)")
    for p in cells:
        c = json.loads(p.read_text())
        if c.get("status") != "ok":
            raise RuntimeError(f"{p}: status {c.get('status')}: {c.get('error')}")
        boot = c["host"].get("boot", {})
        if boot.get("from") != "snapshot" or boot.get("made_by_this_cell"):
            continue
        kind = c["request"]["device"]["kind"]
        out.setdefault(kind, []).append(c["host"]["seconds_to_workload"])
    return out


def harness_and_build(d: Path) -> tuple[Path, Path]:
    """A checkout's own harness and build/, or this checkout's harness with
    the build directory `d`."""
    if (d / "harness" / "blklab").is_dir():
        return d / "harness", d / "build"
    return REPO / "harness", d


def run_once(build: Path, out: Path) -> dict[str, list[float]]:
    harness, build = harness_and_build(build)
    env = dict(os.environ, BLKLAB_BUILD=str(build), PYTHONPATH=str(harness))
    out.mkdir(parents=True)
    with open(out / "run.log", "wb") as f:
        rc = subprocess.call([PYTHON, "-m", "blklab", "run", str(SCENARIO), "--jobs", "1",
                              "--accel", "tcg", "--no-report", "--out", str(out)],
                             env=env, cwd=harness, stdout=f, stderr=subprocess.STDOUT)
    if rc != 0:
        raise RuntimeError(f"blklab run with BLKLAB_BUILD={build} exited {rc}: see {out}/run.log")
    return restored_times(out)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("builds", nargs="*", type=Path,
                    help="BLKLAB_BUILD directories or checkouts, alternated (default: build/)")
    ap.add_argument("--rounds", type=int, default=3)
    add_keep_option(ap)
    args = ap.parse_args()
    builds = [b.resolve() for b in args.builds] or [REPO / "build"]
    if len(builds) > 2:
        ap.error("give at most two build directories")
    for b in builds:
        for sub in ("qemu", "images", "cmake"):
            if not (harness_and_build(b)[1] / sub).exists():
                ap.error(f"{b}: no {harness_and_build(b)[1] / sub} (make qemu image cmake there)")
    if args.rounds < 1:
        ap.error("--rounds must be at least 1")

    times: dict[Path, dict[str, list[list[float]]]] = {b: {} for b in builds}
    with bench_dirs(args.keep, "restore-cost-") as (_, out):
        for r in range(args.rounds):
            for i, b in enumerate(builds):
                load = os.getloadavg()[0]
                got = run_once(b, out / f"round{r}-build{i}")
                print(f"round {r} build {i} ({b}), load {load:.1f}: "
                      + ", ".join(f"{k} {v}" for k, v in sorted(got.items())), flush=True)
                for kind, v in got.items():
                    times[b].setdefault(kind, []).append(v)
    print()
    print(f"{'build':<6} {'front end':<11} {'median s':>9}  rounds")
    for i, b in enumerate(builds):
        for kind, rounds in sorted(times[b].items()):
            flat = [x for rnd in rounds for x in rnd]
            print(f"{i:<6} {kind:<11} {statistics.median(flat):9.3f}  {rounds}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
