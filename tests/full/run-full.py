#!/usr/bin/python3
"""Every scenario's full form, run and checked: `make test-full`.

Runs `blklab run scenarios/NAME.toml` (no --short) for each scenario, then
evaluates its expectations as `blklab check` does, and writes one summary
table (scenario, cells, expectations by verdict, wall time) in Markdown,
with the date and the build (QEMU cache key, guest image hash), to
OUT/summary.md. Exits 1 if any cell failed or any check would fail (FAIL,
UNEXPECTED-PASS, ERROR). Not part of `make test`: the full forms take hours
on a 2-core machine.

With --resume, a scenario whose run is already in OUT, complete (its wall
time recorded) and made by the same QEMU build and guest image as now, is
evaluated again rather than run again (a scenario whose run did not finish
is run again, replacing it): a run cut short goes on where it stopped, and
the table still comes from one build.

Usage: tests/full/run-full.py [--out DIR] [--jobs N] [--resume] [NAME ...]
       (default: every scenario; OUT default results/test-full/<UTC date>)
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PYTHON = "/usr/bin/python3"
sys.path.insert(0, str(REPO / "harness"))

from blklab import kernels, paths, runner, summary  # noqa: E402

WALL_FILE = "wall_seconds"  # in a run's directory, once it has finished


def build_line() -> str:
    """Which QEMU build and guest image ran (their manifests' keys)."""
    def read(path: Path) -> dict:
        try:
            return json.loads(path.read_text())
        except (OSError, ValueError):
            return {}
    qemu = read(paths.build_dir() / "qemu" / "manifest.json")
    # The default kernel's image, which every scenario without [guest]
    # kernel boots (build/images/<series>-amd64).
    image = read(paths.build_dir() / "images" / f"{kernels.default_series()}-amd64"
                 / "image.json")
    git = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"],
                         capture_output=True, text=True).stdout.strip()
    return (f"blklab {git or 'unknown'}, QEMU build {qemu.get('cache_key', 'unknown')}, "
            f"guest image {str(image.get('hash', 'unknown'))[:12]} "
            f"({image.get('kernel_package', '?')} {image.get('kernel_package_version', '?')})")


def reusable(run_dir: Path) -> float | None:
    """The wall time of a finished run in run_dir if the QEMU build and the
    guest image it ran are the ones built now; None if it did not finish.
    Exits naming what differs if it was another build's."""
    try:
        wall = float((run_dir / WALL_FILE).read_text())
    except (OSError, ValueError):
        return None
    run = runner.load_run(run_dir)
    qemu = json.loads((paths.build_dir() / "qemu" / "manifest.json").read_text())
    image = json.loads((paths.build_dir() / "images" / run.scenario.guest.kernel
                        / "image.json").read_text())
    then = (run.manifest["qemu"].get("cache_key"), run.manifest["image"].get("hash"))
    if then != (qemu.get("cache_key"), image.get("hash")):
        sys.exit(f"run-full: {run_dir} ran QEMU {then[0]} and image {then[1]}, not this "
                 f"build's {qemu.get('cache_key')} and {image.get('hash')}: remove it or "
                 "run without --resume into another --out")
    return wall


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("names", nargs="*", help="scenario names (default: every scenario)")
    p.add_argument("--out", type=Path, help="where runs and summary.md go")
    p.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="cells in parallel")
    p.add_argument("--resume", action="store_true",
                   help="evaluate the finished runs already in OUT instead of running them")
    args = p.parse_args()
    names = args.names or sorted(f.stem for f in (REPO / "scenarios").glob("*.toml"))
    for name in names:
        if not (REPO / "scenarios" / f"{name}.toml").is_file():
            print(f"run-full: no scenarios/{name}.toml", file=sys.stderr)
            return 2
    today = datetime.datetime.now(datetime.timezone.utc)
    out = args.out or REPO / "results" / "test-full" / today.strftime("%Y-%m-%d")
    out.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, PYTHONPATH=str(REPO / "harness"))
    rows = []
    build = build_line()
    resumed = 0

    def write_summary() -> str:
        # Written after every scenario, so a run cut short still leaves its
        # table, headed by how far it got.
        so_far = "" if len(rows) == len(names) else f" (so far: {len(rows)} of {len(names)} scenarios)"
        again = (f"; {resumed} of the rows are runs that had finished before, taken up with "
                 "--resume" if resumed else "")
        text = (f"`make test-full`, {today.strftime('%Y-%m-%d %H:%M')} UTC, {build}; "
                f"`--jobs {args.jobs}` on {os.cpu_count()} cores{so_far}{again}:\n\n"
                + summary.markdown(rows))
        (out / "summary.md").write_text(text)
        return text

    text = ""
    for name in names:
        run_dir = out / name
        wall = reusable(run_dir) if args.resume else None
        if wall is not None:
            resumed += 1
            r = summary.row(name, run_dir, wall)
            rows.append(r)
            print(f"{name}: {'ok' if r.passed else 'FAILS'} (finished before): {r.counts}",
                  flush=True)
            text = write_summary()
            continue
        if args.resume and run_dir.exists():  # a run that did not finish
            shutil.rmtree(run_dir)
        started = time.monotonic()
        proc = subprocess.run([PYTHON, "-m", "blklab", "run", "--jobs", str(args.jobs),
                               "--out", str(run_dir), f"scenarios/{name}.toml"],
                              cwd=REPO, env=env, text=True, capture_output=True)
        wall = time.monotonic() - started
        (run_dir / "run.log").write_text(proc.stdout + proc.stderr)
        if not (run_dir / "manifest.json").exists():
            print(f"{name}: did not run ({proc.stderr.strip()[-300:]})", file=sys.stderr)
            return 2
        (run_dir / WALL_FILE).write_text(f"{wall:.1f}\n")
        r = summary.row(name, run_dir, wall)
        rows.append(r)
        print(f"{name}: {'ok' if r.passed else 'FAILS'} in {wall:.0f} s: {r.counts}",
              flush=True)
        text = write_summary()
    print(text)
    print(f"summary: {out / 'summary.md'}")
    return 0 if all(r.passed for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
