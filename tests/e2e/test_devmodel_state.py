"""A steady-preconditioned drive's model state, kept between QEMU starts.

A cell's device model opens with QEMU's devmodel-state-cache in
$BLKLAB_CACHE/devmodel-state (devmodel/src/state_cache.h): a drive
preconditioned "steady" loads its built state from a file there instead of
replaying the precondition. Checked on one restored NVMe cell on
tlc-250g-used (the steady drive six scenarios use), in a cache of its own:
- a cell started with the file present loads it: the file is read (its
  modification time moves) and not rewritten (same inode);
- a cell started without it replays the precondition and saves the file;
- both give the same bytes (the loaded drive is the replayed one).
"""

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import PYTHON, REPO, cells_of, device, mixed
from test_determinism import assert_same_cells


def run(scenario: Path, out: Path, cache: Path) -> None:
    env = dict(os.environ, PYTHONPATH=str(REPO / "harness"), BLKLAB_CACHE=str(cache))
    proc = subprocess.run([PYTHON, "-m", "blklab", "run", str(scenario), "--out", str(out),
                           "--no-report"], capture_output=True, text=True, env=env,
                          timeout=1800, cwd=REPO)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def state_files(cache: Path) -> list[Path]:
    d = cache / "devmodel-state"
    return sorted(d.glob("ftl-*.state")) if d.is_dir() else []


@pytest.fixture(scope="module")
def runs(built, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("devmodel-state")
    cache = tmp / "cache"
    scenario = tmp / "steady.toml"
    scenario.write_text('[scenario]\nname = "steady"\nmode = "deterministic"\ntimeout_s = 1200\n'
                        'schedulers = ["none"]\nseeds = [1]\n[guest]\nmemory_mib = 512\n'
                        + device("tlc", "nvme", "tlc-250g-used", seed=1) + mixed("100ms"))
    run(scenario, tmp / "first", cache)  # saves the guest and the drive's state
    files = state_files(cache)
    assert len(files) == 1, files
    before = files[0].stat()
    run(scenario, tmp / "warm", cache)
    after = files[0].stat()
    shutil.rmtree(cache / "devmodel-state")
    run(scenario, tmp / "cold", cache)
    return tmp, before, after, state_files(cache)


def test_a_cell_loads_the_saved_state_and_one_without_it_saves_it(runs):
    _, before, after, cold_files = runs
    assert after.st_ino == before.st_ino  # not rewritten...
    assert after.st_mtime_ns > before.st_mtime_ns  # ...but loaded (a load touches it)
    assert len(cold_files) == 1  # the cold cell replayed and saved


def test_loaded_and_replayed_drives_give_the_same_cell(runs):
    tmp = runs[0]
    warm, cold = cells_of(tmp / "warm"), cells_of(tmp / "cold")
    for cell in list(warm.values()) + list(cold.values()):
        assert cell["host"]["boot"]["from"] == "snapshot", cell["host"]["boot"]
    assert_same_cells(warm, cold, (tmp / "warm", tmp / "cold"))
