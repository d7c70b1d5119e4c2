"""[guest] vcpu_clocks = "parallel": every vCPU on its own clock (QEMU's
-icount parallel=on, qemu-patches/0033), end to end in a Linux guest.

- CPU work: N fio jobs of the null engine (each I/O a fixed run of fio's
  own instructions, no device), job i pinned to CPU i on N vCPUs, do N
  times what one job on one vCPU does in the same virtual time, within 1%;
  with shared clocks two do about what one does (under 1.5 times: the
  check could fail).
- 8 vCPUs under I/O while the scheduler switches every 50 ms: the guest
  brings them up, its warp check passes for each (the TSC is invariant
  and there is no tsc=reliable, so the kernel checks it: the warp check at
  bring-up, the clocksource watchdog against HPET and acpi_pm after), it
  uses the TSC and logs no TSC, clocksource, watchdog, lockup or I/O
  trouble; QEMU measured drift and interrupt lateness within the quantum
  and no clock read off the global clock.
- The same cells with 1, 2, 4 and 8 vCPUs give the same bytes run twice,
  the second time with every host core busy.
- At rates 0.5, 1 and 2.5 with 2 vCPUs: a fixed 1000 us device's mean QD1
  read latency minus the software floor (a fixed 10 us device's latency
  minus 10 us) is 1000 us within 0.5%.
"""

import json
import re
from pathlib import Path

import pytest

from conftest import REPO, cells_of, device, job, run_blklab
from test_determinism import assert_same_cells, cpu_hog
from blklab import cpus

QUANTUM_NS = 250  # blklab's default (scenario.DEFAULT_VCPU_QUANTUM_NS): the key is left out
# What Linux prints when it distrusts a clock or finds a CPU stuck, and the
# NVMe and block layers' trouble (the console has the whole kernel log).
TROUBLE = re.compile(r"tsc.*(unstable|unsynchroniz|warp)|clocksource.*(watchdog|unstable|skew)|"
                     r"timekeeping watchdog|soft lockup|hard lockup|rcu.*stall|hung task|"
                     r"WARNING:|BUG:|timeout|I/O error|resetting controller", re.I)


def scenario(path: Path, body: str, vcpus: int, clocks: str = "parallel", rate: float = 1,
             extra: str = "", schedulers: str = '["none"]', pause_ns: int = 0,
             cpu: str | None = None) -> Path:
    """A scenario at `rate` on `clocks`; PAUSE one instruction's time unless
    `pause_ns` says otherwise (a 40 ns PAUSE goes with the Ice Lake preset's
    rate, test_pause.py); the event times of preset `cpu` (default: the
    default preset's)."""
    path.write_text(f'[scenario]\nschedulers = {schedulers}\nmode = "deterministic"\n'
                    f'timeout_s = 1800\n{extra}[guest]\nvcpus = {vcpus}\nmemory_mib = 1024\n'
                    + (f'cpu = "{cpu}"\n' if cpu else "") +
                    f'cpu_rate = {rate}\nvcpu_clocks = "{clocks}"\npause_ns = {pause_ns}\n'
                    + body)
    return path


def run(path: Path, out: Path) -> dict[str, dict]:
    proc = run_blklab("run", str(path), "--jobs", "1", "--no-report", "--out", str(out))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    cells = cells_of(out)
    for cid, cell in cells.items():
        assert cell["status"] == "ok", (cid, cell["error"])
    return cells


def assert_clocks_within_bounds(cell: dict, vcpus: int) -> None:
    assert cell["request"]["vcpu_quantum_ns"] == QUANTUM_NS
    clocks = cell["vcpu_clocks"]
    assert clocks["parallel"] and clocks["quantum_ns"] == QUANTUM_NS
    assert clocks["unsynced_reads"] == 0
    assert clocks["vcpus_runnable"] == 0  # read once the guest has stopped (vm.settled_vcpu_clocks)
    assert clocks["drift_max_ns"] <= QUANTUM_NS
    assert clocks["irq_late_max_ns"] <= QUANTUM_NS
    if vcpus > 1:
        assert clocks["drift_max_ns"] > 0 and clocks["sync_waits"] > 0


# fio's null engine: each "read" is fio's own bookkeeping, no system call.
def null_jobs(n: int) -> str:
    return "".join(f'\n[[job]]\nname = "cpu{i}"\nrw = "read"\nbs = "4k"\nioengine = "null"\n'
                   f'size = "1g"\nruntime = "300ms"\ntime_based = true\ncpus_allowed = "{i}"\n'
                   for i in range(n))


NULL_DEVICE = device("d0", "nvme", "zero-latency")


def null_ios_per_s(cell: dict) -> float:
    return sum(j["read"]["iops"] for j in cell["workload"]["jobs"])


@pytest.fixture(scope="module")
def cpu_work(built, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("vcpu-work")
    out = {}
    for clocks, counts in (("parallel", (1, 2, 4)), ("shared", (1, 2))):
        for n in counts:
            s = scenario(tmp / f"{clocks}{n}.toml", NULL_DEVICE + null_jobs(n), n, clocks,
                         extra='workload = "fio"\n')
            (cell,) = run(s, tmp / f"{clocks}{n}").values()
            out[clocks, n] = null_ios_per_s(cell)
    print({f"{c} x{n}": round(v) for (c, n), v in out.items()})
    return out


def test_n_vcpus_do_n_times_the_work_in_the_same_virtual_time(cpu_work):
    one = cpu_work["parallel", 1]
    for n in (2, 4):
        assert cpu_work["parallel", n] / one == pytest.approx(n, rel=0.01), n


def test_shared_clocks_share_one_instruction_stream(cpu_work):
    """What the test above would see if the clocks were not parallel: two
    jobs on two vCPUs of one instruction stream have that stream between
    them, so they do about what one does (a little more: one vCPU also
    switched between each job and fio's own threads), far from twice."""
    assert cpu_work["shared", 2] / cpu_work["shared", 1] < 1.5


def test_eight_vcpus_switching_schedulers_under_load(built, tmp_path):
    body = (device("nvme0", "nvme", "samsung-970evoplus-1t", size_gib=8)
            + job("rw", "randrw", "400ms", iodepth=16, rwmixread=70))
    s = scenario(tmp_path / "smp8.toml", body, 8, schedulers='["mq-deadline"]',
                 extra='switch_schedulers = ["mq-deadline", "kyber", "bfq", "none"]\n'
                       "switch_interval_ms = 50\n")
    (cell,) = run(s, tmp_path / "run").values()
    run_dir = tmp_path / "run"
    console = (run_dir / cell["files"]["console_log"]).read_text()
    assert "smp: Brought up 1 node, 8 CPUs" in console
    assert "clocksource: Switched to clocksource tsc" in console
    assert "tsc=reliable" not in " ".join(cell["host"]["qemu_cmdline"])
    trouble = [line for line in console.splitlines() if TROUBLE.search(line)]
    assert not trouble, trouble
    # Linux's warp check (arch/x86/kernel/tsc_sync.c) ran against each CPU
    # brought up and found no TSC reading earlier than one read before.
    for n in range(1, 8):
        assert f"TSC synchronization [CPU#0 -> CPU#{n}]: passed" in console, n
    switches = (run_dir / cell["files"]["switches.txt"]).read_text()
    assert len([ln for ln in switches.splitlines() if not ln.startswith("#")]) >= 4
    assert_clocks_within_bounds(cell, 8)
    assert cell["in_effect"]["queue"]["nr_hw_queues"] == "8"


@pytest.mark.parametrize("vcpus", [1, 2, 4, 8])
def test_same_bytes_idle_and_loaded(built, tmp_path, vcpus):
    body = (device("nvme0", "nvme", "samsung-970evoplus-1t", size_gib=1)
            + job("rw", "randrw", "100ms", iodepth=8, rwmixread=70))
    s = scenario(tmp_path / "det.toml", body, vcpus, schedulers='["mq-deadline"]')
    idle = run(s, tmp_path / "idle")
    with cpu_hog():
        busy = run(s, tmp_path / "busy")
    assert_same_cells(idle, busy, (tmp_path / "idle", tmp_path / "busy"))
    for cell in idle.values():
        assert_clocks_within_bounds(cell, vcpus)


RATES = (0.5, 1, 2.5)
SERVICE_NS = {"floor": 10_000, "slow": 1_000_000}


def mean_read_ns(cell: dict) -> float:
    (row,) = [r for r in cell["summary"] if r["direction"] == "read"]
    return row["clat_mean_ns"]


@pytest.mark.parametrize("rate", RATES)
def test_latency_minus_the_floor_is_the_models_time(built, tmp_path, rate):
    body = (device("floor", "nvme", "fixed-10us")
            + device("slow", "nvme", f"{REPO}/tests/profiles/fixed-1000us.toml")
            + job("qd1", "randread", "200ms", iodepth=1, ioengine="psync"))
    cells = run(scenario(tmp_path / "fid.toml", body, 2, rate=rate), tmp_path / "run")
    for cell in cells.values():
        assert_clocks_within_bounds(cell, 2)
        cmdline = cell["host"]["qemu_cmdline"]
        # PAUSE one instruction (pause_ns = 0), the default preset's event
        # times: in both devices' floors alike.
        preset = cpus.presets()[cpus.DEFAULT_CPU]
        events = "".join(f",{k[:-3]}={getattr(preset, k)}" for k in cpus.EVENT_KEYS
                         if getattr(preset, k))
        assert cmdline[cmdline.index("-icount") + 1] == \
            f"rate={rate:g},sleep=off,parallel=on,quantum={QUANTUM_NS}{events}"
    floor = mean_read_ns(cells["floor.none.r0"]) - SERVICE_NS["floor"]
    slow = mean_read_ns(cells["slow.none.r0"]) - floor
    print(f"rate {rate}, 2 vCPUs, parallel clocks: floor {floor:.0f} ns; "
          f"1000 us device minus the floor {slow:.0f} ns")
    assert slow == pytest.approx(SERVICE_NS["slow"], rel=0.005)
    assert json.loads((tmp_path / "run" / "manifest.json").read_text())["vcpu_clocks"] == \
        "parallel"
