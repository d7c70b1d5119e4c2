#!/usr/bin/env python3
"""Writes qd_sweep.json's runs at the suite's random-read depths as a drive
directory in the drive script's layout (tools/characterize-drive.sh --out),
for blklab fit and blklab characterize --compare: OUT/randread-qd1.json,
-qd4, -qd16 and -qd32, each fio's JSON with the run's "fio version",
"global options" and one job whose read figures are the trimmed ones
(iops, total_ios, runtime, slat_ns and clat_ns means). Every figure and
option is copied, none computed; the runs have no percentiles.

    /usr/bin/python3 tests/reference/icpe24-fig1-qd-sweep/drive_dir.py OUT
"""

import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
SUITE_DEPTHS = (1, 4, 16, 32)  # tools/characterize/randread-qd*.fio


def main() -> int:
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out = Path(sys.argv[1])
    runs = json.loads((HERE / "qd_sweep.json").read_text())
    for qd in SUITE_DEPTHS:
        if (out / f"randread-qd{qd}.json").exists():
            sys.exit(f"{out / f'randread-qd{qd}.json'}: already exists; nothing is written")
    out.mkdir(parents=True, exist_ok=True)
    for qd in SUITE_DEPTHS:
        run = runs[str(qd)]
        path = out / f"randread-qd{qd}.json"
        job = {"jobname": f"bs_4_proc_1_qd_{qd}", "read": run["job"]["read"],
               "usr_cpu": run["job"]["usr_cpu"], "sys_cpu": run["job"]["sys_cpu"],
               "ctx": run["job"]["ctx"]}
        path.write_text(json.dumps({"fio version": run["fio version"],
                                    "global options": run["global options"],
                                    "jobs": [job]}, indent=1, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
