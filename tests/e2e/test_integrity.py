"""Data integrity end to end: scenarios/data-integrity.toml's short form
(`blklab run --short`): blkgen's verify jobs write, trim, flush and read back
on a used TLC NVMe drive (GC running), a 7200 rpm disk behind AHCI and an
NVMe cloud volume, all file-backed, so what the guest reads is what the
device stored. Every block must check out, the read-back must cover every
block written, the trims and flushes must reach the device, GC must run.

That the check can fail: the same kind of job on a device that drops every
write (null backing) must fail its cell with mismatches, and `blklab check`
must then fail. workload/e2e_features_test.cc injects corruption on the
host, trimmed blocks included.

The short form is run here, not in test_scenarios.py (3 devices on three
seeds, 9 cells, --jobs 2);
the wall time is printed."""

import time
import tomllib
from pathlib import Path

import pytest

from conftest import REPO, cells_of, run_blklab

SCENARIO = "scenarios/data-integrity.toml"
DEVICES = {"tlc", "hdd", "gp3"}
SEEDS = set(tomllib.loads((REPO / SCENARIO).read_text())["short"]["seeds"])


@pytest.fixture(scope="module")
def run_dir(built, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("integrity") / "run"
    started = time.monotonic()
    proc = run_blklab("run", "--short", "--jobs", "2", "--out", str(out), SCENARIO,
                      timeout=3600)
    print(f"data-integrity: short form in {time.monotonic() - started:.0f} s wall")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return out


@pytest.fixture(scope="module")
def cells(run_dir) -> dict[str, dict]:
    """Every cell by id: each device on each of the short form's seeds."""
    by_id = cells_of(run_dir)
    assert {(c["request"]["device"]["name"], c["request"]["seed"]) for c in by_id.values()} == \
        {(d, s) for d in DEVICES for s in SEEDS}
    return by_id


def jobs_of(cell: dict) -> dict[str, dict]:
    return {j["jobname"]: j for j in cell["workload"]["jobs"]}


def test_every_block_checks_out(cells):
    for name, cell in cells.items():
        assert cell["status"] == "ok", (name, cell["error"])
        assert cell["guest"]["kernel_warnings"] == [], name
        for job_name, job in jobs_of(cell).items():
            v = job["blkgen"]["verify"]
            assert job["error"] == 0, (name, job_name, job["blkgen"]["error_text"])
            assert v["mismatches"] == 0 and v["first_mismatches"] == [], (name, job_name)


def test_read_back_covers_every_block_written(cells):
    for name, cell in cells.items():
        jobs = jobs_of(cell)
        # bulk: random writes with the random map visit every block once per
        # pass and io_size is more than a pass, so every block of the region
        # was written and the verify phase reads all of them.
        bulk = jobs["bulk"]
        settings, v = bulk["blkgen"]["settings"], bulk["blkgen"]["verify"]
        blocks = settings["region_bytes"] // settings["bs"][1]
        assert bulk["write"]["total_ios"] > blocks, name
        assert v["verify_phase_reads"] == blocks, name
        assert v["checked"] == blocks, name  # no reads before the verify phase
        print(f"{name}: bulk verified {blocks * settings['bs'][1] >> 20} MiB "
              f"({bulk['write']['io_bytes'] >> 20} MiB written, "
              f"{bulk['trim']['io_bytes'] >> 20} MiB trimmed)")
        # hot: 1 MiB written thousands of times at random; reads in between
        # are checked against the last write or trim of their block. The
        # verify phase reads back every block holding a write (a trim keeps
        # it). norandommap draws each offset afresh, so a block misses all W
        # writes with probability (1 - 1/blocks)^W: about 0.2 blocks of 256
        # a cell for W = 1800, and more than 4 with probability under 1e-5
        # (Poisson). Seed 2 leaves one block unwritten.
        hot = jobs["hot"]
        settings, v = hot["blkgen"]["settings"], hot["blkgen"]["verify"]
        blocks = settings["region_bytes"] // settings["bs"][1]
        expected_missed = blocks * (1 - 1 / blocks) ** hot["write"]["total_ios"]
        assert expected_missed < 0.5, (name, expected_missed)
        assert blocks - 4 <= v["verify_phase_reads"] <= blocks, name
        main_checked = v["checked"] - v["verify_phase_reads"]
        assert main_checked + v["unchecked"] == hot["read"]["total_ios"], name
        assert main_checked > hot["read"]["total_ios"] * 3 // 4, name


def test_trimmed_blocks_read_back_as_zeros(cells):
    # File backings are opened discard=unmap: a trim punches a hole in the
    # file. The jobs run with trim_verify_zero = 1, so anything else would
    # already be a mismatch; the counts say the check saw trimmed blocks.
    for name, cell in cells.items():
        for job_name, job in jobs_of(cell).items():
            t = job["blkgen"]["verify"]["trimmed"]
            assert t["checked"] > 0, (name, job_name)
            assert t["zeros"] == t["checked"], (name, job_name, t)
            print(f"{name} {job_name}: {t['checked']} trimmed blocks read back: "
                  f"{t['zeros']} zeros, {t['unchanged']} as written")


def test_trims_and_flushes_reached_the_device(cells):
    for name, cell in cells.items():
        jobs = list(jobs_of(cell).values())
        trims = sum(j["trim"]["total_ios"] for j in jobs)
        syncs = sum(j["sync"]["total_ios"] for j in jobs)
        assert trims > 0 and syncs > 0, name
        disk = cell["disk_stats"]["delta"]
        # One BLKDISCARD bio per trim: requests plus the bios merged into them.
        assert disk["discard_ios"] + disk["discard_merges"] == trims, name
        # Flushes: the jobs' syncs (the kernel may merge concurrent ones) and
        # the fsync each job makes before its read-back.
        assert 0 < disk["flush_ios"] <= syncs + len(jobs), name
        model = cell["devmodel"]
        if model["model"] == "cloud":
            assert model["requests"] >= disk["read_ios"] + disk["write_ios"], name
            continue
        # The model sees each trim request (NVMe DSM, ATA DSM TRIM) and flush.
        assert model["trims"] == disk["discard_ios"], name
        assert model["flushes"] >= disk["flush_ios"] > 0, name


def test_gc_ran_on_the_tlc_drive(cells):
    tlc = {cid: c for cid, c in cells.items() if c["request"]["device"]["name"] == "tlc"}
    assert len(tlc) == len(SEEDS)
    for cid, cell in tlc.items():
        model = cell["devmodel"]
        assert model["model"] == "ssd"
        assert model["gc_runs"] > 0 and model["gc_units_moved"] > 0, (cid, model)
        assert model["trimmed_units"] > 0, cid
        print(f"{cid}: {model['gc_runs']} GC runs moved {model['gc_units_moved']} units, "
              f"WAF {model['waf']:.1f}")


def test_expectations_hold(run_dir):
    proc = run_blklab("check", str(run_dir))
    print(proc.stdout)
    assert proc.returncode == 0, proc.stdout + proc.stderr


# A device whose data is known to be wrong: null backing drops every write
# and reads zeros. The verify job must report every written block that was
# not trimmed (a trimmed one may read as zeros), the cell must fail, and
# `blklab check` must say so.
DROPS_WRITES = """
[scenario]
schedulers = ["none"]
mode = "deterministic"
timeout_s = 900

[[device]]
name = "nvme0"
kind = "nvme"
backing = "null"
size_gib = 1
profile = "zero-latency"

[[job]]
name = "bulk"
rw = "randwrite"
bs = "4k"
size = "1m"
io_size = "2m"
iodepth = 8
ioengine = "io_uring"
direct = true
verify = "crc32c"
trim_percentage = 25
trim_backlog = 16
trim_verify_zero = 0
fsync = 64

[[expect]]
what = "the verify job wrote"
metric = "iops"
direction = "write"
left = {job = "bulk"}
above = 0
"""


def test_verify_fails_on_a_device_that_drops_writes(built, tmp_path):
    scenario = tmp_path / "drops.toml"
    scenario.write_text(DROPS_WRITES)
    out = tmp_path / "run"
    proc = run_blklab("run", str(scenario), "--out", str(out), timeout=1200)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    (cell,) = cells_of(out).values()
    assert cell["status"] == "failed"
    assert "blkgen exited 1" in cell["error"] and "verify mismatch" in cell["error"], \
        cell["error"]
    (job,) = cell["workload"]["jobs"]
    v = job["blkgen"]["verify"]
    assert v["verify_phase_reads"] == 256
    assert v["trimmed"]["zeros"] == v["trimmed"]["checked"] > 0
    assert v["mismatches"] == 256 - v["trimmed"]["checked"]
    assert len(v["first_mismatches"]) == 16
    assert all(m["found"]["magic"] == 0 and not m["trimmed"] for m in v["first_mismatches"])
    check = run_blklab("check", str(out))
    assert check.returncode == 1 and "ERROR" in check.stdout, check.stdout
