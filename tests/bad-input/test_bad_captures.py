"""Malformed capture files (tools/blklab-capture.sh output) given to
`blklab import` give an exact message naming the file, the line or key and
why, exit status 2, and write nothing.

captures/NAME.txt is the capture; NAME.expected is the message after
'blklab: <path>: '."""

import os
import subprocess
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
CASES = sorted((HERE / "captures").glob("*.txt"))


def test_corpus_is_large_enough():
    assert len(CASES) >= 8


@pytest.mark.parametrize("case", CASES, ids=[c.stem for c in CASES])
def test_bad_capture(case, tmp_path):
    expected = case.with_suffix(".expected").read_text().rstrip("\n")
    out = tmp_path / "imported.toml"
    env = dict(os.environ, PYTHONPATH=str(REPO / "harness"))
    proc = subprocess.run(["/usr/bin/python3", "-m", "blklab", "import", str(case),
                           "-o", str(out)], capture_output=True, text=True, env=env, timeout=60)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr == f"blklab: {case}: {expected}\n"
    assert proc.stdout == ""
    assert not out.exists()
