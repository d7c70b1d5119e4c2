#!/usr/bin/env python3
"""The random-read figures of figures.toml (randread-4k-qdN-steady), from
the raw fio outputs of the ICPE '24 artifact's figure 1: one SPDK job of
4 KiB random reads per queue depth, on one of the host's 980 PRO 1 TB
drives. Prints fio's own read IOPS and completion latency of each run;
nothing is computed.

    git clone https://github.com/stonet-research/icpe24_io_scheduler_study_artifact src
    git -C src checkout 013f1e1569aaa271cbf2ae9e8cd8e94dab89223d
    python3 tests/reference/samsung-980pro-1t/icpe24_reads.py src
"""

import json
import sys
from pathlib import Path

OUTPUTS = "results/fig-1-samsung-baseline/results_qd_iops_inc_proc_4kb/fio_output"
DEPTHS = (1, 2, 4, 8, 16, 32)


def main(src: Path) -> None:
    for qd in DEPTHS:
        text = (src / OUTPUTS / f"bs_4_proc_1_qd_{qd}_spdk.txt").read_text()
        doc = json.loads(text[text.index("{"):])
        (job,) = doc["jobs"]
        options = dict(doc["global options"], **job["job options"])
        read = job["read"]
        clat = read["clat_ns"]
        print(f"randread-4k-qd{qd}-steady: ioengine={options['ioengine']} rw={options['rw']} "
              f"bs={options['bs']} iodepth={options['iodepth']} numjobs={options['numjobs']}: "
              f"{read['iops']:.1f} read IOPS, clat mean {clat['mean']:.0f} ns, "
              f"p50 {clat['percentile']['50.000000']} ns, p99 {clat['percentile']['99.000000']} ns")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
