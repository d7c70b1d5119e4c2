#!/usr/bin/python3
"""Whether two runs of one scenario gave the same cells: tests/host/debian13.sh's verdict.

Each cell's JSON must be the same in both runs apart from the keys that
record the host (blklab.diverge.HOST_KEYS: wall-clock seconds, scratch
paths, which host files were kept), the rule the determinism tests use, and
each console log must be the same up to the line the guest init prints
when it has sent its results. Every cell must have finished ("ok") and
done I/O through the device model, so that an empty or failed run cannot
pass. Prints the first differing keys with both values; exits 1 on any
difference.

Usage: tests/host/same_cells.py RUN_A RUN_B [--names A,B]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "harness"))

from blklab import diverge  # noqa: E402

SHOWN = 10  # differing keys printed per cell


def value_at(cell: dict, path: str):
    """The value at a path result_differences printed ("a.b[2].c")."""
    node = cell
    for part in path.replace("[", ".[").split("."):
        if not part:
            continue
        try:
            node = node[int(part[1:-1])] if part.startswith("[") else node[part]
        except (KeyError, IndexError, TypeError, ValueError):
            return "(absent)"
    return node


def problems_of(run_dir: Path, name: str, cells: dict[str, dict]) -> list[str]:
    """Why a run's cells cannot be compared: none, failed or idle cells."""
    if not cells:
        return [f"{name}: no cell-*.json in {run_dir}"]
    out = []
    for cid, c in cells.items():
        if c.get("status") != "ok":
            out.append(f"{name} {cid}: status {c.get('status')}: {c.get('error')}")
        elif not c.get("devmodel", {}).get("service_ns", {}).get("read", {}).get("count"):
            out.append(f"{name} {cid}: no read went through the device model")
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("a", type=Path)
    ap.add_argument("b", type=Path)
    ap.add_argument("--names", default="A,B", help="what to call the two runs (A,B)")
    args = ap.parse_args()
    names = args.names.split(",", 1)
    a, b = diverge.cells_of(args.a), diverge.cells_of(args.b)
    problems = problems_of(args.a, names[0], a) + problems_of(args.b, names[1], b)
    if sorted(a) != sorted(b):
        problems.append(f"cells: {names[0]} has {sorted(a)}, {names[1]} has {sorted(b)}")
    for cid in sorted(set(a) & set(b)):
        diffs = diverge.result_differences(a[cid], b[cid])
        if diffs:
            problems.append(f"{cid}: {len(diffs)} key(s) differ; the first:")
            problems += [f"  {d}: {names[0]} {json.dumps(value_at(a[cid], d))[:200]}, "
                         f"{names[1]} {json.dumps(value_at(b[cid], d))[:200]}"
                         for d in diffs[:SHOWN]]
        ca, cb = (diverge.console_until_done(args.a, a[cid]),
                  diverge.console_until_done(args.b, b[cid]))
        if ca is None or ca != cb:
            problems.append(f"{cid}: the console logs differ before '{diverge.CELL_DONE}'")
    if problems:
        print("\n".join(problems))
        return 1
    print(f"{len(a)} cells, the same bytes in {names[0]} and {names[1]} "
          f"(all but {', '.join(diverge.HOST_KEYS)}); "
          f"consoles the same up to '{diverge.CELL_DONE}'")
    return 0


if __name__ == "__main__":
    sys.exit(main())
