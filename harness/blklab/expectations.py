"""Evaluating a scenario's [[expect]] entries against a run's cells.

Each selector picks one group of cells (same device, scheduler and
tunables; an expectation's right side may name another device); within
it, a seed's value is the median of the metric over that seed's repeats.
An expectation is decided on every seed: it holds only if it holds on each
one, unless it says quorum = "median" (then it is decided once, on the
median over the seeds of each side's value). An expectation without a
device is checked on every device that has cells.

Every expectation of the scenario gets an outcome, one per device it is
checked on; none is dropped from a count:

  PASS             it holds
  FAIL             it fails, and is not known to
  KNOWN-FAIL       it fails, as its known_failure says
  UNEXPECTED-PASS  it is marked known_failure but holds: the mark must go
  NOT-RUN          marked full_only, and this is the short form
  ERROR            no data to decide it (a failed cell, a missing seed)

`blklab check` exits 1 on FAIL, UNEXPECTED-PASS and ERROR (see `failing`).
"""

from __future__ import annotations

import operator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from blklab.appjobs import APP_METRICS
from blklab.appjobs import metric as app_metric
from blklab.scenario import Expectation, Scenario, Selector
from blklab.stats import group_id

_OPS = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge}

PASS, FAIL, KNOWN_FAIL, UNEXPECTED_PASS, NOT_RUN, ERROR = (
    "PASS", "FAIL", "KNOWN-FAIL", "UNEXPECTED-PASS", "NOT-RUN", "ERROR")
# In the order the summary line counts them, with the words it uses.
STATUS_WORDS = ((PASS, "hold"), (FAIL, "fail"), (KNOWN_FAIL, "known failures"),
                (UNEXPECTED_PASS, "unexpected passes"), (NOT_RUN, "not run in this form"),
                (ERROR, "errors"))
# The statuses that make `blklab check` (and `blklab run`) exit non-zero.
FAILING = (FAIL, UNEXPECTED_PASS, ERROR)


@dataclass
class SeedValue:
    """One seed's decision: each side's value (median over the seed's
    repeats), the value compared with the bound (left, or left / right),
    and whether the expectation holds on this seed."""

    seed: int | None
    left: float
    right: float | None
    value: float | None
    holds: bool

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass
class Outcome:
    what: str
    device: str
    status: str  # one of the statuses above
    left: float | None  # each side's median over the seeds
    right: float | None
    detail: str
    source: str = ""
    known_failure: str | None = None
    quorum: str = "all"
    seeds: list[SeedValue] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        d = dict(self.__dict__)
        d["seeds"] = [s.to_dict() for s in self.seeds]
        return d

    def spread(self) -> tuple[float, float] | None:
        """The lowest and highest per-seed value, with two seeds or more."""
        values = [s.value for s in self.seeds if s.value is not None]
        return (min(values), max(values)) if len(values) > 1 else None

    def per_seed(self) -> str:
        """'seed 1: 4.82 holds, seed 2: 3.12 fails; spread 3.12-4.82', or ''
        with one seed."""
        if len(self.seeds) < 2:
            return ""
        parts = [f"seed {s.seed}: {_fmt(s.value) if s.value is not None else '-'} "
                 f"{'holds' if s.holds else 'fails'}" for s in self.seeds]
        lo, hi = self.spread() or (None, None)
        spread = f"; spread {_fmt(lo)}-{_fmt(hi)}" if lo is not None else ""
        return ", ".join(parts) + spread

    def line(self) -> str:
        text = f"{self.status:15} {self.what} [{self.device}]: {self.detail}"
        if self.per_seed():
            text += f" ({self.per_seed()}; quorum {self.quorum})"
        if self.known_failure and self.status in (KNOWN_FAIL, UNEXPECTED_PASS, NOT_RUN):
            text += f"\n{'':15} known failure: {self.known_failure}"
        if self.status == UNEXPECTED_PASS:
            text += f"\n{'':15} it holds now: remove its known_failure mark"
        return text


def _matches(cell: dict[str, Any], device: str, sel: Selector) -> bool:
    req = cell["request"]
    return (req["device"]["name"] == (sel.device or device)
            and sel.picks(req["scheduler"], req["tunables"]))


def _per_seed(cells: list[dict[str, Any]], device: str, sel: Selector, exp: Expectation
              ) -> tuple[dict[int | None, float] | None, str]:
    """({seed: median over that seed's repeats}, '') for the selected group,
    or (None, why not)."""
    groups: dict[str, dict[int | None, list[float]]] = {}
    failed = 0
    for c in cells:
        if not _matches(c, device, sel):
            continue
        if c.get("status") != "ok":
            failed += 1
            continue
        seed = c["request"].get("seed")
        for job, value in _values(c, exp):
            if value is None or (sel.job and job != sel.job):
                continue
            groups.setdefault(f"{group_id(c['cell_id'])}/{job}", {}).setdefault(
                seed, []).append(value)
    if not groups:
        why = f"{failed} failed cell(s)" if failed else "no cells"
        what = exp.metric if exp.metric in APP_METRICS else f"{exp.direction} {exp.metric}"
        return None, f"{_describe(sel)} has no {what} ({why})"
    if len(groups) > 1:
        return None, (f"{_describe(sel)} matches {len(groups)} groups "
                      f"({', '.join(sorted(groups))}); name a job or tunables")
    (by_seed,) = groups.values()
    if failed:
        return None, (f"{_describe(sel)}: {failed} failed cell(s); an expectation is decided "
                      "on every seed")
    return {seed: float(np.median(v)) for seed, v in sorted(
        by_seed.items(), key=lambda kv: (kv[0] is None, kv[0] or 0))}, ""


def _values(cell: dict[str, Any], exp: Expectation) -> list[tuple[str, float | None]]:
    """(job, value of the metric) in one cell: each summary row of the
    expectation's direction, or each application job (workload.apps) for
    an application's metric."""
    if exp.metric in APP_METRICS:
        return [(a["name"], app_metric(a, exp.metric))
                for a in (cell.get("workload") or {}).get("apps", [])]
    return [(s["job"], float(s[exp.metric]) if s.get(exp.metric) is not None else None)
            for s in cell["summary"] if s["direction"] == exp.direction]


def _describe(sel: Selector) -> str:
    parts = [f"device {sel.device}"] if sel.device else []
    if sel.scheduler:
        parts.append(sel.scheduler)
    if sel.job:
        parts.append(f"job {sel.job}")
    parts += [f"{k}={v}" for k, v in sel.tunables]
    return " ".join(parts) or "all cells"


def _fmt(x: float) -> str:
    return f"{x:.6g}"


def _decide(exp: Expectation, left: float, right: float | None
            ) -> tuple[bool | None, float | None]:
    """(holds, the value compared) for one pair of side values; holds is
    None when it cannot be decided (a ratio over 0)."""
    if exp.right is None:
        ok = True
        if exp.below is not None:
            ok &= left < exp.below
        if exp.above is not None:
            ok &= left > exp.above
        return ok, left
    assert right is not None
    if exp.op is not None:
        return _OPS[exp.op](left, right * exp.factor), (left / right if right else None)
    assert exp.ratio is not None
    if right == 0:
        return None, None
    ratio = left / right
    return exp.ratio[0] <= ratio <= exp.ratio[1], ratio


def _detail(exp: Expectation, left: float, right: float | None) -> str:
    m = exp.metric
    if exp.right is None:
        bounds = ([f"< {_fmt(exp.below)}"] if exp.below is not None else []) + \
                 ([f"> {_fmt(exp.above)}"] if exp.above is not None else [])
        return f"{_describe(exp.left)} {m} = {_fmt(left)}, expected {' and '.join(bounds)}"
    assert right is not None
    lhs, rhs = _describe(exp.left), _describe(exp.right)
    if exp.op is not None:
        scaled = f"{_fmt(exp.factor)} x " if exp.factor != 1 else ""
        return (f"{lhs} {m} = {_fmt(left)} {exp.op} {scaled}{rhs} {m} = {_fmt(right)}"
                + (f" (ratio {_fmt(left / right)})" if right else ""))
    assert exp.ratio is not None
    ratio = _fmt(left / right) if right else "undefined"
    return (f"{lhs} / {rhs} {m} = {_fmt(left)} / {_fmt(right)} = {ratio}, "
            f"expected in [{_fmt(exp.ratio[0])}, {_fmt(exp.ratio[1])}]")


def _verdict(exp: Expectation, holds: bool) -> str:
    if exp.known_failure:
        return UNEXPECTED_PASS if holds else KNOWN_FAIL
    return PASS if holds else FAIL


def evaluate_one(exp: Expectation, cells: list[dict[str, Any]], device: str) -> Outcome:
    def outcome(status: str, left: float | None, right: float | None, detail: str,
                seeds: list[SeedValue] | None = None) -> Outcome:
        return Outcome(exp.what, device, status, left, right, detail, exp.source,
                       exp.known_failure, exp.quorum, seeds or [])

    lefts, why = _per_seed(cells, device, exp.left, exp)
    if lefts is None:
        return outcome(ERROR, None, None, why)
    rights: dict[int | None, float] | None = None
    if exp.right is not None:
        rights, why = _per_seed(cells, device, exp.right, exp)
        if rights is None:
            return outcome(ERROR, float(np.median(list(lefts.values()))), None, why)
        if set(lefts) != set(rights):
            only = sorted(set(lefts) ^ set(rights), key=str)
            return outcome(ERROR, None, None, f"the two sides ran different seeds (only on "
                           f"one side: {', '.join(map(str, only))}); an expectation is "
                           "decided on every seed")
    seeds = []
    for seed, left in lefts.items():
        right = rights[seed] if rights is not None else None
        holds, value = _decide(exp, left, right)
        if holds is None:
            return outcome(ERROR, left, right, f"seed {seed}: {_describe(exp.right)} "
                           f"{exp.metric} is 0")
        seeds.append(SeedValue(seed, left, right, value, holds))
    left = float(np.median([s.left for s in seeds]))
    right = float(np.median([s.right for s in seeds])) if rights is not None else None
    if exp.quorum == "median":
        holds, _ = _decide(exp, left, right)
        if holds is None:
            return outcome(ERROR, left, right, f"the median of {_describe(exp.right)} "
                           f"{exp.metric} over the seeds is 0", seeds)
    else:
        holds = all(s.holds for s in seeds)
    return outcome(_verdict(exp, holds), left, right, _detail(exp, left, right), seeds)


def evaluate(scenario: Scenario, cells: list[dict[str, Any]]) -> list[Outcome]:
    """An outcome for every expectation of `scenario` on every device it
    names or, without a device, on every device that has cells (a NOT-RUN
    expectation without a device gets one outcome, device "every device")."""
    devices = list(dict.fromkeys(c["request"]["device"]["name"] for c in cells))
    out = []
    for exp in scenario.expectations:
        if not scenario.runs(exp):
            out.append(Outcome(exp.what, exp.device or "every device", NOT_RUN, None, None,
                               "full_only: checked in the full form only", exp.source,
                               exp.known_failure, exp.quorum))
            continue
        for device in ([exp.device] if exp.device else devices):
            out.append(evaluate_one(exp, cells, device))
    return out


def counts(outcomes: list[Outcome]) -> dict[str, int]:
    return {status: sum(o.status == status for o in outcomes) for status, _ in STATUS_WORDS}


def summary(outcomes: list[Outcome]) -> str:
    """'3 hold, 1 fail, 2 known failures, 0 unexpected passes, 1 not run in
    this form, 0 errors (7 expectations)'."""
    n = counts(outcomes)
    return (", ".join(f"{n[status]} {words}" for status, words in STATUS_WORDS)
            + f" ({len(outcomes)} expectation outcomes)")


def failing(outcomes: list[Outcome]) -> list[Outcome]:
    """The outcomes that make a check fail: a failure not marked known, an
    unexpected pass and an expectation that could not be decided."""
    return [o for o in outcomes if o.status in FAILING]
