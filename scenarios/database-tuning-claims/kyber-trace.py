#!/usr/bin/python3
"""kyber's timer runs in each cell of a run of a scenario with the kyber
observer (database-tuning-claims/kyber-trace.toml, etcd-backup/kyber-trace.toml),
from its tracepoints (cells/<cell>/observe-kyber.txt) and one job's
measured run's bounds (the JOB-start and JOB-end marks of the guest's
uptime; JOB is --job, "update" by default):

- every timer run (kyber_latency and kyber_adjust events within 1 ms of
  each other: one kyber_timer_fn) that found a window bad (an I/O p90 of
  5/4 or more), had a total p99 of 5/4 or more, or changed a depth, up to
  the last depth change, then a count of the later ones;
- kyber_throttled events per domain before the first depth change, from
  it to the measured run, and in the measured run;
- the completions kyber counted of requests never started (the
  kyber_unstarted fprobe: io_start_time_ns 0) in the measured run, by op
  (REQ_OP_READ 0, REQ_OP_WRITE 1) and length, beside the measured run's
  write and flush requests from /sys/block (the job's entry in the cell
  JSON's workload.apps), and their share of the WRITE I/O samples
  kyber_timer_fn took in the measured run.

  /usr/bin/python3 scenarios/database-tuning-claims/kyber-trace.py [--job JOB] RUN
"""

import argparse
import json
import re
from pathlib import Path

EVENT = re.compile(r"\s(\d+\.\d+): (kyber_latency|kyber_adjust|kyber_throttled|kyber_unstarted): "
                   r"\S+ (.*)$")
UNSTARTED = re.compile(r"op=0x([0-9a-f]+) len=(\d+)")
LATENCY = re.compile(r"(\w+) (I/O|total) p(\d+) (\d+)/(\d+) samples=(\d+)")
SAME_RUN_S = 0.001


def events(path: Path):
    for line in path.read_text(errors="replace").splitlines():
        m = EVENT.search(line)
        if m:
            yield float(m.group(1)), m.group(2), m.group(3)


def timer_runs(evs):
    """Groups kyber_latency and kyber_adjust events into timer runs."""
    runs = []
    for t, name, rest in evs:
        if name in ("kyber_throttled", "kyber_unstarted"):
            continue
        if runs and t - runs[-1][-1][0] <= SAME_RUN_S:
            runs[-1].append((t, name, rest))
        else:
            runs.append([(t, name, rest)])
    return runs


def notable(run) -> bool:
    for _, name, rest in run:
        if name == "kyber_adjust":
            return True
        m = LATENCY.match(rest)
        if m and int(m.group(4)) > int(m.group(5)):
            return True
    return False


def describe(run) -> str:
    parts = []
    for _, name, rest in run:
        if name == "kyber_adjust":
            domain, depth = rest.split()
            parts.append(f"{domain} -> {depth}")
        else:
            m = LATENCY.match(rest)
            parts.append(f"{m.group(1)} {m.group(2)} p{m.group(3)} {m.group(4)}/{m.group(5)} "
                         f"({m.group(6)})" if m else rest)
    return "; ".join(parts)


def uptime(cell: Path, mark: str) -> float | None:
    for name in (f"command-{mark}-uptime.txt", f"command/{mark}-uptime.txt"):
        f = cell / name
        if f.exists():
            return float(f.read_text().split()[0])
    return None


def job_entry(cell_json: Path, job: str) -> dict | None:
    """The job's entry of the cell JSON's workload.apps, or None."""
    apps = json.loads(cell_json.read_text()).get("workload", {}).get("apps") or []
    return next((a for a in apps if a.get("name") == job), None)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--job", default="update",
                        help="the job whose measured run is counted (default: update)")
    parser.add_argument("run", type=Path, metavar="RUN")
    args = parser.parse_args()
    run_dir, job = args.run, args.job
    for cell in sorted((run_dir / "cells").iterdir()):
        trace = cell / "observe-kyber.txt"
        if not trace.exists():
            print(f"{cell.name}: no observe-kyber.txt")
            continue
        evs = list(events(trace))
        start, end = uptime(cell, f"{job}-start"), uptime(cell, f"{job}-end")
        if start is None or end is None:
            print(f"{cell.name}: no {job}-start and {job}-end marks (is --job a job of it?)")
            continue
        print(f"{cell.name}: measured run {start}-{end} s (guest uptime), "
              f"trace {evs[0][0] if evs else '-'}-{evs[-1][0] if evs else '-'} s")
        runs = timer_runs(evs)
        adjusts = [i for i, r in enumerate(runs) if any(n == "kyber_adjust" for _, n, _ in r)]
        last = adjusts[-1] if adjusts else -1
        for r in runs[:last + 1]:
            if notable(r):
                print(f"  {r[0][0]:.6f}  {describe(r)}")
        later = [r for r in runs[last + 1:] if notable(r)]
        print(f"  after the last depth change: {len(runs) - last - 1} timer runs, "
              f"{len(later)} with a percentile past its target")
        first = runs[adjusts[0]][0][0] if adjusts else None
        spans = [("before the first depth change", None, first),
                 ("from it to the measured run", first, start),
                 ("in the measured run", start, end)]
        for label, lo, hi in spans:
            counts = {}
            for t, name, rest in evs:
                if name != "kyber_throttled":
                    continue
                if (lo is not None and t < lo) or (hi is not None and t >= hi):
                    continue
                counts[rest.strip()] = counts.get(rest.strip(), 0) + 1
            text = ", ".join(f"{d} {n}" for d, n in sorted(counts.items())) or "none"
            print(f"  kyber_throttled {label}: {text}")
        unstarted = {}
        for t, name, rest in evs:
            m = UNSTARTED.search(rest)
            if name != "kyber_unstarted" or not m or start is None or not start <= t < end:
                continue
            key = f"op {int(m.group(1), 16) & 0xff} len {m.group(2)}"
            unstarted[key] = unstarted.get(key, 0) + 1
        text = ", ".join(f"{k}: {n}" for k, n in sorted(unstarted.items())) or "none"
        stats = ""
        cell_json = run_dir / f"cell-{cell.name}.json"
        entry = job_entry(cell_json, job) if cell_json.exists() else None
        if entry and entry.get("disk_stats"):
            d = entry["disk_stats"]["delta"]
            stats = f" (/sys/block: {d['write_ios']} writes, {d['flush_ios']} flushes)"
        print(f"  never started, counted by kyber, in the measured run: {text}{stats}")
        samples = 0
        for t, name, rest in evs:
            m = LATENCY.match(rest)
            if (name == "kyber_latency" and m and m.group(1) == "WRITE" and m.group(2) == "I/O"
                    and start is not None and start <= t < end):
                samples += int(m.group(6))
        share = f"{sum(unstarted.values()) / samples:.1%}" if samples else "-"
        print(f"  WRITE I/O samples in the measured run's timer runs: {samples}; "
              f"never started among them: {share}")


if __name__ == "__main__":
    main()
