"""Facts that change what a cell's figures mean, in one place: the table
`blklab run` prints, `blklab report` and the cell's JSON all read them
from here.

- tunables the kernel adjusted (in_effect.adjusted);
- the workload's own fix-ups (workload_notes): blkgen's "note:" lines, and
  for fio, what comparing a job's options with what fio ran shows (a
  synchronous engine at depth 1 under iodepth > 1, a job with no ioengine);
- host timing (model_timing): completions not at a model deadline, or a
  QEMU that does not report them;
- a guest that did not halt cleanly before the counters were read
  (host.halt), and an accelerator other than the one asked for
  (host.accel_fallback).
"""

from __future__ import annotations

from typing import Any

from blklab import model_timing

# fio's engines that complete each I/O before issuing the next (fio's
# HOWTO: "iodepth ... Note that increasing iodepth beyond 1 will not
# affect synchronous ioengines"). fio's default engine on Linux is psync.
SYNC_ENGINES = ("sync", "psync", "vsync", "pvsync", "pvsync2")
FIO_DEFAULT_ENGINE = "psync"


def blkgen_notes(stderr: str) -> list[str]:
    """blkgen's notes ("note: job 'x': ..." on its stderr), without the
    prefix."""
    return [line[len("note: "):].strip() for line in stderr.splitlines()
            if line.startswith("note: ")]


def fio_notes(workload: dict[str, Any] | None) -> list[str]:
    """What fio changed without saying so, from its JSON: each job's
    options ("job options") against the depths it issued at
    ("iodepth_level", percent of I/Os per depth bucket)."""
    out = []
    for job in (workload or {}).get("jobs", []):
        options = job.get("job options", {})
        name = job.get("jobname", options.get("name", "?"))
        engine = options.get("ioengine")
        try:
            depth = int(options.get("iodepth", "1"))
        except ValueError:
            continue
        named = engine is not None
        engine = engine or FIO_DEFAULT_ENGINE
        if depth > 1 and engine in SYNC_ENGINES:
            levels = job.get("iodepth_level", {})
            at_one = levels.get("1")
            ran = f" (fio's iodepth_level: {at_one:g}% of I/Os at depth 1)" \
                if isinstance(at_one, (int, float)) else ""
            why = (f"it names no ioengine, so fio ran its default, {engine}, which is "
                   "synchronous" if not named else f"ioengine {engine} is synchronous")
            out.append(f"job '{name}': iodepth={depth} asked, but {why}: queue depth 1"
                       f"{ran}")
        elif not named:
            out.append(f"job '{name}': names no ioengine; fio ran its default, {engine}")
    return out


def adjusted(cell: dict[str, Any]) -> list[str]:
    return [f"{a['tunable']} was written as {a['asked']}, the kernel has {a['in_effect']}"
            for a in (cell.get("in_effect") or {}).get("adjusted", [])]


def cell_notes(cell: dict[str, Any], with_adjusted: bool = True) -> list[str]:
    """Every note about one cell, adjusted tunables first (unless not
    with_adjusted: the report has a table of its own for them)."""
    out = adjusted(cell) if with_adjusted else []
    out += [f"{cell['request'].get('workload', 'workload')}: {n}"
            for n in cell.get("workload_notes") or []]
    # A cell recorded before model_timing existed is judged by its counters.
    timing = model_timing.note(cell.get("model_timing")
                               or model_timing.assess(cell.get("devmodel")))
    if timing:
        out.append(timing)
    host = cell.get("host") or {}
    if host.get("halt") not in (None, "clean"):
        out.append(f"the guest did not halt cleanly: {host['halt']}")
    if host.get("accel_fallback"):
        out.append(f"accelerator: {host['accel_fallback']}")
    return out


def lines(cells: list[dict[str, Any]]) -> list[str]:
    """'note: CELL: TEXT' for every note of every cell; a note that every
    cell of several has is printed once, as 'note: every cell: TEXT'."""
    per_cell = [(c["cell_id"], cell_notes(c)) for c in cells]
    common = [n for n in (per_cell[0][1] if len(per_cell) > 1 else [])
              if all(n in notes for _, notes in per_cell)]
    return ([f"note: every cell: {n}" for n in common]
            + [f"note: {cid}: {n}" for cid, notes in per_cell for n in notes if n not in common])
