"""A filesystem on the device under test ([filesystem]) and the page
cache's writeback settings ([vm]), in a real guest.

- ext4 under fio: 64 MiB of buffered sequential writes with end_fsync, on a
  file-backed NVMe drive. The cell records the mount as /proc/mounts has it
  (noatime in effect), the UUID blklab gave mkfs, and the dirty_* values in
  effect: writing dirty_background_bytes makes the kernel set
  dirty_background_ratio to 0 (dirty_background_bytes_handler,
  mm/page-writeback.c). end_fsync means every byte reached the device
  before fio ended, so the device wrote at least 64 MiB in the workload.
  Run twice: the same bytes.
- XFS under blkgen: 4 KiB random direct writes over a 16 MiB file; O_DIRECT
  sends each write to the device, so it wrote the file's 16 MiB at least.
- A mount option the kernel refuses fails the cell with the kernel's own
  line, naming the option.
"""

from pathlib import Path

import pytest

from conftest import cells_of, run_blklab
from blklab import diverge, filesystem

HEAD = """[scenario]
name = "{name}"
schedulers = ["mq-deadline"]
mode = "deterministic"
workload = "{workload}"
timeout_s = 900
[guest]
apps = true
[filesystem]
type = "{fs}"
mount_options = "{mount}"
[[device]]
name = "nvme0"
kind = "nvme"
backing = "file"
size_gib = 2
profile = "samsung-980pro-1t"
"""
EXT4_FIO = HEAD + """[vm]
dirty_background_bytes = 4194304
dirty_expire_centisecs = 100
[[job]]
name = "w"
rw = "write"
bs = "64k"
size = "64m"
ioengine = "psync"
end_fsync = "1"
"""
XFS_BLKGEN = HEAD + """[[job]]
name = "rw"
rw = "randwrite"
bs = "4k"
size = "16m"
ioengine = "io_uring"
iodepth = 8
direct = "1"
"""
SECTOR = 512


def _run(tmp: Path, name: str, text: str):
    """Run a one-cell scenario: (cell id, cell JSON, blklab's process)."""
    s = tmp / f"{name}.toml"
    s.write_text(text)
    out = tmp / name
    proc = run_blklab("run", str(s), "--jobs", "1", "--no-report", "--out", str(out))
    ((cid, cell),) = cells_of(out).items()
    return cid, cell, proc


@pytest.fixture(scope="module")
def ext4_twice(apps_built, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("fs")
    text = EXT4_FIO.format(name="ext4", workload="fio", fs="ext4", mount="noatime")
    return [_run(tmp, f"ext4-{n}", text) for n in ("a", "b")]


def test_ext4_is_made_mounted_and_written(ext4_twice):
    cid, cell, proc = ext4_twice[0]
    assert cell["status"] == "ok", cell["error"] or proc.stderr
    fs = cell["guest"]["filesystem"]
    assert fs["mounted"]["type"] == "ext4"
    assert fs["mounted"]["device"] == "/dev/nvme0n1"
    assert fs["mounted"]["mount_point"] == filesystem.MOUNT_POINT
    assert "noatime" in fs["mounted"]["options"]
    uuid = filesystem.uuid_of(cell["request"]["seed"])
    assert f"Filesystem UUID:          {uuid}" in fs["info"], fs["info"]
    assert cell["request"]["filesystem"]["mkfs_args"][-1] == uuid
    vm = cell["guest"]["vm"]
    assert vm["dirty_background_bytes"] == 4194304
    assert vm["dirty_background_ratio"] == 0
    assert vm["dirty_expire_centisecs"] == 100
    assert cell["disk_stats"]["delta"]["write_sectors"] * SECTOR >= 64 << 20


def test_ext4_twice_gives_the_same_bytes(ext4_twice):
    (cid_a, a, _), (cid_b, b, _) = ext4_twice
    assert cid_a == cid_b
    assert not diverge.result_differences(a, b)


def test_xfs_under_blkgen(apps_built, tmp_path):
    cid, cell, proc = _run(tmp_path, "xfs", XFS_BLKGEN.format(
        name="xfs", workload="blkgen", fs="xfs", mount=""))
    assert cell["status"] == "ok", cell["error"] or proc.stderr
    fs = cell["guest"]["filesystem"]
    assert fs["mounted"]["type"] == "xfs"
    assert "isize=" in fs["info"], fs["info"]  # xfs_info's first line
    assert "vm" in cell["guest"]  # recorded with a filesystem even without [vm]
    ios = sum(row["total_ios"] for row in cell["summary"])
    assert ios == (16 << 20) // 4096
    assert cell["disk_stats"]["delta"]["write_sectors"] * SECTOR >= 16 << 20


def test_a_mount_option_the_kernel_refuses(apps_built, tmp_path):
    cid, cell, proc = _run(tmp_path, "bad", XFS_BLKGEN.format(
        name="bad", workload="blkgen", fs="ext4", mount="noatime,blklab_no_such_option"))
    assert proc.returncode != 0
    assert cell["status"] == "failed"
    assert "kernel refused" in cell["error"], cell["error"]
    assert "blklab_no_such_option" in cell["error"], cell["error"]
