"""A customer's fio JSON beside a run's cells (blklab compare-fio).

Per direction: IOPS and completion latency (fio's clat_ns: mean, p50, p99,
p99.9, p99.99), the customer's figure, each cell's and their ratio
(cell / customer). The customer's file is fio 3.x's JSON layout (jobs[],
read/write/trim, clat_ns with its percentile table); a blkgen cell has the
same layout. Several jobs of one side are combined: IOPS add up, the mean
is weighted by I/O count; percentiles of several jobs cannot be combined
from fio's summary, so they are shown only for one job (or with
group_reporting, which gives one) and otherwise as "n/a" with the reason.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from blklab.errors import BlklabError

DIRECTIONS = ("read", "write", "trim")
PERCENTILES = (("p50", "50.000000"), ("p99", "99.000000"), ("p99.9", "99.900000"),
               ("p99.99", "99.990000"))
METRICS = ("iops", "mean_us") + tuple(f"{name}_us" for name, _ in PERCENTILES)


class FioJsonError(BlklabError):
    """A fio JSON file blklab cannot read: names the file and the key."""

    exit_code = 2


@dataclass(frozen=True)
class Figures:
    """One side's figures for one direction; None = not available."""

    ios: int
    values: dict[str, float | None]
    note: str = ""


def _number(path: str, key: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise FioJsonError(f"{path}: {key}: must be a number, not {value!r}")
    return float(value)


def direction_figures(path: str, doc: dict[str, Any], direction: str) -> Figures | None:
    """The combined figures of `direction` over doc's jobs; None if no job
    did I/O in it. Raises FioJsonError naming the key that is wrong."""
    jobs = doc.get("jobs")
    if not isinstance(jobs, list):
        raise FioJsonError(f"{path}: jobs: missing or not a list; is this fio's "
                           "--output-format=json (fio 3.x)?")
    parts = []
    for i, job in enumerate(jobs):
        if not isinstance(job, dict):
            raise FioJsonError(f"{path}: jobs[{i}]: must be an object")
        d = job.get(direction)
        if d is None:
            continue
        key = f"jobs[{i}].{direction}"
        if not isinstance(d, dict):
            raise FioJsonError(f"{path}: {key}: must be an object")
        ios = int(_number(path, f"{key}.total_ios", d.get("total_ios", 0)))
        if ios == 0:
            continue
        if "clat_ns" not in d:
            raise FioJsonError(f"{path}: {key}.clat_ns: missing (fio 2.x reported 'clat' in "
                               "us; blklab reads fio 3.x's layout)")
        clat = d["clat_ns"]
        if not isinstance(clat, dict):
            raise FioJsonError(f"{path}: {key}.clat_ns: must be an object")
        parts.append((key, ios, _number(path, f"{key}.iops", d.get("iops")), clat))
    if not parts:
        return None
    total = sum(p[1] for p in parts)
    values: dict[str, float | None] = {
        "iops": sum(p[2] for p in parts),
        "mean_us": sum(_number(path, f"{k}.clat_ns.mean", c.get("mean")) * n
                       for k, n, _, c in parts) / total / 1000.0,
    }
    note = ""
    if len(parts) == 1:
        key, _, _, clat = parts[0]
        table = clat.get("percentile", {})
        if not isinstance(table, dict):
            raise FioJsonError(f"{path}: {key}.clat_ns.percentile: must be an object")
        for name, fio_key in PERCENTILES:
            v = table.get(fio_key)
            values[f"{name}_us"] = None if v is None else _number(
                path, f"{key}.clat_ns.percentile.{fio_key}", v) / 1000.0
        missing = [name for name, k in PERCENTILES if k not in table]
        if missing:
            note = f"not in the percentile_list: {', '.join(missing)}"
    else:
        for name, _ in PERCENTILES:
            values[f"{name}_us"] = None
        note = (f"{len(parts)} jobs: percentiles of separate jobs do not combine "
                "(run fio with group_reporting)")
    return Figures(total, values, note)


def load_fio_json(path: Path) -> dict[str, Any]:
    """fio's JSON output; fio may print notes before the opening brace."""
    try:
        text = path.read_text(errors="replace")
    except OSError as e:
        raise FioJsonError(f"{path}: cannot be read: {e.strerror}") from None
    start = text.find("{")
    if start < 0:
        raise FioJsonError(f"{path}: no JSON object (expected fio --output-format=json)")
    try:
        doc = json.loads(text[start:])
    except ValueError as e:
        raise FioJsonError(f"{path}: not valid JSON: {e}") from None
    if not isinstance(doc, dict):
        raise FioJsonError(f"{path}: the top level must be an object")
    return doc


@dataclass(frozen=True)
class Row:
    cell: str
    direction: str
    customer: Figures
    ours: Figures | None


def compare(customer_path: Path, customer: dict[str, Any],
            cells: list[dict[str, Any]]) -> list[Row]:
    """One row per cell and direction the customer's file has."""
    rows = []
    theirs = {d: direction_figures(str(customer_path), customer, d) for d in DIRECTIONS}
    if not any(theirs.values()):
        raise FioJsonError(f"{customer_path}: jobs: no job did any I/O")
    for cell in cells:
        cid = cell.get("cell_id", "?")
        wl = cell.get("workload") if cell.get("status") == "ok" else None
        for d in DIRECTIONS:
            if theirs[d] is None:
                continue
            ours = direction_figures(f"cell {cid}", wl, d) if isinstance(wl, dict) else None
            rows.append(Row(cid, d, theirs[d], ours))
    return rows


def fmt(v: float | None) -> str:
    """A figure with 3 significant digits (whole numbers from 100), or n/a."""
    if v is None:
        return "n/a"
    if v >= 100:
        return f"{v:.0f}"
    return f"{v:.3g}" if v < 10 else f"{v:.1f}"


def fmt_ratio(a: float | None, b: float | None) -> str:
    """a / b to two decimals, or n/a."""
    if a is None or b is None or b == 0:
        return "n/a"
    return f"{a / b:.2f}"


def table_rows(rows: list[Row]) -> list[list[str]]:
    """Header and body: one line per cell, direction and metric."""
    out = [["cell", "dir", "metric", "customer", "blklab", "blklab/customer"]]
    for r in rows:
        for m in METRICS:
            theirs = r.customer.values.get(m)
            ours = r.ours.values.get(m) if r.ours else None
            out.append([r.cell, r.direction, m, fmt(theirs), fmt(ours), fmt_ratio(ours, theirs)])
    return out


def render(customer_path: Path, rows: list[Row]) -> str:
    body = table_rows(rows)
    widths = [max(len(line[i]) for line in body) for i in range(len(body[0]))]
    lines = [f"customer: {customer_path} (clat: completion latency, us; iops: I/O per s)"]
    for r in {(r.direction, r.customer.note) for r in rows if r.customer.note}:
        lines.append(f"customer {r[0]}: {r[1]}")
    for line in body:
        lines.append("  ".join(c.ljust(w) for c, w in zip(line, widths)).rstrip())
    unmatched = sorted({r.cell for r in rows if r.ours is None})
    if unmatched:
        lines.append("cells without figures for a direction the customer has: "
                     + ", ".join(unmatched))
    return "\n".join(lines)
