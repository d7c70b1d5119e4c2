"""The host link and the channel rate of an SSD profile from a drive's
sequential reads (blklab fit), after the read parallelism and before the
fill; docs/characterize-a-drive.md ("The link and the channels") has the
derivation and the rule.

On a drive written in full (devmodel/src/ftl.cc, FullFill::At) program unit
k (P = planes_per_die x page_bytes) lies on die k mod N, die d on channel
d mod C. A 128 KiB read takes ceil(B / P) program units on consecutive
dies and channels; each page holds its sensing unit for s + p / c, its data
queues on the die's channel, and the read crosses the link (L) once all its
pages are in (devmodel/src/ssd.cc: Read, ReadPage, ServeReads, PagesIn). So

    R  = B x IOPS at QD32 <= min(L, C x c, U x p / (s + p / c))
    t1 = o + m x s + P' / c + B / L    (QD1; P' what one channel carries)
    D  = t1 - t_r = (m - 1) s + (P' - 4096) / c + (B - 4096) / L

with t_r the 4 KiB random read's QD1 time. R tells whether the link or the
channels bind (against M, the model's bandwidth without a link); D, taken
against the model's own D0 at the start so that what the formula leaves
out cancels, splits them: D - D0 = (P' - 4096)(1/c - 1/c0) + (B - 4096)(1/L - 1/L0).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

SEQ_JOB = "seqread-qd32"  # R
SEQ_QD1_JOB = "seqread-qd1"  # t1
READ_QD1_JOB = "randread-qd1"  # t_r
SEQ_JOBS = (SEQ_JOB, SEQ_QD1_JOB)
SEQ_BYTES = 128 << 10  # the sequential jobs' bs=128k
READ_BYTES = 4096  # the random reads' bs=4k
BIND = 0.95  # R below BIND x M: the link or the channels bind
MARGIN = 0.02  # candidates whose errors are this close are not told apart


def channel_bytes(keys: dict[str, Any]) -> int:
    """P': the bytes of one 128 KiB read that one channel carries, page
    after page."""
    unit = int(keys.get("planes_per_die", 2)) * int(keys.get("page_bytes", 16384))
    units = -(-SEQ_BYTES // unit)
    return min(SEQ_BYTES, unit) * -(-units // int(keys.get("channels", 4)))


@dataclass(frozen=True)
class Candidate:
    """What binds at R, and the keys that say so."""

    binds: str  # "link" or "channels"
    values: dict[str, int]  # host_link_mb_s, channel_mb_s


@dataclass
class Solution:
    """The closed form's outcome before the candidates are scored."""

    binding: bool  # R < BIND x M: the link or the channels bind
    candidates: list[Candidate] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)
    values: dict[str, int] = field(default_factory=dict)  # set when nothing is scored


def _in_range(key: str, v: float, ranges: dict[str, tuple[float, float]]) -> bool:
    lo, hi = ranges.get(key, (1.0, 1e6))
    return math.isfinite(v) and lo <= v <= hi and v >= 1


def solve(keys: dict[str, Any], r_mb_s: float, m_mb_s: float,
          d_us: float | None, d0_us: float | None,
          ranges: dict[str, tuple[float, float]]) -> Solution:
    """The candidates for the drive's R (MB/s) against the model's M, and
    with D and D0 (us, None without the QD1 jobs) the link and channel rate
    of each; by the rule in docs/characterize-a-drive.md."""
    c0 = float(keys.get("channel_mb_s", 800))
    l0 = float(keys.get("host_link_mb_s", 0) or 0)
    channels = int(keys.get("channels", 4))
    head = (f"{SEQ_JOB}: the drive's R {r_mb_s:,.0f} MB/s; the model's M without a link "
            f"{m_mb_s:,.0f} MB/s (channels {channels} x {c0:g} MB/s and its read units)")
    if r_mb_s >= BIND * m_mb_s:
        out = Solution(False, lines=[head + f": R >= {BIND:g} M, the link does not bind"])
        if l0 and l0 < r_mb_s:
            out.values = {"host_link_mb_s": int(round(r_mb_s))}
            out.lines.append(f"not fitted: the link carries at least R; host_link_mb_s "
                             f"{l0:g} -> {round(r_mb_s)} (a lower bound)")
        else:
            out.lines.append(f"not fitted: the link carries at least R; host_link_mb_s "
                             f"{l0:g} kept" + (" (not modelled)" if not l0 else ""))
        out.lines.append("channel_mb_s kept: the read units bind before the channels")
        return out
    out = Solution(True, lines=[head + f": R < {BIND:g} M, the link or the channels bind"])
    if d_us is None or d0_us is None:
        out.candidates = [Candidate("link", {"host_link_mb_s": int(round(r_mb_s))})]
        out.lines.append(f"not told apart without {SEQ_QD1_JOB} and {READ_QD1_JOB}: the link "
                         f"at R, or channel_mb_s {r_mb_s / channels:,.0f} (R / {channels}) "
                         "with the link above R; the link is set")
        return out
    k_c = channel_bytes(keys) - READ_BYTES
    k_l = SEQ_BYTES - READ_BYTES
    delta = d_us - d0_us
    inv_l0 = 1 / l0 if l0 else 0.0
    out.lines.append(f"D = {SEQ_QD1_JOB} - {READ_QD1_JOB} (1 / IOPS): the drive's "
                     f"{d_us:.2f} us, the model's D0 {d0_us:.2f} us; "
                     f"D - D0 = {k_c} B x (1/c - 1/{c0:g}) + {k_l} B x (1/L - 1/{l0:g})")
    # The link binds: L = R, c from D.
    inv_c = 1 / c0 + (delta - k_l * (1 / r_mb_s - inv_l0)) / k_c if k_c > 0 else 1 / c0
    c = 1 / inv_c if inv_c > 0 else math.inf
    if inv_c <= 0:
        out.lines.append("the link at R: no channel rate gives D (1/c <= 0)")
    elif channels * c < BIND * r_mb_s:
        out.lines.append(f"the link at R: c {c:,.0f} from D, but {channels} x c = "
                         f"{channels * c:,.0f} < {BIND:g} R: the channels would bind first")
    elif not _in_range("channel_mb_s", c, ranges):
        out.lines.append(f"the link at R: c {c:,.0f} from D is outside channel_mb_s's range")
    else:
        out.candidates.append(Candidate("link", {"host_link_mb_s": int(round(r_mb_s)),
                                                 "channel_mb_s": int(round(c))}))
    # The channels bind: c = R / C, L from D.
    c = r_mb_s / channels
    inv_l = inv_l0 + (delta - k_c * (1 / c - 1 / c0)) / k_l
    link = 1 / inv_l if inv_l > 0 else math.inf
    if inv_l <= 0:
        out.lines.append(f"the channels at R (c {c:,.0f}): no link gives D (1/L <= 0)")
    elif link < BIND * r_mb_s:
        out.lines.append(f"the channels at R (c {c:,.0f}): L {link:,.0f} from D < {BIND:g} R: "
                         "the link would bind first")
    elif not _in_range("host_link_mb_s", link, ranges) or not _in_range("channel_mb_s", c,
                                                                          ranges):
        out.lines.append(f"the channels at R (c {c:,.0f}): L {link:,.0f} from D is outside "
                         "the keys' ranges")
    else:
        out.candidates.append(Candidate("channels", {"host_link_mb_s": int(round(link)),
                                                     "channel_mb_s": int(round(c))}))
    return out


def candidate_line(c: Candidate, error: float | None, chosen: bool) -> str:
    keys = ", ".join(f"{k} {v}" for k, v in c.values.items())
    return (f"the {c.binds} bind{'s' if c.binds == 'link' else ''} at R: {keys}"
            + ("" if error is None else f": error {error:.3f}") + (" <- chosen" if chosen else ""))


def choose(scores: list[tuple[Candidate, float]]) -> tuple[Candidate, list[str]]:
    """The lowest error wins; those within MARGIN of it are named."""
    best = min(scores, key=lambda ce: ce[1])
    lines = [candidate_line(c, e, c is best[0]) for c, e in scores]
    near = [c for c, e in scores if c is not best[0] and e <= best[1] + MARGIN]
    if near:
        lines.append(f"not told apart (within {MARGIN:g}): the {best[0].binds} and the "
                     + ", ".join(c.binds for c in near) + " give R and D alike")
    return best[0], lines


def refine(c: Candidate, keys: dict[str, Any], r_mb_s: float, d_us: float, dc_us: float,
           ranges: dict[str, tuple[float, float]]) -> tuple[Candidate | None, str]:
    """The candidate corrected once against the model's own D on it (Dc):
    the key D set moves by (D - Dc) over its bytes, so what D0 left out
    and the candidate changes (a read retry hidden behind slower
    transfers) is taken out. None when the corrected value no longer
    holds; a line saying what was done."""
    head = f"the {c.binds} at R, against the model's own D on it ({dc_us:.2f} us): "
    if c.binds == "link":
        key, k, bound = "channel_mb_s", channel_bytes(keys) - READ_BYTES, None
    else:
        key, k, bound = "host_link_mb_s", SEQ_BYTES - READ_BYTES, BIND * r_mb_s
    if k <= 0:
        return c, head + f"{key} kept ({key} does not enter D)"
    inv = 1 / c.values[key] + (d_us - dc_us) / k
    v = 1 / inv if inv > 0 else math.inf
    if c.binds == "link":
        bound = BIND * r_mb_s / int(keys.get("channels", 4))
    if inv <= 0 or v < bound or not _in_range(key, v, ranges):
        return None, head + f"{key} {c.values[key]} -> {v:,.0f}, which no longer holds"
    return (Candidate(c.binds, c.values | {key: int(round(v))}),
            head + f"{key} {c.values[key]} -> {round(v)}")
