"""[[observe]]: read from the scenario, given to the guest, read back."""

import subprocess

from blklab import observe, scenario
from blklab.bundle import JobBundle

SCENARIO = """
[scenario]
mode = "deterministic"
[guest]
apps = true
[[device]]
name = "d0"
kind = "nvme"
profile = "zero-latency"
[[job]]
name = "r"
rw = "randread"
[[observe]]
name = "iostat"
command = "exec iostat -x 1"
[[observe]]
name = "bio"
command = "exec biolatency -D"
ready = "Tracing"
"""


def test_observers_reach_the_guest_in_order(tmp_path):
    (tmp_path / "s.toml").write_text(SCENARIO)
    s = scenario.load(tmp_path / "s.toml")
    assert s.observers == (observe.Observer("iostat", "exec iostat -x 1"),
                           observe.Observer("bio", "exec biolatency -D", "Tracing"))
    b = JobBundle.for_cell(s.cells()[0], s.workload, s.jobs, observers=s.observers)
    subprocess.run(["cpio", "-id", "--quiet"], input=b.cpio(), cwd=tmp_path, check=True)
    o = tmp_path / "job" / "observe"
    assert [(o / n / "name").read_text() for n in ("0", "1")] == ["iostat", "bio"]
    assert (o / "1" / "ready").read_text() == "Tracing"
    assert (o / "0" / "ready").read_text() == ""
    assert (o / "1" / "command.sh").read_text() == "exec biolatency -D"


def test_the_guests_record_is_read():
    assert observe.parse_guest_record("iostat 130 interrupted\nbio 0 exited\n") == [
        {"name": "iostat", "exit_status": 130, "stopped": "interrupted",
         "file": "observe-iostat.txt"},
        {"name": "bio", "exit_status": 0, "stopped": "exited", "file": "observe-bio.txt"}]
