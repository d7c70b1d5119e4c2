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
The same under blkgen on an IDE and a virtio-blk drive (qemu-patches/0059):
ERR with UNC, and VIRTIO_BLK_S_IOERR; the application sees EIO, no read is
retried, libata does not reset (the expectations, from the source, are in
the tests' docstrings and docs/faults.md). The same on an AHCI drive under
a 6.12 and a 6.1 guest, whose NCQ read fails through the drive's NCQ error
log (qemu-patches/0066), and the 6.12 cell again on a busy host.

A timeout fault on another NVMe drive under a 6.12 and a 6.1 guest with a
300 ms io_timeout: the kernel's abort, then its controller reset, take the
lost read back and retry it (the expectations, from the source, are in the
test's docstring).

The same timeout fault on an AHCI and a PIIX IDE drive under a 6.12 guest:
libata's error handling resets the link and the retried read completes
(the expectations, from the source, are in the test's docstring and
docs/faults.md).

A reset fault on another NVMe drive under the same guests: the controller
fails (CSTS.CFS), the kernel resets it at the read's first timeout and the
read completes after the reset (the expectations, from the source, are in
the test's docstring). The drives offer no shadow doorbells, as real ones;
one that does (shadow_doorbells = true, QEMU's default) stalls a 6.1 guest
again after each reset, which the last test shows.

The same reset fault on an AHCI and a PIIX IDE drive: the drive stays
silent, libata finds it at the read's timeout and resets it (COMRESET,
SRST), which ends the fault (qemu-patches/0064), and the retried read
completes (the expectations, from the source, are in the test's docstring
and docs/faults.md).

A media error with a probability per request (media_error, probability =
0.01, every block) under a blkgen reader: the reads the kernel reports
failed are exactly the reads the model picked, and those are the request
numbers FaultPick gives for the device's seed (the expectations, from the
source and the model, are in the test's docstring).

The windows count from the guest's own mark at the workload's start
(blklab-jobpoint --origin, qemu-patches/0052). Host time: printed."""

import json
import re
import time
from pathlib import Path

import pytest

from conftest import cells_of, device, job, run_blklab
from test_determinism import assert_same_cells, cpu_hog
from blklab import kernels, paths

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


def idle_and_busy(tmp_path_factory, name: str, text: str):
    """The scenario `text` run on an idle host, then with every core busy:
    ((cells, cells), (run dir, run dir))."""
    tmp = tmp_path_factory.mktemp(name)
    s = tmp / f"{name}.toml"
    s.write_text(text)
    idle = run(s, tmp / "idle")
    with cpu_hog():
        busy = run(s, tmp / "busy")
    return (idle, busy), (tmp / "idle", tmp / "busy")


@pytest.fixture(scope="module")
def twice(built, tmp_path_factory):
    return idle_and_busy(tmp_path_factory, "device-faults", SCENARIO)


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
    return idle_and_busy(tmp_path_factory, "media-error", MEDIA_SCENARIO)


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


EIO = 5
# The same media error and blkgen reader on an IDE (PIIX) and a virtio-blk
# drive, one cell each.
FRONT_MEDIA_SCENARIO = (
    '[scenario]\nname = "media-error-fronts"\nmode = "deterministic"\ntimeout_s = 600\n'
    'schedulers = ["none"]\n[guest]\nvcpus = 1\nmemory_mib = 512\n'
    + device("ide", "ide-hd", "fixed-10us", size_gib=1)
    + device("virtio", "virtio-blk", "fixed-10us", size_gib=1)
    + '\n[[job]]\nname = "r"\nrw = "read"\nbs = "4k"\nsize = "1m"\niodepth = 1\n'
    'ioengine = "io_uring"\ndirect = true\nruntime = "100ms"\ntime_based = true\n'
    'continue_on_error = "read"\n'
    + "".join(f'\n[[fault]]\ndevice = "{d}"\nkind = "media_error"\nlba_start = {MEDIA_LBA}\n'
              f"lba_count = {MEDIA_BLOCKS}\n" for d in ("ide", "virtio")))


def check_front_media_error_cell(c: dict, at_halt: int) -> int:
    """What every front end's cell of FRONT_MEDIA_SCENARIO shows: blkgen
    (which counts a failed read apart from its I/Os) sees EIO once per
    pass over the MiB, exactly the reads the model failed, and no read is
    sent again; besides blkgen's reads the model sees `at_halt` requests,
    the driver's at the guest's halt. Returns the number of failed reads."""
    assert c["status"] == "ok", c["error"]
    (job_,) = c["workload"]["jobs"]
    errors = job_["total_err"]
    issued = job_["read"]["total_ios"] + errors
    touched = (issued - 1 - MEDIA_LBA // 8) // MEDIA_PASS_BLOCKS + 1
    assert touched > 1
    assert errors == touched and job_["first_error"] == EIO
    # Exactly the reads the model failed (a retry would touch the range and
    # fail again), and the model saw blkgen's reads and the halt's requests.
    assert c["devmodel"]["media_errors"] == {"read": touched, "write": 0}
    assert c["devmodel"]["requests_since_origin"] == issued + at_halt
    (f,) = c["faults"]
    assert f["kind"] == "media_error" and f["requests"] == touched and f["fired"]
    assert job_["read"]["io_bytes"] == (issued - touched) * 4096
    return touched


@pytest.fixture(scope="module")
def front_media(built, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("media-error-fronts")
    s = tmp / "media-error-fronts.toml"
    s.write_text(FRONT_MEDIA_SCENARIO)
    return run(s, tmp / "out")


def test_media_error_on_ide_is_unc_and_libata_does_not_retry_or_reset(front_media):
    """IDE (qemu-patches/0059): READ DMA ends with ERR and UNC. From 6.12's
    libata-eh.c, libata-scsi.c and scsi_lib.c (docs/faults.md): libata's
    EH does not retry a media error nor reset, and logs for each failed
    read, not rate-limited, an exception line, "failed command: READ DMA"
    and "error: { UNC }"; the midlayer fails the request with BLK_STS_IOERR
    (EIO) and logs "Sense Key : Medium Error" and blk_print_req_error()
    "I/O error, dev sda, sector 800", each rate-limited to 10 failures per
    5 s. kernel_errors keeps exactly these five kinds of line.
    At the guest's halt sd_shutdown() sends SYNCHRONIZE CACHE (a FLUSH
    CACHE to the drive) because the drive caches writes (WCE): one request
    more than blkgen's reads."""
    c = front_media["ide.none.r0"]
    touched = check_front_media_error_cell(c, at_halt=1)
    lines = c["guest"]["kernel_errors"]
    logged = min(touched, RATELIMIT_BURST)
    exception = [x for x in lines
                 if re.fullmatch(r"ata\d\.00: exception Emask 0x0 SAct 0x0 SErr 0x0 action 0x0",
                                 x)]
    failed = [x for x in lines if re.fullmatch(r"ata\d\.00: failed command: READ DMA", x)]
    unc = [x for x in lines if re.fullmatch(r"ata\d\.00: error: \{ UNC \}", x)]
    sense = [x for x in lines if re.fullmatch(
        r"sd \d+:0:0:0: \[sda\] tag#\d+ Sense Key : Medium Error \[current\] ?", x)]
    block = [x for x in lines
             if x.startswith(f"I/O error, dev sda, sector {MEDIA_LBA} op 0x0:(READ) ")]
    assert len(exception) == len(failed) == len(unc) == touched, lines
    assert len(sense) == len(block) == logged, lines
    assert len(lines) == 3 * touched + 2 * logged, lines
    assert not [x for x in lines if "reset" in x.lower()], lines


def test_media_error_on_virtio_blk_is_ioerr_and_nothing_else(front_media):
    """virtio-blk (qemu-patches/0059): VIRTIO_BLK_S_IOERR, which 6.12's
    virtblk_result() makes BLK_STS_IOERR: EIO, no retry, and only
    blk_print_req_error()'s line, rate-limited to 10 per 5 s."""
    c = front_media["virtio.none.r0"]
    touched = check_front_media_error_cell(c, at_halt=0)
    lines = c["guest"]["kernel_errors"]
    assert len(lines) == min(touched, RATELIMIT_BURST), lines
    assert all(x.startswith(f"I/O error, dev vda, sector {MEDIA_LBA} op 0x0:(READ) ")
               for x in lines), lines


def ahci_media_scenario(kernel: str) -> str:
    """FRONT_MEDIA_SCENARIO's reader and fault on one AHCI drive (NCQ)
    under a guest of `kernel`."""
    return ('[scenario]\nname = "media-error-ahci"\nmode = "deterministic"\n'
            f'timeout_s = 600\nschedulers = ["none"]\n[guest]\nkernel = "{kernel}"\n'
            "vcpus = 1\nmemory_mib = 512\n"
            + device("ahci", "ahci-hd", "fixed-10us", size_gib=1)
            + '\n[[job]]\nname = "r"\nrw = "read"\nbs = "4k"\nsize = "1m"\niodepth = 1\n'
            'ioengine = "io_uring"\ndirect = true\nruntime = "100ms"\ntime_based = true\n'
            'continue_on_error = "read"\n'
            f'\n[[fault]]\ndevice = "ahci"\nkind = "media_error"\nlba_start = {MEDIA_LBA}\n'
            f"lba_count = {MEDIA_BLOCKS}\n")


@pytest.fixture(scope="module")
def ahci_media_twice(built, tmp_path_factory):
    return idle_and_busy(tmp_path_factory, "media-error-ahci",
                         ahci_media_scenario("6.12-amd64"))


@pytest.fixture(scope="module")
def ahci_media(request, tmp_path_factory):
    """The cells of ahci_media_scenario() per kernel: 6.12's idle run,
    6.1's run once."""
    return ata_cells(request, tmp_path_factory, "media-error-ahci", "ahci_media_twice",
                     ahci_media_scenario)


@pytest.mark.parametrize("kernel", ["6.12-amd64", "6.1-amd64"])
def test_media_error_on_ahci_goes_through_the_ncq_error_log(ahci_media, kernel):
    """AHCI with NCQ (qemu-patches/0066), expectations from 6.12's and
    6.1's libahci.c, libata-eh.c, libata-sata.c, libata-scsi.c and
    scsi_lib.c (docs/faults.md, "On AHCI (NCQ)"): the drive fails READ
    FPDMA QUEUED with a Set Device Bits FIS with ERR (TFES); libata aborts
    the port's commands to EH without freezing it, reads the NCQ error log
    (READ LOG EXT, log 10h), charges the logged tag with UNC, so AC_ERR_MEDIA,
    does not retry it nor reset. It logs for each failed read, not
    rate-limited, "exception Emask 0x0 SAct <the tag's bit> SErr 0x0 action
    0x0", "failed command: READ FPDMA QUEUED" and "error: { UNC }"; sense
    MEDIUM ERROR with the logged LBA (the request's first), so sd fails the
    whole request with BLK_STS_IOERR: blkgen sees EIO once per pass, exactly
    the reads the model failed (none sent again); "Sense Key : Medium Error"
    and "I/O error, dev sda, sector 800" are rate-limited to 10 per 5 s.
    Neither READ LOG EXT nor EH's IDENTIFY goes through the model, so the
    model sees blkgen's reads and, at the halt, sd_shutdown()'s SYNCHRONIZE
    CACHE (the drive caches writes)."""
    c = ahci_media(kernel)["ahci.none.r0"]
    assert c["request"]["kernel"] == kernel
    touched = check_front_media_error_cell(c, at_halt=1)
    lines = c["guest"]["kernel_errors"]
    logged = min(touched, RATELIMIT_BURST)
    exception = [re.fullmatch(r"ata\d\.00: exception Emask 0x0 SAct (0x[0-9a-f]+) SErr 0x0 "
                              r"action 0x0", x) for x in lines]
    sacts = [int(m.group(1), 16) for m in exception if m]
    failed = [x for x in lines
              if re.fullmatch(r"ata\d\.00: failed command: READ FPDMA QUEUED", x)]
    unc = [x for x in lines if re.fullmatch(r"ata\d\.00: error: \{ UNC \}", x)]
    sense = [x for x in lines if re.fullmatch(
        r"sd \d+:0:0:0: \[sda\] tag#\d+ Sense Key : Medium Error \[current\] ?", x)]
    block = [x for x in lines
             if x.startswith(f"I/O error, dev sda, sector {MEDIA_LBA} op 0x0:(READ) ")]
    assert len(sacts) == len(failed) == len(unc) == touched, lines
    assert all(b and b & (b - 1) == 0 for b in sacts), sacts  # one tag in flight
    assert len(sense) == len(block) == logged, lines
    assert len(lines) == 3 * touched + 2 * logged, lines
    assert not [x for x in lines if "reset" in x.lower()], lines


def test_media_error_on_ahci_same_bytes_on_a_busy_host(ahci_media_twice):
    (idle, busy), dirs = ahci_media_twice
    assert_same_cells(idle, busy, dirs)


IO_TIMEOUT_MS = 300  # [queue] io_timeout: ms, blk_queue_rq_timeout()
LOST_AT_MS, LOST_FOR_MS = 50, 1
# The guests whose recovery is checked: the default series and 6.1, whose
# nvme_reset_work() gives the controller its doorbell buffers only after it
# restarts the I/O queues (see test_reset_with_shadow_doorbells_...).
RECOVERY_KERNELS = ["6.12-amd64", "6.1-amd64"]
HZ = 250  # CONFIG_HZ of Debian's 6.12 and 6.1 amd64 kernels (checked: kernel_facts)
# block/blk-timeout.c (6.1 and 6.12 alike): blk_add_timer() arms the
# queue's timer at blk_round_jiffies(deadline) = deadline +
# blk_timeout_mask + 1, the mask being roundup_pow_of_two(HZ) - 1: 256
# jiffies past each deadline.
ROUND_NS = 256 * 1_000_000_000 // HZ
# kernel/time/timer.c: a timer 64-511 jiffies away lands in wheel level 1,
# whose buckets are 8 jiffies wide; it fires up to 8 jiffies late.
WHEEL_NS = 8 * 1_000_000_000 // HZ
RESET_BOUND_NS = 1_000 * MS  # nvme_reset_work(): admin commands on an idle guest


def kernel_facts(kernel: str) -> None:
    """What the expectations below take from the guest kernel's config:
    HZ, and no CONFIG_NVME_VERBOSE_ERRORS (nvme_get_opcode_str() then
    names every I/O command "I/O Cmd")."""
    config = kernels.read_config(paths.image_dir(kernel) / "config")
    assert config.get("CONFIG_HZ") == str(HZ), (kernel, config.get("CONFIG_HZ"))
    assert config.get("CONFIG_NVME_VERBOSE_ERRORS", "is not set") == "is not set", kernel


def recovery_scenario(name: str, drive: str, kernel: str, shadow_doorbells: bool = False
                      ) -> str:
    """A guest of `kernel` with io_timeout = IO_TIMEOUT_MS, one fixed-10us
    NVMe drive `drive` and a QD1 reader for 3 s, without its [[fault]]."""
    return ('[scenario]\n'
            f'name = "{name}"\nmode = "deterministic"\ntimeout_s = 600\n'
            f'schedulers = ["none"]\n[guest]\nkernel = "{kernel}"\nvcpus = 1\n'
            f"memory_mib = 512\n[queue]\nio_timeout = {IO_TIMEOUT_MS}\n"
            + device(drive, "nvme", "fixed-10us", size_gib=1)
            + ("shadow_doorbells = true\n" if shadow_doorbells else "")
            + job("r", "randread", "3s", iodepth=1))


def timeout_scenario(kernel: str) -> str:
    return (recovery_scenario("nvme-timeout", "lost", kernel)
            + f'\n[[fault]]\ndevice = "lost"\nkind = "timeout"\nat_ms = {LOST_AT_MS}\n'
            f"duration_ms = {LOST_FOR_MS}\n")


# nvme_timeout()'s lines for a read at its first and second timeout, and
# what they name: (tag, CID, queue) on 6.12, (tag, queue) on 6.1, which
# prints neither the CID nor the opcode's number, nor req_op and size.
TIMEOUT_LINES = {
    "6.12-amd64": (
        re.compile(r"^nvme nvme0: I/O tag (\d+) \(([0-9a-f]{4})\) opcode 0x2 \(I/O Cmd\) "
                   r"QID (\d+) timeout, aborting req_op:READ\(0\) size:4096$"),
        re.compile(r"^nvme nvme0: I/O tag (\d+) \(([0-9a-f]{4})\) opcode 0x2 \(I/O Cmd\) "
                   r"QID (\d+) timeout, reset controller$")),
    "6.1-amd64": (
        re.compile(r"^nvme nvme0: I/O (\d+) \(I/O Cmd\) QID (\d+) timeout, aborting$"),
        re.compile(r"^nvme nvme0: I/O (\d+) QID (\d+) timeout, reset controller$")),
}
ABORT_STATUS_LINE = "nvme nvme0: Abort status: 0x0"


def nvme_front(cell: dict) -> str:
    """The cell's NVMe controller as QEMU was given it (-device)."""
    (front,) = [a for a in cell["host"]["qemu_cmdline"] if a.startswith("nvme,")]
    return front


def check_no_shadow_doorbells(cell: dict) -> None:
    """The drive offered no Doorbell Buffer Config, as a real one (vm.py)."""
    assert cell["request"]["device"]["shadow_doorbells"] is False
    assert ",dbcs=off" in nvme_front(cell), nvme_front(cell)


@pytest.fixture(scope="module")
def timeout_twice(built, tmp_path_factory):
    return idle_and_busy(tmp_path_factory, "nvme-timeout", timeout_scenario("6.12-amd64"))


@pytest.mark.parametrize("kernel", RECOVERY_KERNELS)
def test_timeout_runs_the_kernels_abort_then_reset_and_the_retry_completes(
        request, tmp_path, kernel):
    """A timeout fault on NVMe under a 6.12 or 6.1 guest with io_timeout =
    300 ms ([queue], written after the guest restores from its snapshot),
    one reader at queue depth 1. Derived from the source before any run
    (6.1's nvme_timeout() takes the same steps as 6.12's, with shorter
    lines):

    - The reader's first read submitted in [50, 51) ms after the workload's
      start is lost: the drive never completes it, and at QD1 nothing else
      is submitted until it ends, so the fault loses exactly one read.
    - First timeout (drivers/nvme/host/pci.c nvme_timeout()): not
      aborted before, abort_limit left (ACL 3 + 1), so it logs "I/O tag T
      (CID) opcode 0x2 (I/O Cmd) QID Q timeout, aborting req_op:READ(0)
      size:4096" (6.1: "I/O T (I/O Cmd) QID Q timeout, aborting"), sends an
      Abort and returns BLK_EH_RESET_TIMER. QEMU's nvme_abort() answers
      Dword 0 bit 0 = 1 ("not aborted") with success: abort_endio() logs
      "Abort status: 0x0" and the read stays lost.
    - Second timeout: iod->aborted, so "... QID Q timeout, reset
      controller" and nvme_dev_disable(): deleting the I/O SQ completes the
      read once with Command Aborted due to SQ Deletion (qemu-patches/0055),
      no DNR, so nvme_decide_disposition() retries it after the reset
      (quietly); the retry is submitted after the window and completes.
      The read, as the reader sees it, succeeds: no error.
    - When: the first timeout fires between deadline (submission + 300 ms)
      and 256 jiffies + one wheel bucket after it, depending on where the
      queue's timer stood; the second exactly 256 jiffies (1.024 s at HZ
      250) + up to a bucket after its deadline, the timer having just
      fired (blk_add_timer() after BLK_EH_RESET_TIMER). So the read takes
      at least 2 x 300 ms + 1.024 s, at most 2 x 300 ms + 2 x 1.024 s +
      2 buckets + the reset.
    - The model counts the read lost once and cancelled once, none held.
    - The drive offers no shadow doorbells (dbcs=off), so after the reset
      every later read rings the controller's doorbell and I/O resumes on
      6.1 too: nothing else times out.
    The kernel's lines are exactly those three, for one tag on one queue.
    The same bytes on a busy host (the timeouts fire at virtual times:
    6.12's run, test_timeout_same_bytes_on_a_busy_host)."""
    kernel_facts(kernel)
    if kernel == "6.12-amd64":
        (cells, _), _ = request.getfixturevalue("timeout_twice")
    else:
        s = tmp_path / "nvme-timeout.toml"
        s.write_text(timeout_scenario(kernel))
        cells = run(s, tmp_path / "out")
    c = cells[f"lost.none.io_timeout={IO_TIMEOUT_MS}.r0"]
    assert c["status"] == "ok", c["error"]  # blkgen fails the cell on any I/O error
    assert c["request"]["kernel"] == kernel
    assert c["request"]["tunables"] == {"io_timeout": str(IO_TIMEOUT_MS)}
    assert c["in_effect"]["queue"]["io_timeout"] == str(IO_TIMEOUT_MS)  # as the kernel has it
    check_no_shadow_doorbells(c)
    (f,) = c["faults"]
    assert f["kind"] == "timeout" and f["fired"] and f["requests"] == 1
    assert f["start_ns"] == f["origin_ns"] + LOST_AT_MS * MS
    assert f["end_ns"] == f["start_ns"] + LOST_FOR_MS * MS
    dm = c["devmodel"]
    assert dm["lost"] == {"read": 1, "write": 0}
    assert dm["cancelled"] == 1 and dm["lost_held"] == 0

    aborting_line, reset_line = TIMEOUT_LINES[kernel]
    aborting, status, reset = c["guest"]["kernel_errors"]
    a, r = aborting_line.match(aborting), reset_line.match(reset)
    assert a and r, c["guest"]["kernel_errors"]
    assert a.groups() == r.groups()  # the same tag (and CID) on the same queue
    assert status == ABORT_STATUS_LINE

    (job_,) = c["workload"]["jobs"]
    assert job_["error"] == 0
    # With the default 30 s io_timeout the read would take a minute: the
    # bounds below also say the [queue] value reached the restored guest.
    took = reads(c)["clat_max_ns"]
    print(f"{kernel}: the lost read took {took / MS:.1f} ms; "
          f"{reads(c)['total_ios']} reads")
    t = IO_TIMEOUT_MS * MS
    assert 2 * t + ROUND_NS <= took <= 2 * t + 2 * (ROUND_NS + WHEEL_NS) + RESET_BOUND_NS


def test_timeout_same_bytes_on_a_busy_host(timeout_twice):
    (idle, busy), dirs = timeout_twice
    assert_same_cells(idle, busy, dirs)


def ata_scenario(name: str, kernel: str, fault: str) -> str:
    """One cell on an AHCI (NCQ) and one on a PIIX IDE drive under a guest
    of `kernel`, each drive with the [[fault]] keys `fault` after its
    device."""
    return (f'[scenario]\nname = "{name}"\nmode = "deterministic"\ntimeout_s = 600\n'
            f'schedulers = ["none"]\n[guest]\nkernel = "{kernel}"\nvcpus = 1\n'
            f"memory_mib = 512\n[queue]\nio_timeout = {IO_TIMEOUT_MS}\n"
            + device("ahci", "ahci-hd", "fixed-10us", size_gib=1)
            + device("ide", "ide-hd", "fixed-10us", size_gib=1)
            + job("r", "randread", "3s", iodepth=1)
            + "".join(f'\n[[fault]]\ndevice = "{d}"\n{fault}' for d in ("ahci", "ide")))


def ata_timeout_scenario(kernel: str) -> str:
    return ata_scenario("ata-timeout", kernel, f'kind = "timeout"\nat_ms = {LOST_AT_MS}\n'
                        f"duration_ms = {LOST_FOR_MS}\n")


# What libata does between the timeout and the retry (docs/faults.md "On
# AHCI and IDE"), per front end: the failed command's name, the reset's
# kind, and the least time the reset takes: AHCI's hardreset waits 200 ms
# after COMRESET and debounces the link for 100 ms (sata_link_resume());
# PIIX's softreset waits ATA_WAIT_AFTER_RESET, 150 ms, after SRST.
ATA_RECOVERY = {"ahci": ("READ FPDMA QUEUED", "hard", 300 * MS),
                "ide": ("READ DMA", "soft", 150 * MS)}


def ata_cells(request, tmp_path_factory, name: str, twice_fixture: str, scenario_of):
    """cells(kernel): the cells of scenario_of(kernel), 6.12's from the
    idle run of `twice_fixture`, any other kernel's run once."""
    runs = {}

    def cells(kernel: str) -> dict:
        if kernel == "6.12-amd64":
            (idle, _), _ = request.getfixturevalue(twice_fixture)
            return idle
        if kernel not in runs:
            tmp = tmp_path_factory.mktemp(f"{name}-{kernel}")
            s = tmp / f"{name}.toml"
            s.write_text(scenario_of(kernel))
            runs[kernel] = run(s, tmp / "out")
        return runs[kernel]
    return cells


def check_ata_recovery_lines(lines: list[str], drive: str) -> None:
    """libata's lines for one timed-out command and its reset, exactly
    these four in this order (docs/faults.md, "On AHCI and IDE")."""
    command, reset_kind, _ = ATA_RECOVERY[drive]
    sact = r"0x[0-9a-f]+" if drive == "ahci" else "0x0"
    patterns = [rf"ata(\d+)\.00: exception Emask 0x0 SAct {sact} SErr 0x0 action 0x6 frozen",
                rf"ata(\d+)\.00: failed command: {command}",
                r"res [0-9a-f/:]+ Emask 0x4 \(timeout\)",
                rf"ata(\d+): {reset_kind} resetting link"]
    assert len(lines) == len(patterns), lines
    matches = [re.fullmatch(p, x) for p, x in zip(patterns, lines)]
    assert all(matches), lines
    assert matches[0].group(1) == matches[1].group(1) == matches[3].group(1), lines
    if drive == "ahci":  # one NCQ tag in flight
        sact_bits = int(lines[0].split("SAct ")[1].split()[0], 16)
        assert sact_bits and sact_bits & (sact_bits - 1) == 0, lines


@pytest.fixture(scope="module")
def ata_timeout_twice(built, tmp_path_factory):
    return idle_and_busy(tmp_path_factory, "ata-timeout", ata_timeout_scenario("6.12-amd64"))


@pytest.fixture(scope="module")
def ata_timeout(request, tmp_path_factory):
    """The cells of ata_timeout_scenario() per kernel: 6.12's idle run,
    6.1's run once."""
    return ata_cells(request, tmp_path_factory, "ata-timeout", "ata_timeout_twice",
                     ata_timeout_scenario)


@pytest.mark.parametrize("kernel", RECOVERY_KERNELS)
@pytest.mark.parametrize("drive", ["ahci", "ide"])
def test_timeout_on_ata_the_kernel_resets_the_link_and_the_retry_completes(
        ata_timeout, drive, kernel):
    """A timeout fault on an AHCI drive (NCQ) and a PIIX IDE drive under a
    6.12 or 6.1 guest with io_timeout = 300 ms, one reader at queue depth
    1. Derived from the source before any run (docs/faults.md, "On AHCI
    and IDE"; 6.1 takes the same steps, except that its SCSI layer may
    first schedule an abort 10 ms after the timeout, within the bound):

    - The first read submitted in [50, 51) ms is lost, and at QD1 nothing
      else is submitted until it ends: exactly one lost read, retried
      outside the window.
    - The block layer times the request out (the queue's rq_timeout, which
      [queue] io_timeout set) and SCSI hands it to libata's EH with no
      abort. EH marks it AC_ERR_TIMEOUT, freezes the port, logs
      "ataN.00: exception Emask 0x0 SAct 0x.. SErr 0x0 action 0x6 frozen"
      (SAct 0x0 on IDE), "ataN.00: failed command: READ FPDMA QUEUED"
      (IDE: READ DMA), the taskfiles, the result ending "Emask 0x4
      (timeout)"; then resets: AHCI "ataN: hard resetting link"
      (COMRESET), IDE "ataN: soft resetting link" (bus master stop, SRST).
      The reset takes the lost read back: the model counts it lost once and
      cancelled once, none held (qemu-patches/0062's qtests).
    - The retry (ata_eh_qc_retry(), one of sd's 5) completes: the reader
      sees no error. Of the kernel's lines exactly those four reach
      kernel_errors, in that order.
    - The read takes at least 300 ms + the reset's least time (AHCI
      300 ms, IDE 150 ms), at most 300 ms + 256 jiffies + a wheel bucket
      (the first timeout, as on NVMe) + 1 s for the reset and the
      revalidation.
    The same bytes on a busy host (6.12's run,
    test_timeout_on_ata_same_bytes_on_a_busy_host)."""
    kernel_facts(kernel)
    _, _, reset_least_ns = ATA_RECOVERY[drive]
    c = ata_timeout(kernel)[f"{drive}.none.io_timeout={IO_TIMEOUT_MS}.r0"]
    assert c["status"] == "ok", c["error"]  # blkgen fails the cell on any I/O error
    assert c["request"]["kernel"] == kernel
    assert c["request"]["tunables"] == {"io_timeout": str(IO_TIMEOUT_MS)}
    assert c["in_effect"]["queue"]["io_timeout"] == str(IO_TIMEOUT_MS)  # as the kernel has it
    (f,) = c["faults"]
    assert f["kind"] == "timeout" and f["fired"] and f["requests"] == 1
    assert f["start_ns"] == f["origin_ns"] + LOST_AT_MS * MS
    assert f["end_ns"] == f["start_ns"] + LOST_FOR_MS * MS
    dm = c["devmodel"]
    assert dm["lost"] == {"read": 1, "write": 0}
    assert dm["cancelled"] == 1 and dm["lost_held"] == 0

    lines = c["guest"]["kernel_errors"]
    check_ata_recovery_lines(lines, drive)

    (job_,) = c["workload"]["jobs"]
    assert job_["error"] == 0
    took = reads(c)["clat_max_ns"]
    print(f"{kernel}, {drive}: the lost read took {took / MS:.1f} ms; {reads(c)['total_ios']} reads; "
          f"the kernel said {lines}")
    t = IO_TIMEOUT_MS * MS
    assert t + reset_least_ns <= took <= t + ROUND_NS + WHEEL_NS + RESET_BOUND_NS


def test_timeout_on_ata_same_bytes_on_a_busy_host(ata_timeout_twice):
    (idle, busy), dirs = ata_timeout_twice
    assert_same_cells(idle, busy, dirs)


RESET_AT_MS = 50
JIFFY_NS = 1_000_000_000 // HZ
CFS_LINE = "nvme nvme0: controller is down; will reset: CSTS=0x3, PCI_STATUS=0x10"


def reset_scenario(kernel: str, shadow_doorbells: bool = False) -> str:
    return (recovery_scenario("nvme-reset", "failed", kernel, shadow_doorbells)
            + f'\n[[fault]]\ndevice = "failed"\nkind = "reset"\nat_ms = {RESET_AT_MS}\n')


def run_reset(tmp_path: Path, kernel: str, shadow_doorbells: bool = False) -> dict:
    """The cell of reset_scenario(kernel, shadow_doorbells), checked as far
    as the fault and the first recovery go."""
    kernel_facts(kernel)
    s = tmp_path / "nvme-reset.toml"
    s.write_text(reset_scenario(kernel, shadow_doorbells))
    cells = run(s, tmp_path / "out")
    c = cells[f"failed.none.io_timeout={IO_TIMEOUT_MS}.r0"]
    assert c["status"] == "ok", c["error"]
    assert c["request"]["kernel"] == kernel
    (f,) = c["faults"]
    assert f["kind"] == "reset" and f["fired"] and f["requests"] == 1
    assert f["duration_ms"] is None
    assert f["start_ns"] == f["origin_ns"] + RESET_AT_MS * MS
    assert f["end_ns"] is not None and f["end_ns"] > f["start_ns"]
    dm = c["devmodel"]
    assert dm["lost"] == {"read": 1, "write": 0}
    assert dm["cancelled"] == 1 and dm["lost_held"] == 0
    assert dm["host_resets"] >= 1
    assert c["guest"]["kernel_errors"][0] == CFS_LINE
    print(f"{kernel}, shadow doorbells {shadow_doorbells}: {reads(c)['total_ios']} reads, "
          f"the slowest {reads(c)['clat_max_ns'] / MS:.1f} ms; the host reset the drive "
          f"{(f['end_ns'] - f['start_ns']) / MS:.1f} ms after it failed; the kernel said "
          f"{c['guest']['kernel_errors']}")
    return c


@pytest.mark.parametrize("kernel", RECOVERY_KERNELS)
def test_reset_the_kernel_finds_the_failed_controller_and_the_read_completes_after(
        built, tmp_path, kernel):
    """A reset fault on NVMe under a 6.12 or 6.1 guest with io_timeout =
    300 ms, one reader at queue depth 1. Derived from the source before any
    run (6.1 and 6.12 take the same steps here):

    - At 50 ms after the workload's start the drive fails: the read it
      holds then (or, if none, the next one submitted) is lost, and at QD1
      nothing else is submitted until that read ends: exactly one read
      lost, whatever its op (the reader only reads).
    - Nothing in the 6.1 or 6.12 driver polls CSTS (the watchdog that did
      went with the kthread in 4.x): the failure is found when the read
      times out. nvme_timeout() reads CSTS first; CFS is set
      (qemu-patches/0056), so nvme_should_reset() is true (the controller
      is LIVE) and nvme_warn_reset() logs "controller is down; will reset:
      CSTS=0x3, PCI_STATUS=0x10" (RDY | CFS; the function's PCI status has
      only its capability list bit: MSI-X, no INTx, no error), with no
      Abort and no "I/O tag ... timeout" line. nvme_dev_disable() sees a
      dead controller (CFS), sends no admin command and cancels the read
      with NVME_SC_HOST_ABORTED_CMD, which nvme_decide_disposition()
      retries after the reset; nvme_reset_work() clears CC.EN (QEMU
      releases the lost read: cancelled once in the model, and the model's
      failure ends there), enables the controller again and requeues the
      read, which completes in 10 us. The reader sees no error.
    - The drive offers no shadow doorbells (dbcs=off): every later read
      rings the doorbell register, so nothing else times out, on 6.1 too
      (test_reset_with_shadow_doorbells_stalls_a_6_1_guest_again is the
      other case).
    - When: the read's deadline is 75 jiffies after the tick at or before
      its submission, so the timeout fires no earlier than 300 ms less one
      jiffy after it, and no later than 256 jiffies + a wheel bucket after
      the deadline (blk_add_timer()'s rounding, as for the timeout fault);
      then the reset (at most RESET_BOUND_NS on an idle guest) and the
      retry. So the read takes between 300 ms - 4 ms and 300 ms + 1.024 s
      + 32 ms + 1 s.
    - The model: the fault dropped one request, ended at the host's reset
      (its end_ns set, after its start); lost 1 read, cancelled 1, none
      held.
    - I/O resumes: each read takes at least the model's 10 us, so at most
      50 ms / 10 us reads complete before the failure; the reader completes
      more than that."""
    c = run_reset(tmp_path, kernel)
    check_no_shadow_doorbells(c)
    assert c["guest"]["kernel_errors"] == [CFS_LINE]
    (job_,) = c["workload"]["jobs"]
    assert job_["error"] == 0
    assert reads(c)["total_ios"] > RESET_AT_MS * MS // LATENCY_NS
    took = reads(c)["clat_max_ns"]
    t = IO_TIMEOUT_MS * MS
    assert t - JIFFY_NS <= took <= t + ROUND_NS + WHEEL_NS + RESET_BOUND_NS


def test_reset_with_shadow_doorbells_stalls_a_6_1_guest_again(built, tmp_path):
    """The same reset under 6.1 on a drive that offers shadow doorbells
    ([[device]] shadow_doorbells = true: QEMU's NVMe default, dbcs=on): the
    case the other tests exclude, and the reason they can fail. Derived
    from the source before any run:

    - The driver uses shadow doorbells only if the controller offers them
      (nvme_reset_work(): nvme_dbbuf_dma_alloc() under OACS DBBUF_SUPP).
      A submission then writes the shadow doorbell and rings the doorbell
      register only when the controller's event index asks for it
      (nvme_dbbuf_update_and_check_event()).
    - A controller forgets the buffers at a reset (QEMU's nvme_ctrl_reset():
      dbbuf_enabled = false). 6.1's nvme_reset_work() zeroes them
      (nvme_dbbuf_dma_alloc() on a second call), creates the I/O queues,
      restarts them (nvme_start_queues()) and waits for the requests
      already entered (nvme_wait_freeze()) before it gives the controller
      the buffers again (nvme_dbbuf_set()). The read the reset requeued
      goes out in between: tail 0 to 1 with event index 0 rings the
      register, the controller (no buffers) completes it and leaves the
      event index at 0. Then nvme_dbbuf_set(): QEMU's nvme_dbbuf_config()
      copies its SQ tail (1) into the shadow doorbell and writes no event
      index. The next read moves the tail from 1 to 2 with event index 0:
      only the shadow doorbell is written, and nothing makes QEMU read it,
      so the read is lost to the driver although the model never saw it.
    - That read times out as a timeout fault's does (nvme_timeout(): CSTS
      is clear now, so "I/O T (I/O Cmd) QID Q timeout, aborting", "Abort
      status: 0x0" as QEMU does not hold it, then "I/O T QID Q timeout,
      reset controller"), and the reset repeats the sequence: each reset
      lets the read it requeued through, then the next read stalls.
    - So after the CFS line the kernel logs an abort and a reset for one
      tag at least once, the model still lost one read only (it never sees
      the stalled ones), and the reader completes at most the 5,000 reads
      that fit before the failure plus one per controller reset.
    6.12 gives the buffers back before it restarts the queues
    (nvme_dbbuf_set() before nvme_unquiesce_io_queues(), since the fix
    "nvme-pci: set doorbell config before unquiescing"), so it recovers
    either way."""
    kernel = "6.1-amd64"
    c = run_reset(tmp_path, kernel, shadow_doorbells=True)
    assert c["request"]["device"]["shadow_doorbells"] is True
    assert ",dbcs=on" in nvme_front(c)
    aborting_line, reset_line = TIMEOUT_LINES[kernel]
    after = c["guest"]["kernel_errors"][1:]
    assert after[:3] and aborting_line.match(after[0]), after
    assert after[1] == ABORT_STATUS_LINE and reset_line.match(after[2]), after
    assert aborting_line.match(after[0]).groups() == reset_line.match(after[2]).groups()
    resets = 1 + sum(1 for x in after if reset_line.match(x))
    assert reads(c)["total_ios"] <= RESET_AT_MS * MS // LATENCY_NS + resets


PICK_P = 0.01
PICK_SEED = 7
PICK_SCENARIO = (
    '[scenario]\nname = "media-error-picked"\nmode = "deterministic"\ntimeout_s = 600\n'
    'schedulers = ["none"]\n[guest]\nvcpus = 1\nmemory_mib = 512\n'
    + device("flaky", "nvme", "fixed-10us", size_gib=1, seed=PICK_SEED)
    + job("r", "randread", "200ms", iodepth=1) + 'continue_on_error = "read"\n'
    + f'\n[[fault]]\ndevice = "flaky"\nkind = "media_error"\nprobability = {PICK_P}\n')


def fault_pick(seed: int, index: int, number: int) -> float:
    """devmodel's FaultPick (devmodel/include/devmodel/faults.h), from its
    contract: SplitMix64's finalizer over the seed, the fault's index and
    the request's number, the top 53 bits as a number in [0, 1)."""
    mask = (1 << 64) - 1

    def mix(z: int) -> int:
        z = ((z ^ (z >> 30)) * 0xbf58476d1ce4e5b9) & mask
        z = ((z ^ (z >> 27)) * 0x94d049bb133111eb) & mask
        return z ^ (z >> 31)

    stream = mix(((seed ^ 0x6661756c74) + 0x9e3779b97f4a7c15 * (index + 1)) & mask)
    return (mix(stream ^ number) >> 11) * 2.0 ** -53


def test_media_error_with_a_probability_fails_exactly_the_picked_reads(built, tmp_path):
    """A media error of probability 0.01 on every block of a fixed-10us
    NVMe drive (device seed 7) under a blkgen reader at queue depth 1 for
    200 ms with continue_on_error. Derived before any run:

    - After the origin the drive receives the reader's reads only, one NVMe
      command per 4 KiB O_DIRECT read at queue depth 1; a failed read ends
      with Unrecovered Read Error and Do Not Retry (qemu-patches/0053,
      nvme_decide_disposition()), so the kernel sends no retry. Hence the
      model numbers exactly R = the reads blkgen issued (its I/Os plus its
      errors: blkgen counts a failed read apart), 1..R in order.
    - The model picks read n when FaultPick(7, 0, n) < 0.01 (its contract,
      recomputed here), so the picks are that set of numbers, all listed
      (about 0.01 R, far below the 1000 listed).
    - Each pick reaches blkgen as ENODATA (BLK_STS_MEDIUM, blk_errors[]):
      blkgen's error count, the model's media_errors and the fault's
      requests are that set's size, exactly.
    - The kernel logs each failed read at two call sites, nvme_log_error()
      and blk_print_req_error(), each rate-limited to 10 lines per 5 s.
    - R is 200 ms over a QD1 read's time (the model's 10 us plus the
      guest's and QEMU's part): thousands at least, so some reads are
      picked, and fewer than 1000 of them while R stays below 100,000."""
    s = tmp_path / "picked.toml"
    s.write_text(PICK_SCENARIO)
    c = run(s, tmp_path / "out")["flaky.none.r0"]
    assert c["status"] == "ok", c["error"]
    assert c["request"]["device"]["profile"]["seed"] == PICK_SEED
    (job_,) = c["workload"]["jobs"]
    errors = job_["total_err"]
    issued = job_["read"]["total_ios"] + errors
    dm = c["devmodel"]
    assert dm["requests_since_origin"] == issued
    expected = [n for n in range(1, issued + 1) if fault_pick(PICK_SEED, 0, n) < PICK_P]
    assert 0 < len(expected) < 1000
    (f,) = c["faults"]
    assert [p["request"] for p in f["picks"]] == expected
    assert errors == len(expected) == f["requests"] == dm["media_errors"]["read"]
    assert dm["media_errors"]["write"] == 0 and job_["first_error"] == ENODATA
    assert f["fired"] and f["first_request"] == f["picks"][0]
    assert f["start_ns"] == f["origin_ns"] and f["end_ns"] is None
    times = [p["ns"] for p in f["picks"]]
    assert times == sorted(times) and times[0] >= f["origin_ns"]
    assert job_["read"]["io_bytes"] == (issued - errors) * 4096
    lines = c["guest"]["kernel_errors"]
    nvme = [x for x in lines if "(sct 0x2 / sc 0x81)" in x]
    block = [x for x in lines if x.startswith("critical medium error, dev nvme0n1, ")]
    logged = min(len(expected), RATELIMIT_BURST)
    assert len(nvme) == len(block) == logged and len(lines) == 2 * logged, lines


def ata_reset_scenario(kernel: str) -> str:
    return ata_scenario("ata-reset", kernel, f'kind = "reset"\nat_ms = {RESET_AT_MS}\n')


@pytest.fixture(scope="module")
def ata_reset_twice(built, tmp_path_factory):
    return idle_and_busy(tmp_path_factory, "ata-reset", ata_reset_scenario("6.12-amd64"))


@pytest.fixture(scope="module")
def ata_reset(request, tmp_path_factory):
    """The cells of ata_reset_scenario() per kernel: 6.12's idle run, 6.1's
    run once."""
    return ata_cells(request, tmp_path_factory, "ata-reset", "ata_reset_twice",
                     ata_reset_scenario)


@pytest.mark.parametrize("kernel", RECOVERY_KERNELS)
@pytest.mark.parametrize("drive", ["ahci", "ide"])
def test_reset_on_ata_the_kernel_resets_the_drive_and_the_retry_completes(
        ata_reset, drive, kernel):
    """A reset fault on an AHCI drive (NCQ) and a PIIX IDE drive under a
    6.12 or 6.1 guest with io_timeout = 300 ms, one reader at queue depth
    1. Derived from the source before any run (docs/faults.md, "What the
    guest sees of a reset", "On AHCI and IDE"):

    - At 50 ms after the workload's start the drive fails: the read it
      holds then (or, if none, the next one submitted) is lost, and at QD1
      nothing else is submitted until that read ends: exactly one read
      lost.
    - The drive shows nothing (no COMINIT: the front end cannot time one),
      so the kernel finds the failure at the read's timeout and takes a
      timeout's steps: the same four lines as for the timeout fault
      (exception ... action 0x6 frozen, failed command, the result ending
      "Emask 0x4 (timeout)", "hard resetting link" on AHCI, "soft
      resetting link" on PIIX) and nothing else.
    - The reset: AHCI clears PxCMD.ST (the lost read cancelled once), then
      one COMRESET (QEMU's AHCI has no port multiplier, so no follow-up
      SRST); PIIX stops the bus master (cancelled once), then one SRST.
      That reset goes through ide_reset(), which tells the model
      (qemu-patches/0064): one host reset since the origin, and the fault
      ends there (its end_ns set, at least the read's timeout after its
      start). None held.
    - The retry completes; the reader sees no error.
    - The read takes at least 300 ms less one jiffy (it may have been
      submitted just before the failure, as on NVMe) plus the reset's
      least time (AHCI 300 ms, IDE 150 ms), at most 300 ms + 256 jiffies
      + a wheel bucket + 1 s for the reset and the revalidation.
    The same bytes on a busy host (6.12's run,
    test_reset_on_ata_same_bytes_on_a_busy_host)."""
    kernel_facts(kernel)
    _, _, reset_least_ns = ATA_RECOVERY[drive]
    c = ata_reset(kernel)[f"{drive}.none.io_timeout={IO_TIMEOUT_MS}.r0"]
    assert c["status"] == "ok", c["error"]  # blkgen fails the cell on any I/O error
    assert c["request"]["kernel"] == kernel
    assert c["in_effect"]["queue"]["io_timeout"] == str(IO_TIMEOUT_MS)
    t = IO_TIMEOUT_MS * MS
    (f,) = c["faults"]
    assert f["kind"] == "reset" and f["fired"] and f["requests"] == 1
    assert f["duration_ms"] is None
    assert f["start_ns"] == f["origin_ns"] + RESET_AT_MS * MS
    assert f["end_ns"] is not None
    assert f["end_ns"] - f["start_ns"] >= t - JIFFY_NS - LATENCY_NS
    dm = c["devmodel"]
    assert dm["lost"] == {"read": 1, "write": 0}
    assert dm["cancelled"] == 1 and dm["lost_held"] == 0
    assert dm["host_resets"] == 1

    lines = c["guest"]["kernel_errors"]
    check_ata_recovery_lines(lines, drive)

    (job_,) = c["workload"]["jobs"]
    assert job_["error"] == 0
    took = reads(c)["clat_max_ns"]
    print(f"{kernel}, {drive}: the lost read took {took / MS:.1f} ms; {reads(c)['total_ios']} reads; "
          f"the host reset the drive {(f['end_ns'] - f['start_ns']) / MS:.1f} ms after it "
          f"failed; the kernel said {lines}")
    assert t - JIFFY_NS + reset_least_ns <= took <= t + ROUND_NS + WHEEL_NS + RESET_BOUND_NS


def test_reset_on_ata_same_bytes_on_a_busy_host(ata_reset_twice):
    (idle, busy), dirs = ata_reset_twice
    assert_same_cells(idle, busy, dirs)
