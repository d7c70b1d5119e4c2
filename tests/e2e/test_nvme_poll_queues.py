"""[guest] nvme_poll_queues: the nvme driver's poll queues, end to end.

One vCPU, fio, an NVMe on the fixed-10us profile (its completion comes
after the reading thread would have slept, as on a real drive), `[queue]
io_poll = "1"`, and two QD1 4 KiB random-read jobs over io_uring one after
the other: one with hipri (polled completions), one without.

- With nvme_poll_queues = 1 the kernel has a poll queue: the NVMe's blk-mq
  has two hardware queues on one CPU (the default map's and the poll
  map's), the io_poll write is taken (the guest's init fails the cell on
  a refused write), and the polled job's reads complete
  sooner than the interrupt-driven job's: polling skips the interrupt, the
  sleep and the wake-up (nvme_poll() reaps the completion on the
  submitting CPU).
- With nvme_poll_queues = 0 (`--guest`), the same file's io_poll write is
  refused by the kernel (queue_poll_store() wants a poll queue), so the
  cell fails and says so: the key, not the hipri option, makes the polled
  path.
"""

import json

from conftest import cells_of, device, run_blklab

SCENARIO = ('[scenario]\nschedulers = ["none"]\nmode = "deterministic"\nworkload = "fio"\n'
            'timeout_s = 900\n[guest]\nvcpus = 1\nnvme_poll_queues = 1\n'
            '[queue]\nio_poll = "1"\n'
            + device("d", "nvme", "fixed-10us")
            + ''.join(f'\n[[job]]\nname = "{name}"\nrw = "randread"\nbs = "4k"\niodepth = 1\n'
                      f'ioengine = "io_uring"\nhipri = {hipri}\ndirect = true\n'
                      f'{delay}runtime = "100ms"\ntime_based = true\n'
                      for name, hipri, delay in (("polled", "true", ""),
                                                 ("irq", "false", 'startdelay = "150ms"\n'))))


def test_poll_queues_make_hipri_reads_polled(built, tmp_path):
    s = tmp_path / "poll.toml"
    s.write_text(SCENARIO)
    out = tmp_path / "poll"
    proc = run_blklab("run", str(s), "--no-report", "--out", str(out))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert json.loads((out / "manifest.json").read_text())["nvme_poll_queues"] == 1
    (cell,) = cells_of(out).values()
    assert cell["status"] == "ok", cell["error"]
    assert cell["request"]["nvme_poll_queues"] == 1
    assert "nvme.poll_queues=1" in " ".join(cell["host"]["qemu_cmdline"])
    # The guest wrote io_poll = 1 (a refused write fails the cell, below).
    assert cell["request"]["tunables"] == {"io_poll": "1"}
    assert cell["in_effect"]["queue"]["nr_hw_queues"] == "2"
    lat = {j["jobname"]: j["read"]["lat_ns"]["mean"] for j in cell["workload"]["jobs"]}
    assert all(j["read"]["total_ios"] > 1000 for j in cell["workload"]["jobs"])
    assert lat["polled"] < lat["irq"], lat

    off = tmp_path / "no-poll"
    proc = run_blklab("run", str(s), "--guest", "nvme_poll_queues=0", "--no-report",
                      "--out", str(off))
    assert proc.returncode != 0
    (cell,) = cells_of(off).values()
    assert cell["status"] == "failed"
    assert "io_poll" in cell["error"] and "kernel refused" in cell["error"], cell["error"]
