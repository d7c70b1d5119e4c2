#!/usr/bin/python3
"""The page's table of a run of postgres-checkpoint: one row per cell of
RUN (pgbench's rate and slowest transaction; the checkpoints that ended in
the run with their buffers and sync seconds; the slowest and mean
transaction of the intervals a sync phase overlaps and of the rest), and
the intervals whose slowest transaction took more than 20 ms with what the
checkpointer did then. The timeline is read again from each cell's kept
files (cells/<cell>/command/) with blklab.appjobs, so a run made before a
fix to the reading shows the fixed reading.

  /usr/bin/python3 scenarios/postgres-checkpoint/table.py RUN
"""

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "harness"))
from blklab import appjobs  # noqa: E402

SLOW_MS = 20.0


def main() -> None:
    run = Path(sys.argv[1])
    print("| cell | tps | slowest ms | checkpoints (buffers, sync s) | sync-phase slowest / mean ms"
          " | other slowest / mean ms |")
    print("|---|---|---|---|---|---|")
    slow = []
    for f in sorted(run.glob("cell-*.json")):
        c = json.loads(f.read_text())
        if c["status"] != "ok":
            print(f"| {c['cell_id']} | {c['status']}: {c.get('error')} |")
            continue
        a = c["workload"]["apps"][0]
        files = run / "cells" / c["cell_id"] / "command"
        tl = appjobs.checkpoint_timeline((files / f"{a['name']}-intervals.txt").read_text(),
                                         (files / "postgres.txt").read_text())
        ck = ", ".join(f"{k['buffers']} {k['sync_s']:.3f}" for k in tl["checkpoints"]
                       if k["in_run"])
        s, o = tl["sync_phase"], tl["other"]
        print(f"| {c['cell_id']} | {a['tps']:.0f} | {a['latency_ms']['max']:.1f} | {ck} | "
              f"{s['max_ms']} / {s['mean_ms']:.2f} | {o['max_ms']} / {o['mean_ms']:.2f} |")
        slow += [(c["cell_id"], r) for r in tl["intervals"] if r[3] > SLOW_MS]
    print(f"\nIntervals whose slowest transaction took over {SLOW_MS:g} ms "
          "(t_s, transactions, mean_ms, max_ms, checkpointer):")
    for cid, r in slow:
        print(f"  {cid}: {r}")


if __name__ == "__main__":
    main()
