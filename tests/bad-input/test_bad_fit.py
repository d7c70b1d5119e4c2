"""Bad drive results given to `blklab fit DRIVE_DIR -o PROFILE` give an
exact message naming the file and the job, exit status 2, and write
nothing (neither the profile nor the table).

fit/NAME/drive/ is the drive's directory (tools/characterize-drive.sh
--out); fit/NAME/args, if present, holds extra arguments. NAME.expected is
the message after 'blklab: ', with {case} for fit/NAME."""

import os
import subprocess
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
DIR = HERE / "fit"
REFERENCE_DRIVE_DIR = REPO / "tests" / "reference" / "hotcloudperf24-kyber" / "drive_dir.py"
CASES = sorted(p for p in DIR.iterdir() if p.is_dir() and (p / "drive").is_dir())


def _fit(args, tmp_path):
    env = dict(os.environ, PYTHONPATH=str(REPO / "harness"))
    return subprocess.run(["/usr/bin/python3", "-m", "blklab", "fit", *args],
                          capture_output=True, text=True, env=env, timeout=300)


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_bad_fit(case, tmp_path):
    expected = case.with_suffix(".expected").read_text().rstrip("\n").replace("{case}", str(case))
    extra = (case / "args").read_text().split() if (case / "args").exists() else []
    out, table = tmp_path / "fitted.toml", tmp_path / "table.md"
    proc = _fit([str(case / "drive"), "-o", str(out), "--table", str(table),
                 "--start", "samsung-970evoplus-1t", *extra], tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr == f"blklab: {expected}\n"
    assert proc.stdout == ""
    assert not out.exists() and not table.exists()
    assert list(tmp_path.iterdir()) == []


def test_an_existing_profile_is_not_overwritten(tmp_path):
    out = tmp_path / "fitted.toml"
    out.write_text("kept\n")
    drive = tmp_path / "drive"  # the reference drive's rep_0
    subprocess.run(["/usr/bin/python3", str(REFERENCE_DRIVE_DIR), str(drive)], check=True)
    proc = _fit([str(drive), "-o", str(out)], tmp_path)
    assert proc.returncode == 2
    assert proc.stderr == f"blklab: {out}: already exists; nothing is overwritten\n"
    assert out.read_text() == "kept\n"
