#!/usr/bin/env python3
"""Regenerates this folder's JSON from the original repository: each fio
output, trimmed to what blklab characterize --compare and blklab fit read
("fio version"; "global options", which say where on the device the jobs
ran and for how long; per job its jobname, its "job options" and, per
direction, iops, total_ios and clat_ns's mean and the 50/99/99.9/99.99
percentiles). Every figure and option is copied, none computed.

    git clone https://github.com/stonet-research/hotcloudperf24-kyber-artifact-public src
    git -C src checkout 269a4f8526fe887d31c04fe2ceb678ed4e90bbed
    python3 tests/reference/hotcloudperf24-kyber/trim.py src
"""

import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
# Kyber's defaults (read 2 ms, write 10 ms): a QD1 4 KiB random reader and a
# QD256 4 KiB random writer on the raw device, 5 repeats.
ORIGINAL = ("micro-bench-r1-w256/results_kyber_vary_target_lat/rep_{rep}/fio_output/"
            "r256-w256_sche_kyber_r_2ms_w_10ms.txt")
JOB = "read-beside-writes-max"
PERCENTILES = ("50.000000", "99.000000", "99.900000", "99.990000")


def trim(doc: dict) -> dict:
    jobs = []
    for job in doc["jobs"]:
        out = {"jobname": job["jobname"], "job options": job["job options"]}
        for d in ("read", "write"):
            x = job[d]
            if not x.get("total_ios"):
                continue
            clat = x["clat_ns"]
            out[d] = {"iops": x["iops"], "total_ios": x["total_ios"],
                      "clat_ns": {"mean": clat["mean"],
                                  "percentile": {p: clat["percentile"][p]
                                                 for p in PERCENTILES}}}
        jobs.append(out)
    return {"fio version": doc["fio version"], "global options": doc["global options"],
            "jobs": jobs}


def main(src: Path) -> None:
    for rep in range(5):
        text = (src / ORIGINAL.format(rep=rep)).read_text()
        doc = json.loads(text[text.index("{"):])
        out = HERE / f"rep_{rep}" / f"{JOB}.json"
        out.parent.mkdir(exist_ok=True)
        out.write_text(json.dumps(trim(doc), indent=2) + "\n")
        print(out)


if __name__ == "__main__":
    main(Path(sys.argv[1]))
