"""virtio-blk, the disk a cloud VM sees as /dev/vda, driven by the device
model end to end: the guest's virtio_blk driver on QEMU's virtio-blk-pci
with devmodel-profile (qemu-patches/0025), deterministic on the same terms
as NVMe.

The gp3 cloud volume as virtio-blk with QEMU's default queues (one per
vCPU) and rings, as virtio-blk with one queue that the guest's driver uses
64 deep, and with rings of 128 entries; a synchronous 4 KiB random read
(the cloud-mysql customer's command, psync) under none; the first device
once more to compare bytes. Checked:
- the guest drives /dev/vda with the queues asked for, and picks its
  default scheduler by them (block/elevator.c elevator_get_default: none
  for a device with several hardware queues, mq-deadline for one);
- its driver's tag depth, which none's nr_requests shows
  (block/blk-mq.c: nr_requests = the tag set's depth), is the ring's size
  (drivers/block/virtio_blk.c fills the ring when the device offers
  indirect descriptors): QEMU's default queue-size of 256, or the 128 the
  scenario asks for (qemu-patches/0028 sizes the ring by queue-size again),
  or virtio_blk.queue_depth;
- every request was timed by the model and completed at its deadline
  (devmodel-counters: nothing rejected, nothing host-timed);
- the second run gives the same bytes.
The same volume on virtio-blk and on NVMe (means within 2%), and fio on
virtio-blk, are expectations of cloud-mysql-incident-as-run, whose short
form test_scenarios.py runs and checks."""

import pytest

from conftest import cells_of, run_blklab
from blklab import diverge

VDA = """
[[device]]
name = "vda"
kind = "virtio-blk"
backing = "null"
profile = "aws-gp3-100g"
"""

VDA1Q = """
[[device]]
name = "vda1q"
kind = "virtio-blk"
backing = "null"
profile = "aws-gp3-100g"
num_queues = 1
queue_depth = 64
"""

VDA128 = """
[[device]]
name = "vda128"
kind = "virtio-blk"
backing = "null"
profile = "aws-gp3-100g"
queue_size = 128
"""

JOB = """
[[job]]
name = "qd1"
rw = "randread"
bs = "4k"
ioengine = "psync"
direct = true
runtime = "1s"
time_based = true
"""


HEAD = ('[scenario]\nname = "vblk"\nschedulers = ["none"]\nmode = "deterministic"\n'
        'timeout_s = 900\n[guest]\nvcpus = 2\nmemory_mib = 512\n')


@pytest.fixture(scope="module")
def twice(built, tmp_path_factory):
    """Both devices, then the first alone: its cell must come out the same."""
    tmp = tmp_path_factory.mktemp("vblk")
    runs = []
    for name, devices in (("a", VDA + VDA1Q + VDA128), ("b", VDA)):
        s = tmp / f"{name}.toml"
        s.write_text(HEAD + devices + JOB)
        out = tmp / name
        proc = run_blklab("run", str(s), "--jobs", "2", "--no-report", "--out", str(out))
        assert proc.returncode == 0, proc.stdout + proc.stderr
        runs.append((out, cells_of(out)))
    return runs


def test_the_guest_drives_vda_with_the_queues_asked(twice):
    (_, cells), _ = twice
    assert sorted(cells) == sorted(["vda.none.r0", "vda1q.none.r0", "vda128.none.r0"])
    for cid in sorted(cells):
        assert cells[cid]["status"] == "ok", (cid, cells[cid]["error"])
        assert cells[cid]["guest"]["device"]["device"] == "vda", cid
    queue = {cid: c["in_effect"]["queue"] for cid, c in cells.items()}
    default = {cid: c["guest"]["device"]["default_scheduler"] for cid, c in cells.items()}
    # QEMU gives virtio-blk-pci one queue per vCPU unless num-queues is set.
    assert queue["vda.none.r0"]["nr_hw_queues"] == "2"
    assert queue["vda1q.none.r0"]["nr_hw_queues"] == "1"
    assert "[none]" in default["vda.none.r0"]
    assert "[mq-deadline]" in default["vda1q.none.r0"]
    assert queue["vda128.none.r0"]["nr_hw_queues"] == "2"
    assert queue["vda.none.r0"]["nr_requests"] == "256"
    assert queue["vda1q.none.r0"]["nr_requests"] == "64"
    assert queue["vda128.none.r0"]["nr_requests"] == "128"
    assert cells["vda128.none.r0"]["request"]["device"]["queue_size"] == 128
    assert cells["vda.none.r0"]["request"]["device"]["queue_size"] is None


def test_every_request_completed_at_the_models_deadline(twice):
    (_, cells), _ = twice
    for cid, c in cells.items():
        assert c["model_timing"] == {"host_timed": 0, "rejected": 0, "reported": True}, cid
        reads = c["devmodel"]["service_ns"]["read"]["count"]
        (row,) = [r for r in c["summary"] if r["direction"] == "read"]
        # One read in flight at a time at ~600 us each: ~1600 in the second.
        assert 1400 < reads < 1800, (cid, reads)
        assert row["iops"] == pytest.approx(reads, rel=0.05), cid


def test_the_second_run_gives_the_same_bytes(twice):
    (dir_a, a), (dir_b, b) = twice
    assert sorted(b) == ["vda.none.r0"]
    for cid in b:
        assert not diverge.result_differences(a[cid], b[cid]), cid
        assert diverge.console_until_done(dir_a, a[cid]) == \
            diverge.console_until_done(dir_b, b[cid]), cid
