"""Under icount the guest boots with 1, 2 and 4 vCPUs and runs I/O on
model-driven NVMe (one hardware queue per vCPU) and AHCI with no timeout,
reset or I/O error in its log."""

import re

import pytest

from conftest import cells_of, device, mixed, run_blklab

# What the Linux NVMe and libata drivers print when a command is late or fails.
TROUBLE = re.compile(r"timeout|timed out|I/O error|exception Emask|hard resetting link|"
                     r"resetting controller|Abort status|failed command", re.I)

DEVICES = (device("nvme0", "nvme", "samsung-970evoplus-1t")
           + device("sata0", "ahci-hd", "hdd-7200-desktop-1t"))

JOB = mixed("300ms", iodepth=16, ioengine="libaio")


@pytest.mark.parametrize("vcpus", [1, 2, 4])
def test_icount_boot_and_io(built, tmp_path, vcpus):
    scenario = tmp_path / f"smp{vcpus}.toml"
    scenario.write_text(f'[scenario]\nschedulers = ["mq-deadline"]\nmode = "deterministic"\n'
                        f'timeout_s = 900\n[guest]\nvcpus = {vcpus}\n' + DEVICES + JOB)
    proc = run_blklab("run", str(scenario), "--out", str(tmp_path / "run"))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    cells = cells_of(tmp_path / "run")
    for cid, cell in cells.items():
        console = (tmp_path / "run" / cell["files"]["console_log"]).read_text()
        trouble = [line for line in console.splitlines() if TROUBLE.search(line)]
        assert not trouble, f"{cid}: {trouble}"
        assert cell["guest"]["cpus"] == str(vcpus)
        reads, writes = cell["devmodel"]["service_ns"]["read"], cell["devmodel"]["service_ns"]["write"]
        assert reads["count"] > 0 and writes["count"] > 0, cid
    nvme = cells["nvme0.mq-deadline.r0"]
    assert nvme["in_effect"]["queue"]["nr_hw_queues"] == str(vcpus)


# The same guest with another memory size boots on another virtual timeline, on
# which a read waited out a round-robin turn: an IPI one vCPU sends the
# other is taken when the sender's turn ends, up to half the 100 ms kick
# period later. Known to fail with unbounded turns (the shared clock's
# default); vcpu_quantum_ns bounds them (-icount quantum=, 0034) and the
# read then waits no longer than on a timeline without it. Which memory
# sizes meet it moves with every change to the guest's instructions before
# the workload (the image's init, the kernel, a device's registers), so the
# sizes are searched again after each such change, one restored cell
# per size: `tests/e2e/stall-search.py 520 536 568 632 712 760 824 840 920
# 984 1000 1048 1080` (the init starting a process only where it must after
# the job point) found the slowest read at 12.0 ms at 568 MiB, 2.0 ms at
# 824, 1.1 ms at 840, and 0.54-0.56 ms at the rest (520 MiB, 10.1 ms on the
# image before, 0.54 ms); with `--quantum 100000` 568 MiB's slowest read was
# 0.58 ms. So the stall is shown at 568 MiB, the check of 0019 (the slowest
# read under 5 ms) runs at 520 MiB, and the bounded turns at 568 MiB. The
# git history of this comment holds the earlier searches.
STALLS_WITH_568_MIB = pytest.mark.xfail(
    strict=True, reason="a read waits 12.0 ms at 568 MiB: IPIs to the other vCPU are taken "
    "late, when the sender's round-robin turn ends")


def stall_scenario(memory_mib: int, quantum_ns: int | None) -> str:
    """The stall's guest (see test_two_vcpus_do_not_stall_each_other):
    QD32 random reads for 1 s on the Optane-class drive."""
    return ('[scenario]\nschedulers = ["mq-deadline"]\nmode = "deterministic"\n'
            f'timeout_s = 900\n[guest]\nvcpus = 2\nmemory_mib = {memory_mib}\n'
            'kernel = "6.1-amd64"\ncpu = "icelake-sp-axboe2020"\ncpu_rate = 1\n'
            'vcpu_clocks = "shared"\npause_ns = 0\n'
            + (f"vcpu_quantum_ns = {quantum_ns}\n" if quantum_ns else "")
            + '[[device]]\nname = "optane"\nkind = "nvme"\nbacking = "null"\n'
            'profile = "optane-p5800x-800g"\nsize_gib = 64\n'
            '[[job]]\nname = "r"\nrw = "randread"\nbs = "4k"\niodepth = 32\n'
            'ioengine = "io_uring"\ndirect = true\nruntime = "1s"\ntime_based = true\n')


@pytest.mark.parametrize("memory_mib, quantum_ns", [
    (520, None), pytest.param(568, None, marks=STALLS_WITH_568_MIB), (568, 100_000)])
def test_two_vcpus_do_not_stall_each_other(built, tmp_path, memory_mib, quantum_ns):
    """With two vCPUs a guest's spin-wait must not keep its turn while the
    vCPU it waits for cannot run. Before QEMU 0019 a vCPU spinning in
    cpu_relax() kept the rest of its round-robin share (up to 50 ms, half
    the kick timer's period), and this job's reads stopped for up to 50 ms
    about a dozen times in 2 s (p99.9 50.5 ms); with one vCPU, or with 0019,
    the slowest read takes under 0.6 ms. The bound is virtual time, so load
    does not move it. The guest is the one every run had before the
    calibrated defaults: 6.1, rate 1 on the shared clock, PAUSE one
    instruction (parallel clocks have no round-robin turns to keep; the
    timelines above are 6.1's)."""
    scenario = tmp_path / "pause.toml"
    scenario.write_text(stall_scenario(memory_mib, quantum_ns))
    proc = run_blklab("run", str(scenario), "--out", str(tmp_path / "run"), "--no-report")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (cell,) = cells_of(tmp_path / "run").values()
    cmdline = cell["host"]["qemu_cmdline"]
    icount = cmdline[cmdline.index("-icount") + 1]
    assert icount == "rate=1,sleep=off" + (f",quantum={quantum_ns}" if quantum_ns else "")
    (job,) = cell["workload"]["jobs"]
    clat = job["read"]["clat_ns"]
    assert job["read"]["total_ios"] > 30000
    assert clat["max"] < 5_000_000, f"a read took {clat['max'] / 1e6:.1f} ms"
