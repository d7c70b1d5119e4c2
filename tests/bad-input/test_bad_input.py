"""Malformed inputs give an exact message naming the file and the key, exit
status 2, and change nothing under results/.

Each scenarios/NAME.toml has NAME.expected: the message after
'blklab: <path>: '."""

import os
import subprocess
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
CASES = sorted((HERE / "scenarios").glob("*.toml"))


def blklab(*args: str, results: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(REPO / "harness"))
    return subprocess.run(["/usr/bin/python3", "-m", "blklab", "--results", str(results), *args],
                          capture_output=True, text=True, env=env, timeout=120)


def tree(path: Path) -> list[tuple[str, int, int]]:
    return sorted((str(p.relative_to(path)), p.stat().st_size, p.stat().st_mtime_ns)
                  for p in path.rglob("*")) if path.exists() else []


def test_corpus_is_large_enough():
    assert len(CASES) >= 30


@pytest.mark.parametrize("case", CASES, ids=[c.stem for c in CASES])
def test_bad_scenario(case, tmp_path):
    expected = (case.with_suffix(".expected")).read_text().rstrip("\n")
    results = tmp_path / "results"
    (results / "kept").mkdir(parents=True)
    (results / "kept" / "cell-x.json").write_text("{}\n")
    before = tree(results)
    for args in (["validate", str(case)],
                 ["run", str(case), "--out", str(results / "new")]):
        proc = blklab(*args, results=results)
        assert proc.returncode == 2, (args, proc.stdout, proc.stderr)
        assert proc.stderr == f"blklab: {case}: {expected}\n"
        assert proc.stdout == ""
        assert tree(results) == before
