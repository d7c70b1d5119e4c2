#!/usr/bin/python3
"""The guest CPU's time per 4 KiB read on five paths, per CPU preset and
kernel series, against published measurements on a named CPU, and the ratio
(docs/cpus.md).

tests/bench/cpu-paths.toml runs the paths on one vCPU: interrupt-driven and
polled io_uring at QD128 on a fixed 10 us drive, where the vCPU is never idle
and its time per read is 1 / IOPS; interrupt-driven io_uring at QD1 on the 980
PRO-class profile and on the fixed 10 us drive (irq-qd1-10us), and psync at QD1
on the fixed 10 us drive, where the time per read is fio's usr + sys per read,
as the published runs give it. The published figures are fio's own
(usr_cpu + sys_cpu) / IOPS from raw JSON (docs/cpus.md names the files).

Usage: tests/bench/cpu-paths.py [--cpus A,B] [--kernels 6.1,6.12] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PYTHON = "/usr/bin/python3"
SCENARIO = REPO / "tests" / "bench" / "cpu-paths.toml"
sys.path.insert(0, str(REPO / "harness"))

from bench_dirs import add_keep_option, bench_dirs  # noqa: E402
from blklab import cited_runs, cpus  # noqa: E402

PATHS = ("irq-qd128", "polled-qd128", "irq-qd1", "psync-qd1", "irq-qd1-10us")
# Which cell (drive) each path is read from.
# psync-qd1's and irq-qd1-10us's published drive answered in 10-12 us: the
# fixed 10 us drive.
DRIVE = {"irq-qd128": "fast", "polled-qd128": "fast", "irq-qd1": "pro", "psync-qd1": "fast",
         "irq-qd1-10us": "fast"}
# The job (in tests/bench/cpu-paths.toml) a path reads, where it is not the
# path's own name: every job runs on both drives.
JOB = {"irq-qd1-10us": "irq-qd1"}
# fig-1 of the ICPE artifact: one io_uring job at queue depths 1 to 256 on
# the Cascade Lake core, its figures cited (tests/reference/icpe24-fig1-qd-sweep).
QD_SWEEP = REPO / "tests" / "reference" / "icpe24-fig1-qd-sweep" / "runs.toml"

ICPE = "stonet-research/icpe24_io_scheduler_study_artifact@013f1e15"
CHEOPS = "stonet-research/Performance-Characterization-Storage-Stacks@6add9ecf"
# Published ns of CPU per read, (usr + sys) / IOPS, by the CPU they were
# measured on: (ns, where).
PUBLISHED = {
    "xeon-silver-4210r": {
        "irq-qd128": (2609, f"{ICPE} results/fig-1 bs_4_proc_1_qd_128: 383,287 IOPS, "
                            "usr 37.75% + sys 62.25%; Linux 6.3.8, 980 PRO"),
        "irq-qd1": (7686, f"{ICPE} results/fig-1 bs_4_proc_1_qd_1: 14,483 IOPS, "
                          "usr 3.82% + sys 7.31%; Linux 6.3.8, 980 PRO"),
        "psync-qd1": (3779, f"{CHEOPS} example_results/2-iops_d1_qd1 psync_dev1: 94,630 IOPS, "
                            "usr 8.12% + sys 27.64%; Linux 5.15.79, a 2.40 GHz Intel CPU the "
                            "artifact does not name"),
        "polled-qd128": (2982, f"{CHEOPS} example_results/7-multi_thread iou_c_t_1: hipri, "
                               "334,932 IOPS, usr 49.01% + sys 50.88%; Linux 5.15.79, the same "
                               "unnamed CPU; its scripts set no poll queues"),
        "irq-qd1-10us": (5350, f"{CHEOPS} example_results/2-iops_d1_qd1 iou_dev1: 81,307 IOPS, "
                               "usr 14.14% + sys 29.36%; Linux 5.15.79, the same unnamed CPU, "
                               "a drive answering in 9.9 us (clat)"),
    },
}


def run(cpu: str, kernel: str, out: Path) -> dict[str, dict]:
    env = dict(os.environ, PYTHONPATH=str(REPO / "harness"))
    cmd = [PYTHON, "-m", "blklab", "run", str(SCENARIO), "--jobs", "1", "--out", str(out),
           "--no-report", f"--guest=kernel={kernel}-amd64", f"--guest=cpu={cpu}"]
    proc = subprocess.run(cmd, env=env, cwd=REPO, capture_output=True, text=True)
    cells = {c["request"]["device"]["name"]: c
             for c in (json.loads(p.read_text()) for p in sorted(out.glob("cell-*.json")))}
    if proc.returncode != 0 or len(cells) != 2:
        sys.exit(f"cpu-paths: {cpu} on {kernel} failed:\n{proc.stdout}\n{proc.stderr}")
    for name, cell in cells.items():
        if cell.get("status") != "ok":
            sys.exit(f"cpu-paths: {cpu} on {kernel}, {name}: {cell.get('error')}")
    return cells


def job_of(cells: dict[str, dict], path: str) -> dict:
    name = JOB.get(path, path)
    (j,) = [j for j in cells[DRIVE[path]]["workload"]["jobs"] if j["jobname"] == name]
    if not j["read"]["total_ios"]:
        sys.exit(f"cpu-paths: job {path} did no I/O")
    return j


def ns_per_read(cells: dict[str, dict]) -> dict[str, float]:
    out = {}
    for path in PATHS:
        j = job_of(cells, path)
        ios, runtime_ns = j["read"]["total_ios"], j["job_runtime"] * 1e6
        if path.endswith("qd128"):  # the vCPU never idles: all of its time
            out[path] = runtime_ns / ios
        else:
            out[path] = (j["usr_cpu"] + j["sys_cpu"]) / 100 * runtime_ns / ios
    return out


def _seconds(value: str) -> float:
    """fio's "30s"-style durations, as its JSON's global options give them."""
    assert value.endswith("s"), value
    return float(value[:-1])


def published_sweep() -> dict[int, tuple[float, float, float, float]]:
    """Per queue depth of the published sweep: the core's load (fio's usr +
    sys, %), the user and system ns per read, and the context switches per
    read (fio's ctx counts the ramp too, at the same rate, as assumed here)."""
    out = {}
    runs = cited_runs.load(QD_SWEEP)
    for run_id in runs.runs:
        doc = runs.fio_doc(run_id)
        (job,), options = doc["jobs"], doc["global options"]
        iops = job["read"]["iops"]
        seconds = _seconds(options["ramp_time"]) + _seconds(options["runtime"])
        out[int(options["iodepth"])] = (job["usr_cpu"] + job["sys_cpu"],
                                        job["usr_cpu"] / 100 * 1e9 / iops,
                                        job["sys_cpu"] / 100 * 1e9 / iops,
                                        job["ctx"] / (iops * seconds))
    return dict(sorted(out.items()))


def print_sweep() -> None:
    """The published Cascade Lake core's time per read at each queue depth:
    how it falls as the core's load rises, and the time over QD128's per
    context switch. (The guest's user/system split is not printed beside
    it: a guest kernel splits its task time by timer ticks, a few dozen in
    these runs.)"""
    sweep = published_sweep()
    print(f"published sweep ({QD_SWEEP.relative_to(REPO)}): one io_uring job, 4 KiB random "
          "reads, xeon-silver-4210r; ns per read, each over its QD128 value, context switches "
          "per read, and ns over QD128's per switch")
    print(f"{'QD':>4} {'load %':>7} {'usr':>6} {'sys':>6} {'total':>6} {'usr/QD128':>10} "
          f"{'sys/QD128':>10} {'total/QD128':>12} {'ctx/read':>9} {'ns/ctx':>7}")
    _, base_usr, base_sys, _ = sweep[128]
    base = base_usr + base_sys
    for qd, (load, usr, sys_, ctx) in sweep.items():
        per_switch = f"{(usr + sys_ - base) / ctx:7.0f}" if ctx >= 0.1 else f"{'-':>7}"
        print(f"{qd:4d} {load:7.2f} {usr:6.0f} {sys_:6.0f} {usr + sys_:6.0f} "
              f"{usr / base_usr:10.2f} {sys_ / base_sys:10.2f} {(usr + sys_) / base:12.2f} "
              f"{ctx:9.2f} {per_switch}")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--cpus", default=",".join(cpus.names()),
                   help="presets, comma-separated (default: every one in cpus/)")
    p.add_argument("--kernels", default="6.1,6.12",
                   help="guest kernel series, comma-separated (default 6.1,6.12)")
    add_keep_option(p)
    args = p.parse_args()
    with bench_dirs(args.keep, "cpu-paths-") as (tmp, out):
        runs = [(c, k) for c in args.cpus.split(",") for k in args.kernels.split(",")]
        with ThreadPoolExecutor(max_workers=2) as pool:
            cells = list(pool.map(lambda ck: run(*ck, out / f"{ck[0]}-{ck[1]}"), runs))
        print("guest CPU per 4 KiB read (ns), one vCPU, none; published: the same path on "
              "the named CPU (see below); ratio guest / published")
        print(f"{'preset':22} {'kernel':6} " + " ".join(f"{p:>22}" for p in PATHS))
        for (cpu, kernel), c in zip(runs, cells):
            guest = ns_per_read(c)
            row = []
            for path in PATHS:
                pub = PUBLISHED.get(cpu, {}).get(path)
                row.append(f"{guest[path]:8.0f} / {pub[0]:5d} {guest[path] / pub[0]:4.2f}" if pub
                           else f"{guest[path]:8.0f} / {'-':>5} {'-':>4}")
            print(f"{cpu:22} {kernel:6} " + " ".join(f"{r:>22}" for r in row))
        print()
        print_sweep()
        print()
        for cpu, paths in PUBLISHED.items():
            print(f"published, {cpu} ({cpus.presets()[cpu].title}):")
            for path, (ns, where) in paths.items():
                print(f"  {path}: {ns} ns: {where}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
