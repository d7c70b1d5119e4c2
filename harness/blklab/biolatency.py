"""biolatency's histograms from a traced cell's blktrace (scenario.blktrace).

libbpf-tools' biolatency, the tool users reach for, cannot load on every
guest kernel (Debian's 5.10 has the tracepoints of 5.11 but not the
arguments the tool expects by version; tests/e2e/test_apps.py). The block
layer's trace events that blktrace records exist on every series, so
`blklab biolatency RUN` computes the same histograms from each traced
cell's blktrace.bin: per device and direction, the time from a request's
issue to the driver (blkparse action D, biolatency's block_rq_issue) or,
with --from insert, from its insertion into the scheduler (I, biolatency
-Q's block_rq_insert), to its completion (C), in log2 buckets of
microseconds as biolatency prints them (bucket k holds [2^k, 2^(k+1)) us,
the first also 0). A request is matched to its completion by device and
start sector; one whose start was not traced (before the trace began) is
left out, and so is a start with no completion.
"""

from __future__ import annotations

import fnmatch
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from blklab.blktrace import blkparse_text
from blklab.errors import BlklabError

STARTS = {"issue": "D", "insert": "I"}
BAR = 40


@dataclass
class Histogram:
    device: str  # blkparse's "major,minor"
    direction: str  # "read" or "write"
    buckets: list[int] = field(default_factory=list)  # count per log2 bucket of us
    total_ns: int = 0

    @property
    def count(self) -> int:
        return sum(self.buckets)

    def add(self, ns: int) -> None:
        us = ns // 1000
        slot = max(0, us.bit_length() - 1)
        if len(self.buckets) <= slot:
            self.buckets += [0] * (slot + 1 - len(self.buckets))
        self.buckets[slot] += 1
        self.total_ns += ns

    def to_json(self) -> dict[str, Any]:
        return {"device": self.device, "direction": self.direction, "count": self.count,
                "mean_us": round(self.total_ns / self.count / 1000, 3) if self.count else None,
                "buckets": [{"low_us": 0 if k == 0 else 1 << k, "high_us": (2 << k) - 1,
                             "count": n} for k, n in enumerate(self.buckets)]}

    def render(self) -> str:
        """As biolatency prints a histogram."""
        top = max(self.buckets, default=0)
        lines = [f"{'usecs':>13}{'':11}: count    distribution"]
        for k, n in enumerate(self.buckets):
            low, high = (0 if k == 0 else 1 << k), (2 << k) - 1
            stars = "*" * (n * BAR // top) if top else ""
            lines.append(f"{low:>10} -> {high:<10}: {n:<8} |{stars:<{BAR}}|")
        return "\n".join(lines)


def _direction(rwbs: str) -> str | None:
    if "R" in rwbs:
        return "read"
    if "W" in rwbs:
        return "write"
    return None  # a flush without data, a discard: not in biolatency's -F split either


def histograms(blkparse_text: str, start: str = "issue") -> list[Histogram]:
    """Per device and direction, from blkparse's default output."""
    action = STARTS[start]
    started: dict[tuple[str, str], int] = {}
    out: dict[tuple[str, str], Histogram] = {}
    for line in blkparse_text.splitlines():
        f = line.split()
        # "259,0 0 5 0.000123456 131 D R 682966704 + 8 [blkgen]"
        if len(f) < 10 or "," not in f[0] or f[8] != "+":
            continue
        act, rwbs, sector = f[5], f[6], f[7]
        if act not in (action, "C"):
            continue
        direction = _direction(rwbs)
        if direction is None:
            continue
        try:
            sec, _, frac = f[3].partition(".")
            ns = int(sec) * 1_000_000_000 + int(frac.ljust(9, "0")[:9])
        except ValueError:
            continue
        key = (f[0], sector)
        if act == action:
            started[key] = ns
        elif key in started:
            h = out.setdefault((f[0], direction), Histogram(f[0], direction))
            h.add(ns - started.pop(key))
    return [out[k] for k in sorted(out)]


def of_run(run_dir: Path, cell_glob: str | None = None, start: str = "issue"
           ) -> dict[str, list[Histogram]]:
    """cell id -> its histograms, for each traced cell of the run."""
    traces = sorted(run_dir.glob("cells/*/blktrace.bin"))
    if not traces:
        raise BlklabError(f"{run_dir}: no cells/*/blktrace.bin: run the scenario with "
                          "scenario.blktrace = true")
    out = {}
    for t in traces:
        cell = t.parent.name
        if cell_glob is None or fnmatch.fnmatchcase(cell, cell_glob):
            out[cell] = histograms(blkparse_text(t), start)
    if not out:
        raise BlklabError(f"{run_dir}: no traced cell matches '{cell_glob}'")
    return out


def render(run_dir: Path, cell_glob: str | None = None, start: str = "issue") -> str:
    parts = []
    for cell, hs in of_run(run_dir, cell_glob, start).items():
        if not hs:
            hint = (" (under none the kernel issues most requests directly, with no insert "
                    "event: use --from issue)" if start == "insert" else "")
            parts.append(f"cell = {cell}: no request has both its {start} and its completion "
                         f"in the trace{hint}")
        for h in hs:
            mean = h.to_json()["mean_us"]
            parts.append(f"cell = {cell}  device = {h.device}  {h.direction}s  from {start}: "
                         f"{h.count} requests, mean {mean} us\n{h.render()}")
    return "\n\n".join(parts)


def as_json(run_dir: Path, cell_glob: str | None = None, start: str = "issue") -> str:
    return json.dumps({cell: [h.to_json() for h in hs]
                       for cell, hs in of_run(run_dir, cell_glob, start).items()}, indent=1)
