"""The SSD profile keys a drive's fill sets (blklab fit), derived in closed
form from the model's code, and the same fill run on a profile with
devmodel-sim to measure the result the way the drive's log was measured.

A sequential fill of 128 KiB writes at QD32 from an empty drive, as the
SSD model (devmodel/src/ssd.cc) runs it: the write buffer acknowledges a
write once it is over the host link, and each host program unit of
P = planes_per_die x page_bytes goes to the die that frees first, where it
takes its channel transfer x = P / channel_mb_s and then its program t
(slc_program_us while the cache has room, else the TLC time: the mean of
page_program_lower/middle/upper_us where set, else page_program_us). The
fill keeps every die busy (32 x 128 KiB in flight is more than every die's
unit), so with N = channels x dies_per_channel dies

    rate(t) = min(N x P / (x + t), channels x channel_mb_s, host_link_mb_s)

and, inverted, t = N x P / rate - x while the rate is below the channel
and link bound B = min(channels x channel_mb_s, host_link_mb_s); a rate
at B (within AT_BOUND) sets only t <= N x P / B - x. The cache holds
S + min(D, free / r) (S = slc_static_bytes, D = slc_dynamic_max_bytes,
r = slc_dynamic_free_ratio, free = capacity_bytes less what is written),
and folds only when idle, so a fill from empty writes

    W = min(S + D, (r x S + C) / (r + 1))      (C = capacity_bytes)

before it drops. A fill from empty shows W, not its split into S and D (a
full drive keeps S only), so the fitted profile keeps the start's static
share f = S / (S + D) (1 without a cache): S = f x W and D = W - S while
W <= C / (r + 1 - r f), else the cache is bounded by free space and
S = ((r + 1) W - C) / r, D = W - S.
"""

from __future__ import annotations

import json
import math
import statistics
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from blklab import fill_log, simulate
from blklab.errors import BlklabError

GEOMETRY_KEYS = ("channels", "dies_per_channel", "planes_per_die", "page_bytes", "channel_mb_s",
                 "capacity_bytes")
TYPED_PROGRAM_KEYS = ("page_program_lower_us", "page_program_middle_us", "page_program_upper_us")
AT_BOUND = 0.98  # a rate within 2% of the channel and link bound is that bound
FILL_BLOCK = 128 * 1024  # tools/characterize/fill.fio: bs=128k
FILL_DEPTH = 32  # iodepth=32
DEFAULT_FREE_RATIO = 3  # devmodel/profiles/README.md: slc_dynamic_free_ratio
DEFAULT_UNIT = 4096  # mapping_unit_bytes


class FillFitError(BlklabError):
    """A start profile the fill's keys cannot be derived on."""

    exit_code = 2


@dataclass(frozen=True)
class Geometry:
    dies: int
    unit_bytes: int  # one program unit, all planes (P)
    xfer_us: float  # its channel transfer (x)
    bound_mb_s: float  # channels and link (B)
    capacity: int
    free_ratio: int
    mapping_unit: int

    def rate(self, program_us: float) -> float:
        """MB/s (bytes per us) of the fill at program time t."""
        return min(self.dies * self.unit_bytes / (self.xfer_us + program_us), self.bound_mb_s)

    def program_us(self, rate_mb_s: float) -> float:
        return self.dies * self.unit_bytes / rate_mb_s - self.xfer_us


def geometry(keys: dict[str, Any], name: str) -> Geometry:
    missing = [k for k in GEOMETRY_KEYS if not keys.get(k)]
    if missing:
        raise FillFitError(f"{name}: the start profile does not state {', '.join(missing)}, "
                           "which the fill's keys are derived from")
    unit = int(keys["planes_per_die"]) * int(keys["page_bytes"])
    link = float(keys.get("host_link_mb_s", 0) or 0)
    chan = float(keys["channels"]) * float(keys["channel_mb_s"])
    return Geometry(int(keys["channels"]) * int(keys["dies_per_channel"]), unit,
                    unit / float(keys["channel_mb_s"]), min(chan, link) if link else chan,
                    int(keys["capacity_bytes"]),
                    int(keys.get("slc_dynamic_free_ratio", DEFAULT_FREE_RATIO)),
                    int(keys.get("mapping_unit_bytes", DEFAULT_UNIT)))


def tlc_program_us(keys: dict[str, Any]) -> float:
    base = float(keys.get("page_program_us", 500.0))
    return statistics.mean(float(keys.get(k, 0) or base) for k in TYPED_PROGRAM_KEYS)


def cache_bytes(keys: dict[str, Any], g: Geometry) -> float:
    """W: what a fill from empty writes into the cache."""
    s = float(keys.get("slc_static_bytes", 0))
    d = float(keys.get("slc_dynamic_max_bytes", 0))
    r = g.free_ratio
    return min(s + d, (r * s + g.capacity) / (r + 1))


def expected(keys: dict[str, Any], name: str) -> dict[str, float | None]:
    """The model's fill figures on a profile, by the formulas above: cache
    bytes (None without a cache), rates in and after it (bytes/s)."""
    g = geometry(keys, name)
    has_cache = bool(keys.get("slc_static_bytes", 0) or keys.get("slc_dynamic_max_bytes", 0))
    return {"cache_bytes": cache_bytes(keys, g) if has_cache else None,
            "rate_in": g.rate(float(keys.get("slc_program_us", 0))) * 1e6 if has_cache
            else g.rate(tlc_program_us(keys)) * 1e6,
            "rate_after": g.rate(tlc_program_us(keys)) * 1e6}


@dataclass
class FillKeys:
    """Keys set from the fill, each with its comment, and what was not."""

    values: dict[str, Any] = field(default_factory=dict)
    comments: dict[str, str] = field(default_factory=dict)
    start: dict[str, Any] = field(default_factory=dict)
    not_fitted: list[str] = field(default_factory=list)


def _program_time(out: FillKeys, key: str, start_us: float, rate: float, g: Geometry,
                  what: str, where: str, rng: tuple[float, float]) -> float | None:
    """`key` from a rate (bytes/s), or None with a not-fitted line."""
    mb_s = rate / 1e6
    if mb_s >= AT_BOUND * g.bound_mb_s:
        most = g.program_us(g.bound_mb_s)
        value = None if start_us <= most or most <= rng[0] else float(f"{most:.3g}")
        above = mb_s > (2 - AT_BOUND) * g.bound_mb_s
        how = (f"above the profile's channel and link bound ({g.bound_mb_s:,.0f} MB/s), which no "
               f"{key} reaches on this start (at most {most:.3g} us gives the bound)" if above
               else f"at the profile's channel and link bound ({g.bound_mb_s:,.0f} MB/s), which "
               f"sets only {key} <= {most:.3g} us")
        out.not_fitted.append(f"{key}: {where}: the rate {what} ({mb_s:,.0f} MB/s) is {how}; "
                              + (f"set to {value:g}" if value is not None
                                 else f"kept at {start_us:g}"))
        return value
    t = g.program_us(mb_s)
    if not rng[0] < t <= rng[1]:
        out.not_fitted.append(f"{key}: {where}: the rate {what} ({mb_s:,.0f} MB/s) needs "
                              f"{t:.3g} us on this geometry, outside ({rng[0]:g}, {rng[1]:g}]")
        return None
    return float(f"{t:.3g}")


def derive(keys: dict[str, Any], figs: fill_log.FillFigures, start: str,
           ranges: dict[str, tuple[float, float]]) -> FillKeys:
    """The keys the fill's figures set on the start profile's geometry."""
    g = geometry(keys, f"{start}.toml")
    where = str(figs.path)
    out = FillKeys()
    has_cache = bool(keys.get("slc_static_bytes", 0) or keys.get("slc_dynamic_max_bytes", 0))
    note = f"fitted by blklab fit to the fill ({start}: {{}})"

    def put(key: str, value: Any) -> None:
        out.values[key] = value
        out.start[key] = keys.get(key, 0)
        out.comments[key] = note.format(keys.get(key, 0))

    def tlc_from(rate: float, what: str) -> None:
        """page_program_us from a rate; the page types keep their ratios."""
        old = tlc_program_us(keys)
        t = _program_time(out, "page_program_us", old, rate, g, what, where,
                          ranges.get("page_program_us", (0.0, 100000.0)))
        if t is not None:
            put("page_program_us", t)
            for k in TYPED_PROGRAM_KEYS:
                if keys.get(k, 0):
                    put(k, float(f"{float(keys[k]) * t / old:.3g}"))

    if figs.dropped:
        assert figs.cache_bytes is not None and figs.rate_after is not None
        w = figs.cache_bytes
        s0 = float(keys.get("slc_static_bytes", 0))
        d0 = float(keys.get("slc_dynamic_max_bytes", 0))
        f = s0 / (s0 + d0) if s0 + d0 > 0 else 1.0
        r, c = g.free_ratio, g.capacity
        if w >= c:
            out.not_fitted.append(f"slc_static_bytes, slc_dynamic_max_bytes: {where}: a cache of "
                                  f"{w / 1e9:.3g} GB does not fit the start's {c / 1e9:.4g} GB")
        else:
            s = f * w if w <= c / (r + 1 - r * f) else ((r + 1) * w - c) / r
            unit = g.mapping_unit
            put("slc_static_bytes", int(s) // unit * unit)
            put("slc_dynamic_max_bytes", int(w - s) // unit * unit)
            # Without a cache at the start there is no time to keep.
            old = float(keys.get("slc_program_us", 0)) if has_cache else math.inf
            t = _program_time(out, "slc_program_us", old, figs.rate_in, g, "in the cache",
                              where, ranges.get("slc_program_us", (0.0, 100000.0)))
            if t is None and not has_cache:
                raise FillFitError(f"{where}: {out.not_fitted[-1]}; a cache needs a program "
                                   f"time: start from a profile with an SLC cache")
            if t is not None:
                put("slc_program_us", t)
        tlc_from(figs.rate_after, "after the cache")
        return out
    out.not_fitted.append(
        f"slc_static_bytes, slc_dynamic_max_bytes: {where}: no sustained drop; the cache holds at "
        f"least {figs.cache_at_least / 1e9:.3g} GB of the {figs.written_bytes / 1e9:.3g} GB "
        "written, and its size is not fitted")
    if has_cache:
        out.not_fitted.append(f"page_program_us: {where}: no rate after the cache")
        t = _program_time(out, "slc_program_us", float(keys.get("slc_program_us", 0)),
                          figs.rate_in, g, "in the cache", where,
                          ranges.get("slc_program_us", (0.0, 100000.0)))
        if t is not None:
            put("slc_program_us", t)
    else:
        tlc_from(figs.rate_in, "of the fill")
    return out


def run(profile_text: str, fill_bytes: int, interval_ms: int, label: str, seed: int = 1
        ) -> tuple[list[fill_log.Interval], dict[str, Any]]:
    """The fill (fill.fio: sequential 128 KiB writes at QD32 over the first
    `fill_bytes` of the device, once) on `profile_text` with devmodel-sim,
    its bandwidth logged per `interval_ms`: the log's intervals and the
    simulator's JSON. The text's precondition is the caller's (the drive's
    fill starts from empty: "none")."""
    size = fill_bytes // FILL_BLOCK * FILL_BLOCK
    if size < FILL_BLOCK:
        raise FillFitError(f"{label}: a fill of {fill_bytes} bytes is less than one write")
    with tempfile.TemporaryDirectory(prefix="blklab-fill-") as tmp:
        path = Path(tmp) / label
        path.write_text(profile_text)
        cmd = [str(simulate.devmodel_sim()), "--seed", str(seed), "--runtime", "1000000s",
               "--bw-log", str(Path(tmp) / "fill"), "--log-avg-msec", str(interval_ms),
               str(path), f"fill:rw=write,bs={FILL_BLOCK},iodepth={FILL_DEPTH},size={size},"
               f"io_size={size}"]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            raise FillFitError(f"devmodel-sim fill on {label}: "
                               f"{proc.stderr.strip().replace(str(path), label)}")
        doc = json.loads(proc.stdout)
        return fill_log.read(Path(tmp) / "fill_bw.1.log"), doc
