"""The read parallelism of an SSD profile chosen from a drive's random-read
queue-depth sweep (blklab fit), before the continuous search.

A 4 KiB random read in the SSD model (devmodel/src/ssd.cc, Submit, Read,
ReadPage, ServeReads) waits for an admission slot, then
controller_overhead_us (o), then for its sensing unit: the page's die, or
with independent_plane_reads the page's plane. The unit is held for the
page's sensing s (page_read_lower/middle/upper_us by page type, else
page_read_us, plus read-retry rounds) and the page's channel transfer
x = 4096 B / channel_mb_s; the data then crosses the die's channel
(first come, first served) and the host link, l = 4096 B / host_link_mb_s
(0 when not modelled). So

    QD1:      1 / IOPS = o + s + x + l           (s: the mean over page types)
    QD n:     IOPS <= min(n / (o + s + x + l),    every read in flight
                          U / (s + x),            U = channels x dies_per_channel
                                                    (x planes_per_die with
                                                    independent_plane_reads)
                          channels / x,           the channels
                          1 / l)                  the link

and in between, reads pick their unit at random (a page's place on a full
drive), so two reads of n collide on a unit before n reaches U: with
n <= U about U (1 - (1 - 1/U)^n) units are busy. A sweep shows U where
its deepest queue is near or past it; it does not show how U splits into
dies and planes with independent plane reads (the same read parallelism),
and it does not show the channels or the link while they are far from
binding (8 channels at 1,400 MB/s carry 2.7 M reads of 4 KiB a second, a
3,500 MB/s link 855 K).

The choice: the candidate geometries are the start's with
dies_per_channel multiplied by a power of two (within the key's range),
the raw capacity kept by blocks_per_plane (or pages_per_block) divided by
the same factor; each is scored with the fit's own objective on the
drive's read-only jobs, and the lowest wins, unless the start's own is
within MARGIN of it (then the start's stays). Channels, planes and
independent_plane_reads stay the start's.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from typing import Any, Callable

READ_BYTES = 4096  # the suite's random reads: bs=4k
MAX_SHIFT = 3  # dies_per_channel from start / 8 to start x 8
MARGIN = 0.02  # the start's geometry stays unless another is better by more
DIES_RANGE = (1, 64)  # devmodel-check --keys: ssd.dies_per_channel
TYPED_READ_KEYS = ("page_read_lower_us", "page_read_middle_us", "page_read_upper_us")
READ_QD1_JOB = "randread-qd1"


def read_units(keys: dict[str, Any]) -> int:
    """U: the units that sense reads at once."""
    planes = int(keys.get("planes_per_die", 2)) if keys.get("independent_plane_reads") else 1
    return int(keys.get("channels", 4)) * int(keys.get("dies_per_channel", 2)) * planes


def mean_sense_us(keys: dict[str, Any]) -> float:
    """s: a host read's mean sensing time, over page types and retries."""
    base = float(keys.get("page_read_us", 50.0))
    sense = statistics.mean(float(keys.get(k, 0) or base) for k in TYPED_READ_KEYS)
    p = float(keys.get("read_retry_probability", 0) or 0)
    rounds = int(keys.get("read_retry_max_rounds", 0) or 0)
    return sense + float(keys.get("read_retry_us", 0) or 0) * sum(p ** k
                                                                  for k in range(1, rounds + 1))


def qd1_us(keys: dict[str, Any]) -> float:
    """o + s + x + l: a lone 4 KiB read's mean time on the profile."""
    link = float(keys.get("host_link_mb_s", 0) or 0)
    return (float(keys.get("controller_overhead_us", 5.0)) + mean_sense_us(keys)
            + READ_BYTES / float(keys.get("channel_mb_s", 800))
            + (READ_BYTES / link if link else 0.0))


def sense_for_qd1(keys: dict[str, Any], drive_qd1_iops: float, lo: float, hi: float
                  ) -> tuple[dict[str, float], str]:
    """The read times that make the model's QD1 mean the drive's
    (1 / its IOPS), keeping controller_overhead_us, the channel and the
    link: every sensing time scaled by one factor, page_read_us kept in
    [lo, hi]. Returns the keys and a line saying what was done."""
    want = 1e6 / drive_qd1_iops
    fixed = qd1_us(keys) - mean_sense_us(keys)
    base = float(keys.get("page_read_us", 50.0))
    k = (want - fixed) / mean_sense_us(keys)
    k = min(max(k, lo / base), hi / base)
    out = {"page_read_us": float(f"{base * k:.3g}")}
    for key in TYPED_READ_KEYS:
        if keys.get(key, 0):
            out[key] = float(f"{float(keys[key]) * k:.3g}")
    if keys.get("read_retry_us", 0):
        out["read_retry_us"] = float(f"{float(keys['read_retry_us']) * k:.3g}")
    line = (f"read times x {k:.3g}: the drive's QD1 mean {want:.1f} us ({READ_QD1_JOB}, "
            f"1 / IOPS) = controller_overhead_us + sensing + transfers ({fixed:.1f} us kept)")
    if (want - fixed) / mean_sense_us(keys) != k:
        line += f", held in page_read_us [{lo:g}, {hi:g}]"
    return out, line


@dataclass(frozen=True)
class Candidate:
    values: dict[str, int]  # the keys that differ from the start's
    units: int
    dies_per_channel: int


def candidates(keys: dict[str, Any]) -> tuple[list[Candidate], list[str]]:
    """The start's geometry and those with dies_per_channel x 2^k
    (|k| <= MAX_SHIFT), raw capacity kept; lines for those left out."""
    d0 = int(keys.get("dies_per_channel", 2))
    bpp = int(keys.get("blocks_per_plane", 256))
    ppb = int(keys.get("pages_per_block", 256))
    typed = any(keys.get(k, 0) for k in TYPED_READ_KEYS) or any(
        keys.get(k, 0) for k in ("page_program_lower_us", "page_program_middle_us",
                                 "page_program_upper_us"))
    out, skipped = [], []
    for shift in range(-MAX_SHIFT, MAX_SHIFT + 1):
        d = d0 * 2 ** shift if shift >= 0 else d0 // 2 ** -shift
        if shift < 0 and d0 % 2 ** -shift:
            continue
        if not DIES_RANGE[0] <= d <= DIES_RANGE[1]:
            continue
        values = {"dies_per_channel": d}
        # raw = dies x blocks x pages: one of the other two takes the factor.
        if bpp * d0 % d == 0 and bpp * d0 // d >= 4:
            values["blocks_per_plane"] = bpp * d0 // d
        elif ppb * d0 % d == 0 and (not typed or ppb * d0 // d % 3 == 0) \
                and ppb * d0 // d >= 6:
            values["pages_per_block"] = ppb * d0 // d
        else:
            skipped.append(f"dies_per_channel {d}: the raw capacity cannot be kept "
                           f"(blocks_per_plane {bpp} and pages_per_block {ppb} x {d0}/{d})")
            continue
        out.append(Candidate(values if shift else {}, read_units(keys | values), d))
    return out, skipped


@dataclass
class Choice:
    """The geometry the reads chose and how."""

    start_units: int
    chosen: Candidate
    scores: list[tuple[Candidate, float]] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)
    values: dict[str, Any] = field(default_factory=dict)  # read times and geometry set


def choose(keys: dict[str, Any], score: Callable[[dict[str, Any]], float]) -> Choice:
    """Scores every candidate (`score`: the objective with those keys set)
    and picks by the rule in the module's docstring."""
    cands, skipped = candidates(keys)
    scores = [(c, score(c.values)) for c in cands]
    start = next((c, e) for c, e in scores if not c.values)
    best = min(scores, key=lambda ce: (ce[1], abs(ce[0].units - start[0].units)))
    chosen = start if start[1] <= best[1] + MARGIN else best
    ch = chosen[0]
    lines = [f"dies_per_channel {c.dies_per_channel} ({c.units} read units"
             + "".join(f", {k} {v}" for k, v in c.values.items() if k != "dies_per_channel")
             + f"): error {e:.3f}" + (" <- chosen" if c is ch else "")
             for c, e in scores]
    lines += skipped
    near = [c.units for c, e in scores if c is not ch and e <= chosen[1] + MARGIN]
    if near:
        lines.append(f"not told apart from the chosen {ch.units} (within {MARGIN:g}): "
                     + ", ".join(str(u) for u in near) + " read units")
    units = [c.units for c, _ in scores]
    if len(units) > 1 and ch.units in (min(units), max(units)):
        lines.append(f"the chosen {ch.units} read units are the "
                     + ("fewest" if ch.units == min(units) else "most")
                     + " tried: the drive may have " + ("fewer" if ch.units == min(units)
                                                         else "more"))
    if ch is start[0]:
        lines.append(f"kept the start's {start[0].units} read units"
                     + ("" if best[0] is start[0] else
                        f" ({best[0].units} scored {best[1]:.3f}, within {MARGIN:g} of the "
                        f"start's {start[1]:.3f})"))
    planes = int(keys.get("planes_per_die", 2))
    lines.append("channels, planes_per_die and independent_plane_reads kept: reads show the "
                 "read units, not their split into dies and planes"
                 + (f" ({planes} planes each reading on its own count as {planes} dies)"
                    if keys.get("independent_plane_reads") and planes > 1 else "")
                 + ", and not the channels or the link while they do not bind")
    return Choice(start[0].units, ch, scores, lines, dict(ch.values))
