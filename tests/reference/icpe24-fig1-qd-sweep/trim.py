#!/usr/bin/env python3
"""Regenerates qd_sweep.json from the original repository: for each of
fig-1's one-job, 4 KiB io_uring random-read runs at queue depths 1 to 256,
the fio output trimmed to what tests/bench/cpu-paths.py reads ("fio
version", "global options", and per job its read iops, total_ios, slat_ns's
and clat_ns's means, usr_cpu, sys_cpu, ctx and runtime). Every figure and
option is copied, none computed.

    git clone https://github.com/stonet-research/icpe24_io_scheduler_study_artifact src
    git -C src checkout 013f1e1569aaa271cbf2ae9e8cd8e94dab89223d
    /usr/bin/python3 tests/reference/icpe24-fig1-qd-sweep/trim.py src
"""

import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ORIGINAL = "results/fig-1-samsung-baseline/results_qd_iops_inc_proc_4kb/fio_output/bs_4_proc_1_qd_{qd}.txt"
DEPTHS = (1, 2, 4, 8, 16, 32, 64, 128, 256)


def trim(doc: dict) -> dict:
    (job,) = doc["jobs"]
    read = job["read"]
    return {"fio version": doc["fio version"], "global options": doc["global options"],
            "job": {"read": {"iops": read["iops"], "total_ios": read["total_ios"],
                             "runtime": read["runtime"],
                             "slat_ns": {"mean": read["slat_ns"]["mean"]},
                             "clat_ns": {"mean": read["clat_ns"]["mean"]}},
                    "usr_cpu": job["usr_cpu"], "sys_cpu": job["sys_cpu"], "ctx": job["ctx"]}}


def main() -> int:
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    src = Path(sys.argv[1])
    runs = {}
    for qd in DEPTHS:
        text = (src / ORIGINAL.format(qd=qd)).read_text()
        runs[str(qd)] = trim(json.loads(text[text.index("{"):]))
    (HERE / "qd_sweep.json").write_text(json.dumps(runs, indent=1, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
