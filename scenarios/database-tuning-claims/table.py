#!/usr/bin/python3
"""The page's table of a run of database-tuning-claims: one row per cell of
RUN, from its cell JSON (workload.apps[0]: sysbench's rate and latency
percentiles, the /sys/block counts over the measured run), then each
setting's p99 over its baseline's per seed, as the expectations compare
them.

  /usr/bin/python3 scenarios/database-tuning-claims/table.py RUN
"""

import json
import sys
from pathlib import Path

# Each claimed setting and the baseline it is compared with.
PAIRS = {
    "mq-deadline.read_expire=100.writes_starved=1": "mq-deadline.read_expire=500.writes_starved=2",
    "mq-deadline.read_expire=100.writes_starved=2": "mq-deadline.read_expire=500.writes_starved=2",
    "mq-deadline.read_expire=500.writes_starved=1": "mq-deadline.read_expire=500.writes_starved=2",
    "kyber.read_lat_nsec=1000000": "kyber.read_lat_nsec=2000000",
}


def main() -> None:
    figs = {}
    print("| setting | seed | updates/s | p50 | p99 | p99.9 | max | reads / update "
          "| writes / update | flushes / update |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for f in sorted(Path(sys.argv[1]).glob("cell-*.json")):
        c = json.loads(f.read_text())
        parts = c["cell_id"].split(".seed=")
        setting = parts[0].split(".", 1)[1]
        seed = parts[1].split(".")[0]
        if c["status"] != "ok":
            print(f"| {setting} | {seed} | {c['status']}: {c.get('error')} |")
            continue
        a = c["workload"]["apps"][0]
        lat, d, n = a["latency_ms"], a["disk_stats"]["delta"], a["transactions"]
        p = lat["percentiles"]
        figs[(setting, seed)] = (a["tps"], p["99"])
        print(f"| {setting} | {seed} | {a['tps']:,.1f} | {p['50']:.2f} ms | {p['99']:.2f} ms | "
              f"{p['99.9']:.2f} ms | {lat['max']:.2f} ms | {d['read_ios'] / n:.2f} | "
              f"{d['write_ios'] / n:.2f} | {d['flush_ios'] / n:.3f} |")
    print()
    for setting, base in PAIRS.items():
        seeds = sorted(s for (k, s) in figs if k == setting and (base, s) in figs)
        if seeds:
            print(f"{setting} / {base}: p99 " + ", ".join(
                f"{figs[(setting, s)][1] / figs[(base, s)][1]:.3f}" for s in seeds)
                + "; rate " + ", ".join(
                f"{figs[(setting, s)][0] / figs[(base, s)][0]:.3f}" for s in seeds)
                + f" (seeds {', '.join(seeds)})")


if __name__ == "__main__":
    main()
