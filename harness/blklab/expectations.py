"""Evaluating a scenario's [[expect]] entries against a run's cells.

Each selector picks one group of cells (same device, scheduler and
tunables; seeds and repeats pooled); its value is the median of the metric
over that group. An expectation without a device is checked on every
device that has cells for both sides.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass
from typing import Any

import numpy as np

from blklab.scenario import Expectation, Selector
from blklab.stats import group_id

_OPS = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge}


@dataclass
class Outcome:
    what: str
    device: str
    status: str  # "PASS", "FAIL" or "ERROR" (no data to decide)
    left: float | None
    right: float | None
    detail: str
    source: str = ""

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)

    def line(self) -> str:
        return f"{self.status:5} {self.what} [{self.device}]: {self.detail}"


def _matches(cell: dict[str, Any], device: str, sel: Selector) -> bool:
    req = cell["request"]
    return req["device"]["name"] == device and sel.picks(req["scheduler"], req["tunables"])


def _value(cells: list[dict[str, Any]], device: str, sel: Selector, exp: Expectation
           ) -> tuple[float | None, str]:
    """(median over the selected group, '' ) or (None, why not)."""
    groups: dict[str, list[float]] = {}
    failed = 0
    for c in cells:
        if not _matches(c, device, sel):
            continue
        if c.get("status") != "ok":
            failed += 1
            continue
        for s in c["summary"]:
            if s["direction"] != exp.direction or (sel.job and s["job"] != sel.job):
                continue
            if s.get(exp.metric) is None:
                continue
            groups.setdefault(f"{group_id(c['cell_id'])}/{s['job']}", []).append(
                float(s[exp.metric]))
    if not groups:
        why = f"{failed} failed cell(s)" if failed else "no cells"
        return None, f"{_describe(sel)} has no {exp.direction} {exp.metric} ({why})"
    if len(groups) > 1:
        return None, (f"{_describe(sel)} matches {len(groups)} groups "
                      f"({', '.join(sorted(groups))}); name a job or tunables")
    (values,) = groups.values()
    return float(np.median(values)), ""


def _describe(sel: Selector) -> str:
    parts = []
    if sel.scheduler:
        parts.append(sel.scheduler)
    if sel.job:
        parts.append(f"job {sel.job}")
    parts += [f"{k}={v}" for k, v in sel.tunables]
    return " ".join(parts) or "all cells"


def _fmt(x: float) -> str:
    return f"{x:.6g}"


def evaluate_one(exp: Expectation, cells: list[dict[str, Any]], device: str) -> Outcome:
    left, why = _value(cells, device, exp.left, exp)
    if left is None:
        return Outcome(exp.what, device, "ERROR", None, None, why, exp.source)
    m = exp.metric
    if exp.right is None:
        ok = True
        bounds = []
        if exp.below is not None:
            ok &= left < exp.below
            bounds.append(f"< {_fmt(exp.below)}")
        if exp.above is not None:
            ok &= left > exp.above
            bounds.append(f"> {_fmt(exp.above)}")
        detail = f"{_describe(exp.left)} {m} = {_fmt(left)}, expected {' and '.join(bounds)}"
        return Outcome(exp.what, device, "PASS" if ok else "FAIL", left, None, detail, exp.source)
    right, why = _value(cells, device, exp.right, exp)
    if right is None:
        return Outcome(exp.what, device, "ERROR", left, None, why, exp.source)
    lhs, rhs = _describe(exp.left), _describe(exp.right)
    if exp.op is not None:
        ok = _OPS[exp.op](left, right * exp.factor)
        scaled = f"{_fmt(exp.factor)} x " if exp.factor != 1 else ""
        detail = (f"{lhs} {m} = {_fmt(left)} {exp.op} {scaled}{rhs} {m} = {_fmt(right)}"
                  + (f" (ratio {_fmt(left / right)})" if right else ""))
        return Outcome(exp.what, device, "PASS" if ok else "FAIL", left, right, detail,
                       exp.source)
    assert exp.ratio is not None
    if right == 0:
        return Outcome(exp.what, device, "ERROR", left, right, f"{rhs} {m} is 0", exp.source)
    ratio = left / right
    ok = exp.ratio[0] <= ratio <= exp.ratio[1]
    detail = (f"{lhs} / {rhs} {m} = {_fmt(left)} / {_fmt(right)} = {_fmt(ratio)}, "
              f"expected in [{_fmt(exp.ratio[0])}, {_fmt(exp.ratio[1])}]")
    return Outcome(exp.what, device, "PASS" if ok else "FAIL", left, right, detail, exp.source)


def evaluate(expectations: list[Expectation], cells: list[dict[str, Any]]) -> list[Outcome]:
    devices = list(dict.fromkeys(c["request"]["device"]["name"] for c in cells))
    out = []
    for exp in expectations:
        for device in ([exp.device] if exp.device else devices):
            out.append(evaluate_one(exp, cells, device))
    return out
