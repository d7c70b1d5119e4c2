"""Guests saved at their job point (blklab.snapshot): what a snapshot's
inputs hold and leave out, how a mismatched one is refused, and how a
cell's QEMU gets its job and its start (blklab.vm, blklab.cell)."""

import dataclasses
import json
from pathlib import Path

import pytest

from blklab import scenario, snapshot
from blklab.cell import CellContext, cold_boot_reason
from blklab.errors import ScenarioError
from blklab.scenario import Device
from blklab.vm import JOB_FW_CFG_NAME, JOBPOINT_ID, VMConfig


def nvme(size: int = 1 << 30, kind: str = "nvme") -> Device:
    return Device(name="d0", kind=kind, backing="null", size_bytes=size)


@pytest.fixture
def config(tmp_path) -> VMConfig:
    qemu = tmp_path / "qemu-system-x86_64"
    qemu.write_bytes(b"a QEMU")
    cell = tmp_path / "cell-1"
    return VMConfig(qemu=qemu, kernel=tmp_path / "vmlinux", initrd=cell / "initrd.cpio",
                    workdir=cell, mode="deterministic", cpu_rate="8.86",
                    vcpu_clocks="parallel", vcpu_quantum_ns=250, device=nvme(),
                    profile_path=cell / "profile.toml", devmodel_seed=7,
                    job_path=cell / "job.cpio")


def inputs(c: VMConfig) -> dict:
    return snapshot.inputs_of(c, "imagehash", fio=False)


def test_cells_of_one_guest_share_a_snapshot(config, tmp_path):
    other = dataclasses.replace(config, workdir=tmp_path / "cell-2",
                                initrd=tmp_path / "cell-2" / "initrd.cpio",
                                profile_path=tmp_path / "cell-2" / "p.toml", devmodel_seed=99,
                                job_path=tmp_path / "cell-2" / "job.cpio",
                                trace_path=tmp_path / "trace", qmp_path=tmp_path / "q.sock")
    assert inputs(other) == inputs(config)
    assert snapshot.key_of(inputs(other)) == snapshot.key_of(inputs(config))


@pytest.mark.parametrize("change", [
    {"vcpus": 4}, {"memory_mib": 2048}, {"cpu_rate": "4"}, {"vcpu_quantum_ns": 1000},
    {"pause_ns": 40}, {"nvme_poll_queues": 1}, {"extra_append": "foo=1"},
    {"device": nvme(size=2 << 30)}, {"device": nvme(kind="virtio-blk")},
    {"vcpu_clocks": "shared"}])
def test_what_the_boot_depends_on_changes_the_key(config, change):
    assert snapshot.key_of(inputs(dataclasses.replace(config, **change))) \
        != snapshot.key_of(inputs(config))


def test_the_image_the_initrd_and_the_qemu_binary_change_the_key(config):
    base = snapshot.key_of(inputs(config))
    assert snapshot.key_of(snapshot.inputs_of(config, "otherimage", fio=False)) != base
    assert snapshot.key_of(snapshot.inputs_of(config, "imagehash", fio=True)) != base
    config.qemu.write_bytes(b"another QEMU")
    assert snapshot.key_of(inputs(config)) != base


def test_the_boot_holds_at_the_job_point_with_an_empty_job(config, tmp_path):
    boot = snapshot.boot_config(config, tmp_path / "snap")
    cmd = boot.cmdline()
    assert f"blklab-jobpoint,id={JOBPOINT_ID},hold=on" in cmd
    assert "migration.store-global-state=off" in cmd
    assert f"name={JOB_FW_CFG_NAME},file={tmp_path / 'snap' / snapshot.NO_JOB}" in cmd
    assert "-incoming" not in cmd and boot.trace_path is None


def test_a_cell_gets_its_job_by_fw_cfg_and_starts_from_the_file(config, tmp_path):
    cmd = config.cmdline()
    assert f"blklab-jobpoint,id={JOBPOINT_ID}" in cmd
    assert f"name={JOB_FW_CFG_NAME},file={config.job_path}" in cmd
    assert "-incoming" not in cmd
    restored = dataclasses.replace(config, incoming=tmp_path / "state").cmdline()
    assert restored[restored.index("-incoming") + 1] == f"file:{tmp_path / 'state'}"


def write_snapshot(root: Path, saved: dict) -> Path:
    d = root / "k"
    d.mkdir()
    (d / snapshot.INPUTS).write_text(json.dumps(saved))
    (d / snapshot.STATE).write_bytes(b"QEVM")
    return d


def test_a_matching_snapshot_passes(config, tmp_path):
    snapshot.check(write_snapshot(tmp_path, inputs(config)), inputs(config))


def test_a_snapshot_of_other_inputs_is_refused_naming_what_differs(config, tmp_path):
    saved = inputs(config)
    d = write_snapshot(tmp_path, saved)
    wanted = inputs(dataclasses.replace(config, memory_mib=2048))
    wanted["image"] = "newimage"
    with pytest.raises(snapshot.SnapshotError) as e:
        snapshot.check(d, wanted)
    msg = str(e.value)
    assert str(d) in msg
    assert "image: the snapshot has 'imagehash', the cell 'newimage'" in msg
    assert "qemu_cmdline: the snapshot has ['1024'], the cell ['2048']" in msg


def test_a_snapshot_without_its_state_or_inputs_is_refused(config, tmp_path):
    d = write_snapshot(tmp_path, inputs(config))
    (d / snapshot.STATE).unlink()
    with pytest.raises(snapshot.SnapshotError, match="state is missing"):
        snapshot.check(d, inputs(config))
    (d / snapshot.INPUTS).write_text("{not json")
    with pytest.raises(snapshot.SnapshotError, match="inputs.json unreadable"):
        snapshot.check(d, inputs(config))


def context(mode: str = "deterministic", backend: str = "direct") -> CellContext:
    return CellContext(qemu=Path("/q"), image_dir=Path("/i"), image={}, accel="tcg",
                       mode=mode, backend=backend)


def scenario_with(tmp_path: Path, guest: str = "", mode: str = "deterministic"):
    p = tmp_path / "s.toml"
    p.write_text(f'[scenario]\nschedulers = ["none"]\nmode = "{mode}"\n[guest]\n{guest}\n'
                 '[[device]]\nname = "d0"\nkind = "nvme"\nprofile = "zero-latency"\n'
                 '[[job]]\nname = "j"\nrw = "randread"\n')
    return scenario.load(p)


def test_cells_restore_unless_they_cannot_and_say_why(tmp_path):
    s = scenario_with(tmp_path)
    assert s.guest.boot == "restore"
    assert cold_boot_reason(s, context()) is None
    assert "realtime mode" in cold_boot_reason(s, context(mode="realtime"))
    assert "libvirt backend" in cold_boot_reason(s, context(backend="libvirt"))
    cold = scenario_with(tmp_path, 'boot = "cold"')
    assert cold_boot_reason(cold, context()) == '[guest] boot = "cold"'


def test_an_unknown_boot_is_an_error_naming_the_key(tmp_path):
    with pytest.raises(ScenarioError) as e:
        scenario_with(tmp_path, 'boot = "warm"')
    assert "guest.boot" in str(e.value) and "restore" in str(e.value)


def test_the_cache_drops_the_least_recently_used_beyond_its_size(tmp_path, monkeypatch):
    monkeypatch.setenv("BLKLAB_SNAPSHOT_CACHE_GIB", str(2.5 / 1024))  # 2.5 MiB
    import os
    now = 1_000_000.0
    dirs = []
    for i, age in enumerate((10_000, 9_000, 8_000, 100)):  # seconds since last use
        d = tmp_path / f"s{i}"
        d.mkdir()
        (d / snapshot.INPUTS).write_text("{}")
        (d / snapshot.STATE).write_bytes(bytes(1 << 20))
        (tmp_path / f"s{i}.lock").write_text("")
        os.utime(d, (now - age, now - age))
        dirs.append(d)
    removed = snapshot.prune(tmp_path, keep=dirs[0], now=now)
    # 4 MiB > 2.5 MiB: the oldest is the one just made (kept), the next two go
    assert removed == [dirs[1], dirs[2]]
    assert dirs[0].exists() and dirs[3].exists()
    assert not (tmp_path / "s1.lock").exists()
    monkeypatch.setenv("BLKLAB_SNAPSHOT_CACHE_GIB", str(0.5 / 1024))
    assert snapshot.prune(tmp_path, keep=dirs[0], now=now) == []  # s3 used 100 s ago


def test_realtime_mode_reads_its_job_without_a_job_point(config):
    """Realtime mode saves no guest, and runs on stock QEMU too, which has
    no job point device: the guest's init only reads the job."""
    realtime = dataclasses.replace(config, mode="realtime", cpu_rate=None, vcpu_clocks=None)
    cmd = realtime.cmdline()
    assert not any("blklab-jobpoint" in a for a in cmd)
    assert f"name={JOB_FW_CFG_NAME},file={config.job_path}" in cmd
    assert "blklab.jobpoint=off" in realtime.kernel_append().split()
    assert "blklab.jobpoint=off" not in config.kernel_append().split()
