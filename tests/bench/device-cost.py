#!/usr/bin/python3
"""What blklab's QEMU costs the host, one change at a time, in one run.

1. Host wall time per guest I/O, 4 KiB random reads at QD32 on NVMe, in
   four steps that each change one thing (STEPS):
     a. stock QEMU: the QEMU blklab builds on (Debian's source package)
        with only the patches its build needs (qemu_variant.stock(): none
        of them runs in a guest's QEMU), built by
        qemu-patches/build-qemu.sh and cached like blklab's own; no icount,
        stock device timing;
     b. blklab's patched QEMU, still without icount and without a model
        (realtime mode, no profile): what the patches cost by themselves;
     c. the same with the zero-latency model driving the device: what the
        model-driven completion path costs;
     d. the same under icount (deterministic mode: icount, the fixed RTC
        base and its other settings): what determinism costs.
   Each ratio is to the step before, so it measures that step's change
   only; d / a is all of them together.
2. Virtual time against wall time for a 7200 rpm HDD scenario (QD8 random
   reads): above 1, virtual time runs ahead of the host's clock, because
   the guest idles while the model's mechanics take their time.

Wall time is the host's time between the guest's "workload start" and
"workload end" console lines (host.workload_wall_seconds of a cell), so boot
and teardown do not count. Needs blklab's builds (`make qemu image`); the
stock build takes about 10 minutes the first time.

Usage: tests/bench/device-cost.py [--seconds 4]   (virtual seconds of each job)
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(Path(__file__).resolve().parent))

import qemu_variant  # noqa: E402

SCENARIO = """
[scenario]
schedulers = ["none"]
mode = "{mode}"
timeout_s = 1800

[[device]]
name = "d"
kind = "nvme"
backing = "null"
size_gib = 16
{profile}

[[job]]
name = "r"
rw = "randread"
bs = "4k"
iodepth = {qd}
ioengine = "io_uring"
direct = true
runtime = "{seconds}s"
time_based = true
"""


def build_dir_with(qemu: Path, tmp: Path) -> Path:
    """A BLKLAB_BUILD directory whose QEMU is `qemu` and whose guest image
    and tools are the repository's."""
    build = tmp / f"build-{qemu.parent.parent.name}"
    (build / "qemu" / "bin").mkdir(parents=True, exist_ok=True)
    link = build / "qemu" / "bin" / "qemu-system-x86_64"
    if not link.exists():
        link.symlink_to(qemu)
    for name in ("images", "cmake"):
        if not (build / name).exists():
            (build / name).symlink_to((qemu_variant.blklab_build() / name).resolve())
    return build


def run(tmp: Path, build: Path, tag: str, mode: str, profile: str, qd: int,
        seconds: int) -> dict:
    """One cell; its workload's host wall time, I/Os and virtual seconds."""
    scenario = tmp / f"{tag}-{seconds}.toml"
    scenario.write_text(SCENARIO.format(mode=mode, qd=qd, seconds=seconds,
                                        profile=f'profile = "{profile}"' if profile else ""))
    out = tmp / f"{tag}-{seconds}"
    env = dict(os.environ, BLKLAB_BUILD=str(build), PYTHONPATH=str(REPO / "harness"))
    proc = subprocess.run([sys.executable, "-m", "blklab", "run", str(scenario), "--accel", "tcg",
                           "--out", str(out)], env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        kept = Path(tempfile.mkdtemp(prefix=f"blklab-bench-{tag}-"))
        shutil.copytree(out, kept, dirs_exist_ok=True)
        sys.exit(f"{tag}: blklab run failed (run kept in {kept}):\n{proc.stdout}{proc.stderr}")
    (cell,) = [json.loads(p.read_text()) for p in out.glob("cell-*.json")]
    read = cell["workload"]["jobs"][0]["read"]
    m = {"wall_s": cell["host"]["workload_wall_seconds"], "ios": read["total_ios"],
         "virtual_s": read["runtime"] / 1000.0}
    print(f"  {tag}: {m}", file=sys.stderr)
    return m


# tag, QEMU build, mode, profile, label, what its ratio to the step before measures
STEPS = [
    ("a-stock", "stock", "realtime", "", "a. stock QEMU, no icount, no model", ""),
    ("b-patched", "patched", "realtime", "", "b. patched QEMU, no icount, no model",
     "the patches alone"),
    ("c-patched-model", "patched", "realtime", "zero-latency",
     "c. patched, no icount, zero-latency model", "the model-driven completion path"),
    ("d-patched-icount-model", "patched", "deterministic", "zero-latency",
     "d. patched, icount, zero-latency model", "deterministic mode (icount)"),
]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=int, default=4, help="virtual seconds of each job")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="blklab-bench-") as t:
        tmp = Path(t)
        stock = qemu_variant.stock(tmp, "device-cost", lambda m: print(m, file=sys.stderr))
        patched = build_dir_with((qemu_variant.blklab_build() / "qemu" / "bin" /
                                  "qemu-system-x86_64").resolve(), tmp)
        print("measuring", file=sys.stderr)
        builds = {"stock": stock, "patched": patched}
        steps = [(label, measures, run(tmp, builds[build], tag, mode, profile, 32, args.seconds))
                 for tag, build, mode, profile, label, measures in STEPS]
        h = run(tmp, patched, "patched-icount-hdd", "deterministic", "hdd-7200-desktop-1t", 8,
                args.seconds)
    print("wall time per guest I/O, 4 KiB randread QD32 on NVMe, one change per step:")
    previous = None
    for label, measures, m in steps:
        us = m["wall_s"] / m["ios"] * 1e6
        ratio = f"x{us / previous:5.2f} {measures}" if previous else ""
        print(f"  {label:44} {us:8.1f} us  ({m['ios']} I/Os)  {ratio}")
        previous = us
    first, last = (m["wall_s"] / m["ios"] for _, _, m in (steps[0], steps[-1]))
    print(f"  all four changes together (d / a): x{last / first:.2f}")
    print(f"HDD 7200 rpm, randread QD8 under icount: virtual {h['virtual_s']:.2f} s in "
          f"wall {h['wall_s']:.2f} s, virtual/wall = {h['virtual_s'] / h['wall_s']:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
