#!/usr/bin/env python3
"""Writes runs.toml's runs at the suite's random-read depths as a drive
directory in the drive script's layout (tools/characterize-drive.sh --out),
for blklab fit and blklab characterize --compare: OUT/randread-qd1.json,
-qd4, -qd16 and -qd32, each in fio's JSON shape with the run's "fio
version", "global options" and one job (named after the artifact's file)
holding the cited read figures (iops, total_ios, runtime, slat_ns and
clat_ns means) and CPU figures. The runs have no percentiles.

    /usr/bin/python3 tests/reference/icpe24-fig1-qd-sweep/drive_dir.py OUT
"""

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[2] / "harness"))

from blklab import cited_runs  # noqa: E402

SUITE_DEPTHS = (1, 4, 16, 32)  # tools/characterize/randread-qd*.fio


def main() -> int:
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    try:
        runs = cited_runs.load(HERE / "runs.toml")
        docs = {}
        for qd in SUITE_DEPTHS:
            doc = runs.fio_doc(f"qd{qd}")
            doc["jobs"][0]["jobname"] = Path(runs.runs[f"qd{qd}"].path).stem
            docs[f"randread-qd{qd}"] = doc
        cited_runs.write_drive_dir(Path(sys.argv[1]), docs, indent=1, sort_keys=True)
    except cited_runs.CitedRunsError as e:
        sys.exit(str(e))
    return 0


if __name__ == "__main__":
    sys.exit(main())
