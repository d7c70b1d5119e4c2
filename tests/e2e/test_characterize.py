"""blklab characterize end to end: one job of the suite run by fio in a
real guest against a profile, then set beside the reference drive's
results (tests/reference/hotcloudperf24-kyber) by --compare.

Kept cheap: one job, 200 ms of guest time with no ramp, on fixed-10us (no
SSD state to build); one cell boots once, about 35 s of host time."""

import json
import subprocess

import pytest

from conftest import REPO, cells_of, run_blklab

JOB = "read-beside-writes-max"
REFERENCE_DRIVE_DIR = REPO / "tests" / "reference" / "hotcloudperf24-kyber" / "drive_dir.py"


@pytest.fixture(scope="module")
def characterized(built, tmp_path_factory):
    out = tmp_path_factory.mktemp("characterize") / "out"
    proc = run_blklab("characterize", "fixed-10us", "--job", JOB, "--runtime", "200ms",
                      "--ramp", "0", "--scheduler", "kyber", "--out", str(out), timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return out


def test_the_job_file_ran_in_the_guest(characterized):
    (cell,) = cells_of(characterized / JOB).values()
    assert cell["status"] == "ok", cell.get("error")
    assert cell["in_effect"].get("scheduler") == "kyber"
    jobs = {j["jobname"]: j for j in cell["workload"]["jobs"]}
    assert set(jobs) == {"reader", "writer"}
    assert jobs["reader"]["read"]["total_ios"] > 0
    assert jobs["writer"]["write"]["total_ios"] > 0
    assert cell["workload"]["fio version"].startswith("fio-3.")
    assert "runtime=200ms" in (characterized / f"{JOB}.fio").read_text()


def test_compare_sets_the_cell_beside_the_reference(characterized, tmp_path):
    reference = tmp_path / "drive"  # the reference drive's rep_0
    subprocess.run(["/usr/bin/python3", str(REFERENCE_DRIVE_DIR), str(reference)], check=True)
    proc = run_blklab("characterize", "--compare", str(reference), str(characterized),
                      "--format", "json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    rows = {r["direction"]: r["metrics"] for r in doc["rows"]}
    assert set(rows) == {"read", "write"}
    ref = json.loads((reference / f"{JOB}.json").read_text())["jobs"][0]
    (cell,) = cells_of(characterized / JOB).values()
    ours = {j["jobname"]: j for j in cell["workload"]["jobs"]}
    for direction, job in (("read", "reader"), ("write", "writer")):
        m = rows[direction]
        pct = ours[job][direction]["clat_ns"]["percentile"]
        assert m["iops"]["drive"] == ref[direction]["iops"]
        assert m["p99_us"]["drive"] == ref[direction]["clat_ns"]["percentile"]["99.000000"] / 1e3
        assert m["iops"]["model"] == ours[job][direction]["iops"]
        assert m["p50_us"]["model"] == pct["50.000000"] / 1e3
        assert m["p50_us"]["ratio"] == pytest.approx(m["p50_us"]["model"] / m["p50_us"]["drive"])
