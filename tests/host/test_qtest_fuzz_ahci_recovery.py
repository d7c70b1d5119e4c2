"""The qtest fuzzer's AHCI family recovers from an NCQ error as libata does
(blkfuzz/ahci.py, op_reap()): with a media_error fault on the drive under
test, a reap that finds PxIS.TFES with NCQ commands outstanding stops and
starts the port and reads the NCQ Command Error log (READ LOG EXT, 10h).

The input is the checked-in corpus seed built for it: a media_error fault
on every LBA from the origin, two READ FPDMA QUEUED (tags 0 and 2), clock
steps, a reap, a third read, a step, a reap. From qemu-patches/0066: the
log holds the first command that failed, tag 0 (byte 0 = 0x00, NQ clear);
reading it ended the condition, so the third read (tag 2) is accepted, fails
on the same fault, and the second log read returns tag 2. QEMU from
$BLKLAB_QEMU_DIR or build/qemu; skipped without a build.
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
    reads = [line.split("read log 10h: ")[1].split()[0]
             for line in r.trace if "read log 10h" in line]
    assert reads == ["0x0", "0x2"], r.trace
    assert {"ahci ncq media error", "ahci ncq error log read"} <= r.marks


def test_no_recovery_without_a_media_error_fault():
    header = bytearray(SEED.read_bytes()[:16])
    header[12] = 1                      # fault code 0: a stall
    assert Ahci(bytes(header)).header.fault.kind == "stall"
    assert not Ahci(bytes(header)).ncq_errors
    assert Ahci(SEED.read_bytes()[:16]).ncq_errors
