"""Malformed device profiles give an exact message naming the file, the line
and the key, exit status 2, and print nothing on stdout.

Each profiles/NAME.toml has NAME.expected: what devmodel-check writes on
stderr when run in profiles/ on NAME.toml. The same message must come both
from the validation that builds no state and from devmodel_open (the C ABI
QEMU calls, `--open`), so what QEMU says about a profile is tested here.
devmodel-check is found in $BLKLAB_CMAKE_BUILD (default build/cmake)."""

import os
import subprocess
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
PROFILES = HERE / "profiles"
CASES = sorted(PROFILES.glob("*.toml"))
BUILD = Path(os.environ.get("BLKLAB_CMAKE_BUILD", REPO / "build" / "cmake")).resolve()
CHECK = BUILD / "devmodel" / "devmodel-check"


def check(*args: str, cwd: Path = PROFILES) -> subprocess.CompletedProcess:
    if not CHECK.exists():
        pytest.fail(f"{CHECK} is not built (make cmake)")
    return subprocess.run([str(CHECK), *args], capture_output=True, cwd=cwd, timeout=60)


def test_corpus_is_large_enough():
    assert len(CASES) >= 20


@pytest.mark.parametrize("case", CASES, ids=[c.stem for c in CASES])
@pytest.mark.parametrize("mode", ["check", "open"])
def test_bad_profile(case, mode):
    expected = case.with_suffix(".expected").read_bytes()
    proc = check(*(["--open"] if mode == "open" else []), case.name)
    assert proc.returncode == 2, proc.stderr
    assert proc.stdout == b""
    assert proc.stderr == expected


def test_every_message_names_the_file():
    for case in CASES:
        first = case.with_suffix(".expected").read_bytes().split(b"\n")[0]
        assert first.startswith(b"devmodel-check: " + case.name.encode() + b":"), case.name


def test_missing_file_and_directory(tmp_path):
    proc = check("missing.toml", cwd=tmp_path)
    assert (proc.returncode, proc.stderr) == (2, b"devmodel-check: missing.toml: cannot open file\n")
    (tmp_path / "dir.toml").mkdir()
    proc = check("--open", "dir.toml", cwd=tmp_path)
    assert (proc.returncode, proc.stderr) == (
        2, b"devmodel-check: dir.toml: is a directory, not a profile\n")


def test_shipped_profiles_pass():
    shipped = sorted((REPO / "devmodel" / "profiles").glob("*.toml"))
    proc = check(*[str(p) for p in shipped])
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.count(b": ok: ") == len(shipped)
