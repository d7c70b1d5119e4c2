"""End-to-end tests: the real patched QEMU, the real guest image, real VMs.

They need `make qemu image` (make test builds both first)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PYTHON = "/usr/bin/python3"
sys.path.insert(0, str(REPO / "harness"))


def run_blklab(*args: str, timeout: float = 1800) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(REPO / "harness"))
    return subprocess.run([PYTHON, "-m", "blklab", *args], capture_output=True, text=True,
                          env=env, timeout=timeout, cwd=REPO)


def cells_of(run_dir: Path) -> dict[str, dict]:
    return {p.name[len("cell-"):-len(".json")]: json.loads(p.read_text())
            for p in sorted(run_dir.glob("cell-*.json"))}


@pytest.fixture(scope="session")
def built():
    for p in (REPO / "build/qemu/bin/qemu-system-x86_64", REPO / "build/images/amd64/image.json"):
        if not p.exists():
            pytest.fail(f"{p} missing: run 'make qemu image' first")
    return REPO


SPINE_DEVICES = """
[[device]]
name = "nvme0"
kind = "nvme"
backing = "null"
size_gib = 4

[[device]]
name = "hdd0"
kind = "ide-hd"
backing = "file"
size_gib = 4
rotation_rate = 7200
"""

SPINE_JOB = """
[[job]]
name = "randread"
rw = "randread"
bs = "4k"
iodepth = 32
ioengine = "io_uring"
direct = true
runtime = "2s"
time_based = true
"""


@pytest.fixture(scope="session")
def four_schedulers(built, tmp_path_factory):
    """The four schedulers on NVMe and on an IDE hard disk, 2-second jobs."""
    tmp = tmp_path_factory.mktemp("spine")
    scenario = tmp / "spine.toml"
    scenario.write_text('[scenario]\nmode = "realtime"\ntimeout_s = 300\n' + SPINE_DEVICES
                        + SPINE_JOB)
    out = tmp / "run"
    proc = run_blklab("run", str(scenario), "--accel", "tcg", "--out", str(out))
    return proc, out
