"""A short scenario on the sanitizer QEMU (build/qemu-asan, `make qemu-asan`):
model-driven NVMe and AHCI/NCQ cells run to the end with no AddressSanitizer
or UndefinedBehaviorSanitizer report in QEMU's stderr.

Run by `make test SANITIZE=1` (test-sanitize-qemu), which sets
BLKLAB_SANITIZE_E2E=1; skipped without it, so plain `make test` is unchanged.
Runtime options and report patterns: tests/sanitizers.env."""

import json
import os
import re
import shlex
import subprocess
from pathlib import Path

import pytest

from conftest import DEFAULT_IMAGE, PYTHON, REPO, cells_of

ASAN_QEMU = REPO / "build" / "qemu-asan"

pytestmark = pytest.mark.skipif(os.environ.get("BLKLAB_SANITIZE_E2E") != "1",
                                reason="sanitizer run only (make test SANITIZE=1)")

# One deterministic cell per device, one vCPU, 100 ms of mixed 4 KiB random
# I/O at depth 16: every I/O goes through the model glue (hw/nvme/dm.c,
# hw/ide/dm.c, dm-request.c) and libdevmodel, writes through the SSD's FTL.
SCENARIO = """
[scenario]
schedulers = ["mq-deadline"]
mode = "deterministic"
timeout_s = 1800

[guest]
vcpus = 1
memory_mib = 512

[[device]]
name = "nvme"
kind = "nvme"
backing = "null"
size_gib = 4
profile = "samsung-970evoplus-1t"
seed = 1

[[device]]
name = "ahci"
kind = "ahci-hd"
backing = "null"
size_gib = 4
profile = "hdd-7200-desktop-1t"
ncq_depth = 32
seed = 1

[[job]]
name = "mix"
rw = "randrw"
rwmixread = 70
bs = "4k"
iodepth = 16
ioengine = "io_uring"
direct = true
runtime = "100ms"
time_based = true
"""


def sanitizers_env() -> dict[str, str]:
    """The NAME=VALUE lines of tests/sanitizers.env."""
    env = {}
    for line in (REPO / "tests" / "sanitizers.env").read_text().splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            name, value = line.split("=", 1)
            env[name] = shlex.split(value)[0].replace("${BLKLAB_REPO}", str(REPO))
    return env


SANITIZERS = sanitizers_env()
REPORT = re.compile(SANITIZERS["BLKLAB_SANITIZER_REPORT_RE"])


def report_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if REPORT.search(line)]


@pytest.fixture(scope="module")
def asan_qemu() -> Path:
    binary = ASAN_QEMU / "bin" / "qemu-system-x86_64"
    if not binary.exists():
        pytest.fail(f"{binary} missing: run 'make qemu-asan' first")
    manifest = json.loads((ASAN_QEMU / "manifest.json").read_text())
    assert manifest["variant"] == "sanitize", manifest
    return ASAN_QEMU.resolve()


def test_qemu_carries_both_runtimes(asan_qemu):
    """QEMU's code calls ASan's checks and UBSan's recoverable handlers, and
    libdevmodel's code UBSan's aborting ones (-fno-sanitize-recover), so a
    clean run below means something. ASan's runtime also starts (help=1
    prints its flags); UBSan's starts only at its first report."""
    binary = asan_qemu / "bin" / "qemu-system-x86_64"
    imports = subprocess.run(["nm", "-D", "--undefined-only", str(binary)], capture_output=True,
                             text=True, check=True).stdout.split()
    assert "__asan_report_load8" in imports
    assert "__ubsan_handle_type_mismatch_v1" in imports
    assert "__ubsan_handle_add_overflow_abort" in imports
    proc = subprocess.run([str(binary), "--version"], capture_output=True, text=True,
                          env=dict(os.environ, ASAN_OPTIONS="help=1"), timeout=60)
    assert "detect_leaks" in proc.stderr, proc.stderr[:2000]


def test_report_pattern_matches_real_report_lines():
    assert report_lines("==12==ERROR: AddressSanitizer: heap-use-after-free on address 0x6")
    assert report_lines("../src/hw/nvme/dm.c:42:7: runtime error: shift exponent 64 is too large")
    assert report_lines("==12==ERROR: LeakSanitizer: detected memory leaks")
    assert not report_lines("qemu-system-x86_64: terminating on signal 15 from pid 9")


@pytest.fixture(scope="module")
def sanitized_run(asan_qemu, tmp_path_factory):
    """Runs SCENARIO with BLKLAB_BUILD pointing at an overlay whose qemu is
    the sanitizer build (the guest image and devmodel-info are the usual)."""
    for p, target in ((DEFAULT_IMAGE / "image.json", "image"),
                      (REPO / "build/cmake/devmodel/devmodel-info", "cmake")):
        if not p.exists():
            pytest.fail(f"{p} missing: run 'make {target}' first")
    tmp = tmp_path_factory.mktemp("sanitize")
    build = tmp / "build"
    build.mkdir()
    (build / "qemu").symlink_to(asan_qemu)
    for name in ("images", "cmake"):
        (build / name).symlink_to((REPO / "build" / name).resolve())
    scenario = tmp / "sanitize.toml"
    scenario.write_text(SCENARIO)
    out = tmp / "run"
    env = dict(os.environ, PYTHONPATH=str(REPO / "harness"), BLKLAB_BUILD=str(build),
               **{k: SANITIZERS[k] for k in ("ASAN_OPTIONS", "LSAN_OPTIONS", "UBSAN_OPTIONS")})
    # Two cells at once: nearly all of a cell is its guest's boot, which takes
    # about ten times as long as on the release QEMU.
    proc = subprocess.run([PYTHON, "-m", "blklab", "run", str(scenario), "--jobs", "2",
                           "--out", str(out), "--no-report"],
                          capture_output=True, text=True, env=env, timeout=3600, cwd=REPO)
    return proc, out


def test_cells_run_on_the_sanitizer_qemu(sanitized_run, asan_qemu):
    proc, out = sanitized_run
    cells = cells_of(out)
    assert sorted(cells) == ["ahci.mq-deadline.r0", "nvme.mq-deadline.r0"], \
        proc.stdout + proc.stderr
    for cell_id, cell in cells.items():
        assert Path(cell["host"]["qemu_cmdline"][0]).resolve() == \
            asan_qemu / "bin" / "qemu-system-x86_64", cell_id


def test_no_sanitizer_report(sanitized_run):
    proc, out = sanitized_run
    found = {}
    for log in sorted(out.glob("cells/*/qemu-stderr.log")):
        lines = report_lines(log.read_text(errors="replace"))
        if lines:
            found[log.parent.name] = log.read_text(errors="replace")
    assert not found, "sanitizer reports:\n" + "\n".join(
        f"--- {cell}\n{text}" for cell, text in found.items())
    # A report aborts QEMU, which fails the cell: the error carries QEMU's
    # stderr too.
    for cell_id, cell in cells_of(out).items():
        assert not report_lines(cell["error"] or ""), cell["error"]


def test_cells_complete_with_model_counters(sanitized_run):
    proc, out = sanitized_run
    assert proc.returncode == 0, proc.stdout + proc.stderr
    for cell_id, cell in cells_of(out).items():
        assert cell["status"] == "ok", f"{cell_id}: {cell['error']}"
        ios = sum(cell["devmodel"]["service_ns"][op]["count"] for op in ("read", "write"))
        assert ios > 0, f"{cell_id}: the model saw no I/O: {cell['devmodel']}"
