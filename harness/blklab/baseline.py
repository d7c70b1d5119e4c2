"""Baselines: a run's aggregated metrics saved under a name, and the
comparison of a later run against them (the habit of keeping fio JSON from
before and after a change, made into a command).

A metric regresses when it moved in its worse direction (IOPS and
bandwidth down, latency up) and the change is real: its 95% bootstrap
interval of the ratio excludes 1, or, in deterministic mode, the values are
exact and the change exceeds the tolerance.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from blklab import inputs, stats
from blklab.errors import BlklabError
from blklab.results import write_atomic

BASELINE_SCHEMA_VERSION = 1
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


def baseline_path(results_root: Path, name: str) -> Path:
    if not _NAME.match(name):
        raise BlklabError(f"baseline name '{name}' must be 1-64 of letters, digits, '_', '.', '-'")
    return results_root / "baselines" / f"{name}.json"


def snapshot(cells: list[dict[str, Any]], manifest: dict[str, Any]) -> dict[str, Any]:
    return {
        "schema_version": BASELINE_SCHEMA_VERSION,
        "run_id": manifest.get("run_id"),
        "mode": manifest.get("mode"),
        "scenario": manifest.get("scenario", {}),
        # What the figures were measured with (blklab.inputs).
        "inputs": inputs.of_manifest(manifest),
        "rows": {r.key: {m: e.values for m, e in r.estimates.items()}
                 for r in stats.aggregate(cells)},
    }


def save(path: Path, cells: list[dict[str, Any]], manifest: dict[str, Any]) -> dict[str, Any]:
    data = snapshot(cells, manifest)
    if not data["rows"]:
        raise BlklabError("the run has no successful cells to save as a baseline")
    write_atomic(path, json.dumps(data, indent=2, sort_keys=True) + "\n")
    return data


def load(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        raise BlklabError(f"{path}: no such baseline") from None
    except (OSError, ValueError) as e:
        raise BlklabError(f"{path}: not a readable baseline: {e}") from None
    if data.get("schema_version") != BASELINE_SCHEMA_VERSION:
        raise BlklabError(f"{path}: baseline schema version {data.get('schema_version')} "
                          f"is not {BASELINE_SCHEMA_VERSION}")
    return data


@dataclass
class Change:
    key: str
    metric: str
    base: float
    new: float
    ratio: float | None
    low: float | None
    high: float | None
    verdict: str  # "regressed", "improved", "unchanged", "no interval", "missing"

    @property
    def change_pct(self) -> float | None:
        return None if self.ratio is None else (self.ratio - 1) * 100


def compare(base: dict[str, Any], new: dict[str, Any], tolerance_pct: float = 0.0
            ) -> list[Change]:
    exact = base.get("mode") == "deterministic" and new.get("mode") == "deterministic"
    out = []
    for key, metrics in base["rows"].items():
        for metric, bvals in metrics.items():
            nvals = new["rows"].get(key, {}).get(metric)
            b = stats.bootstrap_median(bvals).median
            if not nvals:
                out.append(Change(key, metric, b, float("nan"), None, None, None, "missing"))
                continue
            c = stats.compare(metric, "new", nvals, "base", bvals)
            n = stats.bootstrap_median(nvals).median
            higher_better = stats.HIGHER_IS_BETTER.get(metric, False)
            worse = (c.ratio is not None and
                     (c.ratio < 1 if higher_better else c.ratio > 1))
            moved = c.ratio is not None and abs(c.ratio - 1) * 100 > tolerance_pct
            if c.ratio is None:
                verdict = "no interval"
            elif c.verdict == "significant" or ((c.verdict in ("exact", "single values"))
                                                and exact and moved):
                verdict = "regressed" if worse else "improved"
            elif c.verdict == "single values" and not exact:
                verdict = "no interval"
            else:
                verdict = "unchanged"
            out.append(Change(key, metric, b, n, c.ratio, c.low, c.high, verdict))
    return out


def input_warnings(base: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """Why the two may not compare like for like: each guest or QEMU input
    that differs between the baseline and the run."""
    if "inputs" not in base:
        return ["the baseline records no guest or QEMU inputs (saved by an older blklab): "
                "whether they match the run's is unknown"]
    return inputs.differences(base["inputs"], new["inputs"], "the baseline", "the run")


def render(changes: list[Change]) -> str:
    lines = [f"{'metric':<60} {'base':>12} {'new':>12} {'change':>8}  {'95% CI':>17}  verdict"]
    for c in changes:
        ci = "-" if c.low is None else f"[{c.low:.3f}, {c.high:.3f}]"
        pct = "-" if c.change_pct is None else f"{c.change_pct:+.1f}%"
        lines.append(f"{c.key + ' ' + c.metric:<60} {c.base:>12.6g} {c.new:>12.6g} {pct:>8}  "
                     f"{ci:>17}  {c.verdict}")
    return "\n".join(lines)
