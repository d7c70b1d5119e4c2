#!/usr/bin/python3
"""The page's "Measured" table from one or more runs of etcd-backup: a row
per etcd job of every cell (scheduler, seed, job): the WAL fdatasyncs, their
mean, the p99's bucket, the backend commit's mean (with the commit count),
the backup's rate and the start the job drew from the cell's seed (the
delay before its first put; beside the backup, the block its first pass
started at), each read from the cell's `workload.apps` as
`blklab check` reads it (blklab.etcdjob.metric). Rows are sorted by
scheduler, seed and job, so runs of single seeds make one table.

  /usr/bin/python3 scenarios/etcd-backup/table.py RUN [RUN ...]
"""

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "harness"))
from blklab import etcdjob  # noqa: E402


def scheduler_label(request: dict) -> str:
    label = request["scheduler"]
    target = request.get("tunables", {}).get("iosched/read_lat_nsec")
    if target is not None:
        label += f" {int(target) // 1000} us"
    return label


def p99_bucket(entry: dict) -> str:
    lower = etcdjob.metric(entry, "app_wal_fsync_p99_lower_ns")
    upper = etcdjob.metric(entry, "app_wal_fsync_p99_ns")
    if upper is None:
        return "-"
    return f"({(lower or 0) / 1e6:g}, {upper / 1e6:g}] ms"


def seeded_start(entry: dict) -> str:
    delay, block = entry.get("start_delay_us"), entry.get("backup_skip_blocks")
    if delay is None:
        return "-"
    return f"{delay / 1000:.3f} ms" + ("" if block is None else f", block {block}")


def main() -> None:
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    rows = []
    for run in sys.argv[1:]:
        cells = sorted(Path(run).glob("cell-*.json"))
        if not cells:
            sys.exit(f"table.py: {run}: no cell-*.json (not a run directory)")
        for f in cells:
            c = json.loads(f.read_text())
            req = c["request"]
            if c["status"] != "ok":
                rows.append((scheduler_label(req), req["seed"], "", f"| {scheduler_label(req)} | "
                             f"{req['seed']} | {c['status']}: {c.get('error')} |"))
                continue
            for a in c["workload"]["apps"]:
                fsyncs = etcdjob.metric(a, "app_wal_fsync_count")
                mean = etcdjob.metric(a, "app_wal_fsync_mean_ns")
                commit = etcdjob.metric(a, "app_backend_commit_mean_ns")
                backup = etcdjob.metric(a, "app_backup_mib_s")
                commits = (a.get("backend_commit") or {}).get("count")
                rows.append((scheduler_label(req), req["seed"], a["name"],
                             f"| {scheduler_label(req)} | {req['seed']} | {a['name']} | "
                             f"{fsyncs:,.0f} | {mean / 1e6:.3f} ms | {p99_bucket(a)} | "
                             f"{commit / 1e6:.3f} ms ({commits}) | "
                             f"{'-' if not backup else f'{backup:,.1f} MiB/s'} | "
                             f"{seeded_start(a)} |"))
    print("| cell | seed | job | fdatasyncs | mean | p99 bucket | backend commit mean | backup "
          "| seeded start |")
    print("|---|---|---|---|---|---|---|---|---|")
    for *_, line in sorted(rows, key=lambda r: (r[0] != "none", r[0], r[1], r[2])):
        print(line)


if __name__ == "__main__":
    main()
