"""[guest] irq_ns, syscall_ns and wake_ns: the time a vCPU spends besides
its instructions on each hardware interrupt it takes, each system call and
each wake-up from halt (QEMU's -icount irq=, syscall=, wake=,
qemu-patches/0050), end to end, on the Cascade Lake preset's rate.

What the model makes of one 4 KiB psync read at QD1 on a fixed 10 us drive
with one vCPU: the reader makes one system call (pread64) between the two
timestamps of its latency; the drive's completion is one MSI-X interrupt
(NVMe interrupt coalescing is off unless set); and while the drive works the
reader sleeps and the vCPU, with nothing else to run, halts (x86's idle is
HLT on qemu64, which has no MWAIT) and wakes for that interrupt. So each of
the three, set alone to 20 us, adds 20 us to the mean latency against the
same guest without it, within the odd timer tick that also lands in a read
(2%), and takes no time from the drive's model.

The preset's own values (irq 261 ns, syscall 78 ns) on two vCPUs under
mixed I/O give the same bytes run twice, the second time with every host
core busy: a charge falls at the instruction that took it and is taken
from the turn by count.
"""

import pytest

from conftest import cells_of, device, job, run_blklab
from test_determinism import assert_same_cells, cpu_hog

CPU = "xeon-silver-4210r"
CHARGE_NS = 20_000
EVENTS = ("irq_ns", "syscall_ns", "wake_ns")


def scenario(path, body: str, vcpus: int, **keys) -> str:
    guest = "".join(f"{k} = {v}\n" for k, v in keys.items())
    path.write_text('[scenario]\nschedulers = ["none"]\nmode = "deterministic"\n'
                    f'timeout_s = 1800\n[guest]\nvcpus = {vcpus}\nmemory_mib = 1024\n'
                    f'cpu = "{CPU}"\n{guest}' + body)
    return str(path)


def run(path: str, out) -> dict[str, dict]:
    proc = run_blklab("run", path, "--jobs", "1", "--no-report", "--out", str(out))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    cells = cells_of(out)
    for cid, cell in cells.items():
        assert cell["status"] == "ok", (cid, cell["error"])
    return cells


def read_row(cell: dict) -> dict:
    (row,) = [r for r in cell["summary"] if r["direction"] == "read"]
    return row


QD1 = device("d", "nvme", "fixed-10us") + job("qd1", "randread", "200ms", iodepth=1,
                                              ioengine="psync")


def test_each_event_adds_its_time_to_a_read(built, tmp_path):
    none = {k: 0 for k in EVENTS}
    base = run(scenario(tmp_path / "base.toml", QD1, 1, **none), tmp_path / "base")
    (base_cell,) = base.values()
    assert base_cell["request"]["cpu"] == CPU
    assert {k: base_cell["request"][k] for k in EVENTS} == none
    base_ns = read_row(base_cell)["clat_mean_ns"]
    for event in EVENTS:
        keys = dict(none, **{event: CHARGE_NS})
        (cell,) = run(scenario(tmp_path / f"{event}.toml", QD1, 1, **keys),
                      tmp_path / event).values()
        cmdline = cell["host"]["qemu_cmdline"]
        icount = cmdline[cmdline.index("-icount") + 1]
        assert icount.endswith(f",{event.removesuffix('_ns')}={CHARGE_NS}"), icount
        assert cell["request"][event] == CHARGE_NS
        added = read_row(cell)["clat_mean_ns"] - base_ns
        print(f"{event} = {CHARGE_NS}: mean read {base_ns:.0f} -> "
              f"{base_ns + added:.0f} ns (+{added:.0f})")
        assert added == pytest.approx(CHARGE_NS, rel=0.02), event
        # the drive's time is the model's, whatever the CPU spends
        assert cell["devmodel"]["service_ns"]["read"]["count"] > 0
        assert (cell["devmodel"]["service_ns"]["read"]["total"]
                / cell["devmodel"]["service_ns"]["read"]["count"]) == pytest.approx(10_000, rel=0.01)


def test_the_presets_charges_are_the_same_bytes_idle_and_loaded(built, tmp_path):
    body = (device("nvme0", "nvme", "samsung-970evoplus-1t", size_gib=1)
            + job("rw", "randrw", "100ms", iodepth=8, rwmixread=70))
    s = scenario(tmp_path / "det.toml", body, 2)
    idle = run(s, tmp_path / "idle")
    with cpu_hog():
        busy = run(s, tmp_path / "busy")
    assert_same_cells(idle, busy, (tmp_path / "idle", tmp_path / "busy"))
    for cell in idle.values():
        cmdline = cell["host"]["qemu_cmdline"]
        assert cmdline[cmdline.index("-icount") + 1].endswith(",pause=58,irq=261,syscall=78")
