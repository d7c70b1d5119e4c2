#!/usr/bin/python3
"""The guest's instructions per I/O on the path of the published measurement
behind the icelake-sp-axboe2020 preset's cpu_rate, and the rate that
matches it (docs/determinism.md, "Where a calibrated rate comes from").

The measurement: Jens Axboe's post to linux-block of August 2020
(mail.spinics.net/lists/linux-block/msg57916.html): Linux 5.9-rc1, Ice
Lake-SP, one Gen2 Optane SSD, fio's t/io_uring, one thread, 512 B random
O_DIRECT reads, polled, registered buffers and files: QD128 2.58M IOPS per
core, QD16 2.06M at 6.9 us, QD1 290K at 3.4 us. A polling thread keeps its
core busy, so at QD128 one I/O took at most 1 / 2.58M s = 387.6 ns of it.

tests/bench/cpu-rate.toml runs that path in the guest (fio's io_uring
engine, one vCPU, one NVMe poll queue, the zero-latency device) at
cpu_rate = 1, where a ns is an instruction, and fio's null engine beside it.
Per kernel this prints instructions per I/O at QD128 (all of it: kernel and
fio, I), fio's own (null engine, F), and the rates at which I - F and I take
387.6 ns: t/io_uring does less per I/O than fio and more than nothing, so
the rate that matches the core lies between them. Then, at the rate given
with --rate (default: that preset's rate), the IOPS the guest's CPU
allows a fio job at QD128, QD16 and QD1, and its ns per I/O at QD1.

Usage: tests/bench/cpu-rate.py [--kernels 5.10,6.1,6.12] [--rate R] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PYTHON = "/usr/bin/python3"
SCENARIO = REPO / "tests" / "bench" / "cpu-rate.toml"
sys.path.insert(0, str(REPO / "harness"))

from bench_dirs import add_keep_option, bench_dirs  # noqa: E402
from blklab import cpus  # noqa: E402

# The preset this measurement is the source of.
ICELAKE_RATE = cpus.presets()["icelake-sp-axboe2020"].cpu_rate

# The published figures (IOPS per core; mean latency in ns).
QD128_IOPS = 2.58e6
QD16_IOPS, QD16_LAT_NS = 2.06e6, 6900
QD1_IOPS, QD1_LAT_NS = 290e3, 3400
NS_PER_IO = 1e9 / QD128_IOPS


def run(kernel: str, out: Path) -> dict:
    env = dict(os.environ, PYTHONPATH=str(REPO / "harness"))
    cmd = [PYTHON, "-m", "blklab", "run", str(SCENARIO), "--jobs", "1", "--out", str(out),
           "--no-report", f"--guest=kernel={kernel}-amd64"]
    proc = subprocess.run(cmd, env=env, cwd=REPO, capture_output=True, text=True)
    cells = sorted(out.glob("cell-*.json"))
    if proc.returncode != 0 or len(cells) != 1:
        sys.exit(f"cpu-rate: the run on {kernel} failed:\n{proc.stdout}\n{proc.stderr}")
    cell = json.loads(cells[0].read_text())
    if cell.get("status") != "ok":
        sys.exit(f"cpu-rate: the cell on {kernel} failed: {cell.get('error')}")
    return cell


def per_job(cell: dict) -> dict[str, dict[str, float]]:
    """Per job: guest instructions per I/O (at rate 1, ns of runtime per
    I/O)."""
    rate = cell["request"]["cpu_rate"]
    out = {}
    for j in cell["workload"]["jobs"]:
        read = j["read"]
        ios, runtime_ns = read["total_ios"], j["job_runtime"] * 1e6
        if not ios:
            sys.exit(f"cpu-rate: job {j['jobname']} did no I/O")
        out[j["jobname"]] = {"instructions": runtime_ns * rate / ios}
    return out


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--kernels", default="5.10,6.1,6.12",
                   help="guest kernel series, comma-separated (default 5.10,6.1,6.12)")
    p.add_argument("--rate", type=float, default=ICELAKE_RATE,
                   help="the rate to check QD16 and QD1 at (default: the Ice Lake preset's)")
    add_keep_option(p)
    args = p.parse_args()
    with bench_dirs(args.keep, "cpu-rate-") as (tmp, out):
        results = {}
        for kernel in args.kernels.split(","):
            cell = run(kernel, out / kernel)
            nr_hw_queues = int(cell["in_effect"]["queue"]["nr_hw_queues"])
            if nr_hw_queues != 2:  # one default queue and one poll queue
                sys.exit(f"cpu-rate: {kernel}: nr_hw_queues is {nr_hw_queues}, not 2: the "
                         "poll queue is missing, so hipri I/O was not polled")
            results[kernel] = per_job(cell)
        print(f"published (5.9-rc1, Ice Lake-SP core, t/io_uring): QD128 {QD128_IOPS / 1e6:.2f}M "
              f"IOPS = {NS_PER_IO:.1f} ns per I/O; QD16 {QD16_IOPS / 1e6:.2f}M at "
              f"{QD16_LAT_NS / 1e3:.1f} us; QD1 {QD1_IOPS / 1e3:.0f}K at {QD1_LAT_NS / 1e3:.1f} us")
        print()
        print("guest instructions per I/O (zero-latency NVMe, one vCPU, none):")
        print(f"{'kernel':7} {'QD128 I':>8} {'fio F':>6} {'I - F':>6} {'QD16':>6} {'QD1':>6}"
              f"   rate that takes {NS_PER_IO:.1f} ns: with I - F, with I")
        for kernel, r in results.items():
            i = r["polled-qd128"]["instructions"]
            f = r["fio-null-qd128"]["instructions"]
            print(f"{kernel:7} {i:8.0f} {f:6.0f} {i - f:6.0f} "
                  f"{r['polled-qd16']['instructions']:6.0f} {r['polled-qd1']['instructions']:6.0f}"
                  f"   {(i - f) / NS_PER_IO:.2f} .. {i / NS_PER_IO:.2f}")
        print()
        rate = args.rate
        print(f"at cpu_rate = {rate:g} (the Ice Lake preset's: {ICELAKE_RATE:g}), "
              "what the guest's CPU allows with fio:")
        print(f"{'kernel':7} {'QD128':>8} {'QD16':>8} {'QD1':>8} {'QD1 ns/IO':>10}")
        for kernel, r in results.items():
            iops = {k: 1e9 * rate / v["instructions"] for k, v in r.items()}
            print(f"{kernel:7} {iops['polled-qd128'] / 1e6:7.2f}M {iops['polled-qd16'] / 1e6:7.2f}M "
                  f"{iops['polled-qd1'] / 1e3:7.0f}K {r['polled-qd1']['instructions'] / rate:10.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
