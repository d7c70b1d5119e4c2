#!/usr/bin/env python3
"""The steady-state random-write figures of figures.toml, from the raw fio
outputs of the ICPE '24 artifact (8 Samsung 980 PRO 1 TB in one host, its
README says): per figure, the writer jobs' write IOPS (fio's own, over the
measured time) summed and divided by the drives they spread over, and the
bytes each drive had taken (its disk_util) in the figure's earlier runs.
Every figure is the original's or a sum or quotient of them.

    git clone https://github.com/stonet-research/icpe24_io_scheduler_study_artifact src
    git -C src checkout 013f1e1569aaa271cbf2ae9e8cd8e94dab89223d
    python3 tests/reference/samsung-980pro-1t/icpe24_writes.py src
"""

import json
import sys
from pathlib import Path

# (figure id, the artifact's folder, the run: scheduler none, 16 writer jobs)
RUNS = [("randwrite-4k-steady", "fig-11-c-lapp-t4kbw-mix", "none_num_t_16"),
        ("randwrite-64k-steady", "fig-11-d-lapp-t64kbw-mix", "none_num_t_16")]
DEVICE = "nvme9n1"  # the drive the hotcloudperf24-kyber results come from


def fio_json(path: Path) -> dict:
    text = path.read_text()
    return json.loads(text[text.index("{"):])


def main(src: Path) -> None:
    for figure, folder, run in RUNS:
        out = next((src / "results" / folder).glob("results_*/fio_output"))
        writers = [fio_json(p) for p in sorted(out.glob(f"t_dev_1_sche_{run}_index_*.txt"))]
        options = writers[0]["global options"]
        drives = options["filename"].split(":")
        iops = sum(w["jobs"][0]["write"]["iops"] for w in writers) / len(drives)
        latency_run = fio_json(out / f"l_dev_1_sche_{run}.txt")
        before = 0
        for p in out.glob("l_dev_1_sche_*.txt"):
            doc = fio_json(p)
            if doc["timestamp"] < latency_run["timestamp"]:
                before += sum(u["write_ios"] for u in doc["disk_util"] if u["name"] == DEVICE)
        print(f"{figure}: {len(writers)} jobs rw={options['rw']} bs={options['bs']} "
              f"iodepth={options['iodepth']} size={options['size']} over {len(drives)} drives "
              f"(ramp_time={options['ramp_time']}, runtime={options['runtime']}): "
              f"{iops:.0f} write IOPS per drive; before it {DEVICE} took {before:,} writes "
              f"of bs={options['bs']} in the figure's runs")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
