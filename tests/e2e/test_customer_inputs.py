"""What a customer sends, end to end in real guests: their fio job file runs
unchanged (but for filename) under blkgen and under fio, and blklab
compare-fio sets a fio JSON beside the run."""

import json
import tomllib

import pytest

from conftest import REPO, cells_of, nvme, run_blklab

# A customer's job file as they might send it: their own filename and
# directory, a [global] section, two jobs of which the scenario runs one.
INCIDENT = """; from the customer, unchanged
[global]
ioengine=io_uring
direct=1
directory=/data
filename=testfile
bs=4k
size=64m
time_based=1
runtime=1

[randread]
rw=randread
iodepth=8

[seqwrite]
rw=write
iodepth=1
"""


@pytest.fixture(scope="module", params=["blkgen", "fio"])
def fio_file_run(request, built, tmp_path_factory):
    """The file's randread (1 s at depth 8) on a gp3 volume: some 3,000
    reads at its IOPS cap, where the zero-latency device's 0.8-1M took
    97 s (blkgen) and 125 s (fio) of host time under make test."""
    d = tmp_path_factory.mktemp(f"fio-file-{request.param}")
    (d / "incident.fio").write_text(INCIDENT)
    s = d / "s.toml"
    s.write_text(f'[scenario]\nmode = "deterministic"\nschedulers = ["mq-deadline"]\n'
                 f'workload = "{request.param}"\n' + nvme(1, "aws-gp3-100g") +
                 '[[job]]\nfio_file = "incident.fio"\nsections = ["randread"]\n')
    out = d / "run"
    proc = run_blklab("run", str(s), "--out", str(out), "--no-report", "--jobs", "1")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (cell,) = cells_of(out).values()
    return request.param, d, out, cell


def test_the_file_ran_on_the_device_under_test(fio_file_run):
    workload, _, _, cell = fio_file_run
    assert cell["status"] == "ok", cell.get("error")
    jobs = cell["workload"]["jobs"]
    assert [j["jobname"] for j in jobs] == ["randread"]  # sections = ["randread"]
    (row,) = cell["summary"]
    assert row["direction"] == "read" and row["total_ios"] > 100
    # The I/O reached the disk blklab attached, not /data/testfile.
    delta = cell["disk_stats"]["delta"]
    assert delta["read_ios"] + delta["read_merges"] >= row["total_ios"]
    opts = jobs[0]["job options"]
    assert opts.get("rw") == "randread" and opts.get("iodepth") == "8"
    assert "filename" not in opts and "directory" not in opts


def test_compare_fio_sets_the_customers_numbers_beside_the_cell(fio_file_run, tmp_path):
    _, _, out, cell = fio_file_run
    customer = {"fio version": "fio-3.28", "jobs": [{
        "jobname": "randread",
        "read": {"total_ios": 1000, "iops": cell["summary"][0]["iops"] * 2,
                 "clat_ns": {"mean": 1000.0, "percentile": {
                     "50.000000": 1000, "99.000000": 2000, "99.900000": 3000,
                     "99.990000": 4000}}}}]}
    path = tmp_path / "customer.json"
    path.write_text(json.dumps(customer))
    proc = run_blklab("compare-fio", str(out), str(path))
    assert proc.returncode == 0, proc.stderr
    iops_line = next(line for line in proc.stdout.splitlines() if " iops " in line)
    assert cell["cell_id"] in iops_line and iops_line.rstrip().endswith("0.50")


def test_capture_script_in_a_guest_imports_back_its_settings(built, tmp_path):
    """scenario.capture runs tools/blklab-capture.sh in the guest beside the
    workload; blklab import of that capture gives back the device and the
    settings the cell ran with. The capture samples /proc/diskstats 1 s
    apart, so the job runs 2 s; on a gp3 volume (3,000 IOPS) that is some
    6,000 reads, where the zero-latency device's were 1.9M, 256 s of host
    time under make test."""
    s = tmp_path / "s.toml"
    s.write_text('[scenario]\nmode = "deterministic"\nschedulers = ["mq-deadline"]\n'
                 'capture = true\n[queue]\nread_ahead_kb = 256\n'
                 '[iosched.mq-deadline]\nread_expire = 100\n' + nvme(1, "aws-gp3-100g") +
                 '[[job]]\nname = "r"\nrw = "randread"\nioengine = "io_uring"\n'
                 'iodepth = 4\ndirect = true\nruntime = "2s"\ntime_based = true\n')
    out = tmp_path / "run"
    proc = run_blklab("run", str(s), "--out", str(out), "--no-report")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (cell,) = cells_of(out).values()
    capture = out / cell["files"]["capture.txt"]
    imported = tmp_path / "imported.toml"
    proc = run_blklab("import", str(capture), "-o", str(imported))
    assert proc.returncode == 0, proc.stderr
    data = tomllib.loads(imported.read_text())
    (dev,) = data["device"]
    assert dev["name"] == "nvme0n1" and dev["kind"] == "nvme"
    assert dev["size_gib"] == 1.0
    assert data["queue"]["read_ahead_kb"] == 256
    assert data["iosched"]["mq-deadline"]["read_expire"] == 100
    # The workload's reads show between the capture's two diskstats samples.
    text = capture.read_text()
    assert text.count("== diskstats") == 2
    samples = [dict((f[2], int(f[3])) for f in (line.split() for line in part.splitlines())
                    if len(f) > 3)
               for part in (chunk.split("\n== ")[0] for chunk in text.split("== diskstats")[1:])]
    assert samples[1]["nvme0n1"] > samples[0]["nvme0n1"], samples
    proc = run_blklab("validate", str(imported))
    assert proc.returncode == 0, proc.stderr


def test_the_customers_command_runs_in_blkgen_too(built, tmp_path):
    """scenarios/cloud-mysql-incident-as-run.toml runs the customer's fio
    command under fio on NVMe and on virtio-blk (its short form is in
    test_scenarios.py). The same command under blkgen, the same file with
    workload = "blkgen", on both front ends: it is
    psync, so blkgen caps the depth at 1 and says so, and the expectations,
    which come from the volume's model and not from fio, hold as they do
    for fio."""
    text = (REPO / "scenarios" / "cloud-mysql-incident-as-run.toml").read_text()
    assert text.count('workload = "fio"') == 1
    s = tmp_path / "as-run-blkgen.toml"
    s.write_text(text.replace('workload = "fio"', 'workload = "blkgen"'))
    out = tmp_path / "run"
    proc = run_blklab("run", "--short", "--jobs", "2", "--no-report", "--out", str(out), str(s))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    cells = cells_of(out)
    seeds = tomllib.loads(text)["short"]["seeds"]
    assert set(cells) == {f"{d}.{sc}.seed={seed}.r0" for d in ("gp3", "gp2-exhausted", "gp3-vda")
                          for sc in ("none", "mq-deadline") for seed in seeds}
    for cid, cell in cells.items():
        assert cell["status"] == "ok", (cid, cell.get("error"))
        notes = " ".join(cell.get("workload_notes") or [])
        assert "psync" in notes and "depth" in notes, (cid, notes)
    proc = run_blklab("check", str(out))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert " 0 fail" in proc.stdout
