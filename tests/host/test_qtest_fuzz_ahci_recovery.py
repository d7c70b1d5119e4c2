"""The qtest fuzzer's AHCI family recovers from an NCQ error as libata does
(blkfuzz/ahci.py, op_reap()): with a media_error fault on the drive under
test, a reap that finds PxIS.TFES with NCQ commands outstanding stops and
starts the port and reads the NCQ Command Error log (READ LOG EXT, 10h).

The input is the checked-in corpus seed built for it: a media_error fault
on every LBA from the origin, two READ FPDMA QUEUED (tags 0 and 2), clock
steps, a reap, a third read, a step, a reap. From qemu-patches/0066: the
log holds the first command that failed (byte 0 = its tag, NQ clear), and
reading it ends the condition, so the next NCQ command is accepted and
fails on the same fault. With every LBA failing, each log read returns the
first NCQ command issued on the port since the previous log read: the test
takes those tags from the run's own issue lines rather than writing them
down (for this seed, tags 0 then 2). QEMU from $BLKLAB_QEMU_DIR or
build/qemu; skipped without a build.
"""

import os
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
QTEST_FUZZ = REPO / "tests" / "fuzz" / "qtest"
sys.path.insert(0, str(QTEST_FUZZ))

from blkfuzz import fuzzinput, runner  # noqa: E402
from blkfuzz.ahci import Ahci  # noqa: E402

QEMU_DIR = Path(os.environ.get("BLKLAB_QEMU_DIR", REPO / "build" / "qemu"))
QEMU = QEMU_DIR / "bin" / "qemu-system-x86_64"
SEED = QTEST_FUZZ / "ahci" / "corpus" / "dd99c68f1067412ed9b9efdecf5be82b89130fc6.bin"


@pytest.mark.skipif(not QEMU.exists(), reason=f"no QEMU at {QEMU}")
def test_reap_after_ncq_media_error_reads_the_log(tmp_path, monkeypatch):
    monkeypatch.setenv("BLKLAB_BUILD", str(tmp_path))
    inp = fuzzinput.Input.from_bytes(SEED.read_bytes())
    r = runner.run_input(Ahci, inp, str(QEMU), tmp_path / "work", trace=True,
                         coverage=True)
    assert r.verdict.ok, r.verdict
    expected, got, first = [], [], None
    for line in r.trace:
        words = line.split()
        ncq_on_p0 = words[1:3] == ["issue", "p0"] and (
            "cmd=0x60" in words or "cmd=0x61" in words)   # READ/WRITE FPDMA QUEUED
        if ncq_on_p0 and first is None:
            first = int(line.split("tag=")[1].split()[0])
        if "read log 10h: " in line:
            expected.append(first)
            got.append(int(line.split("read log 10h: ")[1].split()[0], 16))
            first = None
    assert len(got) == 2 and None not in expected, r.trace
    assert got == expected, r.trace
    assert {"ahci ncq media error", "ahci ncq error log read"} <= r.marks


def test_no_recovery_without_a_media_error_fault():
    header = bytearray(SEED.read_bytes()[:16])
    header[12] = 1                      # fault code 0: a stall
    assert Ahci(bytes(header)).header.fault.kind == "stall"
    assert not Ahci(bytes(header)).ncq_errors
    assert Ahci(SEED.read_bytes()[:16]).ncq_errors
