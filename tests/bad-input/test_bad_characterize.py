"""Bad results given to `blklab characterize --compare DRIVE_DIR RUN_DIR`
give an exact message naming the file and the job, exit status 2, and write
nothing.

characterize/NAME/drive/ is the drive's directory (tools/characterize-drive.sh
--out), characterize/NAME/run/ the run's (blklab characterize --out), or
characterize/good-run/ when the case has none. NAME.expected is the message
after 'blklab: ', with {case} for characterize/NAME and {run} for the run
directory."""

import os
import subprocess
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
DIR = HERE / "characterize"
REFERENCE_DRIVE_DIR = REPO / "tests" / "reference" / "hotcloudperf24-kyber" / "drive_dir.py"
CASES = sorted(p for p in DIR.iterdir() if p.is_dir() and (p / "drive").is_dir())


def test_corpus_is_large_enough():
    assert len(CASES) >= 8


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_bad_characterization(case, tmp_path):
    run = case / "run" if (case / "run").is_dir() else DIR / "good-run"
    expected = case.with_suffix(".expected").read_text().rstrip("\n")
    expected = expected.replace("{case}", str(case)).replace("{run}", str(run))
    out = tmp_path / "table.md"
    env = dict(os.environ, PYTHONPATH=str(REPO / "harness"))
    proc = subprocess.run(["/usr/bin/python3", "-m", "blklab", "characterize", "--compare",
                           str(case / "drive"), str(run), "--format", "markdown", "-o",
                           str(out)], capture_output=True, text=True, env=env, timeout=60)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr == f"blklab: {expected}\n"
    assert proc.stdout == ""
    assert not out.exists()


def test_the_good_run_compares(tmp_path):
    """The corpus's shared run is good: each case fails for its own reason."""
    env = dict(os.environ, PYTHONPATH=str(REPO / "harness"))
    drive = tmp_path / "drive"  # the reference drive's rep_0
    subprocess.run(["/usr/bin/python3", str(REFERENCE_DRIVE_DIR), str(drive)], check=True)
    proc = subprocess.run(["/usr/bin/python3", "-m", "blklab", "characterize", "--compare",
                           str(drive), str(DIR / "good-run")], capture_output=True, text=True,
                          env=env, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "read-beside-writes-max" in proc.stdout
