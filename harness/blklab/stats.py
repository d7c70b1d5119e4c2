"""Statistics over a run's cells: medians with bootstrap intervals and
pairwise scheduler comparisons.

A group is every cell that differs only in seed and repeat. Each group's
metric is summarised by its median over those cells and a 95% percentile
bootstrap interval of the median (B resamples, a fixed generator seed so
the same results always give the same report). A comparison of two groups
is the ratio of their medians with a bootstrap interval of that ratio; it
is significant when the interval excludes 1.

Deterministic mode repeats give identical values; such a group is marked
"identical" (its interval is exact, not an estimate of noise), and a
comparison of two identical groups is exact.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from blklab.results import SUMMARY_METRICS as METRICS
# Larger is better for these; smaller is better for the latencies.
HIGHER_IS_BETTER = {"iops": True, "bw_bytes": True}
BOOTSTRAP_RESAMPLES = 2000
BOOTSTRAP_SEED = 20240601
CONFIDENCE = 0.95

_REPEAT = re.compile(r"\.r\d+$")
_SEED = re.compile(r"\.seed=\d+")


def group_id(cell_id: str) -> str:
    """The cell id without its seed and repeat: 'nvme0.kyber.seed=2.r1' ->
    'nvme0.kyber'."""
    return _SEED.sub("", _REPEAT.sub("", cell_id))


@dataclass
class Estimate:
    median: float
    low: float
    high: float
    n: int
    identical: bool  # every value equal (deterministic repeats)
    values: list[float] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"median": self.median, "ci95": [self.low, self.high], "n": self.n,
                "identical": self.identical, "values": self.values}


def _rng() -> np.random.Generator:
    return np.random.Generator(np.random.PCG64(BOOTSTRAP_SEED))


def bootstrap_median(values: list[float], resamples: int = BOOTSTRAP_RESAMPLES) -> Estimate:
    """Median with a 95% percentile-bootstrap interval."""
    if not values:
        raise ValueError("no values")
    a = np.asarray(values, dtype=float)
    median = float(np.median(a))
    identical = bool(np.all(a == a[0]))
    if identical or len(a) == 1:
        return Estimate(median, median, median, len(a), identical, list(map(float, a)))
    idx = _rng().integers(0, len(a), size=(resamples, len(a)))
    medians = np.median(a[idx], axis=1)
    alpha = (1 - CONFIDENCE) / 2
    low, high = np.quantile(medians, [alpha, 1 - alpha])
    return Estimate(median, float(low), float(high), len(a), False, list(map(float, a)))


@dataclass
class Comparison:
    metric: str
    a: str  # group ids
    b: str
    ratio: float | None  # median(a) / median(b)
    low: float | None
    high: float | None
    verdict: str  # "exact", "significant", "not significant", "single values", "undefined"

    def to_dict(self) -> dict[str, Any]:
        return {"metric": self.metric, "a": self.a, "b": self.b, "ratio": self.ratio,
                "ci95": [self.low, self.high], "verdict": self.verdict}


def compare(metric: str, a_id: str, a: list[float], b_id: str, b: list[float],
            resamples: int = BOOTSTRAP_RESAMPLES) -> Comparison:
    """The ratio of medians a / b with a bootstrap interval."""
    ea, eb = bootstrap_median(a), bootstrap_median(b)
    if eb.median == 0:
        return Comparison(metric, a_id, b_id, None, None, None, "undefined")
    ratio = ea.median / eb.median
    if ea.identical and eb.identical and (ea.n > 1 or eb.n > 1):
        return Comparison(metric, a_id, b_id, ratio, ratio, ratio, "exact")
    if ea.n == 1 and eb.n == 1:
        return Comparison(metric, a_id, b_id, ratio, None, None, "single values")
    rng = _rng()
    xa, xb = np.asarray(a, float), np.asarray(b, float)
    ma = np.median(xa[rng.integers(0, len(xa), size=(resamples, len(xa)))], axis=1)
    mb = np.median(xb[rng.integers(0, len(xb), size=(resamples, len(xb)))], axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratios = ma / mb
    ratios = ratios[np.isfinite(ratios)]
    alpha = (1 - CONFIDENCE) / 2
    low, high = (float(x) for x in np.quantile(ratios, [alpha, 1 - alpha]))
    verdict = "significant" if (low > 1 or high < 1) else "not significant"
    return Comparison(metric, a_id, b_id, ratio, low, high, verdict)


@dataclass
class Row:
    """One (group, job, direction) with its estimates per metric."""

    group: str
    device: str
    scheduler: str
    tunables: dict[str, str]
    job: str
    direction: str
    estimates: dict[str, Estimate]

    @property
    def key(self) -> str:
        return f"{self.group}/{self.job}/{self.direction}"

    def to_dict(self) -> dict[str, Any]:
        return {"group": self.group, "device": self.device, "scheduler": self.scheduler,
                "tunables": self.tunables, "job": self.job, "direction": self.direction,
                "metrics": {m: e.to_dict() for m, e in self.estimates.items()}}


def aggregate(cells: list[dict[str, Any]]) -> list[Row]:
    """Rows over the successful cells, in first-seen order."""
    values: dict[tuple[str, str, str], dict[str, list[float]]] = {}
    info: dict[tuple[str, str, str], tuple[str, str, dict[str, str]]] = {}
    for c in cells:
        if c.get("status") != "ok":
            continue
        g = group_id(c["cell_id"])
        req = c["request"]
        for s in c["summary"]:
            key = (g, s["job"], s["direction"])
            info.setdefault(key, (req["device"]["name"], req["scheduler"], req["tunables"]))
            per = values.setdefault(key, {m: [] for m in METRICS})
            for m in METRICS:
                if s.get(m) is not None:
                    per[m].append(float(s[m]))
    rows = []
    for key, per in values.items():
        device, sched, tunables = info[key]
        rows.append(Row(key[0], device, sched, tunables, key[1], key[2],
                        {m: bootstrap_median(v) for m, v in per.items() if v}))
    return rows


def scheduler_comparisons(cells: list[dict[str, Any]], metric: str) -> list[Comparison]:
    """Every pair of schedulers on the same device, job and direction, with
    the tunables that are not scheduler-specific equal."""
    buckets: dict[tuple, dict[str, list[float]]] = {}
    for c in cells:
        if c.get("status") != "ok":
            continue
        req = c["request"]
        common = tuple(sorted((k, v) for k, v in req["tunables"].items()
                              if not k.startswith("iosched/")))
        for s in c["summary"]:
            if s.get(metric) is None:
                continue
            b = buckets.setdefault((req["device"]["name"], common, s["job"], s["direction"]), {})
            b.setdefault(group_id(c["cell_id"]), []).append(float(s[metric]))
    out = []
    for (_, _, job, direction), groups in buckets.items():
        for (ga, va), (gb, vb) in itertools.combinations(groups.items(), 2):
            out.append(compare(metric, f"{ga}/{job}/{direction}", va,
                               f"{gb}/{job}/{direction}", vb))
    return out
