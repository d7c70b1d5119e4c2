#!/usr/bin/python3
"""Whether two runs of one scenario gave the same cells: tests/host/debian13.sh's verdict.

Each cell's JSON must be the same in both runs apart from the keys that
record the host (blklab.diverge.HOST_KEYS: wall-clock seconds, scratch
paths, which host files were kept), the rule the determinism tests use, and
each console log must be the same up to the line the guest init prints
when it has sent its results. An application job's own results
(`workload.apps`: transactions, tps, latency percentiles, histogram) are
part of the compared JSON. The images the cells ran must be the same
builds: the guest image's cache key and SHA-256s (the cell's `image`,
compared with the rest) and the applications' image's (`host.apps_image`,
which sits under the host keys, so it is compared here on its own: its
cache key and the squashfs's SHA-256 and size). Every cell must have
finished ("ok") and done I/O through the device model, and every
application job must have run transactions without an error, so that an
empty or failed run cannot pass. Prints the first differing keys with both
values, or which images both runs used; exits 1 on any difference.

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
    """Why a run's cells cannot be compared: none, failed or idle cells, or
    an application job that ran no transaction."""
    if not cells:
        return [f"{name}: no cell-*.json in {run_dir}"]
    out = []
    for cid, c in cells.items():
        if c.get("status") != "ok":
            out.append(f"{name} {cid}: status {c.get('status')}: {c.get('error')}")
        elif not c.get("devmodel", {}).get("service_ns", {}).get("read", {}).get("count"):
            out.append(f"{name} {cid}: no read went through the device model")
        for job in (c.get("workload") or {}).get("apps", []):
            if "error" in job or not job.get("transactions"):
                out.append(f"{name} {cid}: application job {job.get('name')} ran no "
                           f"transaction: {job.get('error', 'transactions 0')}")
    return out


def apps_image_of(cell: dict) -> dict | None:
    """The applications' image the cell mounted (build-apps.sh's apps.json),
    or None for a cell without [guest] apps."""
    return cell.get("host", {}).get("apps_image")


def images_line(cells: dict[str, dict]) -> str:
    """Which builds the cells ran, by cache key and SHA-256."""
    guest = sorted({(c["image"].get("kernel"), c["image"].get("hash"),
                     c["image"].get("initramfs_sha256")) for c in cells.values()
                    if c.get("image")}, key=str)
    apps = sorted({(a.get("hash"), a.get("squashfs_sha256"), a.get("squashfs_bytes"))
                   for a in map(apps_image_of, cells.values()) if a}, key=str)
    parts = [f"guest image {k} {h} (initramfs sha256 {s})" for k, h, s in guest]
    parts += [f"applications' image {h} (squashfs sha256 {s}, {n} bytes)" for h, s, n in apps]
    return "; ".join(parts) or "no image recorded"


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
        # The applications' image is recorded under "host", which
        # result_differences leaves out; its bytes reach the guest.
        diffs += ["host.apps_image" + ("" if d == "(root)" else "." + d)
                  for d in diverge.result_differences(apps_image_of(a[cid]),
                                                      apps_image_of(b[cid]), skip=())]
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
    for cid, c in sorted(a.items()):
        for j in (c.get("workload") or {}).get("apps", []):
            print(f"{cid}: application job {j.get('name')} ({j.get('app')}"
                  f"{' ' + j['test'] if j.get('test') else ''}) the same in both: "
                  f"{j.get('transactions')} transactions, tps {j.get('tps')}, p99 "
                  f"{j.get('latency_ms', {}).get('percentiles', {}).get('99')} ms")
    print(f"both built from the same images: {images_line(a)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
