"""blklab fit DRIVE_DIR -o PROFILE.toml: an SSD profile's parameters fitted
to a drive's characterization results (tools/characterize-drive.sh --out).

Each candidate profile is evaluated on the host with devmodel-sim
(blklab.simulate), never in a guest: every drive job that maps onto the
simulator runs on the profile's virtual clock, and the objective is the
mean over jobs of each job's mean symmetric relative error
(max(model, drive) / min(model, drive) - 1) of IOPS, clat p50 and p99 per
direction. With a reader beside writers both arbitrations are tried at the
start values and the better kept; then a deterministic coordinate descent
moves a few free parameters inside bounded ranges around the start
profile's values (free_params). Before the search, a drive's random reads
set the read times and choose the read parallelism among geometries of the
start's raw size (blklab.geometry_fit), its sequential reads set the link
and the channel rate (blklab.link_fit), and its fill sets the SLC cache and
program times (blklab.fill_fit); the channel count, planes, the capacity
and every on/off switch stay the start profile's.

How a job is evaluated (what a drive run per docs/characterize-a-drive.md
is in, as far as the model can be put there cheaply):
- read-only jobs on the drive written in full (precondition "full"); jobs
  that write on a drive in steady state (precondition "steady": full, then
  random overwrites, so garbage collection runs), as a drive that was
  filled and then written randomly;
- a job that wrote more during the drive's ramp (RAMP, from
  characterize.json or --ramp) than the profile's static SLC cache holds
  is measured past the cache: the evaluation profile has no SLC cache, which
  on a drive that is never idle is the same as a full one (writes at TLC
  program times, no folding);
- on a proxy of the drive scaled down by a power of two F in capacity:
  pages per block, erase time, capacity and SLC sizes divided by F, so
  over-provisioning, free blocks per die, erase time per page and the
  cache's share of the drive stay the same; the written profile is full
  size, and the error table comes from it.

The fill job is not searched: its bandwidth log (blklab.fill_log) sets the
SLC cache's size and the SLC and TLC program times in closed form
(blklab.fill_fit) before the search, which then leaves those keys alone;
the fitted profile's own fill, run at full size, gives its error rows.

Refused, naming the file and the job, with nothing written: a job asked
for that the drive did not run, a file that is not fio JSON or is from
another fio major version than the guest's, a job run with another rw or
bs than the suite's job file, a job that did no I/O, a fill
log that is missing, empty, not fio's or too short to measure, no job that
maps, and a fit whose error stays above --max-error for a job.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import math
import re
import subprocess
import tomllib
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from blklab import (characterize, characterize_compare as cc, compare_fio, fill_fit, fill_log,
                    geometry_fit, link_fit, paths, simulate)
from blklab.errors import BlklabError
from blklab.scenario import PROFILE_DIR, profile_with_precondition

log = logging.getLogger(__name__)

METRICS = ("iops", "p50_us", "p99_us")  # the objective's figures per direction
FORMATS = ("text", "markdown", "json")
DEFAULT_MAX_ERROR = 4.0  # a job off by 5x on average after the fit: no profile fits
DEFAULT_SIM_RAMP_S = 0.5
DEFAULT_SIM_RUNTIME_S = 1.0
DEFAULT_ROUNDS = 4
PROXY_RAW_BYTES = 32 << 30  # evaluate on a proxy of at most this raw size
MISSING_ERROR = 1000.0  # a figure the model does not produce at all
QD1_JOB = "randread-qd1"  # chooses the start profile when the drive ran it
FILL_JOB = "fill"  # fitted from its bandwidth log in closed form (blklab.fill_fit)
FILL_LOG = fill_log.LOG


class FitError(BlklabError):
    """Bad input to blklab fit, or results no profile fits: names the file
    and the job."""

    exit_code = 2


# -- the drive's results ------------------------------------------------------


WHOLE = (0.0, 1.0)  # a span: (offset, size) as fractions of the device


@dataclass(frozen=True)
class DriveJob:
    name: str
    path: Path
    figures: dict[str, compare_fio.Figures]  # per direction with I/O
    sim: simulate.SimJob
    ramp_s: float  # what the drive ran before measuring (its JSON's ramp_time, else RAMP)
    span: tuple[float, float] = WHOLE  # the part of the device its jobs addressed


@dataclass(frozen=True)
class Drive:
    path: Path
    meta: dict[str, Any]  # characterize.json ({} without one)
    ramp_s: float  # the drive's RAMP, for jobs whose JSON does not record ramp_time
    jobs: dict[str, DriveJob]  # every job that maps
    unmapped: dict[str, str]  # job -> why it was not simulated
    fill: fill_log.FillFigures | None = None  # the fill's figures, when it is fitted or held out
    fill_held_out: bool = False


# fio options that say where on the device and how long the drive's jobs ran;
# blklab fit reads them from a result's "global options".
SPAN_OPTIONS = ("filename", "offset", "size")
_PARTITION = re.compile(r"^/dev/(nvme\d+n\d+p\d+|[shv]d[a-z]+\d+|mmcblk\d+p\d+)$")
_FIO_BYTES = re.compile(r"^(\d+)([kmgtp]i?b?)?$", re.IGNORECASE)
_FIO_UNITS = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40, "p": 1 << 50}


def _share(path: Path, job: str, key: str, value: str, size_bytes: Any) -> float:
    """fio's `key`=`value` (N% or bytes) as a fraction of the device."""
    v = value.strip()
    if v.endswith("%"):
        try:
            pct = float(v[:-1])
        except ValueError:
            pct = -1.0
        if not 0 <= pct <= 100:
            raise FitError(f"{path}: job {job}: {key}={value}: a percentage must be in [0, 100]")
        return pct / 100
    m = _FIO_BYTES.match(v)
    if not m:
        raise FitError(f"{path}: job {job}: {key}={value}: not a fio size (bytes or N%)")
    n = int(m.group(1)) * (_FIO_UNITS[m.group(2)[0].lower()] if m.group(2) else 1)
    if n == 0:
        return 0.0
    if not isinstance(size_bytes, int) or size_bytes <= 0:
        raise FitError(f"{path}: job {job}: {key}={value}: a size in bytes, and the drive's "
                       f"size is not recorded ({cc.DRIVE_META} size_bytes), so its share of "
                       "the device is unknown")
    return n / size_bytes


def recorded_conditions(doc: dict[str, Any], path: Path, job: str, meta: dict[str, Any]
                        ) -> tuple[float | None, tuple[float, float]]:
    """The ramp (s; None when not recorded) and the span the drive's fio
    ran `job` with, from the JSON's "global options": a writer confined to
    part of a drive, or one that ran longer before measuring, sees another
    drive state than the whole-device default. Refused, naming the key:
    such an option set per fio job (which job it applied to is not kept
    under group_reporting), a file rather than a device, several files."""
    glob = doc.get("global options", {})
    if not isinstance(glob, dict):
        raise FitError(f"{path}: job {job}: \"global options\" is not an object")
    for j in doc.get("jobs", []):
        own = j.get("job options", {}) if isinstance(j, dict) else {}
        for key in (*SPAN_OPTIONS, "ramp_time"):
            if isinstance(own, dict) and key in own and own[key] != glob.get(key):
                raise FitError(f"{path}: job {job}: {key}={own[key]} set for one fio job: "
                               "blklab fit reads where and how long the drive ran from the "
                               "global options only")
    filename = glob.get("filename")
    if isinstance(filename, str):
        if ":" in filename:
            raise FitError(f"{path}: job {job}: filename={filename}: several files; blklab fit "
                           "models one device")
        if not filename.startswith("/dev/"):
            raise FitError(f"{path}: job {job}: filename={filename}: not a device; where a "
                           "file's blocks lie on the device is not recorded, and devmodel-sim "
                           "addresses the device itself")
        if _PARTITION.match(filename):
            raise FitError(f"{path}: job {job}: filename={filename}: a partition; where it "
                           "lies on the device is not recorded")
    size_bytes = meta.get("size_bytes")
    offset = _share(path, job, "offset", str(glob.get("offset", "0")), size_bytes)
    size = _share(path, job, "size", str(glob.get("size", "100%")), size_bytes)
    if offset >= 1 or size <= 0:
        raise FitError(f"{path}: job {job}: offset={glob.get('offset', '0')} "
                       f"size={glob.get('size', '100%')}: no part of the device")
    ramp = glob.get("ramp_time")
    ramp_s = None
    if ramp is not None:
        try:
            ramp_s = characterize.seconds(str(ramp), "ramp_time")
        except characterize.CharacterizeError:
            raise FitError(f"{path}: job {job}: ramp_time={ramp}: not a fio time") from None
    return ramp_s, (offset, min(size, 1 - offset))


def _fio_bytes(path: Path, job: str, value: str) -> int:
    m = _FIO_BYTES.match(value.strip())
    if not m:
        raise FitError(f"{path}: job {job}: bs={value}: not a fio size")
    return int(m.group(1)) * (_FIO_UNITS[m.group(2)[0].lower()] if m.group(2) else 1)


def check_options(doc: dict[str, Any], path: Path, job: str, job_text: str) -> None:
    """Each fio job of the drive's result that records rw or bs (its own
    options over the global ones) ran as a section of the suite's job file
    (`job_text`, expanded): another rw or block size measured something
    else. Refused, naming the file, the job and both values."""
    wanted = []
    sections = simulate.sections(job_text)
    shared = dict(next((o for n, o in sections if n == "global"), {}))
    for n, own in sections:
        if n != "global":
            o = shared | own
            wanted.append((o.get("rw", "read"), _fio_bytes(path, job, o.get("bs", "4k"))))
    glob = doc.get("global options", {})
    glob = glob if isinstance(glob, dict) else {}
    for j in doc.get("jobs", []):
        own = j.get("job options", {}) if isinstance(j, dict) else {}
        o = glob | (own if isinstance(own, dict) else {})
        suite = ", ".join(f"rw={rw} bs={bs}" for rw, bs in wanted)
        rw = o.get("rw", o.get("readwrite"))
        if rw is not None and rw not in {w for w, _ in wanted}:
            raise FitError(f"{path}: job {job}: fio ran rw={rw}; the suite's {job}.fio "
                           f"runs {suite}")
        if "bs" in o:
            sizes = [_fio_bytes(path, job, v) for v in str(o["bs"]).split(",") if v]
            fits = {bs for w, bs in wanted if rw is None or w == rw}
            if any(b not in fits for b in sizes):
                raise FitError(f"{path}: job {job}: fio ran bs={o['bs']}; the suite's "
                               f"{job}.fio runs {suite}")


def _meta(drive_dir: Path) -> dict[str, Any]:
    path = drive_dir / cc.DRIVE_META
    if not path.exists():
        return {}
    try:
        meta = json.loads(path.read_text())
    except (OSError, ValueError) as e:
        raise FitError(f"{path}: not the drive script's JSON: {e}") from None
    return meta if isinstance(meta, dict) else {}


def load_drive(drive_dir: Path, names: list[str], hold_out: list[str], ramp: str | None,
               guest_fio: str | None = None) -> Drive:
    """The drive's jobs: `names` (default: every job it ran) and the held-out
    ones, each checked as `characterize --compare` checks them."""
    known = {j.name for j in characterize.suite()}
    guest_fio = guest_fio or cc.guest_fio_version()
    found = cc.drive_jobs(drive_dir, known)
    if FILL_JOB not in found and (drive_dir / FILL_LOG).exists():
        found[FILL_JOB] = drive_dir / FILL_LOG  # the fill's figures are in its log alone
    for flag, wanted in (("--job", names), ("--hold-out", hold_out)):
        for n in wanted:
            if n not in known:
                raise FitError(f"{flag} {n}: not a job of the suite ({cc.SUITE_NAMES})")
            if n not in found:
                raise FitError(f"{drive_dir / (n + '.json')}: job {n}: missing (the drive "
                               "did not run it)")
    meta = _meta(drive_dir)
    knobs = characterize.defaults()
    recorded = meta.get("knobs") if isinstance(meta.get("knobs"), dict) else {}
    if isinstance(recorded.get("RAMP"), str) and recorded["RAMP"]:
        knobs["RAMP"] = recorded["RAMP"]
    if ramp is not None:
        knobs["RAMP"] = ramp
    ramp_s = characterize.seconds(knobs["RAMP"], "RAMP")
    mapping = simulate.suite_sim_jobs(knobs)
    texts = {j.name: characterize.expand(j, knobs | {"FILL_SIZE": "100%"})
             for j in characterize.suite()}
    jobs, unmapped = {}, {}
    fill = None
    for n in list(dict.fromkeys((names or sorted(found)) + hold_out)):
        if n == FILL_JOB:
            try:
                fill = fill_log.figures(drive_dir / FILL_LOG)
            except fill_log.FillLogError as e:
                log_path = str(drive_dir / FILL_LOG)
                raise FitError(str(e).replace(f"{log_path}: ", f"{log_path}: job {FILL_JOB}: ", 1)
                               + ("" if found[n].name != f"{FILL_JOB}.json" else
                                  f" ({found[n].name} says the drive ran the fill)")) from None
            continue
        sim = mapping[n]
        if isinstance(sim, simulate.Unmapped):
            if n in names or n in hold_out:
                raise FitError(f"{found[n]}: job {n}: cannot be simulated: {sim.reason}")
            unmapped[n] = sim.reason
            continue
        doc = compare_fio.load_fio_json(found[n])
        cc.check_version(str(found[n]), n, doc, guest_fio)
        check_options(doc, found[n], n, texts[n])
        figs = simulate.figures(doc, str(found[n]))
        if not figs:
            raise FitError(f"{found[n]}: job {n}: no fio job did any I/O")
        job_ramp, span = recorded_conditions(doc, found[n], n, meta)
        if job_ramp is not None and ramp is not None and job_ramp != ramp_s:
            raise FitError(f"{found[n]}: job {n}: ramp_time="
                           f"{doc['global options']['ramp_time']} recorded, --ramp {ramp} differs")
        jobs[n] = DriveJob(n, found[n], figs, sim, ramp_s if job_ramp is None else job_ramp,
                           span)
    fill_held_out = FILL_JOB in hold_out
    if not any(n not in hold_out for n in jobs) and (fill is None or fill_held_out):
        raise FitError(f"{drive_dir}: no job to fit: "
                       + ("; ".join(f"{n}: {r}" for n, r in unmapped.items())
                          or "every job is held out" if jobs or fill else "no <job>.json"))
    return Drive(drive_dir, meta, ramp_s, jobs, unmapped, fill, fill_held_out)


# -- profiles as text -----------------------------------------------------------


_HEADER = re.compile(r"\s*\[\s*([A-Za-z0-9_.-]+)\s*\]\s*(#.*)?$")
_KEY = re.compile(r"\s*([A-Za-z0-9_]+)\s*=")


def toml_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return repr(v)
    return json.dumps(v)


def set_keys(text: str, table: str, values: dict[str, Any],
             comments: dict[str, str] | None = None) -> str:
    """`text` with each key of [table] set: its line replaced (the comment
    from `comments`, else the old one kept), or added at the table's end."""
    comments = comments or {}
    out, current, pending = [], None, dict(values)

    def flush() -> None:
        while out and not out[-1].strip():
            out.pop()
        for k, v in pending.items():
            out.append(f"{k} = {toml_value(v)}" + (f"  # {comments[k]}" if k in comments else ""))
        pending.clear()
        out.append("")

    for line in text.splitlines():
        header = _HEADER.match(line)
        if header:
            if current == table and pending:
                flush()
            current = header.group(1)
        else:
            key = _KEY.match(line)
            if current == table and key and key.group(1) in pending:
                k = key.group(1)
                old = line.split("#", 1)[1].strip() if "#" in line else ""
                note = comments.get(k, old)
                out.append(f"{k} = {toml_value(pending.pop(k))}" + (f"  # {note}" if note else ""))
                continue
        out.append(line)
    if current == table and pending:
        flush()
    if pending:
        raise FitError(f"profile has no [{table}] table for {', '.join(pending)}")
    return "\n".join(out).rstrip("\n") + "\n"


def ssd_keys(text: str) -> dict[str, Any]:
    data = tomllib.loads(text)
    return dict(data.get("ssd", {}))


def proxy_factor(keys: dict[str, Any]) -> int:
    """The power of two the evaluation proxy is smaller by: halve pages per
    block while the raw size is above PROXY_RAW_BYTES, at least 6 pages stay
    and the TLC page types (index modulo 3) keep their pattern."""
    raw = (keys.get("channels", 4) * keys.get("dies_per_channel", 2) * keys.get("planes_per_die", 2)
           * keys.get("blocks_per_plane", 256) * keys.get("pages_per_block", 256)
           * keys.get("page_bytes", 16384))
    ppb, f = keys.get("pages_per_block", 256), 1
    while (raw // f > PROXY_RAW_BYTES and ppb % (2 * f) == 0 and ppb // (2 * f) >= 6
           and (ppb % 3 != 0 or (ppb // (2 * f)) % 3 == 0)):
        f *= 2
    return f


def proxy_text(text: str, factor: int) -> str:
    """The profile scaled down by `factor` (see the module's docstring)."""
    if factor == 1:
        return text
    keys = ssd_keys(text)
    unit = keys.get("mapping_unit_bytes", 4096)
    scaled: dict[str, Any] = {
        "pages_per_block": keys.get("pages_per_block", 256) // factor,
        "block_erase_ms": round(keys.get("block_erase_ms", 3.5) / factor, 6),
    }
    if keys.get("capacity_bytes", 0):
        scaled["capacity_bytes"] = keys["capacity_bytes"] // factor // unit * unit
    for k in ("slc_static_bytes", "slc_dynamic_max_bytes"):
        if keys.get(k, 0):
            scaled[k] = max(keys[k] // factor // unit * unit, unit)
    return set_keys(text, "ssd", scaled)


# -- free parameters -----------------------------------------------------------


@dataclass(frozen=True)
class Param:
    """A free parameter: a key moved in [lo, hi] (log scale when lo > 0);
    `follow` keys keep their ratio to it (the TLC page-type read times)."""

    key: str
    start: float
    lo: float
    hi: float
    integer: bool = False
    follow: dict[str, float] = field(default_factory=dict)

    @property
    def log(self) -> bool:
        return self.lo > 0

    def to_unit(self, v: float) -> float:
        if self.hi == self.lo:
            return 0.0
        if self.log:
            return (math.log(v) - math.log(self.lo)) / (math.log(self.hi) - math.log(self.lo))
        return (v - self.lo) / (self.hi - self.lo)

    def value(self, u: float) -> float | int:
        u = min(max(u, 0.0), 1.0)
        v = (math.exp(math.log(self.lo) + u * (math.log(self.hi) - math.log(self.lo)))
             if self.log else self.lo + u * (self.hi - self.lo))
        if self.integer:
            return int(round(v))
        return float(f"{v:.3g}") if v >= 1 else round(v, 2)

    def keys(self, v: float | int) -> dict[str, Any]:
        out: dict[str, Any] = {self.key: v}
        for k, start in self.follow.items():
            out[k] = float(f"{start * v / self.start:.3g}") if self.start else start
        return out


def _key_ranges() -> dict[str, tuple[float, float]]:
    """Each numeric [ssd] key's range, from `devmodel-check --keys`."""
    tool = paths.build_dir() / "cmake" / "devmodel" / "devmodel-check"
    proc = subprocess.run([str(tool), "--keys"], capture_output=True, text=True, check=True)
    out = {}
    for line in proc.stdout.splitlines():
        m = re.match(r"ssd\.(\w+): an? (?:integer|number) in \[([-0-9.e]+), ([-0-9.e]+)\]", line)
        if m:
            out[m.group(1)] = (float(m.group(2)), float(m.group(3)))
    return out


def free_params(keys: dict[str, Any], jobs: list[simulate.SimJob], past_cache: bool
                ) -> list[Param]:
    """The parameters the jobs present depend on, each within a factor 4 of
    its start value (write buffer: 8; blocks per plane: up to 2, more
    over-provisioning), inside the key's allowed range."""
    ranges = _key_ranges()
    reads = any(j.reads for j in jobs)
    writes = any(j.writes for j in jobs)
    beside = any(j.reads and j.writes for j in jobs)
    rr = keys.get("arbitration", "fifo") == "round_robin"
    suspend = bool(keys.get("suspend", False))

    def ranged(key: str, start: float, lo: float, hi: float, integer: bool = False,
               follow: dict[str, float] | None = None) -> Param:
        klo, khi = ranges.get(key, (lo, hi))
        lo, hi = max(lo, klo), min(hi, khi)
        if lo > 0 and start <= 0:
            start = lo
        return Param(key, min(max(start, lo), hi), lo, hi, integer, follow or {})

    out = []
    if reads:
        read = float(keys.get("page_read_us", 50.0))
        typed = {k: float(keys[k]) for k in ("page_read_lower_us", "page_read_middle_us",
                                             "page_read_upper_us") if keys.get(k, 0)}
        out.append(ranged("page_read_us", read, read / 4, read * 4, follow=typed))
        over = float(keys.get("controller_overhead_us", 5.0))
        out.append(ranged("controller_overhead_us", over, 0.0, max(4 * over, 20.0)))
    if writes:
        prog = float(keys.get("page_program_us", 500.0))
        typed = {k: float(keys[k]) for k in ("page_program_lower_us", "page_program_middle_us",
                                             "page_program_upper_us") if keys.get(k, 0)}
        out.append(ranged("page_program_us", prog, prog / 4, prog * 4, follow=typed))
        buf = int(keys.get("write_buffer_bytes", 4 << 20))
        if buf > 0:
            out.append(ranged("write_buffer_bytes", buf, max(buf // 8, 1 << 20), buf * 8,
                              integer=True))
        # Over-provisioning, through the raw size: the steady write rate
        # falls with garbage collection's write amplification.
        bpp = int(keys.get("blocks_per_plane", 256))
        out.append(ranged("blocks_per_plane", bpp, bpp, 2 * bpp, integer=True))
        if not past_cache and keys.get("slc_static_bytes", 0):
            slc = float(keys.get("slc_program_us", 0) or prog / 3)
            out.append(ranged("slc_program_us", slc, slc / 4, slc * 4))
    if beside and suspend:
        sus = float(keys.get("suspend_latency_us", 20.0))
        out.append(ranged("suspend_latency_us", sus, 0.0, max(4 * sus, 20.0)))
        res = float(keys.get("resume_latency_us", 0.0))
        out.append(ranged("resume_latency_us", res, 0.0, max(4 * res, 20.0)))
        if keys.get("max_suspends_per_op", 0):
            out.append(ranged("max_suspends_per_op", keys["max_suspends_per_op"], 1, 64,
                              integer=True))
    if beside and rr and keys.get("max_inflight_per_queue", 0):
        q = int(keys["max_inflight_per_queue"])
        out.append(ranged("max_inflight_per_queue", q, max(q // 8, 1), q * 4, integer=True))
    if beside and not rr:
        q = int(keys.get("max_inflight_commands", 128))
        out.append(ranged("max_inflight_commands", q, max(q // 8, 1), q * 4, integer=True))
    return out


# -- evaluation -------------------------------------------------------------------


def sym_error(model: float | None, drive: float | None) -> float:
    """max / min - 1: 0 when equal, 1 at a factor 2 either way."""
    if drive is None:
        return 0.0
    if not model or model <= 0 or drive <= 0:
        return MISSING_ERROR
    return max(model, drive) / min(model, drive) - 1.0


@dataclass(frozen=True)
class Row:
    job: str
    direction: str
    metric: str
    drive: float | None
    model: float | None
    held_out: bool

    @property
    def error(self) -> float:
        return sym_error(self.model, self.drive)


def job_rows(job: DriveJob, model: dict[str, compare_fio.Figures], held_out: bool) -> list[Row]:
    rows = []
    for d, fig in job.figures.items():
        ours = model.get(d)
        for m in METRICS:
            if fig.values.get(m) is None:
                continue
            rows.append(Row(job.name, d, m, fig.values[m],
                            ours.values.get(m) if ours else None, held_out))
    return rows


def job_error(rows: list[Row]) -> float:
    return sum(r.error for r in rows) / len(rows) if rows else 0.0


@dataclass
class Evaluator:
    """Runs the drive's jobs on candidate profiles; remembers each result."""

    drive: Drive
    seed: int
    ramp_s: float
    runtime_s: float
    runs: int = 0
    cache: dict[str, dict[str, compare_fio.Figures]] = field(default_factory=dict)

    def past_cache(self, job: DriveJob, keys: dict[str, Any]) -> bool:
        """Did the drive write more than the static SLC cache in its ramp?"""
        w = job.figures.get("write")
        if w is None or not w.values.get("iops"):
            return False
        written = job.ramp_s * w.values["iops"] * job.sim.write_block_bytes
        return written >= keys.get("slc_static_bytes", 0)

    def eval_text(self, text: str, job: DriveJob, factor: int) -> str:
        keys = ssd_keys(text)
        pre = "steady" if job.sim.writes else "full"
        out = profile_with_precondition(text, pre)
        if out is None:
            raise FitError("profile has no [ssd] table")
        if job.sim.writes and self.past_cache(job, keys):
            out = set_keys(out, "ssd", {"slc_static_bytes": 0, "slc_dynamic_max_bytes": 0})
        return proxy_text(out, factor)

    def figures(self, text: str, job: DriveJob, factor: int) -> dict[str, compare_fio.Figures]:
        ev = self.eval_text(text, job, factor)
        key = hashlib.sha256(f"{job.name}\n{ev}".encode()).hexdigest()
        if key not in self.cache:
            doc = simulate.run(ev, self.sim_job(job, ev), self.ramp_s, self.runtime_s, self.seed,
                               label=f"{job.name}.toml")
            self.runs += 1
            self.cache[key] = simulate.figures(doc, f"devmodel-sim {job.name}")
        return self.cache[key]

    @staticmethod
    def sim_job(job: DriveJob, profile_text: str) -> simulate.SimJob:
        """The job as the simulator runs it on `profile_text`: over the same
        share of the device as the drive's (offsets aligned to 1 MiB)."""
        if job.span == WHOLE:
            return job.sim
        capacity = int(ssd_keys(profile_text).get("capacity_bytes", 0))
        if capacity <= 0:
            raise FitError(f"{job.path}: job {job.name}: ran on part of the drive, and the "
                           "profile states no capacity_bytes to place it on")
        mib = 1 << 20
        offset = int(job.span[0] * capacity) // mib * mib
        size = max(int(job.span[1] * capacity) // mib * mib, mib)
        return job.sim.confined(offset, min(size, (capacity - offset) // mib * mib))

    def rows(self, text: str, names: list[str], held_out: set[str], factor: int) -> list[Row]:
        jobs = [self.drive.jobs[n] for n in names]
        with ThreadPoolExecutor(max_workers=2) as pool:
            results = list(pool.map(lambda j: self.figures(text, j, factor), jobs))
        rows = []
        for j, figs in zip(jobs, results):
            rows += job_rows(j, figs, j.name in held_out)
        return rows

    def objective(self, text: str, names: list[str], factor: int) -> float:
        if not names:
            return 0.0
        rows = self.rows(text, names, set(), factor)
        return sum(job_error([r for r in rows if r.job == n]) for n in names) / len(names)


# -- the fill ------------------------------------------------------------------------


FILL_METRICS = (("cache_gb", 1e9), ("in_cache_mb_s", 1e6), ("after_cache_mb_s", 1e6))
FILL_PAST = 2  # the model's fill writes up to twice the cache the formulas give...
FILL_PAST_INTERVALS = 20  # ...and this many intervals at the rate after it


def _fill_values(f: fill_log.FillFigures | None) -> dict[str, float | None]:
    if f is None:
        return {m: None for m, _ in FILL_METRICS}
    return {"cache_gb": f.cache_bytes / 1e9 if f.cache_bytes is not None else None,
            "in_cache_mb_s": f.rate_in / 1e6,
            "after_cache_mb_s": f.rate_after / 1e6 if f.rate_after is not None else None}


def model_fill(text: str, drive_fill: fill_log.FillFigures, seed: int
               ) -> tuple[fill_log.FillFigures | None, list[str]]:
    """The drive's fill run on the profile `text` at full size from empty
    (precondition "none"), logged per the drive's interval and measured by
    the drive's rule. It writes what the drive wrote, up to FILL_PAST x the
    cache the formulas give plus FILL_PAST_INTERVALS intervals at the rate
    after it (past the cache a first fill's rate is constant in the model:
    no folding while busy, no garbage collection on a first write), and at
    most the profile's capacity. Returns the figures (None when its log has
    none) and lines saying what was not measured."""
    pre = profile_with_precondition(text, "none")
    if pre is None:
        raise FitError("profile has no [ssd] table")
    keys = ssd_keys(pre)
    want = drive_fill.written_bytes
    exp = fill_fit.expected(keys, "the fitted profile")
    if exp["cache_bytes"] is not None and exp["rate_after"]:
        want = min(want, FILL_PAST * exp["cache_bytes"]
                   + FILL_PAST_INTERVALS * exp["rate_after"] * drive_fill.interval_ms / 1000)
    notes = []
    capacity = int(keys.get("capacity_bytes", 0))
    if capacity and want > capacity:
        notes.append(f"fill: the drive wrote {drive_fill.written_bytes / 1e9:.4g} GB, more than "
                     "the profile's capacity; the model's fill writes its capacity")
        want = capacity
    interval = max(1, round(drive_fill.interval_ms))
    intervals, _ = fill_fit.run(pre, int(want), interval, "fill.toml", seed)
    try:
        model = fill_log.figures(drive_fill.path, intervals)
    except fill_log.FillLogError as e:
        msg = str(e).replace(str(drive_fill.path), "the model's fill log")
        return None, notes + [f"fill: the fitted profile's own fill: {msg}"]
    if drive_fill.dropped and not model.dropped:
        notes.append(f"fill: the fitted profile's own fill of {model.written_bytes / 1e9:.4g} GB "
                     f"does not drop: its cache holds at least {model.cache_at_least / 1e9:.4g} GB")
    if not drive_fill.dropped and model.dropped and model.cache_bytes is not None \
            and model.cache_bytes < drive_fill.cache_at_least:
        notes.append(f"fill: the model's cache ({model.cache_bytes / 1e9:.3g} GB) ends before the "
                     f"{drive_fill.cache_at_least / 1e9:.3g} GB the drive's fill shows it holds")
    return model, notes


def fill_rows(drive_fill: fill_log.FillFigures, model: fill_log.FillFigures | None,
              held_out: bool) -> list[Row]:
    """A row per fill figure the drive's log has."""
    d, m = _fill_values(drive_fill), _fill_values(model)
    return [Row(FILL_JOB, "write", k, d[k], m[k], held_out) for k, _ in FILL_METRICS
            if d[k] is not None]


def fill_summary(f: fill_log.FillFigures) -> str:
    head = (f"{f.intervals} intervals of {f.interval_ms:g} ms, {f.written_bytes / 1e9:.4g} GB in "
            f"{f.seconds:g} s; ")
    if f.dropped:
        assert f.cache_bytes is not None and f.rate_after is not None and f.drop_s is not None
        return head + (f"drop at {f.drop_s:g} s: cache {f.cache_bytes / 1e9:.4g} GB, "
                       f"{f.rate_in / 1e6:,.0f} MB/s in it, {f.rate_after / 1e6:,.0f} MB/s after")
    return head + (f"no sustained drop: {f.rate_in / 1e6:,.0f} MB/s, the cache at least "
                   f"{f.cache_at_least / 1e9:.4g} GB")


def geometry_lines(res: Result) -> list[str]:
    """What the reads chose for the geometry, for every format."""
    if res.geometry is None:
        return list(res.geometry_lines)
    return [f"read parallelism: {res.geometry.start_units} -> {res.geometry.chosen.units} "
            "read units"] + [f"read parallelism: {line}" for line in res.geometry_lines]


def link_lines(res: Result) -> list[str]:
    """What the sequential reads did to the link and channels, for every
    format."""
    return ([f"link: {k}: {toml_value(s)} -> {toml_value(v)}"
             for k, (s, v) in res.link_keys.items()]
            + [f"link: {line}" for line in res.link_lines])


def fill_lines(res: Result) -> list[str]:
    """What the fill did to the profile, for every format."""
    f = res.drive.fill
    if f is None:
        return []
    lines = [f"fill ({'held out' if res.drive.fill_held_out else 'fitted'}): {f.path}: "
             + fill_summary(f)]
    if res.fill_keys is not None:
        for k, v in res.fill_keys.values.items():
            lines.append(f"fill: {k}: {toml_value(res.fill_keys.start[k])} -> {toml_value(v)}")
        lines += [f"not fitted: {n}" for n in res.fill_keys.not_fitted]
    lines += res.fill_notes
    return lines


# -- the start profile and the search -------------------------------------------------


def ssd_profiles() -> dict[str, Path]:
    out = {}
    for p in sorted(PROFILE_DIR.glob("*.toml")):
        try:
            if tomllib.loads(p.read_text()).get("device", {}).get("model") == "ssd":
                out[p.stem] = p
        except tomllib.TOMLDecodeError:
            continue
    return out


def choose_start(ev: Evaluator, fitted: list[str]) -> tuple[str, str]:
    """The shipped SSD profile nearest the drive, and why: by QD1 read
    latency when the drive ran randread-qd1, else by the error on every
    fitted job at the profiles' own values."""
    candidates = ssd_profiles()
    scores = {}
    for name, path in candidates.items():
        text = path.read_text()
        factor = proxy_factor(ssd_keys(text))
        if QD1_JOB in fitted:
            rows = ev.rows(text, [QD1_JOB], set(), factor)
            scores[name] = next((r.error for r in rows if r.metric == "p50_us"),
                                next(r.error for r in rows if r.metric == "iops"))
        else:
            scores[name] = ev.objective(text, fitted, factor)
    best = min(scores, key=lambda n: (scores[n], n))
    has_p50 = QD1_JOB in fitted and \
        ev.drive.jobs[QD1_JOB].figures["read"].values.get("p50_us") is not None
    how = (f"QD1 read {'p50' if has_p50 else 'IOPS'} nearest the drive's ({QD1_JOB})"
           if QD1_JOB in fitted
           else "lowest error on the fitted jobs at its own values")
    return best, how + ": " + ", ".join(f"{n} {scores[n]:.2f}" for n in sorted(scores))


def arbitration_variants(text: str, jobs: list[simulate.SimJob]) -> dict[str, str]:
    """The start text and, when a job reads beside writes, the same drive
    with the other arbitration: where reads wait behind writes (one FIFO)
    or beside them (separate pipelines) shapes a reader's tail more than
    any time does. The round robin limits are 0 under "fifo"."""
    keys = ssd_keys(text)
    current = keys.get("arbitration", "fifo")
    out = {current: text}
    if any(j.reads and j.writes for j in jobs):
        if current == "round_robin":
            out["fifo"] = set_keys(text, "ssd", {"arbitration": "fifo", "max_inflight_reads": 0,
                                                 "max_inflight_writes": 0,
                                                 "max_inflight_per_queue": 0})
        else:
            out["round_robin"] = set_keys(text, "ssd", {"arbitration": "round_robin"})
    return out


def fit_geometry(ev: Evaluator, text: str, start: str, read_jobs: list[str]
                 ) -> tuple[str, geometry_fit.Choice]:
    """The read times from the drive's QD1 reads (when it ran them) and
    the read parallelism from its read-only jobs (blklab.geometry_fit),
    set in `text`."""
    keys = ssd_keys(text)
    lines = []
    values: dict[str, Any] = {}
    if QD1_JOB in read_jobs:
        read = float(keys.get("page_read_us", 50.0))
        lo, hi = _key_ranges().get("page_read_us", (0.0, 100000.0))
        values, line = geometry_fit.sense_for_qd1(
            keys, ev.drive.jobs[QD1_JOB].figures["read"].values["iops"],
            max(read / 4, lo, 0.01), min(read * 4, hi))
        lines.append(line)
    else:
        lines.append(f"read times kept: the drive did not run {QD1_JOB}")
    base = set_keys(text, "ssd", values) if values else text

    def score(geometry: dict[str, Any]) -> float:
        t = set_keys(base, "ssd", geometry) if geometry else base
        return ev.objective(t, read_jobs, proxy_factor(ssd_keys(t)))

    choice = geometry_fit.choose(ssd_keys(base), score)
    choice.lines[:0] = lines
    choice.values = values | choice.values
    comments = {k: f"fitted by blklab fit to the reads ({start}: {toml_value(keys.get(k, 0))})"
                for k in choice.values}
    return (set_keys(text, "ssd", choice.values, comments) if choice.values else text), choice


def _iops(figs: dict[str, compare_fio.Figures]) -> float:
    return float(figs["read"].values["iops"])


def reread(ev: Evaluator, text: str, start: str, origin: dict[str, Any], fitted: list[str]
           ) -> str:
    """`text` with the read times set again from the drive's randread-qd1
    (geometry_fit.sense_for_qd1), as the read step sets them, when it is
    fitted to."""
    if QD1_JOB not in fitted:
        return text
    read = float(origin.get("page_read_us", 50.0))
    lo, hi = _key_ranges().get("page_read_us", (0.0, 100000.0))
    values, _ = geometry_fit.sense_for_qd1(ssd_keys(text), _iops(ev.drive.jobs[QD1_JOB].figures),
                                           max(read / 4, lo, 0.01), min(read * 4, hi))
    comments = {k: f"fitted by blklab fit to the reads ({start}: {toml_value(origin.get(k, 0))})"
                for k in values}
    return set_keys(text, "ssd", values, comments)


def fit_link(ev: Evaluator, text: str, start: str, origin: dict[str, Any], fitted: list[str],
             read_jobs: list[str]) -> tuple[str, list[str]]:
    """The link and the channel rate from the drive's sequential reads
    (blklab.link_fit), set in `text` with the read times set again; and
    lines saying what was done."""
    jobs = ev.drive.jobs
    if link_fit.SEQ_JOB not in fitted:
        why = "held out" if link_fit.SEQ_JOB in jobs else f"no {link_fit.SEQ_JOB} job"
        return text, [f"not fitted: {why}; host_link_mb_s and channel_mb_s are the start's"]
    keys = ssd_keys(text)
    factor = proxy_factor(keys)
    r = _iops(jobs[link_fit.SEQ_JOB].figures) * link_fit.SEQ_BYTES / 1e6
    unlinked = set_keys(text, "ssd", {"host_link_mb_s": 0})
    m = _iops(ev.figures(unlinked, jobs[link_fit.SEQ_JOB], factor)) * link_fit.SEQ_BYTES / 1e6
    d = d0 = None
    if link_fit.SEQ_QD1_JOB in fitted and QD1_JOB in fitted:
        seq1, rand1 = jobs[link_fit.SEQ_QD1_JOB], jobs[QD1_JOB]
        d = 1e6 / _iops(seq1.figures) - 1e6 / _iops(rand1.figures)
        d0 = (1e6 / _iops(ev.figures(text, seq1, factor))
              - 1e6 / _iops(ev.figures(text, rand1, factor)))
    sol = link_fit.solve(keys, r, m, d, d0, _key_ranges())
    lines = list(sol.lines)

    def comments(values: dict[str, Any]) -> dict[str, str]:
        return {k: f"fitted by blklab fit to the sequential reads ({start}: "
                   f"{toml_value(origin.get(k, 0))})" for k in values}

    if not sol.binding:
        if not sol.values:
            return text, lines
        return reread(ev, set_keys(text, "ssd", sol.values, comments(sol.values)), start,
                      origin, fitted), lines
    if not sol.candidates:
        lines.append("not fitted: no candidate holds; host_link_mb_s and channel_mb_s are "
                     "the start's")
        return text, lines
    def placed(c: link_fit.Candidate) -> str:
        return reread(ev, set_keys(text, "ssd", c.values, comments(c.values)), start, origin,
                      fitted)

    cands = list(sol.candidates)
    if d is not None:  # each corrected once against the model's own D on it
        refined = []
        for c in cands:
            t = placed(c)
            dc = (1e6 / _iops(ev.figures(t, jobs[link_fit.SEQ_QD1_JOB], factor))
                  - 1e6 / _iops(ev.figures(t, jobs[QD1_JOB], factor)))
            new, line = link_fit.refine(c, keys, r, d, dc, _key_ranges())
            lines.append(line)
            if new is not None:
                refined.append(new)
        cands = refined
        if not cands:
            lines.append("not fitted: no candidate holds; host_link_mb_s and channel_mb_s are "
                         "the start's")
            return text, lines
    texts = [placed(c) for c in cands]
    if len(cands) == 1:
        lines.append(link_fit.candidate_line(cands[0], None, True))
        return texts[0], lines
    scores = [(c, ev.objective(t, read_jobs, factor)) for c, t in zip(cands, texts)]
    chosen, more = link_fit.choose(scores)
    lines += more
    return texts[cands.index(chosen)], lines


def coordinate_descent(params: list[Param], f: Callable[[list[float]], float], rounds: int
                       ) -> tuple[list[float], float]:
    """Minimises f over [0, 1]^n: per round, each coordinate in turn tries
    +step and -step (clamped) and keeps a strict improvement; the step
    starts at 1/4 and halves each round. Deterministic."""
    x = [p.to_unit(p.start) for p in params]
    best = f(x)
    step = 0.25
    for r in range(rounds):
        for i, p in enumerate(params):
            for sign in (1, -1):
                moved = False
                while True:  # keep stepping while it improves
                    u = min(max(x[i] + sign * step, 0.0), 1.0)
                    if p.value(u) == p.value(x[i]):
                        break
                    trial = x[:i] + [u] + x[i + 1:]
                    val = f(trial)
                    log.debug("round %d %s=%s: %.4f", r, p.key, p.value(u), val)
                    if val >= best - 1e-9:
                        break
                    x, best, moved = trial, val, True
                if moved:
                    break
        step /= 2
    return x, best


def apply(text: str, params: list[Param], x: list[float], start_name: str,
          origin: dict[str, Any] | None = None) -> str:
    """`text` with the parameters at `x`; each key's comment names its
    value in the start profile (`origin`, else the parameter's start)."""
    values: dict[str, Any] = {}
    comments = {}
    for p, u in zip(params, x):
        v = p.value(u)
        for k, kv in p.keys(v).items():
            values[k] = kv
            old = p.start if k == p.key else p.follow[k]
            if origin is not None and k in origin:
                old = origin[k]
            comments[k] = f"fitted by blklab fit ({start_name}: {toml_value(old)})"
    return set_keys(text, "ssd", values, comments)


# -- output ----------------------------------------------------------------------------


@dataclass
class Result:
    drive: Drive
    start: str
    start_reason: str
    params: list[Param]
    fitted_values: dict[str, Any]
    fitted_jobs: list[str]
    held_out: list[str]
    rows: list[Row]
    objective_start: float
    objective: float
    evaluations: int
    factor: int
    text: str = ""
    fill_keys: fill_fit.FillKeys | None = None
    fill_model: fill_log.FillFigures | None = None  # the fitted profile's fill
    fill_notes: list[str] = field(default_factory=list)
    geometry: geometry_fit.Choice | None = None
    geometry_lines: list[str] = field(default_factory=list)
    link_lines: list[str] = field(default_factory=list)
    link_keys: dict[str, tuple[Any, Any]] = field(default_factory=dict)  # key: (start, fitted)


def _fmt(v: float | None) -> str:
    return compare_fio.fmt(v)


def table(rows: list[Row]) -> list[list[str]]:
    out = [["job", "set", "dir", "metric", "drive", "model", "model/drive", "error"]]
    for r in rows:
        out.append([r.job, "held out" if r.held_out else "fitted", r.direction, r.metric,
                    _fmt(r.drive), _fmt(r.model), compare_fio.fmt_ratio(r.model, r.drive),
                    f"{r.error:.2f}"])
    return out


def job_summary(rows: list[Row]) -> list[tuple[str, bool, float]]:
    jobs = list(dict.fromkeys((r.job, r.held_out) for r in rows))
    return [(j, h, job_error([r for r in rows if r.job == j])) for j, h in jobs]


def render(res: Result, fmt: str) -> str:
    if fmt == "json":
        return json.dumps({
            "drive": str(res.drive.path), "start": res.start,
            "parameters": {p.key: {"start": p.start, "fitted": res.fitted_values[p.key],
                                   "range": [p.lo, p.hi]} for p in res.params},
            "objective": {"start": res.objective_start, "fitted": res.objective},
            "error": "max(model, drive) / min(model, drive) - 1",
            "jobs": {j: {"held_out": h, "error": e} for j, h, e in job_summary(res.rows)},
            "not_simulated": res.drive.unmapped,
            "read_parallelism": None if res.geometry is None else {
                "start_units": res.geometry.start_units, "units": res.geometry.chosen.units,
                "keys": res.geometry.values,
                "candidates": [{"dies_per_channel": c.dies_per_channel, "units": c.units,
                                "keys": c.values, "error": e} for c, e in res.geometry.scores],
                "lines": res.geometry_lines},
            "link": {"keys": {k: {"start": s, "fitted": v} for k, (s, v) in res.link_keys.items()},
                     "lines": res.link_lines},
            "fill": None if res.drive.fill is None else {
                "log": str(res.drive.fill.path),
                "held_out": res.drive.fill_held_out,
                "summary": fill_summary(res.drive.fill),
                "keys": {k: {"start": res.fill_keys.start[k], "fitted": v}
                         for k, v in res.fill_keys.values.items()} if res.fill_keys else {},
                "not_fitted": (res.fill_keys.not_fitted if res.fill_keys else [])
                + res.fill_notes},
            "rows": [{"job": r.job, "held_out": r.held_out, "direction": r.direction,
                      "metric": r.metric, "drive": r.drive, "model": r.model,
                      "error": r.error} for r in res.rows],
        }, indent=2) + "\n"
    body = table(res.rows)
    if fmt == "markdown":
        lines = ["| " + " | ".join(body[0]) + " |",
                 "|" + "|".join("---" if i < 4 else "---:" for i in range(len(body[0]))) + "|"]
        lines += ["| " + " | ".join(line) + " |" for line in body[1:]]
        lines += ["", "| job | set | mean error |", "|---|---|---:|"]
        lines += [f"| {j} | {'held out' if h else 'fitted'} | {e:.2f} |"
                  for j, h, e in job_summary(res.rows)]
        extra = geometry_lines(res) + link_lines(res) + fill_lines(res)
        if extra:
            lines += [""] + [f"- {line}" for line in extra]
        return "\n".join(lines) + "\n"
    widths = [max(len(line[i]) for line in body) for i in range(len(body[0]))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(line, widths)).rstrip() for line in body]
    lines += [f"job {j} ({'held out' if h else 'fitted'}): mean error {e:.2f}"
              for j, h, e in job_summary(res.rows)]
    lines += [f"not simulated: {j}: {why}" for j, why in res.drive.unmapped.items()]
    lines += geometry_lines(res) + link_lines(res) + fill_lines(res)
    return "\n".join(lines) + "\n"


def header(res: Result) -> str:
    meta = res.drive.meta
    drive = ", ".join(f"{k} {meta[k]}" for k in ("model", "firmware", "size_bytes", "scheduler",
                                                  "kernel", "fio") if meta.get(k)) or \
        "no characterize.json: the drive is not named"
    lines = [
        f"Fitted by blklab fit to the drive results in {res.drive.path}",
        f"({drive}), starting from {res.start}.toml ({res.start_reason}).",
        "Data fitted to (file, sha256):",
    ]
    for n in res.fitted_jobs + res.held_out:
        j = res.drive.jobs[n]
        digest = hashlib.sha256(j.path.read_bytes()).hexdigest()
        lines.append(f"  {j.path.name} {digest[:16]}" + ("  (held out)" if n in res.held_out else ""))
    for n, why in res.drive.unmapped.items():
        lines.append(f"  {n}.json: not simulated: {why}")
    if res.drive.fill is not None:
        digest = hashlib.sha256(res.drive.fill.path.read_bytes()).hexdigest()
        lines.append(f"  {FILL_LOG} {digest[:16]}"
                     + ("  (held out)" if res.drive.fill_held_out else ""))
        lines.append("Fill (the drop rule and the keys' formulas: docs/characterize-a-drive.md;")
        lines.append("the model's fill runs from empty at full size, logged as the drive's):")
        lines += [f"  {line}" for line in fill_lines(res)]
    if res.geometry_lines:
        lines.append("Read parallelism (from the random-read jobs, at the proxy; the rule: "
                     "docs/characterize-a-drive.md):")
        lines += [f"  {line}" for line in res.geometry_lines]
    if res.link_lines:
        lines.append("Link and channels (from the sequential reads, at the proxy; the rule: "
                     "docs/characterize-a-drive.md):")
        lines += [f"  {k}: {toml_value(s)} -> {toml_value(v)}"
                  for k, (s, v) in res.link_keys.items()]
        lines += [f"  {line}" for line in res.link_lines]
    lines += [] if not res.drive.jobs else [
        "Evaluated with devmodel-sim; the drive's ramp and span per job: " + "; ".join(
            f"{n} {j.ramp_s:g} s, {_span_text(j.span)}" for n, j in res.drive.jobs.items()) + ";",
        f"proxy scale 1/{res.factor};",
        f"{res.evaluations} simulator runs; objective (mean over jobs of the mean of",
        "max(model, drive) / min(model, drive) - 1 over IOPS, p50, p99 per direction)",
        f"{res.objective_start:.3f} at the start, {res.objective:.3f} fitted (on the proxy).",
        "Free parameters (start -> fitted, range):",
    ]
    for p in res.params:
        lines.append(f"  {p.key}: {toml_value(p.start)} -> {toml_value(res.fitted_values[p.key])}"
                     f" [{p.lo:g}, {p.hi:g}]")
    lines.append("Residual error of this profile, full size, per job and figure:")
    body = table(res.rows)
    widths = [max(len(line[i]) for line in body) for i in range(len(body[0]))]
    lines += ["  " + "  ".join(c.ljust(w) for c, w in zip(line, widths)).rstrip()
              for line in body]
    lines += [f"  job {j} ({'held out' if h else 'fitted'}): mean error {e:.2f}"
              for j, h, e in job_summary(res.rows)]
    lines.append("The profile it started from, with its sources:")
    return "".join(f"# {line}\n" if line else "#\n" for line in lines)


def fit(drive_dir: Path, start: str | None = None, names: list[str] | None = None,
        hold_out: list[str] | None = None, ramp: str | None = None, seed: int = 1,
        sim_ramp_s: float = DEFAULT_SIM_RAMP_S, sim_runtime_s: float = DEFAULT_SIM_RUNTIME_S,
        rounds: int = DEFAULT_ROUNDS, max_error: float = DEFAULT_MAX_ERROR,
        guest_fio: str | None = None) -> Result:
    """The fitted profile's text and its error table; raises FitError."""
    hold_out = list(dict.fromkeys(hold_out or []))
    names = [n for n in dict.fromkeys(names or []) if n not in hold_out]
    drive = load_drive(drive_dir, names, hold_out, ramp, guest_fio)
    fitted = [n for n in drive.jobs if n not in hold_out]
    ev = Evaluator(drive, seed, sim_ramp_s, sim_runtime_s)
    profiles = ssd_profiles()
    if start is None and not fitted:
        raise FitError(f"{drive_dir}: the fill is the only job to fit; name the profile whose "
                       f"geometry it is fitted on with --start ({', '.join(profiles)})")
    if start is None:
        start, reason = choose_start(ev, fitted)
    elif start in profiles:
        reason = "named with --start"
    else:
        raise FitError(f"--start {start}: not an SSD profile in devmodel/profiles "
                       f"({', '.join(profiles)})")
    text = profiles[start].read_text()
    keys = ssd_keys(text)
    geometry, geometry_lines = None, []
    read_jobs = [n for n in fitted if drive.jobs[n].sim.reads and not drive.jobs[n].sim.writes]
    random_reads = [n for n in read_jobs if n not in link_fit.SEQ_JOBS]
    if len(random_reads) >= 2:
        text, geometry = fit_geometry(ev, text, start, random_reads)
        keys = ssd_keys(text)
        geometry_lines = geometry.lines
    elif random_reads:
        geometry_lines = [f"not fitted: one random-read job ({random_reads[0]}) shows no "
                          "parallelism; the start's geometry kept"]
    origin = ssd_keys(profiles[start].read_text())
    text, link_lines_ = fit_link(ev, text, start, origin, fitted, read_jobs)
    keys = ssd_keys(text)
    link_keys = {k: (origin.get(k, 0), keys.get(k, 0)) for k in ("host_link_mb_s", "channel_mb_s")
                 if keys.get(k, 0) != origin.get(k, 0)}
    factor = proxy_factor(keys)
    fill_keys = None
    if drive.fill is not None and not drive.fill_held_out:
        try:
            fill_keys = fill_fit.derive(keys, drive.fill, start, _key_ranges())
        except fill_fit.FillFitError as e:
            raise FitError(str(e)) from None
        if fill_keys.values:
            text = set_keys(text, "ssd", fill_keys.values, fill_keys.comments)
            keys = ssd_keys(text)
    variants = arbitration_variants(text, [drive.jobs[n].sim for n in fitted])
    if len(variants) > 1:
        scores = {a: ev.objective(t, fitted, factor) for a, t in variants.items()}
        chosen = min(scores, key=lambda a: (scores[a], a))
        reason += ("; arbitration " + ", ".join(f"{a} {scores[a]:.2f}" for a in scores)
                   + f": {chosen}")
        comment = f"chosen by blklab fit ({start}: {keys.get('arbitration', 'fifo')})"
        text = variants[chosen]
        if chosen != keys.get("arbitration", "fifo"):
            text = set_keys(text, "ssd", {"arbitration": chosen}, {"arbitration": comment})
        keys = ssd_keys(text)
    past = any(ev.past_cache(drive.jobs[n], keys) for n in fitted)
    params = [p for p in free_params(keys, [drive.jobs[n].sim for n in fitted], past)
              if fill_keys is None or p.key not in fill_keys.values]
    log.info("fit: start %s, %d free parameters, proxy 1/%d", start, len(params), factor)

    def f(x: list[float]) -> float:
        return ev.objective(apply(text, params, x, start), fitted, factor)

    x0 = [p.to_unit(p.start) for p in params]
    objective_start = f(x0)
    x, objective = coordinate_descent(params, f, rounds)
    out_text = apply(text, params, x, start, ssd_keys(profiles[start].read_text()))
    out_text = set_keys(out_text, "device", {"name": _device_name(drive, start)},
                        {"name": "blklab fit"})
    sim_held_out = [n for n in hold_out if n != FILL_JOB]
    rows = ev.rows(out_text, fitted + sim_held_out, set(sim_held_out), 1)
    fill_model, fill_notes = None, []
    if drive.fill is not None:
        fill_model, fill_notes = model_fill(out_text, drive.fill, seed)
        rows += fill_rows(drive.fill, fill_model, drive.fill_held_out)
    res = Result(drive, start, reason, params, {p.key: p.value(u) for p, u in zip(params, x)},
                 fitted, sim_held_out, rows, objective_start, objective, ev.runs, factor,
                 fill_keys=fill_keys, fill_model=fill_model, fill_notes=fill_notes,
                 geometry=geometry, geometry_lines=geometry_lines, link_lines=link_lines_,
                 link_keys=link_keys)
    for j, h, e in job_summary(rows):
        if not h and e > max_error:
            where = drive.fill.path if j == FILL_JOB and drive.fill else drive.jobs[j].path
            raise FitError(f"{where}: job {j}: after the fit the model is still off "
                           f"by {e:.2f} on average (max/min - 1 of IOPS, p50, p99; --max-error "
                           f"{max_error:g}): no profile from {start} fits these results")
    res.text = header(res) + "#\n" + out_text
    return res


def _span_text(span: tuple[float, float]) -> str:
    if span == WHOLE:
        return "the whole device"
    return f"{span[1]:.4g} of the device from {span[0]:.4g}"


def _device_name(drive: Drive, start: str) -> str:
    model = drive.meta.get("model")
    return f"fitted to {model}" if isinstance(model, str) and model else \
        f"fitted to {drive.path.name} from {start}"


def check_profile(path: Path) -> None:
    """devmodel-check's verdict on the written text (an ordinary profile)."""
    tool = paths.build_dir() / "cmake" / "devmodel" / "devmodel-check"
    proc = subprocess.run([str(tool), str(path)], capture_output=True, text=True)
    if proc.returncode != 0:
        raise FitError(f"the fitted profile does not validate: {proc.stderr.strip()}")


# -- the command ---------------------------------------------------------------------------


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("drive", type=Path, metavar="DRIVE_DIR",
                   help="the drive's results (tools/characterize-drive.sh --out)")
    p.add_argument("-o", "--output", type=Path, required=True,
                   help="the profile TOML to write (refused if it exists)")
    p.add_argument("--start", metavar="PROFILE", help="the shipped SSD profile to start from "
                   "(default: the nearest by QD1 read latency, else by error)")
    p.add_argument("--job", action="append", default=[], metavar="NAME",
                   help="fit to this job only; repeatable (default: every job the drive ran "
                   "that the simulator maps, and the fill from its bandwidth log)")
    p.add_argument("--hold-out", action="append", default=[], metavar="JOB",
                   help="leave this job out of the fit and report its error; repeatable")
    p.add_argument("--ramp", metavar="TIME", help="the drive's RAMP when characterize.json "
                   "does not record it (default: tools/characterize/defaults.env)")
    p.add_argument("--format", choices=FORMATS, default="text", help="the error table's format")
    p.add_argument("--table", type=Path, metavar="FILE",
                   help="write the error table to this new file instead of printing it")
    p.add_argument("--max-error", type=float, default=DEFAULT_MAX_ERROR, metavar="E",
                   help="refuse when a fitted job's mean error (max/min - 1) stays above E "
                   f"(default {DEFAULT_MAX_ERROR:g})")
    p.add_argument("--rounds", type=int, default=DEFAULT_ROUNDS,
                   help=f"coordinate descent rounds (default {DEFAULT_ROUNDS})")
    p.add_argument("--sim-ramp", default=f"{DEFAULT_SIM_RAMP_S:g}s", metavar="TIME",
                   help="virtual time each evaluation runs unmeasured")
    p.add_argument("--sim-runtime", default=f"{DEFAULT_SIM_RUNTIME_S:g}s", metavar="TIME",
                   help="virtual time each evaluation measures")
    p.add_argument("--seed", type=int, default=1, help="the simulator's seed")


def main(args: argparse.Namespace) -> int:
    from blklab.results import write_atomic

    for out in (args.output, args.table):
        if out is not None and out.exists():
            raise FitError(f"{out}: already exists; nothing is overwritten")
    if args.rounds < 0:
        raise FitError(f"--rounds {args.rounds}: must be 0 or more")
    res = fit(args.drive, args.start, args.job, args.hold_out, args.ramp, args.seed,
              characterize.seconds(args.sim_ramp, "SIM_RAMP"),
              characterize.seconds(args.sim_runtime, "SIM_RUNTIME"),
              args.rounds, args.max_error)
    tmp = args.output.with_name(f".{args.output.name}.check.toml")
    try:
        write_atomic(tmp, res.text)
        check_profile(tmp)
    finally:
        tmp.unlink(missing_ok=True)
    text = render(res, args.format)
    if args.table is not None:
        write_atomic(args.table, text)
    write_atomic(args.output, res.text)
    if args.table is None:
        print(text, end="")
    else:
        print(f"table: {args.table}")
    print(f"profile: {args.output}")
    return 0
