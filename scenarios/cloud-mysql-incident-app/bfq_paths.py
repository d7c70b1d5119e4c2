#!/usr/bin/python3
"""Which path in bfq served jbd2's journal writes in a traced bfq cell
(traced.toml; ../cloud-mysql-incident-app.md, "What the trace shows").

Reads cells/<cell>/observe-bfq-kprobes.txt of RUN (tracefs's text: the
kprobes on bfq and the block layer's insert, issue and complete events)
and, for each of jbd2's writes that entered bfq during the measured run
(the guest's uptime at its start and end, command/insert-*-uptime.txt;
tracefs stamps events on the same clock), reports how long it
waited between insert and issue, which queue was in service when bfq
dispatched it (bfq_bfqq_served), whether the in-service queue was expired
in between and why (bfq_bfqq_expire's reason: 0 too idle, 1 budget
timeout, 2 budget exhausted, 3 no more requests, 4 preempted), and
jbd2's waker queue at that moment. Also counts the idle timers armed and
fired, and the weight-raising state of the queues at each dispatch.

  /usr/bin/python3 scenarios/cloud-mysql-incident-app/bfq_paths.py RUN
"""

import collections
import re
import sys
from pathlib import Path

LINE = re.compile(r"^\s*(?P<task>.+?)-(?P<tid>\d+)\s+\[\d+\]\s+\S+\s+(?P<ts>\d+\.\d+):\s+"
                  r"(?P<event>\w+):\s*(?P<rest>.*)$")
FIELD = re.compile(r"(\w+)=(\S+)")
BLOCK = re.compile(r"^\S+\s+(?P<rwbs>\S+)\s+(?:\d+\s+)?\(\S*\)\s+(?P<sector>\d+)\s+\+\s+(?P<n>\d+)")


def events(path: Path):
    for line in path.read_text(errors="replace").splitlines():
        m = LINE.match(line)
        if m:
            yield (float(m["ts"]), m["task"].strip(), int(m["tid"]), m["event"], m["rest"])


def main() -> None:
    run = Path(sys.argv[1])
    for trace in sorted(run.glob("cells/*/observe-bfq-kprobes.txt")):
        print(f"== {trace.parent.name}")
        probes = [l for l in trace.read_text(errors="replace").splitlines()
                  if l.startswith("probe")]
        print("\n".join(probes))
        cmd = trace.parent / "command"
        lo = float((cmd / "insert-start-uptime.txt").read_text())
        hi = float((cmd / "insert-end-uptime.txt").read_text())
        ev = [e for e in events(trace) if lo <= e[0] <= hi]
        print(f"measured run: uptime {lo} to {hi} s")
        counts = collections.Counter(e[3] for e in ev)
        print("events:", dict(sorted(counts.items())))
        pending = {}     # sector -> insert time, jbd2's writes waiting in bfq
        expires = []     # (ts, fields) of bfq_bfqq_expire with queue fields
        waits, paths = [], collections.Counter()
        last_served = None
        for ts, task, tid, event, rest in ev:
            f = dict(FIELD.findall(rest))
            if event == "expire_q":
                expires.append((ts, f))
            elif event == "served":
                last_served = (ts, f)
            elif event in ("block_rq_insert", "block_rq_issue"):
                b = BLOCK.match(rest)
                if not b or "W" not in b["rwbs"]:
                    continue
                if event == "block_rq_insert" and task.startswith("jbd2"):
                    pending[b["sector"]] = (ts, tid)
                elif event == "block_rq_issue" and b["sector"] in pending:
                    t0, jpid = pending.pop(b["sector"])
                    waits.append(ts - t0)
                    between = [x for x in expires if t0 <= x[0] <= ts]
                    why = ",".join(f"expire(pid={x[1].get('pid')},reason={x[1].get('reason')})"
                                   for x in between) or "no expire"
                    s = last_served[1] if last_served and t0 <= last_served[0] <= ts else {}
                    key = (f"served jbd2 pid={s.get('pid')} wr={s.get('wr')} "
                           f"waker={s.get('waker')} with in service pid={s.get('insvc')} "
                           f"wr={s.get('insvc_wr')}; {why}")
                    key = re.sub(r"pid=\d+", lambda m: "pid=jbd2" if m.group(0) == f"pid={jpid}"
                                 else m.group(0), key)
                    paths[key] += 1
        if waits:
            waits.sort()
            print(f"jbd2 writes through bfq: {len(waits)}; insert->issue median "
                  f"{waits[len(waits) // 2] * 1e6:.0f} us, max {waits[-1] * 1e6:.0f} us, "
                  f"over 1 ms: {sum(w > 1e-3 for w in waits)}")
        for k, v in paths.most_common(12):
            print(f"{v:6d}  {k}")


if __name__ == "__main__":
    main()
