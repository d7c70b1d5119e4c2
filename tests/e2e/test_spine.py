"""The spine end to end: four schedulers on NVMe and on an IDE hard disk,
a failing cell, resume, and the command line's errors."""

import json
import re

import pytest

from browser import open_page
from conftest import (DEFAULT_IMAGE, DEFAULT_KERNEL, REPO, SPINE_DEVICES, SPINE_JOB, cells_of,
                      nvme, qemu_pids, run_blklab)
from blklab import results

NVME = nvme(4)
DEVICES = SPINE_DEVICES
JOB = SPINE_JOB


def test_every_cell_ok_and_valid(four_schedulers):
    proc, out = four_schedulers
    assert proc.returncode == 0, proc.stdout + proc.stderr
    cells = cells_of(out)
    assert len(cells) == 8
    for cid, c in cells.items():
        results.validate(c)
        assert c["status"] == "ok", (cid, c["error"])


def test_scheduler_in_effect_is_the_one_asked(four_schedulers):
    _, out = four_schedulers
    for c in cells_of(out).values():
        assert c["in_effect"]["scheduler"] == c["request"]["scheduler"]
        assert c["request"]["scheduler"] in c["cell_id"]


def test_io_happened(four_schedulers):
    _, out = four_schedulers
    for c in cells_of(out).values():
        (row,) = c["summary"]
        assert row["direction"] == "read" and row["total_ios"] > 100
        assert row["iops"] > 0
        assert 0 < row["clat_p50_ns"] <= row["clat_p99_ns"] <= row["clat_p99.9_ns"]
        # The kernel counted the reads too (the workload bypasses the page
        # cache); adjacent random reads may merge into one request.
        delta = c["disk_stats"]["delta"]
        assert delta["read_ios"] + delta["read_merges"] >= row["total_ios"]
        assert delta["read_sectors"] * 512 >= row["total_ios"] * 4096
        assert c["disk_stats"]["delta"]["write_ios"] == 0


def test_guest_facts(four_schedulers):
    _, out = four_schedulers
    image = json.loads((DEFAULT_IMAGE / "image.json").read_text())
    for c in cells_of(out).values():
        assert c["guest"]["kernel_release"] == image["kernel_release"]
        assert c["guest"]["cpus"] == "2"
        kind = c["request"]["device"]["kind"]
        queue = c["in_effect"]["queue"]
        default = c["guest"]["device"]["default_scheduler"]
        # hdd0's own [queue] attribute reached its cells only
        assert queue["read_ahead_kb"] == ("128" if kind == "nvme" else "256")
        if kind == "nvme":
            assert queue["rotational"] == "0"
            assert int(queue["nr_hw_queues"]) == 2  # one per vCPU
            assert default.startswith("[none]")  # multi-queue: none by default
        else:
            assert queue["rotational"] == "1"  # rotation_rate reached the guest
            assert queue["nr_hw_queues"] == "1"
            assert "[mq-deadline]" in default  # single queue: mq-deadline by default
        if c["request"]["scheduler"] != "none":
            # Linux sets nr_requests to 2 x min(hardware depth, 128) with a scheduler.
            assert int(queue["nr_requests"]) > 0
            assert c["in_effect"]["iosched"]


def test_table_and_manifest(four_schedulers):
    proc, out = four_schedulers
    for word in ("nvme0 (nvme, null)", "hdd0 (ide-hd, file)", "none.r0", "mq-deadline.r0",
                 "kyber.r0", "bfq.r0", "p99.9 us"):
        assert word in proc.stdout
    m = json.loads((out / "manifest.json").read_text())
    assert m["mode"] == "realtime" and m["accel"] == "tcg"
    assert m["image"]["kernel_package_version"]
    # The source version the build pinned (qemu-patches/build-qemu.sh), with its Debian revision.
    pin = re.search(r'^qemu_pin="([^"]+)"', (REPO / "qemu-patches/build-qemu.sh").read_text(), re.M)
    assert m["qemu"]["qemu_source"]["version"] == pin.group(1)
    assert len(m["scenario"]["sha256"]) == 64
    assert sorted(m["cells"]) == sorted(cells_of(out))


def test_failed_cells_and_resume(built, tmp_path):
    # Values the guest's kernel refuses: validation checks attribute names
    # against the kernel (tests/bad-input), values only the kernel can judge.
    scenario = tmp_path / "bad.toml"
    scenario.write_text("""
[scenario]
mode = "realtime"
schedulers = ["none", "mq-deadline", "kyber"]
timeout_s = 300
[iosched.mq-deadline]
read_expire = "abc"
[iosched.kyber]
read_lat_nsec = -1
[[device]]
name = "nvme0"
kind = "nvme"
backing = "null"
size_gib = 1
[[job]]
name = "r"
rw = "randread"
bs = "4k"
iodepth = 4
runtime = "1s"
time_based = true
direct = true
[[expect]]
what = "none completes reads"
metric = "iops"
left = {scheduler = "none"}
above = 0
[[expect]]
what = "kyber reads faster than none"
metric = "clat_p99_ns"
left = {scheduler = "kyber"}
op = "<"
right = {scheduler = "none"}
""")
    out = tmp_path / "run"
    proc = run_blklab("run", str(scenario), "--accel", "tcg", "--out", str(out))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    cells = cells_of(out)
    assert cells["nvme0.none.r0"]["status"] == "ok"
    bad = cells["nvme0.mq-deadline.read_expire=abc.r0"]
    assert bad["status"] == "failed"
    assert "tunable queue/iosched/read_expire=abc: kernel refused: Invalid argument" in bad["error"]
    # kyber_lat_store: kstrtoull refuses a sign.
    negative = cells["nvme0.kyber.read_lat_nsec=-1.r0"]
    assert negative["status"] == "failed"
    assert "tunable queue/iosched/read_lat_nsec=-1: kernel refused: Invalid argument" \
        in negative["error"]
    for c in (bad, negative):
        results.validate(c)
        assert (out / c["files"]["console_log"]).read_text()
        assert "qemu-system-x86_64" in (out / c["files"]["cmdline"]).read_text()
    assert "FAILED" in proc.stdout

    assert re.search(r"PASS +none completes reads \[nvme0\]", proc.stdout)
    check = run_blklab("check", str(out))
    assert check.returncode == 1
    assert re.search(r"ERROR +kyber reads faster than none \[nvme0\]", check.stdout)
    assert "1 failed cell(s)" in check.stdout
    assert ("expectations: 1 hold, 0 fail, 0 known failures, 0 unexpected passes, "
            "0 not run in this form, 1 errors (2 expectation outcomes)") in check.stdout
    page = open_page(out / "report.html", tmp_path / "profile")
    assert page.console == []
    assert "Failed cells" in page.dom and "Invalid argument" in page.dom

    ok_file = out / "cell-nvme0.none.r0.json"
    before = ok_file.stat().st_mtime_ns
    proc = run_blklab("run", str(scenario), "--accel", "tcg", "--out", str(out))
    assert proc.returncode == 1
    assert "resuming" in proc.stderr and "1 of 3 cells done" in proc.stderr
    assert proc.stderr.count("failed (") == 2  # only the two failed cells ran again
    assert ok_file.stat().st_mtime_ns == before


def test_fio_as_the_workload(built, tmp_path):
    scenario = tmp_path / "fio.toml"
    scenario.write_text('[scenario]\nmode = "realtime"\nschedulers = ["bfq"]\nworkload = "fio"\n'
                        'blktrace = true\n' +
                        NVME +
                        JOB.replace('"2s"', '"1s"'))
    out = tmp_path / "run"
    proc_run = run_blklab("run", str(scenario), "--accel", "tcg", "--out", str(out))
    assert proc_run.returncode == 0, proc_run.stdout + proc_run.stderr
    (c,) = cells_of(out).values()
    results.validate(c)
    assert c["workload"]["fio version"].startswith("fio-")
    assert c["in_effect"]["scheduler"] == "bfq"
    assert c["summary"][0]["total_ios"] > 0
    # blktrace saw the requests and btt's figures reached the result.
    btt = c["btt"]
    assert btt["q2c_n"] >= c["summary"][0]["total_ios"] * 0.9
    assert 0 < btt["d2c_avg_s"] <= btt["q2c_avg_s"]
    assert btt["q2d_avg_s"] >= 0 and btt["merge_ratio"] >= 1.0
    # biolatency's histogram from the same trace: each request from its
    # issue (D) to its completion (C), as btt's D2C pairs them.
    proc = run_blklab("biolatency", str(out), "--json")
    assert proc.returncode == 0, proc.stderr
    (hists,) = json.loads(proc.stdout).values()
    (reads,) = [h for h in hists if h["direction"] == "read"]
    assert reads["count"] == btt["d2c_n"]
    # A realtime guest's clock can go back on a CPU (one event stamped 42 ms
    # early in a CI run); btt pairs events by time, so its D2C is then not
    # sound, and the cell says so.
    if btt["time_reversals"]:
        assert "blktrace events are stamped earlier" in proc_run.stderr
    else:
        assert abs(reads["mean_us"] - btt["d2c_avg_s"] * 1e6) <= 0.01 * btt["d2c_avg_s"] * 1e6


@pytest.mark.parametrize("content,words", [
    (None, "no such scenario file"),
    ("[scenario]\nschedulers = [\"cfq\"]\n", "scenario.schedulers: 'cfq' was removed"),
    ("[[device]]\nname = \"d\"\nkind = \"floppy\"\n[[job]]\nname = \"j\"\n",
     "device[0].kind: 'floppy' is not one of"),
])
def test_cli_rejects_bad_scenarios(tmp_path, content, words):
    path = tmp_path / "s.toml"
    if content is not None:
        path.write_text(content)
    out = tmp_path / "results"
    proc = run_blklab("run", str(path), "--out", str(out))
    assert proc.returncode == 2
    assert str(path) in proc.stderr and words in proc.stderr
    assert not out.exists()


def test_timeout_fails_the_cell_and_ends_qemu(built, tmp_path):
    scenario = tmp_path / "hang.toml"
    scenario.write_text('[scenario]\nmode = "realtime"\nschedulers = ["none"]\ntimeout_s = 30\n'
                        + NVME +
                        JOB.replace('"2s"', '"600s"'))
    out = tmp_path / "run"
    proc = run_blklab("run", str(scenario), "--accel", "tcg", "--out", str(out))
    assert proc.returncode == 1
    (c,) = cells_of(out).values()
    assert c["status"] == "failed"
    assert "did not finish within 30 s" in c["error"]
    assert "blklab: cell nvme0.none.r0" in (out / c["files"]["console_log"]).read_text()
    assert qemu_pids() == []


def test_kvm_probe_answers_within_its_timeout(built, tmp_path):
    import os
    import time

    from blklab import accel, paths

    started = time.monotonic()
    answer, fallback = accel.probe(paths.qemu_binary(), paths.image_dir(DEFAULT_KERNEL),
                                   tmp_path / "probe.json")
    # A fallback to TCG says why; KVM needs no word.
    assert (fallback == "") == (answer == "kvm") and (not fallback or "TCG, not KVM" in fallback)
    assert time.monotonic() - started < accel.PROBE_TIMEOUT_S + 30
    if os.access("/dev/kvm", os.R_OK | os.W_OK):
        # The probe booted the guest under KVM, or gave up; either way it
        # records its answer for this host boot and leaves no QEMU behind.
        assert answer in ("kvm", "tcg")
        assert json.loads((tmp_path / "probe.json").read_text())["accel"] == answer
    else:
        assert answer == "tcg"
        assert not (tmp_path / "probe.json").exists()
    assert qemu_pids("/tmp/blklab-probe-") == []


def test_every_job_runs_on_the_device(built, tmp_path):
    scenario = tmp_path / "two.toml"
    scenario.write_text('[scenario]\nmode = "realtime"\nschedulers = ["mq-deadline"]\n' + NVME + """
[[job]]
name = "reader"
rw = "randread"
bs = "4k"
iodepth = 8
ioengine = "io_uring"
direct = true
runtime = "1s"
time_based = true
[[job]]
name = "writer"
rw = "randwrite"
bs = "64k"
iodepth = 4
ioengine = "libaio"
direct = true
runtime = "1s"
time_based = true
""")
    out = tmp_path / "run"
    proc = run_blklab("run", str(scenario), "--accel", "tcg", "--out", str(out))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (c,) = cells_of(out).values()
    rows = {(s["job"], s["direction"]): s for s in c["summary"]}
    assert set(rows) == {("reader", "read"), ("writer", "write")}
    delta = c["disk_stats"]["delta"]
    assert delta["read_ios"] > 0 and delta["write_ios"] > 0
    assert delta["write_sectors"] * 512 >= rows[("writer", "write")]["total_ios"] * 65536
