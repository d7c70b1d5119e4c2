#!/usr/bin/env python3
"""Writes one of runs.toml's repeats (default rep_0) as a drive directory in
the drive script's layout (tools/characterize-drive.sh --out), for blklab
fit and blklab characterize --compare: OUT/read-beside-writes-max.json, in
fio's JSON shape with the run's "fio version", "global options" and one job
holding the cited figures and options.

    /usr/bin/python3 tests/reference/hotcloudperf24-kyber/drive_dir.py OUT [rep_N]
"""

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[2] / "harness"))

from blklab import cited_runs  # noqa: E402

JOB = "read-beside-writes-max"  # tools/characterize/read-beside-writes-max.fio


def write(out: Path, run: str = "rep_0") -> Path:
    """OUT/read-beside-writes-max.json from the run; CitedRunsError when it exists."""
    runs = cited_runs.load(HERE / "runs.toml")
    (path,) = cited_runs.write_drive_dir(out, {JOB: runs.fio_doc(run)})
    return path


def main() -> int:
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__)
    try:
        write(Path(sys.argv[1]), *sys.argv[2:])
    except cited_runs.CitedRunsError as e:
        sys.exit(str(e))
    return 0


if __name__ == "__main__":
    sys.exit(main())
