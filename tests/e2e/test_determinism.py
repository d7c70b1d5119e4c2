"""Deterministic mode: the same inputs give the same bytes.

The same cells (NVMe and AHCI with device models, a mixed read/write job,
each of the four schedulers) run twice, the second time with a CPU hog on
every host core, must give identical result JSON except the cell's "host"
key (host wall-clock seconds and the scratch paths in the QEMU command
line, see harness/blklab/results.py) and identical console logs, printk
timestamps included; the same holds for a guest with 4 vCPUs. A different
workload seed or device-model seed must change the results, so that the
checks above could fail. `blklab diverge` runs the 4-vCPU cell, and a
2-vCPU cell on a file-backed cloud volume (host I/O completions wake QEMU's
main loop at host-dependent moments), and finds no difference.

Kept short for CI: 1-vCPU guests with 512 MiB and 100 ms jobs, one 4-vCPU
cell; see docs/determinism.md for the time it takes."""

import json
import os
import re
import subprocess
from contextlib import contextmanager
from pathlib import Path

import pytest

from conftest import PYTHON, cells_of, device, mixed, run_blklab
from blklab import diverge, results

SCHEDULERS = ("none", "mq-deadline", "kyber", "bfq")
DONE = diverge.CELL_DONE  # consoles are compared up to here


def nvme(name: str = "nvme0", seed: int | None = None,
         profile: str = "samsung-970evoplus-1t") -> str:
    """An NVMe device with a device model, as scenario text."""
    return device(name, "nvme", profile, size_gib=1, seed=seed)


AHCI = device("sata0", "ahci-hd", "hdd-7200-desktop-1t", size_gib=1)

JOB = mixed("100ms")


def scenario(path: Path, devices: str, vcpus: int = 1, schedulers=SCHEDULERS,
             seeds=(1,)) -> Path:
    sched = ", ".join(f'"{s}"' for s in schedulers)
    path.write_text(f'[scenario]\nname = "det"\nmode = "deterministic"\ntimeout_s = 1200\n'
                    f'schedulers = [{sched}]\nseeds = {list(seeds)}\n'
                    f'[guest]\nvcpus = {vcpus}\nmemory_mib = 512\n' + devices + JOB)
    return path


@contextmanager
def cpu_hog():
    """A busy process on every host core for the duration of the block."""
    hogs = [subprocess.Popen([PYTHON, "-c", "while True: pass"])
            for _ in range(os.cpu_count() or 1)]
    try:
        yield
    finally:
        for h in hogs:
            h.kill()
            h.wait()


def run(scenario_path: Path, out: Path) -> dict[str, dict]:
    proc = run_blklab("run", str(scenario_path), "--out", str(out), "--no-report")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return cells_of(out)


def console(run_dir: Path, cell: dict) -> str:
    text = diverge.console_until_done(run_dir, cell)
    assert text is not None, f"{cell['cell_id']}: the guest did not finish"
    return text


def guest_part(cell: dict) -> dict:
    return {k: v for k, v in cell.items() if k not in diverge.HOST_KEYS}


def assert_same_cells(a: dict[str, dict], b: dict[str, dict], dirs: tuple[Path, Path]) -> None:
    assert sorted(a) == sorted(b)
    for cid in a:
        results.validate(a[cid])
        assert a[cid]["status"] == "ok", (cid, a[cid]["error"])
        diffs = diverge.result_differences(a[cid], b[cid])
        assert not diffs, f"{cid}: results differ in {diffs[:10]}"
        assert json.dumps(guest_part(a[cid]), sort_keys=True) == \
            json.dumps(guest_part(b[cid]), sort_keys=True)
        assert console(dirs[0], a[cid]) == console(dirs[1], b[cid]), f"{cid}: consoles differ"


@pytest.fixture(scope="module")
def twice(built, tmp_path_factory):
    """NVMe and AHCI under the four schedulers with 1 vCPU: once on an idle
    host, once with every core busy."""
    tmp = tmp_path_factory.mktemp("det")
    s = scenario(tmp / "det.toml", nvme() + AHCI)
    idle = run(s, tmp / "idle")
    with cpu_hog():
        busy = run(s, tmp / "busy")
    return (idle, busy), (tmp / "idle", tmp / "busy")


def test_same_cells_give_the_same_bytes_idle_and_loaded(twice):
    (idle, busy), dirs = twice
    assert len(idle) == 8
    assert_same_cells(idle, busy, dirs)
    for c in idle.values():
        # The cells did real work, with reads and writes, through the model.
        directions = {row["direction"] for row in c["summary"]}
        assert directions == {"read", "write"}, c["cell_id"]
        assert c["devmodel"]["service_ns"]["read"]["count"] > 0


def test_console_includes_printk_timestamps(twice):
    (idle, _), dirs = twice
    text = console(dirs[0], idle["nvme0.none.r0"])
    assert "[    0.000000] Linux version" in text
    assert "nvme nvme0:" in text  # the device's probe is part of what is compared


def test_four_vcpus_and_the_finder(built, tmp_path):
    """4 vCPUs, run twice side by side by `blklab diverge`: the guest sees
    the same events (none from outside the vCPU thread), the consoles and
    the results are identical, and it says how long interrupts waited."""
    s = scenario(tmp_path / "smp.toml", nvme(), vcpus=4, schedulers=("mq-deadline",))
    out = tmp_path / "dv"
    proc = run_blklab("diverge", str(s), "--out", str(out))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "the guest saw the same" in proc.stdout
    assert "events from outside the vCPU thread: A 0, B 0" in proc.stdout
    assert "cell results are identical" in proc.stdout
    # and how long interrupts waited for their vCPU in the first run
    taken = re.search(r"^  hard: (\d+) taken, p50 \d+, p99 \d+, max (\d+)", proc.stdout, re.M)
    assert taken and int(taken.group(1)) > 100, proc.stdout
    a, b = (json.loads((out / r / "cell.json").read_text()) for r in "ab")
    assert a["status"] == "ok" and a["guest"]["cpus"] == "4"
    consoles = [(out / r / "console.log").read_text(errors="replace") for r in "ab"]
    assert all(DONE in c for c in consoles)
    assert consoles[0][:consoles[0].index(DONE)] == consoles[1][:consoles[1].index(DONE)]
    assert "smp: Brought up 1 node, 4 CPUs" in consoles[0]


FILE_BACKED = """
[[device]]
name = "gp3"
kind = "nvme"
backing = "file"
profile = "aws-gp3-100g"
size_gib = 1
"""

FSYNC_JOB = JOB.replace('time_based = true', 'time_based = true\nfsync = 16') \
    .replace('"100ms"', '"300ms"')


def test_file_backed_disk_with_two_vcpus(built, tmp_path):
    """A file-backed disk: the host's I/O completions wake QEMU's main
    loop at host-dependent moments, which must not reach the guest (before
    patches 0021 and 0022 they moved the vCPUs' round-robin turns and the
    virtual clock's jumps, docs/determinism.md). A throttled cloud volume
    keeps both vCPUs idle between completions, where the clock jumps."""
    s = tmp_path / "file.toml"
    s.write_text('[scenario]\nname = "det-file"\nmode = "deterministic"\ntimeout_s = 1200\n'
                 'schedulers = ["mq-deadline"]\n[guest]\nvcpus = 2\nmemory_mib = 512\n'
                 + FILE_BACKED + FSYNC_JOB)
    out = tmp_path / "dv"
    proc = run_blklab("diverge", str(s), "--out", str(out))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "the guest saw the same" in proc.stdout
    assert "cell results are identical" in proc.stdout
    a = json.loads((out / "a" / "cell.json").read_text())
    assert a["status"] == "ok" and a["guest"]["cpus"] == "2"
    assert a["summary"] and a["devmodel"]["throttled_ns"] > 0
    assert a["disk_stats"]["delta"]["flush_ios"] > 0


def workload_figures(cell: dict) -> str:
    return json.dumps([cell["summary"], cell["disk_stats"], cell["devmodel"]], sort_keys=True)


def test_other_seeds_give_other_results(twice, tmp_path):
    """A different workload seed, or device-model seed, changes the results
    (so the equality above is not a check that cannot fail)."""
    (idle, _), _ = twice
    base = workload_figures(idle["nvme0.none.r0"])  # workload seed 1, model seed 1
    # The SSD model draws nothing random without preconditioning; the cloud
    # volume's latency jitter does.
    s = scenario(tmp_path / "seeds.toml",
                 nvme("nvme0", seed=1) + nvme("gp3a", seed=1, profile="aws-gp3-100g")
                 + nvme("gp3b", seed=7, profile="aws-gp3-100g"),
                 schedulers=("none",), seeds=(2,))
    cells = run(s, tmp_path / "seeds")
    assert workload_figures(cells["nvme0.none.r0"]) != base  # workload seed 2
    assert workload_figures(cells["gp3a.none.r0"]) != workload_figures(cells["gp3b.none.r0"])
