"""When each job was served: its turns on the device and the gaps between
them, from blkgen's time series (jobs[].blkgen.time_series).

blkgen closes a time-series interval at its first completion or submission
past the interval's nominal end. An interval that lasted `gap` or more past
its nominal length therefore holds at least that long with no completion:
the job was held (in the scheduler, a cgroup limit or the device) or
served a trickle. Such intervals are the gaps; the runs of intervals between
them are the job's turns. A scheduler that serves one queue at a time for
seconds (bfq with weight raising on a disk) shows as a few long turns per
job; one that interleaves them shows as a single turn.

A turn's edges are known to within one interval: the completions that
close a gap count in the gap, and a gap's quiet part may begin anywhere in
its first nominal interval. Every completion of the measured phase is in
exactly one turn or gap, so their I/O adds up to the job's total.
"""

from __future__ import annotations

import fnmatch
import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from blklab.errors import BlklabError

DIRECTIONS = ("read", "write", "trim")


@dataclass(frozen=True)
class Span:
    kind: str  # "turn" or "gap"
    start_ns: int  # since blkgen's measured phase began
    end_ns: int
    ios: dict[str, int]  # completions per direction in the span

    @property
    def total(self) -> int:
        return sum(self.ios.values())


@dataclass(frozen=True)
class JobTurns:
    cell_id: str
    job: str  # "name", or "name[k]" for a member of a group_reporting job
    interval_ns: int
    gap_ns: int
    spans: list[Span]
    truncated: bool  # blkgen ran out of series points: the end is missing

    @property
    def turns(self) -> list[Span]:
        return [s for s in self.spans if s.kind == "turn"]

    @property
    def length_ns(self) -> int:
        return self.spans[-1].end_ns if self.spans else 0

    @property
    def served_ns(self) -> int:
        return sum(s.end_ns - s.start_ns for s in self.turns)


def _ios(ts: dict[str, Any], i: int, length_ns: int) -> dict[str, int]:
    """Completions per direction in interval i: blkgen writes each interval's
    IOPS over its own length, so IOPS x length gives back the count."""
    return {d: round(ts[d]["iops"][i] * length_ns / 1e9)
            for d in DIRECTIONS if isinstance(ts.get(d), dict)}


def _add(a: dict[str, int], b: dict[str, int]) -> dict[str, int]:
    return {d: a.get(d, 0) + b.get(d, 0) for d in sorted(set(a) | set(b), key=DIRECTIONS.index)}


def spans_of(ts: dict[str, Any], gap_ns: int) -> list[Span]:
    """A time series cut into turns and gaps (see the module's docstring)."""
    interval = int(ts["interval_ns"])
    spans: list[Span] = []
    prev = 0
    for i, end in enumerate(ts["end_ns"]):
        length = end - prev
        kind = "gap" if length - interval >= gap_ns else "turn"
        ios = _ios(ts, i, length)
        if spans and spans[-1].kind == kind:
            last = spans.pop()
            spans.append(Span(kind, last.start_ns, end, _add(last.ios, ios)))
        else:
            spans.append(Span(kind, prev, end, _add({}, ios)))
        prev = end
    return spans


def job_series(job: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """(label, time series) for a job: blkgen's jobs[].blkgen.time_series,
    or with group_reporting one per member (member_time_series). A series
    holds columns: end_ns[], and per direction iops[] and clat_p99_ns[]."""
    b = job.get("blkgen") or {}
    name = job.get("jobname", "?")
    if isinstance(b.get("time_series"), dict):
        found = [(name, b["time_series"])]
    else:
        found = [(f"{name}[{k}]", ts) for k, ts in enumerate(b.get("member_time_series") or [])]
    return [(label, ts) for label, ts in found if isinstance(ts, dict) and ts.get("end_ns")]


def analyze(cell: dict[str, Any], gap_ms: float | None = None) -> list[JobTurns]:
    """Turns of every job of a cell with a time series. gap_ms: how far an
    interval must overrun to be a gap (default: half the interval)."""
    out = []
    for job in (cell.get("workload") or {}).get("jobs", []):
        for label, ts in job_series(job):
            interval = int(ts["interval_ns"])
            gap = int(gap_ms * 1e6) if gap_ms is not None else interval // 2
            out.append(JobTurns(cell["cell_id"], label, interval, gap, spans_of(ts, gap),
                                bool(ts.get("truncated"))))
    return out


def load(run_dir: Path, cell_glob: str | None) -> list[dict[str, Any]]:
    """The run's cells (cell-*.json), those whose id matches cell_glob."""
    paths = sorted(run_dir.glob("cell-*.json"))
    if not paths:
        raise BlklabError(f"{run_dir}: no cell-*.json: not a run directory, or no cell finished")
    cells = []
    for p in paths:
        try:
            cells.append(json.loads(p.read_text()))
        except (OSError, json.JSONDecodeError) as e:
            raise BlklabError(f"{p}: not a readable cell result: {e}") from e
    if cell_glob is None:
        return cells
    chosen = [c for c in cells if fnmatch.fnmatchcase(c.get("cell_id", ""), cell_glob)]
    if not chosen:
        ids = ", ".join(c.get("cell_id", "?") for c in cells)
        raise BlklabError(f"{run_dir}: --cell {cell_glob!r} matches none of the cells: {ids}")
    return chosen


def _s(ns: int) -> str:
    return f"{ns / 1e9:.2f}"


def _ios_text(ios: dict[str, int]) -> str:
    return " + ".join(f"{n} {d}" for d, n in ios.items() if n) or "0"


def render(run_dir: Path, cell_glob: str | None = None, gap_ms: float | None = None) -> str:
    lines = []
    for cell in load(run_dir, cell_glob):
        jobs = analyze(cell, gap_ms)
        lines.append(f"== {cell.get('cell_id')} ({cell.get('status')})")
        if not jobs:
            lines.append("   no job has a time series (fio jobs have none; blkgen writes one)")
            continue
        for jt in jobs:
            total = sum(s.total for s in jt.spans)
            served = jt.served_ns / jt.length_ns if jt.length_ns else 0.0
            lines.append(f"-- {jt.job}: {len(jt.turns)} turn(s), served {served:.0%} of "
                         f"{_s(jt.length_ns)} s, {total} I/O (interval {jt.interval_ns / 1e6:g}"
                         f" ms, a gap overruns it by {jt.gap_ns / 1e6:g} ms or more)"
                         + ("; the series was truncated" if jt.truncated else ""))
            for s in jt.spans:
                secs = (s.end_ns - s.start_ns) / 1e9
                rate = f"{s.total / secs:.0f}/s" if secs > 0 else "-"
                where = f"{_s(s.start_ns)}-{_s(s.end_ns)} s"
                lines.append(f"   {s.kind:<4} {where:>15} {secs:>7.2f} s {_ios_text(s.ios):>14} I/O"
                             f" {rate:>7}")
    return "\n".join(lines)


def as_json(run_dir: Path, cell_glob: str | None = None, gap_ms: float | None = None) -> str:
    out = []
    for cell in load(run_dir, cell_glob):
        for jt in analyze(cell, gap_ms):
            out.append({"cell_id": jt.cell_id, "job": jt.job, "interval_ns": jt.interval_ns,
                        "gap_ns": jt.gap_ns, "truncated": jt.truncated,
                        "served_ns": jt.served_ns, "length_ns": jt.length_ns,
                        "spans": [asdict(s) for s in jt.spans]})
    return json.dumps(out, indent=1)
