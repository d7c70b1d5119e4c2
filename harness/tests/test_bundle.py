"""The job bundle: a newc cpio that GNU cpio (and so the kernel) reads."""

import shlex
import subprocess
from pathlib import Path

from blklab import scenario
from blklab.bundle import JobBundle, cpio_newc

SCENARIO = """
[scenario]
schedulers = ["kyber"]
workload = "fio"
[iosched.kyber]
read_lat_nsec = 1000000
[queue]
nr_requests = 64
[[device]]
name = "d0"
kind = "ahci-hd"
profile = "zero-latency"
[[job]]
name = "a b"
rw = "randread"
[[job]]
name = "w"
rw = "randwrite"
randseed = 99
"""


def extract(blob: bytes, dest: Path) -> None:
    subprocess.run(["cpio", "-id", "--quiet"], input=blob, cwd=dest, check=True)


def test_cpio_round_trip(tmp_path):
    files = {"job/a.txt": b"hello\n", "job/sub/b": b"", "top": b"x" * 1001}
    blob = cpio_newc(files)
    assert len(blob) % 512 == 0
    listing = subprocess.run(["cpio", "-t", "--quiet"], input=blob, capture_output=True,
                             check=True).stdout.decode().split()
    assert listing == ["job", "job/a.txt", "job/sub", "job/sub/b", "top"]
    extract(blob, tmp_path)
    for name, data in files.items():
        assert (tmp_path / name).read_bytes() == data


def test_cpio_is_deterministic():
    files = {"job/x": b"1", "job/y": b"2"}
    assert cpio_newc(files) == cpio_newc(dict(reversed(list(files.items()))))


def test_bundle_for_cell(tmp_path):
    p = tmp_path / "s.toml"
    p.write_text(SCENARIO.replace('"a b"', '"ab"'))
    s = scenario.load(p)
    cell = s.cells()[0]
    b = JobBundle.for_cell(cell, s.workload, s.jobs)
    extract(b.cpio(), tmp_path)
    env = (tmp_path / "job/job.env").read_text()
    # The guest sources job.env with sh: every value must survive quoting.
    out = subprocess.run(["sh", "-c", f". {tmp_path}/job/job.env; "
                          "echo \"$BLKLAB_DEVICE_KIND|$BLKLAB_SCHEDULER|$BLKLAB_WORKLOAD|"
                          "$BLKLAB_CELL\""], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == f"ahci-hd|kyber|fio|{cell.id}"
    assert "BLKLAB_CELL=" in env
    assert (tmp_path / "job/tunables").read_text() == (
        "nr_requests 64\niosched/read_lat_nsec 1000000\n")
    args = (tmp_path / "job/workload.args").read_text().splitlines()
    # The cell's seed goes to every job that does not choose its own.
    assert args == ["--name=ab", "--rw=randread", "--randseed=1",
                    "--name=w", "--rw=randwrite", "--randseed=99", "--eta=never"]


def test_bundle_quotes_hostile_values(tmp_path):
    b = JobBundle("id'; reboot -f; '", "nvme", "none", "blkgen", (), ())
    extract(b.cpio(), tmp_path)
    out = subprocess.run(["sh", "-c", f". {tmp_path}/job/job.env; printf %s \"$BLKLAB_CELL\""],
                         capture_output=True, text=True, check=True)
    assert out.stdout == "id'; reboot -f; '"
    assert shlex.quote(b.cell_id) in (tmp_path / "job/job.env").read_text()


def test_an_application_script_sets_the_faults_origin_itself(tmp_path):
    """With device faults, blklab's application script marks their origin
    at its measured run (BLKLAB_FAULT_ORIGIN=command); the init marks it
    for every other workload, a user's own command included."""
    p = tmp_path / "s.toml"
    p.write_text(SCENARIO.replace('"a b"', '"ab"'))
    s = scenario.load(p)
    cell = s.cells()[0]
    for kw, origin in (({"device_faults": True, "app_jobs": True}, "command"),
                       ({"device_faults": True}, None),
                       ({"app_jobs": True}, None)):
        b = JobBundle.for_cell(cell, "command", [], **kw)
        env = b.files()["job/job.env"].decode()
        assert ("BLKLAB_FAULT_ORIGIN=command" in env) == (origin == "command"), (kw, env)
    # Not for blkgen or fio.
    b = JobBundle.for_cell(cell, s.workload, s.jobs, device_faults=True, app_jobs=True)
    assert "BLKLAB_FAULT_ORIGIN" not in b.files()["job/job.env"].decode()
