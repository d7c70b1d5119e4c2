"""The characterization suite (blklab characterize): one set of fio job
files, run against a device profile in blklab and against a real drive by
tools/characterize-drive.sh with plain fio.

The job files live in tools/characterize/, one characterization job per
file (its name is the file's stem), and name their knobs as fio does,
${RUNTIME}; tools/characterize/defaults.env gives the knobs' defaults. Both
runners read the same files: the drive script exports the knobs and fio
substitutes them; blklab substitutes them into the text the guest gets, as
fio would (every ${NAME} must have a value here; fio would silently put in
an empty string).

In blklab each job is one scenario with one cell: a null-backed NVMe
device with the profile, in deterministic mode, fio as the workload. Its
scenario and expanded job file are kept beside its run directory:
OUT/<job>.toml, OUT/<job>.fio and the run OUT/<job>/.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

from blklab import paths
from blklab.errors import BlklabError

JOB_DIR = paths.REPO / "tools" / "characterize"
DEFAULTS_FILE = "defaults.env"
# A job that runs only when its knob is given (no default): the fill.
OPTIONAL_KNOBS = ("FILL_SIZE",)
_KNOB = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
_ENV_LINE = re.compile(r"^([A-Z_][A-Z0-9_]*)=(\S+)$")
_TIME = re.compile(r"^(\d+(?:\.\d+)?)(us|ms|s|m|h|d)?$")
_SECONDS = {"us": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
_SIZE = re.compile(r"^(\d+)([kmgt]i?b?)?$", re.IGNORECASE)
# A cell's timeout (scenario.timeout_s): allowances, not measurements. A
# deterministic NVMe cell costs about 105 us of host time per guest I/O
# (docs/determinism.md), so 40 host seconds per guest second cover some
# 380K guest IOPS; a fill of 1 GiB is 8192 writes of 128 KiB, 30 s covers
# 3.6 ms each; a boot and its slack get 600 s.
HOST_SECONDS_PER_GUEST_SECOND = 40
BOOT_ALLOWANCE_S = 600
FILL_HOST_SECONDS_PER_GIB = 30


class CharacterizeError(BlklabError):
    """Bad input to blklab characterize: names the file and the job."""

    exit_code = 2


@dataclass(frozen=True)
class SuiteJob:
    """One characterization job: a fio job file of tools/characterize/."""

    name: str  # the file's stem
    path: Path
    text: str
    description: str  # the file's opening comment
    knobs: tuple[str, ...]  # the ${NAME}s it uses, in order of first use

    @property
    def optional(self) -> bool:
        """Runs only when an optional knob (FILL_SIZE) is given."""
        return any(k in OPTIONAL_KNOBS for k in self.knobs)


def defaults(job_dir: Path = JOB_DIR) -> dict[str, str]:
    """The knobs' defaults from defaults.env (NAME=value lines, # comments)."""
    path = job_dir / DEFAULTS_FILE
    out: dict[str, str] = {}
    for n, line in enumerate(path.read_text().splitlines(), start=1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        m = _ENV_LINE.match(line)
        if not m:
            raise CharacterizeError(f"{path}:{n}: expected NAME=value, got {line!r}")
        out[m.group(1)] = m.group(2)
    return out


def suite(job_dir: Path = JOB_DIR) -> list[SuiteJob]:
    """Every job file of the suite, by name."""
    jobs = []
    for path in sorted(job_dir.glob("*.fio")):
        text = path.read_text()
        comment = []
        for line in text.splitlines():
            if not line.startswith(";"):
                break
            comment.append(line[1:].strip())
        knobs = tuple(dict.fromkeys(_KNOB.findall(text)))
        jobs.append(SuiteJob(path.stem, path, text, " ".join(comment), knobs))
    return jobs


def select(jobs: list[SuiteJob], names: list[str], knobs: dict[str, str]) -> list[SuiteJob]:
    """The jobs named (default: every job whose knobs all have values)."""
    by_name = {j.name: j for j in jobs}
    if not names:
        return [j for j in jobs if all(k in knobs for k in j.knobs)]
    out = []
    for name in names:
        if name not in by_name:
            raise CharacterizeError(f"--job {name}: not a job of the suite "
                                    "(blklab characterize --list names them)")
        job = by_name[name]
        missing = [k for k in job.knobs if k not in knobs]
        if missing:
            raise CharacterizeError(f"--job {name}: {job.path.name} needs {missing[0]} "
                                    f"(--{missing[0].lower().replace('_', '-')})")
        out.append(job)
    return out


def expand(job: SuiteJob, knobs: dict[str, str]) -> str:
    """The job file's text with each ${NAME} replaced, as fio does."""
    def value(m: re.Match) -> str:
        if m.group(1) not in knobs:
            raise CharacterizeError(f"{job.path}: job {job.name}: ${{{m.group(1)}}} has no "
                                    f"value (knobs: {', '.join(sorted(knobs))})")
        return knobs[m.group(1)]

    return _KNOB.sub(value, job.text)


def seconds(text: str, knob: str) -> float:
    """A fio time value (default unit s) in seconds."""
    m = _TIME.match(text.strip())
    if not m:
        raise CharacterizeError(f"--{knob.lower()} {text}: not a time (e.g. 30s, 500ms, 2m)")
    return float(m.group(1)) * _SECONDS[m.group(2) or "s"]


def size_gib(text: str, capacity_bytes: int) -> float:
    """A fio size value (bytes, k/m/g/t suffixes of 1024, or N% of the
    capacity) in GiB."""
    t = text.strip()
    if t.endswith("%"):
        try:
            pct = float(t[:-1])
        except ValueError:
            pct = -1.0
        if not 0 < pct <= 100:
            raise CharacterizeError(f"--fill-size {text}: a percentage must be in (0, 100]")
        return capacity_bytes * pct / 100 / (1 << 30)
    m = _SIZE.match(t)
    if not m:
        raise CharacterizeError(f"--fill-size {text}: not a size (e.g. 8g, 100%)")
    shift = {"": 0, "k": 10, "m": 20, "g": 30, "t": 40}[(m.group(2) or "")[:1].lower()]
    return int(m.group(1)) * (1 << shift) / (1 << 30)


@dataclass(frozen=True)
class Target:
    """What the suite runs against: a profile and the guest around it."""

    profile: str  # a profile name or an absolute path to a profile TOML
    guest: dict  # a scenario's [guest] table ({} = blklab's defaults)
    source: str  # as the user named it, for messages


def target(written: str) -> Target:
    """A profile name (devmodel/profiles), a profile TOML, or a scenario
    whose first [[device]] with a profile is used (with its [guest])."""
    path = Path(written)
    if not written.endswith(".toml") and "/" not in written:
        from blklab import scenario as scenario_mod

        if written not in scenario_mod.profile_names():
            raise CharacterizeError(f"{written}: not a profile in devmodel/profiles "
                                    f"({', '.join(scenario_mod.profile_names())}) nor a .toml")
        return Target(written, {}, written)
    try:
        data = tomllib.loads(path.read_text())
    except OSError as e:
        raise CharacterizeError(f"{written}: cannot be read: {e.strerror}") from None
    except tomllib.TOMLDecodeError as e:
        raise CharacterizeError(f"{written}: is not valid TOML: {e}") from None
    devices = data.get("device")
    if not isinstance(devices, list):  # a profile: its [device] is a table
        return Target(str(path.resolve()), {}, written)
    for i, d in enumerate(devices):
        if isinstance(d, dict) and isinstance(d.get("profile"), str):
            p = d["profile"]
            resolved = str((path.parent / p).resolve()) if "/" in p or p.endswith(".toml") else p
            guest = data.get("guest") if isinstance(data.get("guest"), dict) else {}
            return Target(resolved, guest, f"{written} device[{i}]")
    raise CharacterizeError(f"{written}: no [[device]] names a profile")


def _toml_value(v: object) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    return '"' + str(v).replace("\\", "\\\\").replace('"', '\\"') + '"'


def scenario_text(job: SuiteJob, tgt: Target, scheduler: str, precondition: str | None,
                  timeout_s: int) -> str:
    """The one-cell scenario that runs `job` (OUT/<job>.fio beside it);
    precondition None leaves the profile's own (a profile that is no SSD
    has none)."""
    lines = [f"# blklab characterize: job {job.name} ({job.path.name}) on {tgt.source}.",
             f"# {job.description}", "",
             "[scenario]",
             f'name = "characterize-{job.name}"',
             f"description = {_toml_value(job.description)}",
             f'schedulers = ["{scheduler}"]',
             'mode = "deterministic"',
             'workload = "fio"',
             f"timeout_s = {timeout_s}", "",
             "[guest]"]
    lines += [f"{k} = {_toml_value(v)}" for k, v in tgt.guest.items()]
    lines += ["", "[[device]]", 'name = "drive"', 'kind = "nvme"', 'backing = "null"',
              f"profile = {_toml_value(tgt.profile)}"]
    if precondition is not None:
        lines += [f'precondition = "{precondition}"']
    lines += ["",
              "[[job]]", f'fio_file = "{job.name}.fio"', f'name = "{job.name}"', ""]
    return "\n".join(lines)


def timeout_for(job: SuiteJob, knobs: dict[str, str], capacity_bytes: int) -> int:
    """Host seconds a cell of `job` may take (scenario.timeout_s)."""
    guest_s = 0.0
    if "RUNTIME" in job.knobs:
        guest_s += seconds(knobs["RUNTIME"], "RUNTIME")
    if "RAMP" in job.knobs:
        guest_s += seconds(knobs["RAMP"], "RAMP")
    host = BOOT_ALLOWANCE_S + HOST_SECONDS_PER_GUEST_SECOND * guest_s
    if "FILL_SIZE" in job.knobs:
        host += FILL_HOST_SECONDS_PER_GIB * size_gib(knobs["FILL_SIZE"], capacity_bytes)
    return int(min(host, 7 * 24 * 3600))


@dataclass(frozen=True)
class Prepared:
    job: SuiteJob
    scenario: Path
    run_dir: Path


def prepare(jobs: list[SuiteJob], tgt: Target, out: Path, knobs: dict[str, str],
            scheduler: str, precondition: str | None, capacity_bytes: int) -> list[Prepared]:
    """Write OUT/<job>.fio and OUT/<job>.toml for each job. Refuses, before
    writing anything, when OUT already holds one of them or its run."""
    from blklab.results import write_atomic

    planned = []
    for job in jobs:
        files = [out / f"{job.name}.fio", out / f"{job.name}.toml", out / job.name]
        taken = [f for f in files if f.exists()]
        if taken:
            raise CharacterizeError(f"{taken[0]}: already exists (job {job.name}); blklab "
                                    "characterize writes a fresh --out directory and "
                                    "overwrites nothing")
        planned.append((job, expand(job, knobs),
                        scenario_text(job, tgt, scheduler, precondition,
                                      timeout_for(job, knobs, capacity_bytes))))
    out_list = []
    for job, fio_text, toml_text in planned:
        write_atomic(out / f"{job.name}.fio", fio_text)
        write_atomic(out / f"{job.name}.toml", toml_text)
        out_list.append(Prepared(job, out / f"{job.name}.toml", out / job.name))
    return out_list


def plan(written: str, out: Path, names: list[str], given: dict[str, str | None],
         scheduler: str, precondition: str | None) -> tuple[list[Prepared], list]:
    """Everything `blklab characterize PROFILE --out OUT` does before a VM
    boots: the knobs (`given` over the defaults; None = not given), the
    jobs, the target and its profile, OUT/<job>.fio and .toml, and each
    scenario loaded (validated). precondition None: "full" for an SSD
    profile, the profile's own otherwise. On an error nothing stays
    written."""
    from blklab import scenario as scenario_mod

    knobs = defaults() | {k: v for k, v in given.items() if v is not None}
    seconds(knobs["RUNTIME"], "RUNTIME")
    seconds(knobs["RAMP"], "RAMP")
    jobs = select(suite(), names, knobs)
    tgt = target(written)
    path = (Path(tgt.profile) if "/" in tgt.profile
            else scenario_mod.PROFILE_DIR / f"{tgt.profile}.toml")
    info = scenario_mod.profile_info(path)
    if "error" in info:
        raise CharacterizeError(f"{written}: profile {path} does not load: {info['error']}")
    if precondition is None and info.get("model") == "ssd":
        precondition = "full"
    prepared = prepare(jobs, tgt, out, knobs, scheduler, precondition,
                       int(info.get("capacity_bytes", 0)))
    try:
        scenarios = [scenario_mod.load(p.scenario) for p in prepared]
    except BlklabError:
        for p in prepared:
            p.scenario.unlink(missing_ok=True)
            p.scenario.with_suffix(".fio").unlink(missing_ok=True)
        raise
    return prepared, scenarios
