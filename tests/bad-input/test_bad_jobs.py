"""Malformed blkgen job files and command lines give an exact message naming
the file and line or the option, exit status 2, and start no I/O.

jobs/NAME.fio is a job file, run as `blkgen NAME.fio`; jobs/NAME.args is a
command line, one argument per line. NAME.expected is blkgen's stderr. The
host-built blkgen in $BLKLAB_CMAKE_BUILD (default build/cmake) runs in an
empty directory, which must stay empty: nothing was created or written."""

import os
import shutil
import subprocess
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
JOBS = HERE / "jobs"
CASES = sorted(list(JOBS.glob("*.fio")) + list(JOBS.glob("*.args")))
BUILD = Path(os.environ.get("BLKLAB_CMAKE_BUILD", REPO / "build" / "cmake")).resolve()
BLKGEN = BUILD / "workload" / "blkgen"


def test_corpus_is_large_enough():
    assert len(CASES) >= 20


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_bad_job(case, tmp_path):
    if not BLKGEN.exists():
        pytest.fail(f"{BLKGEN} is not built (make cmake)")
    expected = case.with_suffix(".expected").read_bytes()
    work = tmp_path / "work"
    work.mkdir()
    if case.suffix == ".fio":
        shutil.copy(case, work / case.name)
        args = [case.name]
    else:
        args = case.read_text().splitlines()
    before = sorted(p.name for p in work.iterdir())
    proc = subprocess.run([str(BLKGEN), *args], capture_output=True, cwd=work, timeout=30,
                          env={"PATH": "/usr/bin:/bin"})
    assert proc.returncode == 2, proc.stderr
    assert proc.stdout == b""
    assert proc.stderr == expected
    assert sorted(p.name for p in work.iterdir()) == before
