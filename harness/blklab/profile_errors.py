"""blklab profile-errors PROFILE: a shipped SSD profile against the published
figures of its class of drive, as an error table.

The figures live in tests/reference/<drive>/figures.toml (the file's header
lists its keys): per figure a workload as devmodel-sim jobs, the drive's
state for it, a metric, the published value and its source, and whether a
profile parameter was derived from it ("derivation": error ~0 by
construction) or it is held out ("check"). Each workload runs on the
profile with devmodel-sim (blklab.simulate), on the host and seeded, so a
table is the same bytes on every machine. A run on a written drive
(precondition "full" or "steady") uses the proxy blklab fit uses, the
profile scaled down in capacity with its dies, planes and timing kept.

`--update-readme` rewrites the tables between the markers in
devmodel/profiles/README.md; tests/host/test_profile_errors.py regenerates
them and fails when the README differs. Bad input (a figures file with a
missing or wrong key, a profile no figures file names) is an error naming
the file and the key; nothing is written.
"""

from __future__ import annotations

import argparse
import math
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from blklab import fit, paths, simulate
from blklab.errors import BlklabError
from blklab.results import write_atomic
from blklab.scenario import PROFILE_DIR, profile_with_precondition

REFERENCE_DIR = paths.REPO / "tests" / "reference"
README = PROFILE_DIR / "README.md"
FORMATS = ("text", "markdown")
ROLES = ("derivation", "check")
PRECONDITIONS = ("none", "full", "steady")
UNITS = {"IOPS": 1.0, "MB/s": 1e-6, "GB": 1e-9, "us": 1e-3}
SEED = 1
_METRIC = re.compile(r"^(?:(read|write)\.(iops|bw_mb_s)|counter\.([a-z0-9_]+))$")
_MARK_BEGIN = "<!-- blklab profile-errors {} -->"
_MARK_END = "<!-- end blklab profile-errors -->"
_SECTION = re.compile(r"<!-- blklab profile-errors ([A-Za-z0-9._-]+) -->\n(.*?)"
                      + re.escape(_MARK_END), re.S)


class ProfileErrorsError(BlklabError):
    """Bad input to blklab profile-errors: names the file and the key."""

    exit_code = 2


@dataclass(frozen=True)
class Source:
    key: str
    title: str
    publisher: str
    date: str
    url: str
    how: str


@dataclass(frozen=True)
class Figure:
    id: str
    what: str
    jobs: tuple[str, ...]
    precondition: str
    ramp_s: float
    runtime_s: float
    metric: str
    value: float
    unit: str
    source: str
    role: str
    derives: str
    bound: float
    known_miss: str


@dataclass(frozen=True)
class Reference:
    path: Path
    drive: str
    profiles: tuple[str, ...]
    sources: dict[str, Source]
    figures: tuple[Figure, ...]


@dataclass(frozen=True)
class Row:
    figure: Figure
    model: float

    @property
    def error(self) -> float:
        """model / figure - 1, signed."""
        return self.model / self.figure.value - 1.0

    @property
    def within(self) -> bool:
        return abs(self.error) <= self.figure.bound


# -- the figures file -----------------------------------------------------------


def _seconds(text: Any, where: str) -> float:
    m = re.fullmatch(r"(\d+(?:\.\d+)?)(ms|s)", text) if isinstance(text, str) else None
    if m is None:
        raise ProfileErrorsError(f"{where}: expected a time such as \"0.5s\" or \"200ms\", "
                                 f"got {text!r}")
    return float(m.group(1)) * (1e-3 if m.group(2) == "ms" else 1.0)


def _get(table: dict[str, Any], key: str, kind: type | tuple[type, ...], where: str,
         default: Any = None) -> Any:
    if key not in table:
        if default is not None:
            return default
        raise ProfileErrorsError(f"{where}.{key}: missing")
    v = table[key]
    if isinstance(v, bool) or not isinstance(v, kind):
        raise ProfileErrorsError(f"{where}.{key}: expected {getattr(kind, '__name__', kind)}, "
                                 f"got {v!r}")
    return v


def _figure(t: Any, i: int, path: Path, sources: dict[str, Source]) -> Figure:
    where = f"{path}: figures[{i}]"
    if not isinstance(t, dict):
        raise ProfileErrorsError(f"{where}: expected a table")
    fid = _get(t, "id", str, where)
    where = f"{path}: figures[{i}] ({fid})"
    known = {"id", "what", "jobs", "precondition", "ramp", "runtime", "metric", "value", "unit",
             "source", "role", "derives", "bound", "known_miss"}
    for key in t:
        if key not in known:
            raise ProfileErrorsError(f"{where}.{key}: unknown key (keys: {', '.join(sorted(known))})")
    jobs = _get(t, "jobs", list, where)
    if not jobs or not all(isinstance(j, str) and ":" in j for j in jobs):
        raise ProfileErrorsError(f"{where}.jobs: expected devmodel-sim jobs "
                                 "[\"NAME:key=value,...\", ...]")
    precondition = _get(t, "precondition", str, where)
    if precondition not in PRECONDITIONS:
        raise ProfileErrorsError(f"{where}.precondition: one of {', '.join(PRECONDITIONS)}, "
                                 f"got {precondition!r}")
    metric = _get(t, "metric", str, where)
    m = _METRIC.match(metric)
    if m is None:
        raise ProfileErrorsError(f"{where}.metric: expected read.iops, write.iops, "
                                 f"read.bw_mb_s, write.bw_mb_s or counter.NAME, got {metric!r}")
    unit = _get(t, "unit", str, where)
    want_unit = {"iops": "IOPS", "bw_mb_s": "MB/s"}.get(m.group(2) or "", None)
    if unit not in UNITS or (want_unit and unit != want_unit):
        raise ProfileErrorsError(f"{where}.unit: {want_unit or ' or '.join(UNITS)} for "
                                 f"{metric}, got {unit!r}")
    if m.group(3) and precondition != "none":
        raise ProfileErrorsError(f"{where}.precondition: a counter metric needs precondition "
                                 "\"none\" (a written drive runs on a scaled-down proxy, whose "
                                 "counters are scaled too)")
    value = float(_get(t, "value", (int, float), where))
    if not value > 0 or math.isinf(value):
        raise ProfileErrorsError(f"{where}.value: expected a number above 0, got {value!r}")
    source = _get(t, "source", str, where)
    if source not in sources:
        raise ProfileErrorsError(f"{where}.source: {source!r} is not one of [sources] "
                                 f"({', '.join(sources) or 'none'})")
    role = _get(t, "role", str, where)
    if role not in ROLES:
        raise ProfileErrorsError(f"{where}.role: one of {', '.join(ROLES)}, got {role!r}")
    derives = _get(t, "derives", str, where, default="")
    if (role == "derivation") != bool(derives):
        raise ProfileErrorsError(f"{where}.derives: a derivation names the parameters derived "
                                 "from the figure; a check has none")
    known_miss = _get(t, "known_miss", str, where, default="")
    if known_miss and role != "check":
        raise ProfileErrorsError(f"{where}.known_miss: only a check may miss its bound")
    bound = float(_get(t, "bound", (int, float), where))
    if not 0 < bound < 10:
        raise ProfileErrorsError(f"{where}.bound: expected a relative error in (0, 10), "
                                 f"got {bound!r}")
    runtime = _seconds(_get(t, "runtime", str, where), f"{where}.runtime")
    if runtime <= 0:
        raise ProfileErrorsError(f"{where}.runtime: must be above 0")
    return Figure(fid, _get(t, "what", str, where), tuple(jobs), precondition,
                  _seconds(t.get("ramp", "0s"), f"{where}.ramp"), runtime, metric, value, unit,
                  source, role, derives, bound, known_miss)


def load_reference(path: Path) -> Reference:
    try:
        data = tomllib.loads(path.read_text())
    except OSError as e:
        raise ProfileErrorsError(f"{path}: {e.strerror or e}") from None
    except tomllib.TOMLDecodeError as e:
        raise ProfileErrorsError(f"{path}: not TOML: {e}") from None
    drive = data.get("drive")
    if not isinstance(drive, dict):
        raise ProfileErrorsError(f"{path}: [drive]: missing")
    name = _get(drive, "name", str, f"{path}: drive")
    profiles = _get(drive, "profiles", list, f"{path}: drive")
    if not profiles or not all(isinstance(p, str) for p in profiles):
        raise ProfileErrorsError(f"{path}: drive.profiles: expected profile names")
    raw_sources = data.get("sources")
    if not isinstance(raw_sources, dict) or not raw_sources:
        raise ProfileErrorsError(f"{path}: [sources]: missing")
    sources = {}
    for key, s in raw_sources.items():
        where = f"{path}: sources.{key}"
        if not isinstance(s, dict):
            raise ProfileErrorsError(f"{where}: expected a table")
        sources[key] = Source(key, *(_get(s, k, str, where)
                                     for k in ("title", "publisher", "date", "url", "how")))
    figures = data.get("figures")
    if not isinstance(figures, list) or not figures:
        raise ProfileErrorsError(f"{path}: [[figures]]: missing")
    parsed = tuple(_figure(t, i, path, sources) for i, t in enumerate(figures))
    ids = [f.id for f in parsed]
    for fid in ids:
        if ids.count(fid) > 1:
            raise ProfileErrorsError(f"{path}: figures: id {fid!r} is used twice")
    unknown = set(data) - {"drive", "sources", "figures"}
    if unknown:
        raise ProfileErrorsError(f"{path}: {sorted(unknown)[0]}: unknown table "
                                 "(drive, sources, figures)")
    return Reference(path, name, tuple(profiles), sources, parsed)


def references() -> list[Reference]:
    """Every tests/reference/*/figures.toml, in name order."""
    return [load_reference(p) for p in sorted(REFERENCE_DIR.glob("*/figures.toml"))]


def reference_for(profile: str) -> Reference:
    found = [r for r in references() if profile in r.profiles]
    if not found:
        raise ProfileErrorsError(f"profile {profile}: no {REFERENCE_DIR}/*/figures.toml names it "
                                 "in drive.profiles (give one with --reference)")
    return found[0]


# -- running the figures --------------------------------------------------------


def _profile_text(profile: Path, precondition: str) -> tuple[str, int]:
    """The profile's text in the figure's state and the proxy factor used."""
    try:
        text = profile.read_text()
    except OSError as e:
        raise ProfileErrorsError(f"{profile}: {e.strerror or e}") from None
    staged = profile_with_precondition(text, precondition)
    if staged is None:
        raise ProfileErrorsError(f"{profile}: [ssd]: missing (profile-errors runs SSD profiles)")
    if precondition == "none":
        return staged, 1
    factor = fit.proxy_factor(fit.ssd_keys(staged))
    return fit.proxy_text(staged, factor), factor


def model_value(profile: Path, f: Figure) -> float:
    text, _ = _profile_text(profile, f.precondition)
    job = simulate.SimJob(f.id, f.jobs, writes=True, reads=True, write_block_bytes=0)
    doc = simulate.run(text, job, f.ramp_s, f.runtime_s, SEED, label=profile.name)
    m = _METRIC.match(f.metric)
    assert m is not None
    if m.group(3):
        counters = doc.get("counters") or {}
        if m.group(3) not in counters:
            raise ProfileErrorsError(f"figure {f.id}: metric {f.metric}: the model has no "
                                     f"counter {m.group(3)} (profile {profile})")
        return float(counters[m.group(3)]) * UNITS[f.unit]
    direction, stat = m.group(1), m.group(2)
    total = sum(float(j[direction]["iops" if stat == "iops" else "bw_bytes"])
                for j in doc["jobs"])
    return total if stat == "iops" else total * UNITS[f.unit]


def evaluate(profile: Path, ref: Reference) -> list[Row]:
    return [Row(f, model_value(profile, f)) for f in ref.figures]


# -- the table ------------------------------------------------------------------


def _num(v: float, unit: str) -> str:
    if unit == "IOPS":
        return f"{v / 1000:.1f}K" if v >= 1000 else f"{v:.0f}"
    return f"{v:.3g}" if v < 100 else f"{v:.0f}"


def verdict(row: Row) -> str:
    if row.within:
        return "within"
    return "MISS (known)" if row.figure.known_miss else "MISS"


def _cells(row: Row, ref: Reference) -> list[str]:
    f = row.figure
    role = f"derivation of {f.derives}" if f.role == "derivation" else "check"
    return [f.id, f.metric, f"{_num(f.value, f.unit)} {f.unit}",
            f"{_num(row.model, f.unit)} {f.unit}", f"{row.error * 100:+.1f}%",
            f"{f.bound * 100:.0f}%", role, verdict(row), f.source]


HEADER = ["figure", "metric", "published", "model", "error", "bound", "role", "verdict",
          "source"]


def render(profile: str, ref: Reference, rows: list[Row], fmt: str) -> str:
    body = [_cells(r, ref) for r in rows]
    checks = [r for r in rows if r.figure.role == "check"]
    worst = max(checks, key=lambda r: abs(r.error), default=None)
    summary = (f"{len(rows)} figures: {len(rows) - len(checks)} derivations, {len(checks)} checks "
               f"({sum(r.within for r in checks)} within their bound"
               + (f"; largest check error {worst.figure.id} {worst.error * 100:+.1f}%)"
                  if worst else ")"))
    misses = [r for r in rows if r.figure.known_miss]
    sources = [ref.sources[k] for k in dict.fromkeys(r.figure.source for r in rows)]
    command = f"blklab profile-errors {profile}"
    if fmt == "markdown":
        lines = [f"`{command}`: {ref.drive}, figures from "
                 f"`{ref.path.relative_to(paths.REPO) if ref.path.is_relative_to(paths.REPO) else ref.path}`"
                 f" on devmodel-sim (seed {SEED}).", "",
                 "| " + " | ".join(HEADER) + " |",
                 "|" + "|".join("---:" if h in ("published", "model", "error", "bound") else "---"
                                for h in HEADER) + "|"]
        lines += ["| " + " | ".join(c) + " |" for c in body]
        lines += ["", summary + "."]
        lines += [f"- {r.figure.id} misses its bound: {r.figure.known_miss}" for r in misses]
        lines += [f"- [{s.key}] {s.publisher}, \"{s.title}\" ({s.date}), <{s.url}>"
                  for s in sources]
        return "\n".join(lines) + "\n"
    widths = [max(len(x) for x in col) for col in zip(HEADER, *body)]
    lines = [f"{command}: {ref.drive} ({ref.path})"]
    lines += ["  ".join(c.ljust(w) for c, w in zip(line, widths)).rstrip()
              for line in [HEADER, *body]]
    lines += [summary]
    lines += [f"{r.figure.id} misses its bound: {r.figure.known_miss}" for r in misses]
    lines += [f"[{s.key}] {s.publisher}, \"{s.title}\" ({s.date}), {s.url}" for s in sources]
    return "\n".join(lines) + "\n"


# -- the README -----------------------------------------------------------------


def readme_tables(readme: str, tables: dict[str, str]) -> str:
    """README's text with each marked section's body replaced by
    tables[profile]; every profile in `tables` must have its section."""
    seen: set[str] = set()

    def sub(m: re.Match[str]) -> str:
        name = m.group(1)
        seen.add(name)
        if name not in tables:
            raise ProfileErrorsError(f"{README}: section for {name}: no figures file names that "
                                     "profile")
        return f"{_MARK_BEGIN.format(name)}\n{tables[name]}{_MARK_END}"

    out = _SECTION.sub(sub, readme)
    missing = sorted(set(tables) - seen)
    if missing:
        raise ProfileErrorsError(f"{README}: no section {_MARK_BEGIN.format(missing[0])} ... "
                                 f"{_MARK_END} for profile {missing[0]}")
    return out


def readme_sections(readme: str) -> dict[str, str]:
    return {m.group(1): m.group(2) for m in _SECTION.finditer(readme)}


def shipped_tables() -> dict[str, str]:
    """Each profile a figures file names, its Markdown table."""
    out = {}
    for ref in references():
        for name in ref.profiles:
            path = PROFILE_DIR / f"{name}.toml"
            out[name] = render(name, ref, evaluate(path, ref), "markdown")
    return out


# -- the command ----------------------------------------------------------------


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("profile", nargs="*", help="a shipped profile's name, or a profile TOML file "
                   "(then --reference); none with --update-readme")
    p.add_argument("--reference", type=Path, help="a figures file (default: the one under "
                   "tests/reference/ whose drive.profiles names PROFILE)")
    p.add_argument("--format", choices=FORMATS, default="text",
                   help="the table as text (default) or Markdown")
    p.add_argument("--update-readme", action="store_true",
                   help=f"rewrite every profile's table in {README.relative_to(paths.REPO)}")


def _resolve(name: str, reference: Path | None) -> tuple[str, Path, Reference]:
    as_path = Path(name)
    if as_path.suffix == ".toml":
        if not as_path.exists():
            raise ProfileErrorsError(f"{as_path}: no such profile")
        if reference is None:
            return as_path.stem, as_path, reference_for(as_path.stem)
        return as_path.stem, as_path, load_reference(reference)
    path = PROFILE_DIR / f"{name}.toml"
    if not path.exists():
        raise ProfileErrorsError(f"profile {name}: no {path}")
    return name, path, load_reference(reference) if reference else reference_for(name)


def main(args: argparse.Namespace) -> int:
    if args.update_readme:
        if args.profile or args.reference:
            raise ProfileErrorsError("--update-readme takes no PROFILE nor --reference: it "
                                     "regenerates every shipped profile's table")
        text = README.read_text()
        new = readme_tables(text, shipped_tables())
        if new != text:
            write_atomic(README, new)
            print(f"updated {README}")
        else:
            print(f"{README}: up to date")
        return 0
    if not args.profile:
        raise ProfileErrorsError("give a PROFILE (or --update-readme)")
    resolved = [_resolve(n, args.reference) for n in args.profile]
    for name, path, ref in resolved:
        print(render(name, ref, evaluate(path, ref), args.format), end="")
    return 0
