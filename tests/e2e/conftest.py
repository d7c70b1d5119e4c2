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
