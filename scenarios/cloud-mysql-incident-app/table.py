#!/usr/bin/python3
"""The page's table of a run of cloud-mysql-incident-app: one row per cell
of RUN, from its cell JSON (workload.apps[0]: sysbench's tps and latency,
the /sys/block counts over the measured run), and each column's range
over the seeds per device and scheduler.

  /usr/bin/python3 scenarios/cloud-mysql-incident-app/table.py RUN
"""

import collections
import json
import sys
from pathlib import Path

VOLUME = {"gp3": "gp3 (NVMe)", "gp3-vda": "gp3 as virtio-blk"}


def main() -> None:
    rows, ranges = [], collections.defaultdict(lambda: collections.defaultdict(list))
    for f in sorted(Path(sys.argv[1]).glob("cell-*.json")):
        c = json.loads(f.read_text())
        if c["status"] != "ok":
            print(f"{c['cell_id']}: {c['status']}: {c.get('error')}")
            continue
        dev, sched = c["cell_id"].split(".")[:2]
        # A scenario with one seed names its cells without it.
        seed = c["cell_id"].split("seed=")[1].split(".")[0] if "seed=" in c["cell_id"] else "1"
        a = c["workload"]["apps"][0]
        lat, d, n = a["latency_ms"], a["disk_stats"]["delta"], a["transactions"]
        p = lat["percentiles"]
        fig = {"inserts/s": a["tps"], "p99 ms": p["99"], "max ms": lat["max"],
               "writes/insert": d["write_ios"] / n, "flushes/insert": d["flush_ios"] / n}
        for k, v in fig.items():
            ranges[(dev, sched)][k].append(v)
        if seed == "1":
            rows.append(f"| {VOLUME[dev]} | {sched} | {a['tps']:.1f} | {lat['avg']:.2f} ms | "
                        f"{p['50']:.2f} ms | {p['99']:.2f} ms | {lat['max']:.2f} ms | "
                        f"{fig['writes/insert']:.2f} | {fig['flushes/insert']:.3f} |")
    print("| volume | scheduler | inserts/s | mean | p50 | p99 | max | writes / insert "
          "| flushes / insert |")
    print("|---|---|---|---|---|---|---|---|---|")
    print("\n".join(rows))
    print()
    for (dev, sched), figs in sorted(ranges.items()):
        print(f"{VOLUME[dev]}, {sched}, {len(figs['p99 ms'])} seeds: " + "; ".join(
            f"{k} {min(v):.3g}-{max(v):.3g}" for k, v in figs.items()))


if __name__ == "__main__":
    main()
