"""Device faults on a schedule ([[fault]]): a stall and a slow window on an
NVMe drive whose model takes exactly 10 us per request (fixed-10us), under
one reader at queue depth 1 for 300 ms of virtual time, beside the same
drive without faults.

- stall [100, 150) ms: the read whose deadline falls in the window
  completes at its end, so the slowest read takes at least 50 ms less one
  read's time; the model moved exactly that one read and says when.
- slow [100, 150) ms, factor 10: every read submitted in the window takes
  100 us in the model instead of 10 us (exact, from the counters), and the
  number of such reads is what the reader's pace predicts: 50 ms over one
  read's time outside the model (from the drive without faults) plus 100 us.
- The same scenario run again with every host core busy gives the same
  bytes (test_determinism.py's comparison).

A media error on blocks [800, 808) of another NVMe drive of the same
model, for the whole run, under fio reading 4 KiB blocks in order over
its first MiB again and again for 100 ms (continue_on_error, so the
reader goes on), with what the kernel source says the guest sees:

- the drive completes each read of block 800 with Unrecovered Read Error,
  Do Not Retry (qemu-patches/0053), so the kernel does not retry it
  (nvme_decide_disposition()) and fio counts one error per read that
  touched the range: one per pass over the MiB (block 100 of 256 4 KiB
  blocks), exactly the reads the model failed;
- BLK_STS_MEDIUM reaches fio as ENODATA (blk_errors[] in block/blk-core.c);
- nvme_log_error() logs "@ LBA 800, 8 blocks, ... (sct 0x2 / sc 0x81) DNR"
  and blk_print_req_error() "critical medium error, dev nvme0n1, sector
  800", each rate-limited to 10 lines per 5 s (DEFAULT_RATELIMIT_BURST);
- every other read succeeds.
The same once under blkgen (continue_on_error, no ignore_error needed).

The windows count from the guest's own mark at the workload's start
(blklab-jobpoint --origin, qemu-patches/0052). Host time: printed."""

import json
import time
from pathlib import Path

import pytest

from conftest import cells_of, device, job, run_blklab
from test_determinism import assert_same_cells, cpu_hog

RUNTIME_MS = 300
AT_MS, DURATION_MS = 100, 50
FACTOR = 10
LATENCY_NS = 10_000  # devmodel/profiles/fixed-10us.toml
MS = 1_000_000

SCENARIO = (
    '[scenario]\nname = "device-faults"\nmode = "deterministic"\ntimeout_s = 600\n'
    'schedulers = ["none"]\n[guest]\nvcpus = 1\nmemory_mib = 512\n'
    + device("plain", "nvme", "fixed-10us", size_gib=1)
    + device("stall", "nvme", "fixed-10us", size_gib=1)
    + device("slow", "nvme", "fixed-10us", size_gib=1)
    + job("r", "randread", f"{RUNTIME_MS}ms", iodepth=1)
    + f'\n[[fault]]\ndevice = "stall"\nkind = "stall"\nat_ms = {AT_MS}\n'
    f"duration_ms = {DURATION_MS}\n"
    + f'\n[[fault]]\ndevice = "slow"\nkind = "slow"\nat_ms = {AT_MS}\n'
    f"duration_ms = {DURATION_MS}\nfactor = {FACTOR}\n")


def run(scenario: Path, out: Path) -> dict[str, dict]:
    started = time.monotonic()
    proc = run_blklab("run", str(scenario), "--out", str(out))
    print(f"{out.name}: {time.monotonic() - started:.1f} s of host time")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return cells_of(out)


@pytest.fixture(scope="module")
def twice(built, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("device-faults")
    s = tmp / "device-faults.toml"
    s.write_text(SCENARIO)
    idle = run(s, tmp / "idle")
    with cpu_hog():
        busy = run(s, tmp / "busy")
    return (idle, busy), (tmp / "idle", tmp / "busy")


def reads(cell: dict) -> dict:
    (row,) = [r for r in cell["summary"] if r["direction"] == "read"]
    return row


def one_read_outside_the_model_ns(cells: dict) -> float:
    """A QD1 read's time besides the model's 10 us: the guest's and QEMU's
    part, from the drive without faults."""
    plain = cells["plain.none.r0"]
    service = plain["devmodel"]["service_ns"]["read"]
    assert service["total"] == LATENCY_NS * service["count"]  # no fault there
    return RUNTIME_MS * MS / service["count"] - LATENCY_NS


def test_stall_holds_the_read_in_its_window_to_its_end(twice):
    (cells, _), _ = twice
    c = cells["stall.none.r0"]
    assert c["status"] == "ok", c["error"]
    (f,) = c["faults"]
    # The model moved exactly one read (QD1: nothing else was in flight), in
    # the window the guest's origin placed.
    assert f["kind"] == "stall" and f["fired"] and f["requests"] == 1
    assert f["start_ns"] == f["origin_ns"] + AT_MS * MS
    assert f["end_ns"] == f["start_ns"] + DURATION_MS * MS
    # The read moved took at least the window less one read's time, in the
    # model and as the workload measured it.
    cycle = one_read_outside_the_model_ns(cells) + LATENCY_NS
    service = c["devmodel"]["service_ns"]["read"]
    assert DURATION_MS * MS - cycle <= service["max"] <= DURATION_MS * MS + LATENCY_NS
    # The other reads kept the model's 10 us.
    assert service["total"] - service["max"] == LATENCY_NS * (service["count"] - 1)
    assert reads(c)["clat_max_ns"] >= DURATION_MS * MS - cycle
    # The drive without faults never waited that long.
    assert cells["plain.none.r0"]["devmodel"]["service_ns"]["read"]["max"] == LATENCY_NS
    assert cells["plain.none.r0"]["faults"] is None


def test_slow_multiplies_service_times_in_its_window(twice):
    (cells, _), _ = twice
    c = cells["slow.none.r0"]
    assert c["status"] == "ok", c["error"]
    (f,) = c["faults"]
    assert f["kind"] == "slow" and f["factor"] == FACTOR and f["fired"]
    k = f["requests"]
    service = c["devmodel"]["service_ns"]["read"]
    # Exact: k reads of 10 x 10 us, the rest of 10 us.
    assert service["total"] == FACTOR * LATENCY_NS * k + LATENCY_NS * (service["count"] - k)
    assert service["max"] == FACTOR * LATENCY_NS
    # Derived beforehand: a QD1 reader submits one read per (its own time +
    # the model's), so the window holds about 50 ms / (outside + 100 us).
    expected = DURATION_MS * MS / (one_read_outside_the_model_ns(cells) + FACTOR * LATENCY_NS)
    assert abs(k - expected) <= 0.1 * expected, (k, expected)


def test_same_bytes_on_a_busy_host(twice):
    (idle, busy), dirs = twice
    assert_same_cells(idle, busy, dirs)


def test_manifest_and_cells_record_the_faults_asked(twice):
    (cells, _), dirs = twice
    manifest = json.loads((dirs[0] / "manifest.json").read_text())
    assert [(f["device"], f["kind"]) for f in manifest["faults"]] == [("stall", "stall"),
                                                                       ("slow", "slow")]
    assert cells["slow.none.r0"]["request"]["faults"] == [
        {"device": "slow", "kind": "slow", "at_ms": AT_MS, "duration_ms": DURATION_MS,
         "factor": FACTOR}]
    assert cells["plain.none.r0"]["request"]["faults"] == []
    report = (dirs[0] / "report.html").read_text()
    assert "<h3>Device faults</h3>" in report


MEDIA_LBA, MEDIA_BLOCKS = 800, 8  # 512-byte blocks: the 4 KiB block at 400 KiB
MEDIA_PASS_BLOCKS = 256  # fio's size = "1m" of 4 KiB blocks
RATELIMIT_BURST = 10  # include/linux/ratelimit_types.h, per call site, per 5 s
ENODATA = 61

MEDIA_SCENARIO = (
    '[scenario]\nname = "media-error"\nmode = "deterministic"\ntimeout_s = 600\n'
    'schedulers = ["none"]\nworkload = "fio"\n[guest]\nvcpus = 1\nmemory_mib = 512\n'
    + device("bad", "nvme", "fixed-10us", size_gib=1)
    + '\n[[job]]\nname = "r"\nrw = "read"\nbs = "4k"\nsize = "1m"\niodepth = 1\n'
    'ioengine = "io_uring"\ndirect = true\nruntime = "100ms"\ntime_based = true\n'
    # fio's lists: read errors, then write errors; ENODATA by its number.
    f'continue_on_error = "read"\nignore_error = "EIO:{ENODATA}"\n'
    f'\n[[fault]]\ndevice = "bad"\nkind = "media_error"\nlba_start = {MEDIA_LBA}\n'
    f"lba_count = {MEDIA_BLOCKS}\n")


@pytest.fixture(scope="module")
def media_twice(built, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("media-error")
    s = tmp / "media-error.toml"
    s.write_text(MEDIA_SCENARIO)
    idle = run(s, tmp / "idle")
    with cpu_hog():
        busy = run(s, tmp / "busy")
    return (idle, busy), (tmp / "idle", tmp / "busy")


def check_media_error_cell(c: dict, failed_is_an_io: bool) -> None:
    """The cell of MEDIA_SCENARIO (or its blkgen twin) against the kernel's
    behaviour. fio counts a failed read among its I/Os, blkgen does not."""
    assert c["status"] == "ok", c["error"]
    (job_,) = c["workload"]["jobs"]
    errors = job_["total_err"]
    issued = job_["read"]["total_ios"] + (0 if failed_is_an_io else errors)
    # One read of block 100 per pass over the 256 blocks, passes started.
    touched = (issued - 1 - MEDIA_LBA // 8) // MEDIA_PASS_BLOCKS + 1
    assert touched > 1
    assert errors == touched and job_["first_error"] == ENODATA
    # Exactly the reads the model failed: none retried (DNR), no write.
    assert c["devmodel"]["media_errors"] == {"read": touched, "write": 0}
    (f,) = c["faults"]
    assert f["kind"] == "media_error" and f["requests"] == touched and f["fired"]
    assert f["lba_start"] == MEDIA_LBA and f["lba_count"] == MEDIA_BLOCKS
    assert f["start_ns"] == f["origin_ns"] and f["end_ns"] is None
    # Every other read succeeded, with its data.
    assert job_["read"]["io_bytes"] == (issued - touched) * 4096
    # The kernel's lines, rate-limited, about that sector only.
    lines = c["guest"]["kernel_errors"]
    logged = min(touched, RATELIMIT_BURST)
    nvme = [x for x in lines if "(sct 0x2 / sc 0x81)" in x]
    block = [x for x in lines if x.startswith("critical medium error, dev nvme0n1, ")]
    assert len(nvme) == len(block) == logged and len(lines) == 2 * logged, lines
    assert all(f"@ LBA {MEDIA_LBA}, {MEDIA_BLOCKS} blocks," in x and x.endswith("DNR")
               for x in nvme), nvme
    assert all(f" sector {MEDIA_LBA} op 0x0:(READ) " in x for x in block), block


def test_media_error_fails_each_read_of_the_range_and_the_kernel_says_so(media_twice):
    (cells, _), _ = media_twice
    check_media_error_cell(cells["bad.none.r0"], failed_is_an_io=True)


def test_media_error_under_blkgen(built, tmp_path):
    """The same under blkgen, whose continue_on_error goes on past any
    errno (it has no ignore_error)."""
    text = MEDIA_SCENARIO.replace('workload = "fio"', 'workload = "blkgen"').replace(
        f'ignore_error = "EIO:{ENODATA}"\n', "")
    s = tmp_path / "media-error-blkgen.toml"
    s.write_text(text)
    cells = run(s, tmp_path / "blkgen")
    check_media_error_cell(cells["bad.none.r0"], failed_is_an_io=False)


def test_media_error_same_bytes_on_a_busy_host(media_twice):
    (idle, busy), dirs = media_twice
    assert_same_cells(idle, busy, dirs)
