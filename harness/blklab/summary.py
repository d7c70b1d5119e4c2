"""One table over several runs: per scenario, its cells and its expectations
by verdict, and the wall time it took. `make test-full` writes it
(tests/full/run-full.py) for every scenario's full form."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from blklab import expectations, runner


@dataclass
class RunRow:
    scenario: str
    run_dir: Path
    cells_ok: int
    cells_failed: int
    counts: dict[str, int]  # verdict -> outcomes (expectations.STATUS_WORDS)
    wall_seconds: float

    @property
    def passed(self) -> bool:
        """No failed cell, and nothing `blklab check` fails on."""
        return self.cells_failed == 0 and not any(self.counts[s] for s in expectations.FAILING)


def row(scenario: str, run_dir: Path, wall_seconds: float) -> RunRow:
    """The row of one run directory (its cells as recorded, expectations
    evaluated as `blklab check` does). A cell the manifest lists without a
    result counts as failed."""
    run = runner.load_run(run_dir)
    outcomes = expectations.evaluate(run.scenario, run.cells)
    ok = sum(c["status"] == "ok" for c in run.cells)
    listed = len(run.manifest.get("cells", []))
    return RunRow(scenario, run_dir, ok, max(listed, len(run.cells)) - ok,
                  expectations.counts(outcomes), wall_seconds)


def _minutes(seconds: float) -> str:
    return f"{int(seconds // 60)} min {int(seconds % 60):02d} s"


def markdown(rows: list[RunRow]) -> str:
    """A Markdown table, one row per run and a total."""
    statuses = [s for s, _ in expectations.STATUS_WORDS]
    head = ["scenario", "cells ok", "cells failed"] + statuses + ["wall time"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        lines.append("| " + " | ".join([r.scenario, str(r.cells_ok), str(r.cells_failed)]
                                       + [str(r.counts[s]) for s in statuses]
                                       + [_minutes(r.wall_seconds)]) + " |")
    total = ["all", str(sum(r.cells_ok for r in rows)), str(sum(r.cells_failed for r in rows))]
    total += [str(sum(r.counts[s] for r in rows)) for s in statuses]
    total.append(_minutes(sum(r.wall_seconds for r in rows)))
    lines.append("| " + " | ".join(f"**{t}**" for t in total) + " |")
    return "\n".join(lines) + "\n"
