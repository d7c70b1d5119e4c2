"""Boot once per guest: cells start from the guest saved at its job point.

The guest init boots as far as it can without its job and reaches its job
point (guest-images/init, workload/jobpoint.cc, qemu-patches/0047); the
first cell of each guest saves it there and every cell of that guest
starts from the saved file (harness/blklab/snapshot.py).

Checked here, on two guests (NVMe and AHCI disks with device models, a
mixed read/write job, two schedulers each), in a cache of their own:
- each guest is saved once, by one of its cells, and every cell says that
  it was restored and from which snapshot;
- a second run, with a CPU hog on every host core, restores from the saved
  files and gives the same bytes;
- cells that boot ([guest] boot = "cold") give the same bytes too: at its
  job point the booted guest's round-robin loop starts afresh as a
  restored QEMU's does, and the saved state is exactly the state it goes
  on from;
- a snapshot whose recorded inputs are not the cell's, or whose state is
  missing, fails the cell with what differs, and is not replaced.
"""

import json
import os
import subprocess
from pathlib import Path

import pytest

from conftest import PYTHON, REPO, cells_of, device, mixed
from test_determinism import console, cpu_hog, guest_part

DEVICES = (device("nvme0", "nvme", "samsung-970evoplus-1t", size_gib=1)
           + device("sata0", "ahci-hd", "hdd-7200-desktop-1t", size_gib=1))


def write_scenario(path: Path, boot: str = "restore") -> Path:
    path.write_text('[scenario]\nname = "snap"\nmode = "deterministic"\ntimeout_s = 1200\n'
                    'schedulers = ["none", "bfq"]\nseeds = [1]\n'
                    f'[guest]\nmemory_mib = 512\nboot = "{boot}"\n' + DEVICES + mixed("100ms"))
    return path


def run(scenario: Path, out: Path, cache: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(REPO / "harness"), BLKLAB_CACHE=str(cache))
    return subprocess.run([PYTHON, "-m", "blklab", "run", str(scenario), "--out", str(out),
                           "--no-report"], capture_output=True, text=True, env=env,
                          timeout=1800, cwd=REPO)


@pytest.fixture(scope="module")
def runs(built, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("snapshot")
    cache = tmp / "cache"
    out = {}
    for name, boot, hog in (("first", "restore", False), ("loaded", "restore", True),
                            ("cold", "cold", False)):
        s = write_scenario(tmp / f"{name}.toml", boot)
        if hog:
            with cpu_hog():
                proc = run(s, tmp / name, cache)
        else:
            proc = run(s, tmp / name, cache)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        out[name] = tmp / name
    return tmp, cache, out


def boots(run_dir: Path) -> dict[str, dict]:
    return {cid: c["host"]["boot"] for cid, c in cells_of(run_dir).items()}


def test_each_guest_is_saved_once_and_every_cell_restores(runs):
    _, cache, out = runs
    first = boots(out["first"])
    assert len(first) == 4 and all(b["from"] == "snapshot" for b in first.values()), first
    keys = {cid.split(".")[0]: set() for cid in first}
    for cid, b in first.items():
        keys[cid.split(".")[0]].add(b["snapshot"])
    assert all(len(k) == 1 for k in keys.values()), keys
    assert keys["nvme0"] != keys["sata0"]
    assert sum(b["made_by_this_cell"] for b in first.values()) == 2, first
    saved = {p.name for p in (cache / "snapshots").iterdir() if p.is_dir()}
    assert saved == keys["nvme0"] | keys["sata0"]
    loaded = boots(out["loaded"])
    assert not any(b["made_by_this_cell"] for b in loaded.values()), loaded
    assert all(b["from"] == "cold" and b["why"] == '[guest] boot = "cold"'
               for b in boots(out["cold"]).values())


def test_restored_cells_give_the_same_bytes_under_load_and_as_booted_ones(runs):
    _, _, out = runs
    first = cells_of(out["first"])
    for name in ("loaded", "cold"):
        other = cells_of(out[name])
        assert set(other) == set(first)
        for cid, cell in first.items():
            assert cell["status"] == "ok", (cid, cell["error"])
            assert cell["devmodel"]["host_timed"] == 0, cid
            assert guest_part(other[cid]) == guest_part(cell), (name, cid)
            assert console(out[name], other[cid]) == console(out["first"], cell), (name, cid)


def test_the_console_holds_the_boot_before_the_job(runs):
    _, _, out = runs
    for cid, cell in cells_of(out["first"]).items():
        text = (out["first"] / cell["files"]["console_log"]).read_text(errors="replace")
        assert text.index("Run /init as init process") < text.index("blklab: cell "), cid


def test_a_snapshot_that_does_not_match_is_refused(runs):
    tmp, cache, out = runs
    key = next(iter(boots(out["first"]).values()))["snapshot"]
    snap = cache / "snapshots" / key
    inputs = json.loads((snap / "inputs.json").read_text())
    tampered = dict(inputs, image="an-older-image")
    (snap / "inputs.json").write_text(json.dumps(tampered))
    try:
        proc = run(write_scenario(tmp / "tampered.toml"), tmp / "tampered", cache)
        assert proc.returncode != 0
        refused = [c for c in cells_of(tmp / "tampered").values()
                   if c["host"]["boot"].get("snapshot") == key
                   or key in (c["error"] or "")]
        assert refused and all(c["status"] == "failed" for c in refused)
        for c in refused:
            assert "does not match this cell's inputs" in c["error"], c["error"]
            assert "image: the snapshot has 'an-older-image'" in c["error"], c["error"]
        assert json.loads((snap / "inputs.json").read_text()) == tampered  # not replaced
    finally:
        (snap / "inputs.json").write_text(json.dumps(inputs))
    state = snap / "state"
    state.rename(snap / "state.away")
    try:
        proc = run(write_scenario(tmp / "nostate.toml"), tmp / "nostate", cache)
        assert proc.returncode != 0
        errors = [c["error"] for c in cells_of(tmp / "nostate").values() if c["error"]]
        assert errors and all("state is missing" in e for e in errors), errors
    finally:
        (snap / "state.away").rename(state)
