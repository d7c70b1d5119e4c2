"""[filesystem] and [vm]: what the scenario says, what the guest is told,
and how the guest's record is read back."""

import subprocess
import uuid

from blklab import filesystem, scenario
from blklab.bundle import JobBundle

SCENARIO = """
[scenario]
schedulers = ["none", "bfq"]
seeds = [7]
mode = "deterministic"
[guest]
apps = true
[filesystem]
type = "{fs}"
mkfs_options = ["-E", "lazy_itable_init=0,lazy_journal_init=0"]
mount_options = "noatime,nodiratime"
[vm]
dirty_bytes = 67108864
dirty_background_ratio = 5
[[device]]
name = "d0"
kind = "nvme"
profile = "zero-latency"
[[job]]
name = "w"
rw = "write"
size = "64m"
"""


def _load(tmp_path, fs="ext4"):
    p = tmp_path / "s.toml"
    p.write_text(SCENARIO.format(fs=fs))
    return scenario.load(p)


def _extract(blob: bytes, dest) -> None:
    subprocess.run(["cpio", "-id", "--quiet"], input=blob, cwd=dest, check=True)


def test_the_tables_are_read(tmp_path):
    s = _load(tmp_path)
    assert s.filesystem == filesystem.Filesystem(
        "ext4", ("-E", "lazy_itable_init=0,lazy_journal_init=0"), "noatime,nodiratime")
    # In VM_KEYS order, whatever the file's.
    assert s.vm == (("dirty_background_ratio", 5), ("dirty_bytes", 67108864))


def test_the_uuid_is_the_seeds_and_valid():
    u = filesystem.uuid_of(7)
    assert u == filesystem.uuid_of(7) != filesystem.uuid_of(8)
    assert uuid.UUID(u).version == 4


def test_every_cell_of_a_seed_gets_the_same_filesystem(tmp_path):
    s = _load(tmp_path)
    bundles = [JobBundle.for_cell(c, s.workload, s.jobs, fs=s.filesystem, vm=s.vm)
               for c in s.cells()]
    assert len(bundles) == 2
    assert bundles[0].mkfs_args == bundles[1].mkfs_args == (
        "-F", "-q", "-U", filesystem.uuid_of(7), "-E", "lazy_itable_init=0,lazy_journal_init=0")


def test_the_guest_is_told(tmp_path):
    s = _load(tmp_path, "xfs")
    b = JobBundle.for_cell(s.cells()[0], s.workload, s.jobs, fs=s.filesystem, vm=s.vm)
    _extract(b.cpio(), tmp_path)
    out = subprocess.run(["sh", "-c", f". {tmp_path}/job/job.env; "
                          "echo \"$BLKLAB_FS|$BLKLAB_FS_MOUNT_OPTIONS\""],
                         capture_output=True, text=True, check=True)
    assert out.stdout == "xfs|noatime,nodiratime\n"
    assert (tmp_path / "job/mkfs.args").read_text().splitlines() == [
        "-f", "-q", "-m", f"uuid={filesystem.uuid_of(7)}",
        "-E", "lazy_itable_init=0,lazy_journal_init=0"]
    assert (tmp_path / "job/vm").read_text() == "dirty_background_ratio 5\ndirty_bytes 67108864\n"


def test_without_the_tables_the_bundle_is_as_before(tmp_path):
    s = _load(tmp_path)
    cell = s.cells()[0]
    plain = JobBundle.for_cell(cell, s.workload, s.jobs)
    assert "BLKLAB_FS" not in plain.files()["job/job.env"].decode()
    assert "job/mkfs.args" not in plain.files() and "job/vm" not in plain.files()


def test_the_guests_record_is_read():
    text = ("mount=/dev/nvme0n1 /data ext4 rw,noatime 0 0\n--- mkfs\nmke2fs says\n"
            "--- info\nFilesystem UUID: x\n")
    r = filesystem.parse_guest_record(text)
    assert r["mounted"] == {"device": "/dev/nvme0n1", "mount_point": "/data", "type": "ext4",
                            "options": ["rw", "noatime"]}
    assert r["mkfs_output"] == "mke2fs says\n"
    assert r["info"] == "Filesystem UUID: x\n"
