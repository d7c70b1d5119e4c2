"""A drive's characterization results beside a model's (blklab
characterize --compare DRIVE_DIR RUN_DIR).

DRIVE_DIR is what tools/characterize-drive.sh writes: <job>.json per job,
fio's --output-format=json. RUN_DIR is what `blklab characterize --out`
writes: a run directory <job>/ per job, one cell each. Each side's figures
per job and direction come from compare_fio.direction_figures (IOPS; clat
p50, p99, p99.9 of a direction that one job did, or that group_reporting
folded into one), and each row gives model / drive.

Refused, naming the file and the job, before anything is written: a job
on one side only, a file that is not fio JSON, fio JSON from another fio
major version than the guest's (guest-images/userland.lock), a job that
did no I/O, a cell that failed.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from blklab import characterize, compare_fio, paths
from blklab.compare_fio import FioJsonError

# The figures the table shows, from compare_fio.METRICS.
METRICS = ("iops", "p50_us", "p99_us", "p99.9_us")
DRIVE_META = "characterize.json"  # the drive script's notes on the drive
USERLAND_LOCK = paths.REPO / "guest-images" / "userland.lock"
_FIO_VERSION = re.compile(r"^fio-(\d+)\.(\d+)")
FORMATS = ("text", "json", "markdown", "html")  # html: characterize_plots
SUITE_NAMES = "blklab characterize --list names them"


def guest_fio_version(lock: Path = USERLAND_LOCK) -> str:
    """The fio the guest runs: its Debian version's upstream part, e.g. 3.33."""
    for line in lock.read_text().splitlines():
        parts = line.split()
        if len(parts) >= 2 and parts[0] == "fio":
            return parts[1].split("-", 1)[0]
    raise characterize.CharacterizeError(f"{lock}: names no fio package")


def _major(path: str, job: str, doc: dict[str, Any]) -> str:
    version = doc.get("fio version")
    if not isinstance(version, str):
        raise FioJsonError(f"{path}: job {job}: no 'fio version': not fio's "
                           "--output-format=json")
    m = _FIO_VERSION.match(version)
    if not m:
        raise FioJsonError(f"{path}: job {job}: 'fio version' is {version!r}, expected "
                           "fio-MAJOR.MINOR")
    return m.group(1)


def check_version(path: str, job: str, doc: dict[str, Any], guest: str) -> None:
    """fio's JSON layout changes between major versions (2.x gave clat in
    us): a drive's file must come from the guest's fio major version."""
    major = _major(path, job, doc)
    if major != guest.split(".", 1)[0]:
        raise FioJsonError(f"{path}: job {job}: written by {doc['fio version']}, and the "
                           f"guest runs fio {guest} (guest-images/userland.lock): run the "
                           f"drive with fio {guest.split('.', 1)[0]}.x")


@dataclass(frozen=True)
class Row:
    job: str
    direction: str
    drive: compare_fio.Figures
    model: compare_fio.Figures


def _figures(path: str, job: str, doc: dict[str, Any]) -> dict[str, compare_fio.Figures]:
    figures = {d: compare_fio.direction_figures(path, doc, d) for d in compare_fio.DIRECTIONS}
    found = {d: f for d, f in figures.items() if f is not None}
    if not found:
        raise FioJsonError(f"{path}: job {job}: no fio job did any I/O")
    return found


def drive_jobs(drive_dir: Path, known: set[str]) -> dict[str, Path]:
    """DRIVE_DIR's <job>.json files; a .json that is no job of the suite is
    an error (a typo would otherwise drop a job from the table)."""
    if not drive_dir.is_dir():
        raise characterize.CharacterizeError(f"{drive_dir}: not a directory (the drive's "
                                             "results: tools/characterize-drive.sh --out)")
    out = {}
    for p in sorted(drive_dir.glob("*.json")):
        if p.name == DRIVE_META:
            continue
        if p.stem not in known:
            raise characterize.CharacterizeError(
                f"{p}: job {p.stem}: not a job of the suite ({SUITE_NAMES})")
        out[p.stem] = p
    return out


def run_jobs(run_dir: Path, known: set[str]) -> dict[str, Path]:
    """RUN_DIR's <job>/ run directories (each with a manifest.json)."""
    if not run_dir.is_dir():
        raise characterize.CharacterizeError(f"{run_dir}: not a directory (blklab "
                                             "characterize --out)")
    out = {}
    for p in sorted(run_dir.iterdir()):
        if not (p / "manifest.json").is_file():
            continue
        if p.name not in known:
            raise characterize.CharacterizeError(
                f"{p}: job {p.name}: not a job of the suite ({SUITE_NAMES})")
        out[p.name] = p
    return out


def _cell_doc(run_dir: Path, job: str) -> tuple[str, dict[str, Any]]:
    from blklab import runner

    run = runner.load_run(run_dir)
    if len(run.cells) != 1:
        raise characterize.CharacterizeError(
            f"{run_dir}: job {job}: {len(run.cells)} cell results, expected one")
    cell = run.cells[0]
    where = f"{run_dir}/cell-{cell.get('cell_id', '?')}.json"
    if cell.get("status") != "ok":
        raise characterize.CharacterizeError(f"{where}: job {job}: the cell failed: "
                                             f"{cell.get('error')}")
    wl = cell.get("workload")
    if not isinstance(wl, dict):
        raise FioJsonError(f"{where}: job {job}: no workload JSON")
    return where, wl


def compare(drive_dir: Path, run_dir: Path, names: list[str] | None = None,
            known: set[str] | None = None, guest_fio: str | None = None) -> list[Row]:
    """One row per job and direction the drive has. `names` limits the jobs
    (default: every job on either side; each must be on both)."""
    known = known if known is not None else {j.name for j in characterize.suite()}
    guest_fio = guest_fio or guest_fio_version()
    drive = drive_jobs(drive_dir, known)
    model = run_jobs(run_dir, known)
    if names:
        for n in names:
            if n not in known:
                raise characterize.CharacterizeError(f"--job {n}: not a job of the suite "
                                                     f"({SUITE_NAMES})")
        wanted = list(dict.fromkeys(names))
    else:
        wanted = sorted(set(drive) | set(model))
    if not wanted:
        raise characterize.CharacterizeError(f"{drive_dir} and {run_dir}: no job results "
                                             "in either")
    for job in wanted:
        if job not in drive:
            raise characterize.CharacterizeError(f"{drive_dir / (job + '.json')}: job {job}: "
                                                 f"missing (the run has it: {model.get(job)})"
                                                 if job in model else
                                                 f"{drive_dir / (job + '.json')}: job {job}: "
                                                 "missing")
        if job not in model:
            raise characterize.CharacterizeError(f"{run_dir / job}: job {job}: missing (no "
                                                 "run directory; blklab characterize --job "
                                                 f"{job})")
    rows = []
    for job in wanted:
        path = str(drive[job])
        doc = compare_fio.load_fio_json(drive[job])
        check_version(path, job, doc, guest_fio)
        theirs = _figures(path, job, doc)
        where, wl = _cell_doc(model[job], job)
        check_version(where, job, wl, guest_fio)
        ours = _figures(where, job, wl)
        for d, fig in theirs.items():
            if d not in ours:
                raise characterize.CharacterizeError(f"{where}: job {job}: no {d} I/O, and "
                                                     f"the drive's {path} has some")
            rows.append(Row(job, d, fig, ours[d]))
    return rows


def scheduler_warnings(drive_dir: Path, run_dir: Path, rows: list[Row]) -> list[str]:
    """A line per job whose model ran under another scheduler than the one
    DRIVE_DIR/characterize.json records for the drive (none if it records
    none: the reference data has no such file)."""
    try:
        meta = json.loads((drive_dir / DRIVE_META).read_text())
    except (OSError, ValueError):
        return []
    drive = meta.get("scheduler") if isinstance(meta, dict) else None
    if not isinstance(drive, str) or not drive:
        return []
    from blklab import runner

    out = []
    for job in dict.fromkeys(r.job for r in rows):
        cells = runner.load_run(run_dir / job).cells
        ran = cells[0].get("in_effect", {}).get("scheduler") if cells else None
        if ran and ran != drive:
            out.append(f"job {job}: the drive ran under {drive} "
                       f"({drive_dir / DRIVE_META}), the model under {ran}")
    return out


def ratio(model: float | None, drive: float | None) -> float | None:
    if model is None or drive is None or drive == 0:
        return None
    return model / drive


def as_json(drive_dir: Path, run_dir: Path, rows: list[Row]) -> dict[str, Any]:
    return {
        "drive": str(drive_dir), "run": str(run_dir),
        "units": {"iops": "I/O per s", "p50_us": "us (clat)", "p99_us": "us (clat)",
                  "p99.9_us": "us (clat)", "ratio": "model / drive"},
        "rows": [{"job": r.job, "direction": r.direction,
                  "notes": {k: v for k, v in (("drive", r.drive.note), ("model", r.model.note))
                            if v},
                  "metrics": {m: {"drive": r.drive.values.get(m), "model": r.model.values.get(m),
                                  "ratio": ratio(r.model.values.get(m), r.drive.values.get(m))}
                              for m in METRICS}}
                 for r in rows],
    }


def table(rows: list[Row]) -> list[list[str]]:
    out = [["job", "dir", "metric", "drive", "model", "model/drive"]]
    for r in rows:
        for m in METRICS:
            d, o = r.drive.values.get(m), r.model.values.get(m)
            out.append([r.job, r.direction, m, compare_fio.fmt(d), compare_fio.fmt(o),
                        compare_fio.fmt_ratio(o, d)])
    return out


def render(drive_dir: Path, run_dir: Path, rows: list[Row], fmt: str = "text") -> str:
    if fmt == "json":
        return json.dumps(as_json(drive_dir, run_dir, rows), indent=2) + "\n"
    body = table(rows)
    notes = sorted({f"{r.job} {r.direction} ({side}): {fig.note}" for r in rows
                    for side, fig in (("drive", r.drive), ("model", r.model)) if fig.note})
    if fmt == "markdown":
        lines = [f"Drive: `{drive_dir}`; model: `{run_dir}` (clat in us; IOPS in I/O per s; "
                 "the last column is model / drive).", "",
                 "| " + " | ".join(body[0]) + " |",
                 "|" + "|".join("---" if i < 3 else "---:" for i in range(len(body[0]))) + "|"]
        lines += ["| " + " | ".join(line) + " |" for line in body[1:]]
        lines += [""] + [f"- {n}" for n in notes] if notes else []
        return "\n".join(lines) + "\n"
    widths = [max(len(line[i]) for line in body) for i in range(len(body[0]))]
    lines = [f"drive: {drive_dir}  model: {run_dir} (clat: completion latency, us; "
             "iops: I/O per s)"]
    for line in body:
        lines.append("  ".join(c.ljust(w) for c, w in zip(line, widths)).rstrip())
    lines += [f"note: {n}" for n in notes]
    return "\n".join(lines) + "\n"
