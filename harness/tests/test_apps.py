"""[guest] apps and workload = "command": how a scenario asks for the
applications' root, the messages for what it may not ask, what the guest is
told (job bundle), and what a cell's QEMU and snapshot get."""

import dataclasses
from pathlib import Path

import pytest

from blklab import scenario, snapshot
from blklab.bundle import JobBundle
from blklab.errors import ScenarioError
from blklab.vm import APPS_SERIAL, PCI_SLOT_APPS, VMConfig, guest_initrd

DEVICE = """
[[device]]
name = "d0"
kind = "nvme"
profile = "zero-latency"
"""
COMMAND = """
[scenario]
workload = "command"
schedulers = ["none"]
[guest]
apps = true
""" + DEVICE + """
[[job]]
name = "check"
command = "mariadbd --version"
"""


def load(tmp_path: Path, text: str) -> scenario.Scenario:
    p = tmp_path / "s.toml"
    p.write_text(text)
    return scenario.load(p)


def error(tmp_path: Path, text: str) -> ScenarioError:
    with pytest.raises(ScenarioError) as e:
        load(tmp_path, text)
    return e.value


def test_a_command_job_runs_in_the_applications_root(tmp_path):
    s = load(tmp_path, COMMAND)
    assert s.guest.apps is True
    assert s.workload == "command"
    assert s.jobs == [scenario.Job("check", (), command="mariadbd --version")]
    (cell,) = s.cells()
    files = JobBundle.for_cell(cell, s.workload, s.jobs, apps=s.guest.apps).files()
    env = files["job/job.env"].decode()
    assert "BLKLAB_WORKLOAD=command\n" in env
    assert "BLKLAB_APPS=1\n" in env
    assert f"BLKLAB_SEED={cell.seed}\n" in env
    assert files["job/files/command.sh"] == b"mariadbd --version"
    assert files["job/workload.args"] == b""


def test_cells_without_apps_keep_their_bundle(tmp_path):
    s = load(tmp_path, DEVICE + '[[job]]\nname = "j"\nrw = "randread"\n')
    assert s.guest.apps is False
    env = JobBundle.for_cell(s.cells()[0], s.workload, s.jobs).files()["job/job.env"].decode()
    assert "BLKLAB_APPS" not in env and "BLKLAB_SEED" not in env


@pytest.mark.parametrize("text, key, message", [
    (COMMAND.replace("apps = true", "apps = 1"), "guest.apps", "must be a boolean"),
    (COMMAND.replace("apps = true", "apps = false"), "scenario.workload",
     "set [guest] apps = true"),
    (COMMAND.replace('command = "mariadbd --version"', ""), "job[0].command", "is required"),
    (COMMAND.replace('command = "mariadbd --version"', 'command = " "'), "job[0].command",
     "is empty"),
    (COMMAND + 'rw = "read"\n', "job[0].rw", "unknown key (allowed here: command, name)"),
    (COMMAND + '[[job]]\nname = "two"\ncommand = "true"\n', "job",
     "runs exactly one [[job]]"),
])
def test_bad_input_names_the_key(tmp_path, text, key, message):
    e = error(tmp_path, text)
    assert e.key == key, str(e)
    assert message in str(e)
    assert "s.toml" in str(e)


def test_the_guest_set_option_knows_apps():
    assert "apps" in scenario.GUEST_KEYS


def config(tmp_path: Path, apps: bool) -> VMConfig:
    qemu = tmp_path / "qemu-system-x86_64"
    qemu.write_bytes(b"a QEMU")
    cell = tmp_path / "cell-1"
    c = VMConfig(qemu=qemu, kernel=tmp_path / "vmlinux", initrd=cell / "initrd.cpio",
                 workdir=cell, mode="deterministic", cpu_rate="8.86",
                 job_path=cell / "job.cpio")
    if apps:
        c = dataclasses.replace(c, apps_path=tmp_path / "apps" / "apps.squashfs",
                                apps_profile_path=cell / "apps-profile.toml")
    return c


def test_the_applications_disk_is_read_only_and_model_timed(tmp_path):
    cmd = " ".join(config(tmp_path, apps=True).cmdline())
    assert "apps.squashfs,read-only=on" in cmd
    assert "driver=raw,node-name=apps,file=appsfile,read-only=on" in cmd
    assert (f"virtio-blk-pci,id=blklab-apps,drive=apps,addr={PCI_SLOT_APPS:#x},ioeventfd=off,"
            f"serial={APPS_SERIAL},devmodel-profile=") in cmd
    assert "blklab-apps" not in " ".join(config(tmp_path, apps=False).cmdline())


def test_the_snapshot_key_covers_the_applications_root(tmp_path):
    plain = snapshot.inputs_of(config(tmp_path, apps=False), "image", fio=False)
    assert "apps" not in plain and plain["initrd"] == "initramfs.cpio"
    a = snapshot.inputs_of(config(tmp_path, apps=True), "image", fio=False, apps_hash="a1")
    b = snapshot.inputs_of(config(tmp_path, apps=True), "image", fio=False, apps_hash="b2")
    assert a["initrd"] == "initramfs.cpio + apps.cpio"
    assert len({snapshot.key_of(plain), snapshot.key_of(a), snapshot.key_of(b)}) == 3
    # The image's path is not in the key; its hash is.
    moved = dataclasses.replace(config(tmp_path, apps=True),
                                apps_path=tmp_path / "elsewhere" / "apps.squashfs")
    assert snapshot.key_of(snapshot.inputs_of(moved, "image", False, "a1")) == snapshot.key_of(a)


def test_the_initrd_carries_apps_cpio_when_asked(tmp_path):
    for name, data in (("initramfs.cpio", b"I" * 5000), ("fio.cpio", b"F" * 10),
                       ("apps.cpio", b"A" * 7)):
        (tmp_path / name).write_bytes(data)
    out = tmp_path / "initrd"
    guest_initrd(out, tmp_path, fio=True, apps=True)
    blob = out.read_bytes()
    assert blob.startswith(b"I" * 5000 + b"F" * 10 + b"A" * 7)
    assert len(blob) % 4096 == 0 and blob.rstrip(b"\0").endswith(b"A")


def test_the_libvirt_backend_refuses_the_applications_disk(tmp_path):
    from blklab.errors import VMError
    from blklab.libvirt_vm import domain_xml

    with pytest.raises(VMError, match="--backend direct"):
        domain_xml(config(tmp_path, apps=True), "blklab-x")
    assert "<domain" in domain_xml(config(tmp_path, apps=False), "blklab-x")
