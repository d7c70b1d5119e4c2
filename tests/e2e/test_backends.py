"""The libvirt backend against a real libvirtd, and multi-host runs on a
real Dask scheduler with two workers, compared with the direct backend."""

import json
import subprocess
import threading
import time

import pytest

from conftest import REPO, cells_of, nvme, randread, run_blklab
from services import DaskCluster, Libvirtd

NVME = nvme(1)

# Every device is model-driven, so both backends must also bring back the
# model's counters; the HDD's rotation rate comes from its profile.
DEVICES = NVME + """profile = "samsung-970evoplus-1t"

[[device]]
name = "ssd0"
kind = "ahci-hd"
backing = "file"
size_gib = 1
profile = "zero-latency"

[[device]]
name = "hdd0"
kind = "ide-hd"
backing = "file"
size_gib = 1
profile = "hdd-7200-desktop-1t"
"""


def job(runtime: str) -> str:
    return randread(runtime)


def _in_effect(out):
    return {cid: (c["status"], c["in_effect"], c["guest"]["device"], c["guest"]["cpus"])
            for cid, c in cells_of(out).items()}


@pytest.fixture(scope="module")
def libvirtd(tmp_path_factory):
    daemon = Libvirtd(tmp_path_factory.mktemp("libvirtd"))
    daemon.start()
    yield daemon
    daemon.stop()


def test_libvirt_backend_matches_direct(built, libvirtd, tmp_path):
    scenario = tmp_path / "lv.toml"
    scenario.write_text('[scenario]\nschedulers = ["mq-deadline"]\ntimeout_s = 300\n'
                        + DEVICES + job("1s"))
    outs = {}
    for backend in ("direct", "libvirt"):
        outs[backend] = tmp_path / backend
        proc = run_blklab("run", str(scenario), "--accel", "tcg", "--backend", backend,
                          "--out", str(outs[backend]))
        assert proc.returncode == 0, proc.stdout + proc.stderr
    lv = cells_of(outs["libvirt"])
    assert set(lv) == {"nvme0.mq-deadline.r0", "ssd0.mq-deadline.r0", "hdd0.mq-deadline.r0"}
    for c in lv.values():
        assert c["host"]["backend"] == "libvirt"
        reads = c["devmodel"]["service_ns"]["read"]["count"]
        assert reads >= c["summary"][0]["total_ios"] > 0
        assert "<emulator>" in (outs["libvirt"] / "cells" / c["cell_id"] /
                                "domain.xml").read_text()
        assert c["summary"][0]["total_ios"] > 0
    # The guest sees the same devices and settings through both backends.
    assert _in_effect(outs["libvirt"]) == _in_effect(outs["direct"])
    # rotation_rate reached the guest: 1 means a non-rotating disk.
    assert lv["ssd0.mq-deadline.r0"]["in_effect"]["queue"]["rotational"] == "0"
    assert lv["hdd0.mq-deadline.r0"]["in_effect"]["queue"]["rotational"] == "1"
    # Transient domains are gone afterwards.
    names = subprocess.run(["virsh", "-c", "qemu:///system", "list", "--all", "--name"],
                           capture_output=True, text=True, check=True).stdout
    assert "blklab-" not in names


@pytest.fixture
def dask_cluster(tmp_path):
    cluster = DaskCluster(tmp_path, REPO, workers=2)
    cluster.start()
    yield cluster
    cluster.stop()


def test_dask_cluster_runs_the_matrix(built, dask_cluster, tmp_path):
    scenario = tmp_path / "d.toml"
    scenario.write_text('[scenario]\nschedulers = ["none", "kyber"]\ntimeout_s = 300\n'
                        + NVME + job("1s"))
    local, remote = tmp_path / "local", tmp_path / "remote"
    proc = run_blklab("run", str(scenario), "--accel", "tcg", "--out", str(local))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    proc = run_blklab("run", str(scenario), "--accel", "tcg", "--out", str(remote),
                      "--cluster", dask_cluster.address)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    cells = cells_of(remote)
    assert _in_effect(remote) == _in_effect(local)
    workers = {c["host"]["worker"] for c in cells.values()}
    assert workers <= set(dask_cluster.wait_for_workers(2))
    manifest = json.loads((remote / "manifest.json").read_text())
    assert manifest["cluster"]["address"] == dask_cluster.address
    assert len(manifest["cluster"]["workers"]) == 2
    # Logs came back to the submitting host.
    for c in cells.values():
        assert (remote / c["files"]["console_log"]).read_text()


def test_dask_worker_killed_mid_cell_is_retried(built, dask_cluster, tmp_path):
    from distributed import Client

    scenario = tmp_path / "k.toml"
    scenario.write_text('[scenario]\nschedulers = ["none", "bfq"]\ntimeout_s = 300\n'
                        + NVME + job("20s"))
    out = tmp_path / "run"
    result = {}
    runner = threading.Thread(target=lambda: result.setdefault(
        "proc", run_blklab("run", str(scenario), "--accel", "tcg", "--out", str(out),
                           "--cluster", dask_cluster.address)))
    runner.start()
    # Wait until both workers are busy with a cell, then kill the first.
    with Client(dask_cluster.address, timeout="30s") as client:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            busy = {w for w, tasks in client.processing().items() if tasks}
            if len(busy) == 2:
                break
            time.sleep(0.5)
        assert len(busy) == 2, "both workers never ran a cell at once"
        by_name = {info["name"]: addr for addr, info in client.scheduler_info()["workers"].items()}
    time.sleep(5)  # inside the cell's guest by now
    dask_cluster.kill("w0")
    runner.join(timeout=600)
    proc = result["proc"]
    assert proc.returncode == 0, proc.stdout + proc.stderr
    cells = cells_of(out)
    assert len(cells) == 2 and all(c["status"] == "ok" for c in cells.values())
    # Both cells finished on the surviving worker: the killed one's cell was run again there.
    assert {c["host"]["worker"] for c in cells.values()} == {by_name["w1"]}
