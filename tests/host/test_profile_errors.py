"""The shipped SSD profiles against their drives' published figures
(`blklab profile-errors`, tests/reference/*/figures.toml):

- devmodel/profiles/README.md's tables are what the command prints now, so
  they are generated, not typed;
- every row holds the bound its figures file states; a check that misses
  it and says why (known_miss) is a strict expected failure, so it fails
  once the model meets the figure and the reason must go;
- a profile's `[F:figure-id]` comments name derivations only, and every
  derivation's keys carry one: no key is fitted to a figure that checks it;
- bad input is an error naming the file and the key, exit status 2, and
  nothing is written.

Needs devmodel-sim (make cmake); about 20 s."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "harness"))

from blklab import profile_errors as pe  # noqa: E402
from blklab.scenario import PROFILE_DIR  # noqa: E402

SIM = Path(os.environ.get("BLKLAB_CMAKE_BUILD", REPO / "build" / "cmake")) / "devmodel" / \
    "devmodel-sim"
REFERENCES = pe.references()
ROWS = [(name, ref, f) for ref in REFERENCES for name in ref.profiles for f in ref.figures]
_CITE = re.compile(r"\[F:(?:(\S+) )?([a-z0-9-]+)\]")


def _param(name, ref, f):
    marks = [pytest.mark.xfail(strict=True, reason=f.known_miss)] if f.known_miss else []
    return pytest.param(name, ref, f, id=f"{name}-{f.id}", marks=marks)


@pytest.fixture(scope="module")
def evaluated():
    if not SIM.exists():
        pytest.fail(f"no {SIM}: run 'make cmake'")
    return {name: {r.figure.id: r for r in pe.evaluate(PROFILE_DIR / f"{name}.toml", ref)}
            for ref in REFERENCES for name in ref.profiles}


def test_every_shipped_ssd_profile_of_a_real_drive_has_figures():
    named = {n for ref in REFERENCES for n in ref.profiles}
    assert {"samsung-970evoplus-1t", "samsung-980pro-1t", "tlc-250g-used",
            "tlc-250g-used-suspend", "optane-p5800x-800g"} <= named
    for name in named:
        assert (PROFILE_DIR / f"{name}.toml").exists(), name


def test_readme_tables_are_the_commands_output(evaluated):
    tables = {name: pe.render(name, ref, list(evaluated[name].values()), "markdown")
              for ref in REFERENCES for name in ref.profiles}
    readme = pe.README.read_text()
    assert pe.readme_sections(readme) == tables, \
        "README differs: run 'blklab profile-errors --update-readme'"
    assert pe.readme_tables(readme, tables) == readme


@pytest.mark.parametrize("name,ref,figure", [_param(*r) for r in ROWS])
def test_row_within_its_bound(evaluated, name, ref, figure):
    row = evaluated[name][figure.id]
    assert abs(row.error) <= figure.bound, (
        f"{name} {figure.id}: model {row.model:.4g} against {figure.value:.4g} {figure.unit}: "
        f"error {row.error:+.1%} beyond {figure.bound:.0%}")


def test_derivations_are_cited_by_their_keys_and_checks_by_none():
    derivations = {f.id for ref in REFERENCES for f in ref.figures if f.role == "derivation"}
    for ref in REFERENCES:
        checks = {f.id for f in ref.figures if f.role == "check"}
        for name in ref.profiles:
            lines = (PROFILE_DIR / f"{name}.toml").read_text().splitlines()
            comment = {ln.split("=", 1)[0].strip(): ln.split("#", 1)[1] for ln in lines
                       if "=" in ln and "#" in ln and not ln.lstrip().startswith("#")}
            for f in ref.figures:
                if f.role != "derivation":
                    continue
                for key in (k.strip() for k in f.derives.split(",")):
                    assert f"[F:{f.id}]" in comment.get(key, ""), (name, key, f.id)
            for key, text in comment.items():
                for qualifier, fid in _CITE.findall(text):
                    assert fid in derivations, (name, key, fid, "cites no derivation")
                    assert qualifier or fid not in checks, (name, key, fid, "is a check here")


def _run(args, cwd):
    env = dict(os.environ, PYTHONPATH=str(REPO / "harness"))
    return subprocess.run([sys.executable, "-m", "blklab", "profile-errors", *args],
                          capture_output=True, text=True, env=env, cwd=cwd, timeout=120)


def _figures_without(tmp_path, drop: str) -> Path:
    text = (REPO / "tests" / "reference" / "optane-p5800x" / "figures.toml").read_text()
    out = tmp_path / "figures.toml"
    out.write_text("".join(ln + "\n" for ln in text.splitlines() if not ln.startswith(drop)))
    return out


@pytest.mark.parametrize("drop,message", [
    ("metric =", "figures[0] (randread-qd1-measured).metric: missing"),
    ("source =", "figures[0] (randread-qd1-measured).source: missing"),
    ("url =", "sources.kitguru.url: missing"),
])
def test_a_figures_file_missing_a_key_names_the_file_and_key(tmp_path, drop, message):
    figures = _figures_without(tmp_path, drop)
    before = pe.README.read_text()
    proc = _run(["optane-p5800x-800g", "--reference", str(figures)], tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr == f"blklab: {figures}: {message}\n"
    assert proc.stdout == ""
    assert sorted(p.name for p in tmp_path.iterdir()) == ["figures.toml"]
    assert pe.README.read_text() == before


def test_a_bad_value_names_the_key(tmp_path):
    figures = tmp_path / "figures.toml"
    text = (REPO / "tests" / "reference" / "optane-p5800x" / "figures.toml").read_text()
    figures.write_text(text.replace('role = "check"', 'role = "fitted"'))
    proc = _run(["optane-p5800x-800g", "--reference", str(figures)], tmp_path)
    assert proc.returncode == 2
    assert proc.stderr == (f"blklab: {figures}: figures[0] (randread-qd1-measured).role: one of "
                           "derivation, check, got 'fitted'\n")


def test_a_profile_no_figures_file_names_is_refused(tmp_path):
    proc = _run(["fixed-10us"], tmp_path)
    assert proc.returncode == 2
    assert "profile fixed-10us: no " in proc.stderr and "drive.profiles" in proc.stderr
    assert proc.stdout == ""
