"""A sequential fill's bandwidth log (fio's write_bw_log with log_avg_msec,
tools/characterize/fill.fio) read into intervals, and the fill's three
figures found in it: the SLC cache's size (bytes written before the
sustained drop), the rate in the cache and the rate after it.

The drop rule (docs/characterize-a-drive.md states it too):
- an interval's rate is its logged KiB/s; its bytes are that rate times its
  length (from the previous line's time, the first from 0);
- the first interval is left out of every level (it also holds the drive's
  DRAM buffer filling at the link's rate); its bytes count;
- the drop starts at the first interval i (i >= 2) where the median rate of
  the WINDOW intervals from i is below DROP_RATIO of the median rate of the
  intervals before i: a dip shorter than half the window moves no median;
- the step is the first interval j from i on whose own rate is below that
  level; the rate in the cache is the median of the intervals before j - 1,
  the rate after it the median of the intervals after j (the level the rest
  of the fill spends most of its intervals at, when it has several steps);
- intervals j - 1 and j hold the step (it may fall in either): of their
  time T and bytes B, the cache took tau = (B - T x next) / (in - next)
  (clamped to [0, T]) at the rate in, next being the median of the WINDOW
  intervals after j, so the cache is the bytes before j - 1 plus tau x in. For a step between two constant rates this is exact;
  otherwise the error is at most one interval's bytes at the rate in.
Refused (FillLogError, naming the file): no log, an empty one, a line that
is not fio's, times that do not increase, fewer than MIN_INTERVALS
intervals, a step before interval MIN_BEFORE (too soon to measure).
No drop at all is no error: the figures say the cache holds at least the
bytes written before the last WINDOW intervals, and give no size.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from pathlib import Path

from blklab.errors import BlklabError

LOG = Path("logs") / "fill_bw.1.log"  # in the drive script's --out (fill.fio: write_bw_log)
DROP_RATIO = 0.75  # a sustained rate below 3/4 of the level before it
WINDOW = 5  # intervals a drop must hold for (as a median)
MIN_BEFORE = 4  # the step's index at least: the first, 2 in the cache, then the step pair
MIN_INTERVALS = MIN_BEFORE + 1 + WINDOW


class FillLogError(BlklabError):
    """A fill log that cannot be read or measured; names the file."""

    exit_code = 2


@dataclass(frozen=True)
class Interval:
    start_ms: int
    end_ms: int
    kib_s: int

    @property
    def seconds(self) -> float:
        return (self.end_ms - self.start_ms) / 1000.0

    @property
    def bytes_per_s(self) -> float:
        return self.kib_s * 1024.0

    @property
    def bytes(self) -> float:
        return self.bytes_per_s * self.seconds


def read(path: Path) -> list[Interval]:
    """The log's intervals; FillLogError when it is missing, empty or not
    fio's (msec, KiB/s, direction, block size, offset per line)."""
    if not path.exists():
        raise FillLogError(f"{path}: missing (the fill's bandwidth log, fio's "
                           "write_bw_log=fill with log_avg_msec)")
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError) as e:
        raise FillLogError(f"{path}: cannot be read: {e}") from None
    out, last_ms = [], 0
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        fields = [f.strip() for f in line.split(",")]
        try:
            ms, kib_s = int(fields[0]), int(fields[1])
        except (IndexError, ValueError):
            raise FillLogError(f"{path}: line {n}: not a fio bandwidth log line (msec, KiB/s, "
                               f"...): {line.strip()[:80]!r}") from None
        if ms <= last_ms or kib_s < 0:
            raise FillLogError(f"{path}: line {n}: times must increase and rates be >= 0")
        out.append(Interval(last_ms, ms, kib_s))
        last_ms = ms
    if not out:
        raise FillLogError(f"{path}: empty (no interval logged)")
    return out


@dataclass(frozen=True)
class FillFigures:
    """What a fill log shows. cache_bytes and rate_after are None when it
    has no drop; cache_at_least is then the bytes it shows the cache holds."""

    path: Path
    intervals: int
    interval_ms: float  # the median interval length
    written_bytes: float
    seconds: float
    rate_in: float  # bytes/s
    cache_bytes: float | None
    rate_after: float | None
    drop_s: float | None  # when the step's pair of intervals starts
    cache_at_least: float

    @property
    def dropped(self) -> bool:
        return self.cache_bytes is not None


def figures(path: Path, intervals: list[Interval] | None = None) -> FillFigures:
    """The fill's figures by the module's rule; FillLogError as it says."""
    iv = intervals if intervals is not None else read(path)
    if len(iv) < MIN_INTERVALS:
        raise FillLogError(f"{path}: {len(iv)} intervals; finding a sustained drop needs at "
                           f"least {MIN_INTERVALS} ({MIN_BEFORE} before it, the step, "
                           f"{WINDOW} after)")
    rates = [i.bytes_per_s for i in iv]
    written = sum(i.bytes for i in iv)
    interval_ms = statistics.median(i.end_ms - i.start_ms for i in iv)
    drop = None
    for i in range(2, len(iv) - WINDOW + 1):
        level = statistics.median(rates[1:i])
        if statistics.median(rates[i:i + WINDOW]) < DROP_RATIO * level:
            drop = (i, level)
            break
    if drop is None:
        at_least = sum(i.bytes for i in iv[:len(iv) - WINDOW])
        return FillFigures(path, len(iv), interval_ms, written, iv[-1].end_ms / 1000.0,
                           statistics.median(rates[1:]), None, None, None, at_least)
    i, level = drop
    j = next(k for k in range(i, i + WINDOW) if rates[k] < DROP_RATIO * level)
    if j < MIN_BEFORE:
        raise FillLogError(
            f"{path}: the rate falls below {DROP_RATIO:g} of its level in interval {j + 1} "
            f"(by {iv[j].end_ms / 1000:g} s): too soon to tell the rate in the cache (the rule "
            f"needs the step in interval {MIN_BEFORE + 1} or later)")
    after_rates = rates[j + 1:]
    if len(after_rates) < WINDOW - 1:
        raise FillLogError(f"{path}: {len(after_rates)} intervals after the drop at "
                           f"{iv[j].start_ms / 1000:g} s; the rate after it needs "
                           f"{WINDOW - 1}")
    rate_in = statistics.median(rates[1:j - 1])
    rate_after = statistics.median(after_rates)
    next_to = statistics.median(after_rates[:WINDOW])  # the level right after the step
    pair = iv[j - 1:j + 1]
    t = sum(p.seconds for p in pair)
    b = sum(p.bytes for p in pair)
    tau = 0.0
    if rate_in > next_to:
        tau = min(max((b - t * next_to) / (rate_in - next_to), 0.0), t)
    cache = sum(p.bytes for p in iv[:j - 1]) + tau * rate_in
    return FillFigures(path, len(iv), interval_ms, written, iv[-1].end_ms / 1000.0, rate_in,
                       cache, rate_after, iv[j - 1].start_ms / 1000.0, cache)
