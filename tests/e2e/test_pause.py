"""[guest] pause_ns: a PAUSE takes that many ns of its vCPU's time (QEMU's
-icount pause=NS, qemu-patches/0039) instead of one instruction's, end to
end on the Ice Lake preset (icelake-sp-axboe2020: rate 8.86, pause 40 ns,
no event times) with parallel clocks.

A guest spends its spin-wait loops in PAUSE: at boot the local APIC timer
calibration (calibrate_APIC_clock(), arch/x86/kernel/apic/apic.c) spins on
RDTSC and PAUSE for 100 ms, and every contended spinlock spins on it. So:

- The guest boots and brings up its vCPUs with no APIC calibration, TSC,
  clocksource or lockup trouble in its log, the warp check passed for each
  vCPU, and the cells record the pause that QEMU was given.
- With 4 vCPUs under I/O the cells are the same bytes run twice, the
  second time with every host core busy: when a turn ends inside a PAUSE,
  the rest of it is taken from the next turn by count, not by host time.
- A fixed 1000 us device's mean QD1 read latency minus the software floor
  (a fixed 10 us device's latency minus 10 us) is 1000 us within 0.5%:
  the PAUSE's time moves no completion.

What it saves the host is a benchmark's (tests/bench/pause-cost.py).
"""

import re

import pytest

from conftest import REPO, device, job
from test_determinism import assert_same_cells, cpu_hog
from test_vcpu_clocks import TROUBLE, assert_clocks_within_bounds, mean_read_ns, run, scenario

CPU = "icelake-sp-axboe2020"
RATE = 8.86  # its cpu_rate
PAUSE_NS = 40  # its pause_ns
# Linux's warnings when its APIC timer calibration goes wrong (apic.c).
APIC_TROUBLE = re.compile(r"APIC calibration not consistent|APIC frequency too slow|"
                          r"disabling apic timer", re.I)


def paused(path, body: str, vcpus: int, schedulers: str = '["none"]'):
    return scenario(path, body, vcpus, rate=RATE, schedulers=schedulers, pause_ns=PAUSE_NS,
                    cpu=CPU)


def assert_booted_cleanly(run_dir, cell: dict, vcpus: int) -> None:
    cmdline = cell["host"]["qemu_cmdline"]
    assert cmdline[cmdline.index("-icount") + 1].endswith(f",pause={PAUSE_NS}")
    assert cell["request"]["pause_ns"] == PAUSE_NS
    console = (run_dir / cell["files"]["console_log"]).read_text()
    trouble = [ln for ln in console.splitlines() if TROUBLE.search(ln) or APIC_TROUBLE.search(ln)]
    assert not trouble, trouble
    assert "clocksource: Switched to clocksource tsc" in console
    for n in range(1, vcpus):
        assert f"TSC synchronization [CPU#0 -> CPU#{n}]: passed" in console, n
    assert_clocks_within_bounds(cell, vcpus)


def test_same_bytes_idle_and_loaded_with_four_vcpus(built, tmp_path):
    body = (device("nvme0", "nvme", "samsung-970evoplus-1t", size_gib=1)
            + job("rw", "randrw", "100ms", iodepth=8, rwmixread=70))
    s = paused(tmp_path / "det.toml", body, 4, schedulers='["mq-deadline"]')
    idle = run(s, tmp_path / "idle")
    with cpu_hog():
        busy = run(s, tmp_path / "busy")
    assert_same_cells(idle, busy, (tmp_path / "idle", tmp_path / "busy"))
    for cell in idle.values():
        assert_booted_cleanly(tmp_path / "idle", cell, 4)


def test_latency_minus_the_floor_is_the_models_time(built, tmp_path):
    body = (device("floor", "nvme", "fixed-10us")
            + device("slow", "nvme", f"{REPO}/tests/profiles/fixed-1000us.toml")
            + job("qd1", "randread", "200ms", iodepth=1, ioengine="psync"))
    cells = run(paused(tmp_path / "fid.toml", body, 2), tmp_path / "run")
    for cell in cells.values():
        assert_booted_cleanly(tmp_path / "run", cell, 2)
    floor = mean_read_ns(cells["floor.none.r0"]) - 10_000
    slow = mean_read_ns(cells["slow.none.r0"]) - floor
    print(f"rate {RATE}, pause {PAUSE_NS} ns, 2 vCPUs: floor {floor:.0f} ns; "
          f"1000 us device minus the floor {slow:.0f} ns")
    assert slow == pytest.approx(1_000_000, rel=0.005)
