"""Honest verdicts end to end: a short form whose known failure fails
(KNOWN-FAIL), whose known failure holds (UNEXPECTED-PASS: check exits 1),
whose full_only expectation is counted as not run, each decided on two
seeds; and the notes that change what a cell means (host timing on this
QEMU, fio's default engine under iodepth 32) on the run's console."""

import re

import pytest

from conftest import cells_of, run_blklab

SCENARIO = """
[scenario]
schedulers = ["none", "mq-deadline"]
seeds = [1, 2]
mode = "deterministic"
timeout_s = 600

[short]
schedulers = ["none"]
runtime = "200ms"

[guest]
vcpus = 1
memory_mib = 512

[[device]]
name = "nvme0"
kind = "nvme"
backing = "null"
profile = "fixed-10us"

[[job]]
name = "r"
rw = "randread"
bs = "4k"
iodepth = 4
ioengine = "io_uring"
direct = true
runtime = "1s"
time_based = true

# Every read takes the profile's 10 us, so no p99 is below 10 us: this
# known failure fails.
[[expect]]
what = "p99 below the device's own 10 us"
metric = "clat_p99_ns"
left = {scheduler = "none"}
below = 10000
known_failure = "a 10 us device cannot complete a read in less"

# A device that completes reads completes some: the mark is wrong, and
# the check says so.
[[expect]]
what = "none completes reads"
metric = "iops"
left = {scheduler = "none"}
above = 0
known_failure = "marked by mistake"

[[expect]]
what = "mq-deadline completes reads"
metric = "iops"
left = {scheduler = "mq-deadline"}
above = 0
full_only = true
"""


@pytest.fixture(scope="module")
def verdict_run(built, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("verdicts")
    scenario = tmp / "verdicts.toml"
    scenario.write_text(SCENARIO)
    out = tmp / "run"
    proc = run_blklab("run", "--short", "--jobs", "2", "--out", str(out), str(scenario))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc, out


def test_known_failure_unexpected_pass_and_not_run_are_reported(verdict_run):
    proc, out = verdict_run
    assert sorted(cells_of(out)) == ["nvme0.none.seed=1.r0", "nvme0.none.seed=2.r0"]
    check = run_blklab("check", str(out))
    print(check.stdout)
    assert check.returncode == 1  # the unexpected pass
    assert re.search(r"KNOWN-FAIL +p99 below the device's own 10 us \[nvme0\]", check.stdout)
    assert re.search(r"UNEXPECTED-PASS +none completes reads \[nvme0\]", check.stdout)
    assert "remove its known_failure mark" in check.stdout
    assert re.search(r"NOT-RUN +mq-deadline completes reads \[every device\]", check.stdout)
    # Decided on each seed, and each seed's value is shown.
    assert re.search(r"seed 1: [\d.e+]+ fails, seed 2: [\d.e+]+ fails; spread", check.stdout)
    assert ("expectations: 0 hold, 0 fail, 1 known failures, 1 unexpected passes, "
            "1 not run in this form, 0 errors (3 expectation outcomes)") in check.stdout
    # The run's own output counts them too, and the report shows them.
    assert "1 unexpected passes" in proc.stdout
    html = (out / "report.html").read_text()
    assert 'class="l UNEXPECTED-PASS"' in html and 'class="l KNOWN-FAIL"' in html


def test_host_timing_is_recorded_as_not_reported_or_checked(verdict_run):
    """Today's QEMU has no rejected / host_timed counters: each cell says
    so rather than reading zero; a QEMU that has them gets them checked."""
    proc, out = verdict_run
    for cell in cells_of(out).values():
        timing = cell["model_timing"]
        if timing["reported"]:
            assert timing["rejected"] == 0 and timing["host_timed"] == 0
        else:
            assert timing["missing"] == ["rejected", "host_timed"]
            assert "note: every cell: host-timed completions not reported" in proc.stdout
        assert cell["host"]["halt"] == "clean"


def test_fio_default_engine_depth_is_on_the_console(built, tmp_path):
    """A customer's command line with iodepth=32 and no ioengine runs fio's
    default, psync, at depth 1; the run says so."""
    scenario = tmp_path / "fio.toml"
    scenario.write_text(SCENARIO.split("[[job]]")[0].replace('seeds = [1, 2]', 'seeds = [1]')
                        .replace('schedulers = ["none", "mq-deadline"]', 'schedulers = ["none"]')
                        .replace("[scenario]\n", '[scenario]\nworkload = "fio"\n') + """
[[job]]
name = "customer"
rw = "randread"
bs = "4k"
iodepth = 32
direct = true
runtime = "200ms"
time_based = true
""")
    out = tmp_path / "run"
    proc = run_blklab("run", "--out", str(out), str(scenario))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (cell,) = cells_of(out).values()
    (note,) = cell["workload_notes"]
    assert note.startswith("job 'customer': iodepth=32 asked, but it names no ioengine, so fio "
                           "ran its default, psync")
    assert f"note: nvme0.none.r0: fio: {note}" in proc.stdout
