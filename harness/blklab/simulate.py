"""The characterization suite's jobs on a profile's virtual clock, without a
guest: each job file of tools/characterize/ read into devmodel-sim's job
specs (devmodel/tools/sim.h), and devmodel-sim run on a profile's text.

A job file maps when every option it sets is one devmodel-sim models or
one that only says how fio measures (engine, direct I/O, time-based,
ramp and runtime, which the caller chooses): rw, bs, iodepth, rwmixread and
rate become the simulator's options. The fill (a size instead of a time,
a bandwidth log) does not map: its figure is a whole-drive write, too long
to evaluate per candidate profile; blklab fit sets its keys in closed form
from its log (blklab.fill_fit).

devmodel-sim models the device only: a figure from it has no host I/O path
(no kernel, no scheduler), where a drive's and a guest's figures do.
"""

from __future__ import annotations

import dataclasses
import json
import re
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from blklab import characterize, compare_fio, paths
from blklab.errors import BlklabError, BuildMissingError

# fio options devmodel-sim takes, by its name for them.
SIM_OPTIONS = {"rw": "rw", "bs": "bs", "iodepth": "iodepth", "rwmixread": "rwmixread",
               "rate": "rate"}
# fio options that say how fio measures, not what the device sees: the
# simulator's own --ramp and --runtime stand for ramp_time and runtime, its
# offsets are uniform with replacement (norandommap=1) and it has no page
# cache (direct=1) nor engine.
MEASUREMENT_OPTIONS = {"ioengine": None, "direct": "1", "norandommap": "1", "time_based": "1",
                       "ramp_time": None, "runtime": None}
_SECTION = re.compile(r"^\[([^\]]+)\]$")


class SimulateError(BlklabError):
    """devmodel-sim refused a profile or a job."""

    exit_code = 2


@dataclass(frozen=True)
class SimJob:
    """A suite job as devmodel-sim jobs: one spec per fio job section."""

    name: str
    specs: tuple[str, ...]  # "SECTION:rw=...,bs=...", devmodel-sim's JOB arguments
    writes: bool  # some section writes
    reads: bool
    write_block_bytes: int  # bs of the sections that write (0: none writes)

    def confined(self, offset_bytes: int, size_bytes: int) -> SimJob:
        """The same job with every section addressing [offset, offset + size)
        of the device only (fio's offset and size)."""
        extra = f"offset={offset_bytes},size={size_bytes}"
        return dataclasses.replace(self, specs=tuple(
            s + ("" if s.endswith(":") else ",") + extra for s in self.specs))


@dataclass(frozen=True)
class Unmapped:
    name: str
    reason: str


def devmodel_sim() -> Path:
    tool = paths.build_dir() / "cmake" / "devmodel" / "devmodel-sim"
    if not tool.exists():
        raise BuildMissingError(f"no {tool}: run 'make cmake'")
    return tool


def sections(text: str) -> list[tuple[str, dict[str, str]]]:
    out: list[tuple[str, dict[str, str]]] = []
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith((";", "#")):
            continue
        m = _SECTION.match(line)
        if m:
            out.append((m.group(1), {}))
        elif out:
            key, _, value = line.partition("=")
            out[-1][1][key.strip()] = value.strip()
    return out


def sim_job(job: characterize.SuiteJob, knobs: dict[str, str]) -> SimJob | Unmapped:
    """The job file's sections (global options folded into each) as
    devmodel-sim specs, or why it does not map."""
    if any(k in characterize.OPTIONAL_KNOBS for k in job.knobs):
        return Unmapped(job.name, "a whole-drive write of FILL_SIZE, not a timed job: too long "
                        "to simulate per candidate profile")
    parsed = sections(characterize.expand(job, knobs))
    shared = dict(next((o for n, o in parsed if n == "global"), {}))
    specs, reads, writes, write_bs = [], False, False, 0
    for name, own in parsed:
        if name == "global":
            continue
        options = shared | own
        parts = []
        for key, value in options.items():
            if key in SIM_OPTIONS:
                parts.append(f"{SIM_OPTIONS[key]}={value}")
            elif key in MEASUREMENT_OPTIONS:
                want = MEASUREMENT_OPTIONS[key]
                if want is not None and value != want:
                    return Unmapped(job.name, f"[{name}] {key}={value}: devmodel-sim models "
                                    f"{key}={want} only")
            else:
                return Unmapped(job.name, f"[{name}] {key}={value}: not an option devmodel-sim "
                                "models")
        rw = options.get("rw", "read")
        reads = reads or rw in ("read", "randread", "rw", "readwrite", "randrw")
        if rw in ("write", "randwrite", "rw", "readwrite", "randrw"):
            writes = True
            write_bs = max(write_bs, int(characterize.size_gib(options.get("bs", "4k"), 0)
                                         * (1 << 30)))
        specs.append(f"{name}:" + ",".join(parts))
    if not specs:
        return Unmapped(job.name, "no fio job section")
    return SimJob(job.name, tuple(specs), writes, reads, write_bs)


def suite_sim_jobs(knobs: dict[str, str] | None = None) -> dict[str, SimJob | Unmapped]:
    """Every suite job, mapped or with the reason it is not."""
    knobs = characterize.defaults() | (knobs or {})
    knobs.setdefault("FILL_SIZE", "100%")  # the fill never maps; its text still expands
    return {j.name: sim_job(j, knobs) for j in characterize.suite()}


def run(profile_text: str, job: SimJob, ramp_s: float, runtime_s: float, seed: int,
        label: str = "profile.toml") -> dict[str, Any]:
    """devmodel-sim's JSON for `job` on the profile whose TOML is
    `profile_text` (written to a private temporary file named `label`)."""
    with tempfile.TemporaryDirectory(prefix="blklab-sim-") as tmp:
        path = Path(tmp) / label
        path.write_text(profile_text)
        cmd = [str(devmodel_sim()), "--seed", str(seed), "--ramp", f"{ramp_s:g}s",
               "--runtime", f"{runtime_s:g}s", str(path), *job.specs]
        proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SimulateError(f"devmodel-sim on job {job.name}: "
                            f"{proc.stderr.strip().replace(str(path), label)}")
    return json.loads(proc.stdout)


def figures(doc: dict[str, Any], where: str) -> dict[str, compare_fio.Figures]:
    """Per direction with I/O, the figures `blklab characterize --compare`
    shows (compare_fio.direction_figures), from fio's or devmodel-sim's JSON."""
    out = {}
    for d in compare_fio.DIRECTIONS:
        f = compare_fio.direction_figures(where, doc, d)
        if f is not None:
            out[d] = f
    return out
