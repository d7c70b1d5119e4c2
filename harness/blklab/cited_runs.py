"""Published fio runs, cited: tests/reference/<artifact>/runs.toml holds, per
run of a public research artifact, the figures blklab reads (per direction
IOPS, I/O count, runtime, latency means and percentiles; the job's CPU time
and context switches) and the fio options it checks, each run naming the
file of the artifact it comes from and the file naming the artifact's
repository and commit. No file of the artifact's is kept.

`fio_doc` gives a run in the shape of fio's --output-format=json, holding
just the cited fields; `write_drive_dir` writes runs as a drive directory
(tools/characterize-drive.sh --out) for `blklab fit` and `blklab
characterize --compare`. `check` compares a runs.toml with the artifact's
own files in a checkout:

    cd harness && /usr/bin/python3 -m blklab.cited_runs ../tests/reference/NAME/runs.toml SRC

Bad input is an error naming the file and the key; nothing is written.

The file's keys:

    [source]            title, publisher, licence, date, url, commit,
                        fio_version (each run's "fio version")
    [[runs]]            id; path (the run's fio output in the artifact);
                        jobname (fio's, where cited)
    [runs.global_options], [runs.job_options]
                        fio's "global options" and the job's "job options"
                        as fio recorded them (strings)
    [runs.read], [runs.write]
                        iops, total_ios; runtime_ms, slat_mean_ns,
                        clat_mean_ns where cited
    [runs.read.clat_percentile_ns]
                        completion latency (ns) by percentile ("99.9" = ...)
    [runs.cpu]          usr_pct and sys_pct (fio's usr_cpu and sys_cpu, % of
                        the job's time), ctx (context switches)
"""

from __future__ import annotations

import json
import math
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from blklab.errors import BlklabError

DIRECTIONS = ("read", "write")
SOURCE_KEYS = ("title", "publisher", "licence", "date", "url", "commit", "fio_version")
RUN_KEYS = ("id", "path", "jobname", "global_options", "job_options", "cpu", *DIRECTIONS)
# Per direction: the runs.toml key, fio's key and its type (clat_ns's mean is
# written with the percentiles, below).
DIRECTION_KEYS = (("iops", "iops", float), ("total_ios", "total_ios", int),
                  ("runtime_ms", "runtime", int), ("slat_mean_ns", "slat_ns", float),
                  ("clat_mean_ns", "clat_ns", float), ("clat_percentile_ns", "", dict))
CPU_KEYS = (("usr_pct", "usr_cpu", float), ("sys_pct", "sys_cpu", float), ("ctx", "ctx", int))


class CitedRunsError(BlklabError):
    """Bad runs.toml, or a drive directory that cannot be written."""

    exit_code = 2


@dataclass(frozen=True)
class Run:
    id: str
    path: str  # the fio output inside the artifact
    doc: dict[str, Any]  # fio's JSON shape, the cited fields only


@dataclass(frozen=True)
class CitedRuns:
    file: Path
    source: dict[str, str]
    runs: dict[str, Run]  # by id, in the file's order

    def fio_doc(self, run_id: str) -> dict[str, Any]:
        """A fresh copy of the run as fio's JSON (the cited fields only)."""
        if run_id not in self.runs:
            raise CitedRunsError(f"{self.file}: no run {run_id!r} (runs: {', '.join(self.runs)})")
        return json.loads(json.dumps(self.runs[run_id].doc))


def _number(v: Any, kind: type, where: str) -> float | int:
    ok = (isinstance(v, int) if kind is int else isinstance(v, (int, float)))
    if isinstance(v, bool) or not ok or (isinstance(v, float) and not math.isfinite(v)) or v < 0:
        raise CitedRunsError(f"{where}: expected {'an integer' if kind is int else 'a number'} "
                             f"of 0 or more, got {v!r}")
    return v


def _strings(t: Any, where: str) -> dict[str, str]:
    if not isinstance(t, dict) or not all(isinstance(v, str) for v in t.values()):
        raise CitedRunsError(f"{where}: expected a table of fio options, each a string "
                             "as fio records it")
    return dict(t)


def _known(t: dict[str, Any], keys: tuple[str, ...], where: str) -> None:
    for key in t:
        if key not in keys:
            raise CitedRunsError(f"{where}.{key}: unknown key (keys: {', '.join(keys)})")


def _direction(t: Any, where: str) -> dict[str, Any]:
    if not isinstance(t, dict):
        raise CitedRunsError(f"{where}: expected a table")
    _known(t, tuple(k for k, _, _ in DIRECTION_KEYS), where)
    for key in ("iops", "total_ios"):
        if key not in t:
            raise CitedRunsError(f"{where}.{key}: missing")
    out: dict[str, Any] = {}
    for key, fio_key, kind in DIRECTION_KEYS[:4]:
        if key in t:
            v = _number(t[key], kind, f"{where}.{key}")
            out[fio_key] = {"mean": v} if fio_key == "slat_ns" else v
    percentiles = t.get("clat_percentile_ns", {})
    if not isinstance(percentiles, dict):
        raise CitedRunsError(f"{where}.clat_percentile_ns: expected a table such as "
                             "{ \"99.9\" = 4014080 }")
    clat: dict[str, Any] = {}
    if "clat_mean_ns" in t:
        clat["mean"] = _number(t["clat_mean_ns"], float, f"{where}.clat_mean_ns")
    if percentiles:
        clat["percentile"] = {}
    for p, v in percentiles.items():
        try:
            pct = float(p)
        except ValueError:
            pct = -1.0
        if not 0 < pct < 100:
            raise CitedRunsError(f"{where}.clat_percentile_ns.{p}: a percentile in (0, 100)")
        clat["percentile"][f"{pct:.6f}"] = _number(v, int, f"{where}.clat_percentile_ns.{p}")
    if clat:
        out["clat_ns"] = clat
    return out


def _run(t: Any, i: int, file: Path, fio_version: str) -> Run:
    where = f"{file}: runs[{i}]"
    if not isinstance(t, dict):
        raise CitedRunsError(f"{where}: expected a table")
    for key in ("id", "path"):
        if not isinstance(t.get(key), str) or not t[key]:
            raise CitedRunsError(f"{where}.{key}: expected a string, got {t.get(key)!r}")
    where = f"{file}: runs[{i}] ({t['id']})"
    _known(t, RUN_KEYS, where)
    if "global_options" not in t:
        raise CitedRunsError(f"{where}.global_options: missing")
    job: dict[str, Any] = {}
    if "jobname" in t:
        if not isinstance(t["jobname"], str):
            raise CitedRunsError(f"{where}.jobname: expected a string, got {t['jobname']!r}")
        job["jobname"] = t["jobname"]
    if "job_options" in t:
        job["job options"] = _strings(t["job_options"], f"{where}.job_options")
    for d in DIRECTIONS:
        if d in t:
            job[d] = _direction(t[d], f"{where}.{d}")
    if not any(d in job for d in DIRECTIONS):
        raise CitedRunsError(f"{where}: no [runs.read] or [runs.write]: a run cites at least "
                             "one direction")
    if "cpu" in t:
        cpu = t["cpu"]
        if not isinstance(cpu, dict):
            raise CitedRunsError(f"{where}.cpu: expected a table")
        _known(cpu, tuple(k for k, _, _ in CPU_KEYS), f"{where}.cpu")
        for key, fio_key, kind in CPU_KEYS:
            if key not in cpu:
                raise CitedRunsError(f"{where}.cpu.{key}: missing")
            job[fio_key] = _number(cpu[key], kind, f"{where}.cpu.{key}")
    doc = {"fio version": fio_version,
           "global options": _strings(t["global_options"], f"{where}.global_options"),
           "jobs": [job]}
    return Run(t["id"], t["path"], doc)


def load(file: Path) -> CitedRuns:
    try:
        data = tomllib.loads(file.read_text())
    except OSError as e:
        raise CitedRunsError(f"{file}: {e.strerror or e}") from None
    except tomllib.TOMLDecodeError as e:
        raise CitedRunsError(f"{file}: not TOML: {e}") from None
    for key in data:
        if key not in ("source", "runs"):
            raise CitedRunsError(f"{file}: {key}: unknown table (source, runs)")
    source = data.get("source")
    if not isinstance(source, dict):
        raise CitedRunsError(f"{file}: [source]: missing")
    _known(source, SOURCE_KEYS, f"{file}: source")
    for key in SOURCE_KEYS:
        if not isinstance(source.get(key), str) or not source[key]:
            raise CitedRunsError(f"{file}: source.{key}: expected a string, "
                                 f"got {source.get(key)!r}")
    raw = data.get("runs")
    if not isinstance(raw, list) or not raw:
        raise CitedRunsError(f"{file}: [[runs]]: missing")
    runs: dict[str, Run] = {}
    for i, t in enumerate(raw):
        run = _run(t, i, file, source["fio_version"])
        if run.id in runs:
            raise CitedRunsError(f"{file}: runs[{i}].id: {run.id!r} is used twice")
        runs[run.id] = run
    return CitedRuns(file, dict(source), runs)


def write_drive_dir(out: Path, docs: dict[str, dict[str, Any]], *, indent: int = 2,
                    sort_keys: bool = False) -> list[Path]:
    """Writes each doc as OUT/<job>.json (docs: job name -> fio JSON); refuses,
    writing nothing, when one of the files exists."""
    paths = [out / f"{name}.json" for name in docs]
    for p in paths:
        if p.exists():
            raise CitedRunsError(f"{p}: already exists; nothing is written")
    out.mkdir(parents=True, exist_ok=True)
    for p, doc in zip(paths, docs.values()):
        p.write_text(json.dumps(doc, indent=indent, sort_keys=sort_keys) + "\n")
    return paths


# -- checking the citations against the artifact ----------------------------------


def _cited(doc: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """Every leaf of a cited fio doc, by its path ("jobs.read.iops")."""
    out = {}
    for key, v in doc.items():
        if isinstance(v, dict):
            out.update(_cited(v, f"{prefix}{key}."))
        elif key == "jobs":
            out.update(_cited(v[0], f"{prefix}jobs."))
        else:
            out[prefix + key] = v
    return out


def check(cited: CitedRuns, src: Path) -> list[str]:
    """Every cited figure and option that differs from the artifact's file
    (SRC: a checkout of the artifact at the cited commit), as text."""
    problems = []
    for run in cited.runs.values():
        path = src / run.path
        try:
            text = path.read_text()
            original = json.loads(text[text.index("{"):])
        except (OSError, ValueError) as e:
            problems.append(f"{run.id}: {path}: not fio's JSON: {e}")
            continue
        (job,) = run.doc["jobs"]
        jobs = original.get("jobs", [])
        named = [j for j in jobs if j.get("jobname") == job.get("jobname", j.get("jobname"))]
        if len(named) != 1:
            problems.append(f"{run.id}: {path}: {len(named)} fio jobs match, expected one")
            continue
        compare = dict(original, jobs=named)
        theirs = _cited(compare)
        ours = _cited(run.doc)
        for key in ("global options", "jobs.job options"):
            if key in {k.rsplit(".", 1)[0] for k in ours}:
                want = {k for k in theirs if k.startswith(key + ".")}
                for k in sorted(want - set(ours)):
                    problems.append(f"{run.id}: {k}: {theirs[k]!r} in the artifact, not cited")
        for key, v in ours.items():
            if theirs.get(key, None) != v or type(theirs.get(key)) is not type(v):
                problems.append(f"{run.id}: {key}: cited {v!r}, the artifact has "
                                f"{theirs.get(key, 'nothing')!r}")
    return problems


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__.split("\n\n")[2], file=sys.stderr)
        return 2
    try:
        cited = load(Path(argv[0]))
    except CitedRunsError as e:
        print(f"blklab: {e}", file=sys.stderr)
        return e.exit_code
    problems = check(cited, Path(argv[1]))
    for p in problems:
        print(p)
    n = sum(len(_cited(r.doc)) for r in cited.runs.values())
    print(f"{cited.file}: {len(cited.runs)} runs, {n} cited figures and options: "
          + (f"{len(problems)} differ from" if problems else "each as in")
          + f" {argv[1]} (the artifact at {cited.source['commit']})")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
