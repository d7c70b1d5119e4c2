"""The qtest fuzzer's fault schedules (tests/fuzz/qtest/blkfuzz/common.py):
each family picks only the kinds its front end takes (device_faults.
FRONT_ENDS, never a CANNOT pair), every kind and every way to start is
reachable from the header, and the profiles the fuzzer hands QEMU are valid
as the library reads them (devmodel-check, found in $BLKLAB_CMAKE_BUILD,
default build/cmake)."""

import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests" / "fuzz" / "qtest"))
sys.path.insert(0, str(REPO / "harness"))

from blkfuzz import common  # noqa: E402
from blkfuzz.ahci import Ahci  # noqa: E402
from blkfuzz.ide import Ide  # noqa: E402
from blkfuzz.nvme import Nvme  # noqa: E402
from blkfuzz.virtio_blk import VirtioBlk  # noqa: E402
from blklab import device_faults  # noqa: E402

FAMILIES = [Nvme, Ahci, Ide, VirtioBlk]
BUILD = Path(os.environ.get("BLKLAB_CMAKE_BUILD", REPO / "build" / "cmake")).resolve()
CHECK = BUILD / "devmodel" / "devmodel-check"
HEADERS = 2000      # per family, from a fixed seed


def allowed_kinds(device_kind):
    """From FRONT_ENDS and CANNOT alone: a kind that needs no front end
    (stall, slow) unless refused, and those FRONT_ENDS lists the device for."""
    return {k for k in device_faults.KINDS
            if (k, device_kind) not in device_faults.CANNOT
            and (k not in device_faults.FRONT_ENDS
                 or device_kind in device_faults.FRONT_ENDS[k])}


def sample(family):
    rng = random.Random(0x5EED)
    return [family(rng.randbytes(16)) for _ in range(HEADERS)]


@pytest.mark.parametrize("family", FAMILIES, ids=[f.NAME for f in FAMILIES])
def test_kinds_are_those_the_front_end_takes(family):
    faults = [f.header.fault for f in sample(family)]
    kinds = {f.kind for f in faults if f}
    assert kinds == allowed_kinds(family.DEVICE_KIND)
    assert None in faults, "some headers must pick no fault"
    triggers = {f.trigger for f in faults if f}
    picked = device_faults.PICKED_KINDS
    expect = {"at_ms", "after_requests"} | (
        {"probability"} if kinds & set(picked) else set())
    assert triggers == expect
    for f in faults:
        if f and f.writes and f.kind == "media_error":
            assert family.DEVICE_KIND in device_faults.WRITE_ERROR_FRONT_ENDS


@pytest.mark.parametrize("family", FAMILIES, ids=[f.NAME for f in FAMILIES])
def test_profiles_with_faults_are_valid(family, tmp_path, monkeypatch):
    if not CHECK.exists():
        pytest.fail(f"{CHECK} is not built (make cmake)")
    monkeypatch.setenv("BLKLAB_BUILD", str(tmp_path))
    paths = sorted({str(f.header.profile_path()) for f in sample(family)
                    if f.header.fault})
    assert len(paths) > 100
    proc = subprocess.run([str(CHECK), *paths], capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr[:2000]
    assert proc.stdout.count(": ok: ") == len(paths)


def test_same_header_same_profile(tmp_path, monkeypatch):
    monkeypatch.setenv("BLKLAB_BUILD", str(tmp_path))
    header = bytes([0] * 12 + [17, 0, 4, 0])       # an NVMe timeout
    a, b = Nvme(header), Nvme(header)
    assert a.header.fault.kind == "timeout"
    assert a.header.profile_path() == b.header.profile_path()
    assert a.header.fault_args() == ["-device", "blklab-jobpoint"]
    assert Nvme(bytes(16)).header.fault_args() == []


def test_fuzzer_counts_the_kind_each_header_draws():
    from blkfuzz import fuzzinput, runner
    header = bytes([0] * 12 + [17, 0, 4, 0])       # an NVMe timeout
    assert runner.fault_kind(Nvme, fuzzinput.Input(header, [])) == "timeout"
    assert runner.fault_kind(Nvme, fuzzinput.Input(bytes(16), [])) == "none"
    # The same drawing as the family's own: over a sample of headers the
    # tally matches what each family instance chose.
    for family, inst in ((f, i) for f in FAMILIES for i in sample(f)[:200]):
        kind = inst.header.fault.kind if inst.header.fault else "none"
        assert runner.fault_kind(family, fuzzinput.Input(inst.header.raw, [])) == kind


# What fault code (header byte 12 >> 2) each family's inputs were made
# with, as `kinds[code % len(kinds)]` over the kinds its front end took then:
# every checked-in input means this fault kind.
KINDS_INPUTS_WERE_MADE_WITH = {
    "nvme": ("stall", "slow", "media_error", "media_error", "timeout",
             "timeout", "reset", "reset"),
    "ahci-hd": ("stall", "slow", "media_error", "media_error", "timeout",
                "timeout", "reset", "reset"),
    "ide-hd": ("stall", "slow", "media_error", "media_error", "timeout",
               "timeout", "reset", "reset"),
    "virtio-blk": ("stall", "slow", "media_error", "media_error"),
}
QTEST_FUZZ = REPO / "tests" / "fuzz" / "qtest"


def checked_in_headers(family):
    """(path, header bytes) of every input the repository holds for
    `family`: corpus, regressions and known failures."""
    return [(p, p.read_bytes()[:16]) for sub in ("corpus", "regressions", "known-failures")
            for p in sorted((QTEST_FUZZ / family.NAME / sub).glob("*.bin"))]


@pytest.mark.parametrize("family", FAMILIES, ids=[f.NAME for f in FAMILIES])
def test_each_code_names_the_kind_inputs_were_made_with(family):
    made_with = KINDS_INPUTS_WERE_MADE_WITH[family.DEVICE_KIND]
    for code in range(64):
        assert (common.fault_kind_of_code(code, family.DEVICE_KIND)
                == made_with[code % len(made_with)]), code


def fault_tables(family):
    return {path.name: common.fault_table(header, family.DEVICE_KIND, 1 << 21)
            for path, header in checked_in_headers(family)}


@pytest.mark.parametrize("family", FAMILIES, ids=[f.NAME for f in FAMILIES])
def test_a_new_kind_changes_no_checked_in_input(family, monkeypatch):
    before = fault_tables(family)
    assert any(before.values()), "no checked-in input has a fault"
    monkeypatch.setattr(device_faults, "KINDS", ("brownout",) + device_faults.KINDS)
    monkeypatch.setattr(device_faults, "FRONT_ENDS", {
        "brownout": ("nvme", "ide-hd", "ahci-hd", "virtio-blk"),
        **device_faults.FRONT_ENDS})
    assert fault_tables(family) == before


def test_codes_no_checked_in_input_uses_are_left_for_new_kinds():
    used = {header[12] >> 2 for family in FAMILIES
            for _, header in checked_in_headers(family) if header[12] % 4}
    free = sorted(set(range(8, 64)) - used)
    print(f"fault codes no checked-in input uses: {free}")
    assert len(free) >= 8
