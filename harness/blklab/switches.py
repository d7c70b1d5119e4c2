"""Scheduler switches under load (scenario.switch_schedulers): each switch
the guest logged in switches.txt, set against the workload's time series
(blkgen's jobs[].blkgen.time_series), to measure the latency spike of each
switch.

The guest's switch times count from the workload's first completed I/O and
the time series from blkgen's start of measurement; the two differ by one
I/O latency plus the guest's 2 ms polling, so a switch is matched with every
series interval that overlaps [start - 1 interval, end + 2 intervals]:
requests held while elevator_switch() has the queue frozen complete, and are
counted, after it.
"""

from __future__ import annotations

import json
import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SWITCHES_FILE = "switches.txt"


@dataclass(frozen=True)
class Switch:
    start_us: int  # since the workload's first completed I/O
    duration_us: int  # how long the write to queue/scheduler took
    scheduler: str
    ok: bool
    error: str = ""


def parse(text: str) -> list[Switch]:
    """switches.txt: '# ...' comments, then '<start> <duration> <name> ok'
    or '... fail <error>' per switch."""
    out = []
    for line in text.splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        parts = line.split(maxsplit=4)
        if len(parts) < 4:
            raise ValueError(f"switches.txt: malformed line {line!r}")
        out.append(Switch(int(parts[0]), int(parts[1]), parts[2], parts[3] == "ok",
                          parts[4] if len(parts) > 4 else ""))
    return out


@dataclass(frozen=True)
class Spike:
    switch: Switch
    p99_ns: float | None  # worst interval p99 around the switch
    iops: float | None  # lowest interval IOPS around the switch
    # How much longer than its nominal length the longest interval around
    # the switch lasted, in ns. blkgen ends an interval at its first
    # completion or submission past the nominal end, and a submitter held
    # in blk_queue_enter() while the queue is frozen gets to neither: with
    # intervals shorter than the freeze, this is the freeze to within one.
    held_ns: int = 0


@dataclass(frozen=True)
class CellSwitches:
    cell_id: str
    job: str
    direction: str
    interval_ns: int
    baseline_p99_ns: float | None  # median interval p99 away from every switch
    baseline_iops: float | None
    spikes: list[Spike]


def _series(cell: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    """(job, direction, time series) for every job and direction with one."""
    out = []
    for job in (cell.get("workload") or {}).get("jobs", []):
        ts = (job.get("blkgen") or {}).get("time_series")
        if not ts or not ts.get("end_ns"):
            continue
        for direction in ("read", "write", "trim"):
            if direction in ts and any(ts[direction]["iops"]):
                out.append((job.get("jobname", "?"), direction, ts))
    return out


def analyze(cell: dict[str, Any], switches: list[Switch]) -> list[CellSwitches]:
    out = []
    for job, direction, ts in _series(cell):
        ends = ts["end_ns"]
        interval = int(ts.get("interval_ns") or (ends[0] if ends else 1))
        starts = [0] + ends[:-1]
        p99 = ts[direction]["clat_p99_ns"]
        iops = ts[direction]["iops"]

        def near(i: int, sw: Switch) -> bool:
            lo = sw.start_us * 1000 - interval
            hi = (sw.start_us + sw.duration_us) * 1000 + 2 * interval
            return starts[i] < hi and ends[i] > lo

        quiet = [i for i in range(len(ends)) if not any(near(i, s) for s in switches)]
        base_p99 = statistics.median(p99[i] for i in quiet) if quiet else None
        base_iops = statistics.median(iops[i] for i in quiet) if quiet else None
        spikes = []
        for sw in switches:
            idx = [i for i in range(len(ends)) if near(i, sw)]
            held = max((ends[i] - starts[i] - interval for i in idx), default=0)
            spikes.append(Spike(sw, max((p99[i] for i in idx), default=None),
                                min((iops[i] for i in idx), default=None), max(0, held)))
        out.append(CellSwitches(cell["cell_id"], job, direction, interval, base_p99, base_iops,
                                spikes))
    return out


def load_run(run_dir: Path) -> list[tuple[dict[str, Any], list[Switch]]]:
    """Every cell of a run that has a switch log, with its switches."""
    out = []
    for path in sorted(run_dir.glob("cell-*.json")):
        cell = json.loads(path.read_text())
        rel = (cell.get("files") or {}).get(SWITCHES_FILE)
        if not rel or not (run_dir / rel).exists():
            continue
        out.append((cell, parse((run_dir / rel).read_text())))
    return out


def _us(ns: float | None) -> str:
    return "-" if ns is None else f"{ns / 1000:.0f}"


def render(run_dir: Path) -> str:
    """A table per cell, job and direction: each switch, how long the write
    to queue/scheduler took, how long the workload was held past an interval
    around it, the worst interval p99 and lowest IOPS around it, against the
    median of the intervals away from every switch."""
    lines = []
    for cell, switches in load_run(run_dir):
        failed = [s for s in switches if not s.ok]
        lines.append(f"== {cell['cell_id']}: {len(switches)} switches, {len(failed)} failed, "
                     f"cell {cell.get('status')}")
        for cs in analyze(cell, switches):
            lines.append(f"-- job {cs.job} {cs.direction}: interval {cs.interval_ns / 1e6:g} ms, "
                         f"away from switches p99 {_us(cs.baseline_p99_ns)} us, "
                         f"IOPS {cs.baseline_iops or 0:.0f}")
            lines.append(f"{'#':>3} {'at ms':>8} {'to':<12} {'took ms':>8} {'held ms':>8} "
                         f"{'p99 us':>9} {'x base':>7} {'IOPS':>8}")
            for n, sp in enumerate(cs.spikes, 1):
                sw = sp.switch
                ratio = (f"{sp.p99_ns / cs.baseline_p99_ns:.1f}"
                         if sp.p99_ns and cs.baseline_p99_ns else "-")
                lines.append(f"{n:>3} {sw.start_us / 1000:>8.1f} {sw.scheduler:<12} "
                             f"{sw.duration_us / 1000:>8.2f} {sp.held_ns / 1e6:>8.2f} "
                             f"{_us(sp.p99_ns):>9} {ratio:>7} "
                             f"{sp.iops if sp.iops is not None else 0:>8.0f}"
                             + ("" if sw.ok else f"  FAILED: {sw.error}"))
    return "\n".join(lines) if lines else f"{run_dir}: no cell has a scheduler switch log"
