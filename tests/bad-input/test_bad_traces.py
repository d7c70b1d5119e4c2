"""Malformed traces (read_iolog) give an exact message naming the file and
the byte offset, exit status 2, and start no I/O.

traces/NAME.* is a trace (blktrace binary or fio iolog), replayed as
`blkgen --name=r --filename=target --read_iolog=NAME.*` in an empty
directory holding only the trace, which must stay so: the target is not
created. NAME.expected is blkgen's stderr. The traces were written by hand
(iologs) or with Python's struct (blktrace records, struct blk_io_trace)."""

import os
import shutil
import subprocess
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
CASES = sorted(p for p in (HERE / "traces").iterdir() if p.suffix != ".expected")
BUILD = Path(os.environ.get("BLKLAB_CMAKE_BUILD", REPO / "build" / "cmake")).resolve()
BLKGEN = BUILD / "workload" / "blkgen"


def test_corpus_is_large_enough():
    assert len(CASES) >= 10


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_bad_trace(case, tmp_path):
    if not BLKGEN.exists():
        pytest.fail(f"{BLKGEN} is not built (make cmake)")
    expected = case.parent.joinpath(case.name.split(".")[0] + ".expected").read_bytes()
    work = tmp_path / "work"
    work.mkdir()
    shutil.copy(case, work / case.name)
    proc = subprocess.run([str(BLKGEN), "--name=r", "--filename=target",
                           f"--read_iolog={case.name}"],
                          capture_output=True, cwd=work, timeout=30, env={"PATH": "/usr/bin:/bin"})
    assert proc.returncode == 2, proc.stderr
    assert proc.stdout == b""
    assert proc.stderr == expected
    assert sorted(p.name for p in work.iterdir()) == [case.name]
