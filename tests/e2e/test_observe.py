"""Observers beside the workload ([[observe]]) in a real guest.

On 6.12, sysstat's iostat (-x, JSON, every second; ready once it has
printed) and libbpf-tools' biolatency (-D, given 2 s to attach: in
test_apps.py it has attached within 1 s) run beside 1.2 s of blkgen reads;
after the workload both get SIGINT. A third observer, a shell loop,
ignores SIGINT as every command started in the background by a shell
without job control does, and gets SIGTERM 2 s later. biolatency has attached before the
workload starts and counts every request the disk completes until it is
interrupted, so its histogram holds at least the workload's reads; iostat printed a report at its start and
one a second later. On 5.10 biolatency cannot load (test_apps.py says
why): the cell fails with the observer's own lines.
"""


import pytest

from conftest import REPO, cells_of, run_blklab

SCENARIO = """[scenario]
name = "observe"
schedulers = ["mq-deadline"]
mode = "deterministic"
timeout_s = 900
[guest]
apps = true
{kernel}
[[device]]
name = "nvme0"
kind = "nvme"
backing = "null"
size_gib = 1
profile = "fixed-10us"
[[observe]]
name = "iostat"
command = "exec iostat -x -d -o JSON 1 ${{BLKLAB_DEVICE#/dev/}}"
[[observe]]
name = "biolatency"
command = "exec biolatency -D"
ready_after_ms = 2000
[[observe]]
name = "loop"
command = "while :; do sleep 0.2; done"
ready_after_ms = 100
[[job]]
name = "r"
rw = "randread"
bs = "4k"
ioengine = "psync"
direct = true
runtime = "1200ms"
time_based = true
"""


def _run(tmp_path, kernel: str = ""):
    s = tmp_path / "observe.toml"
    s.write_text(SCENARIO.format(kernel=f'kernel = "{kernel}"' if kernel else ""))
    out = tmp_path / "o"
    proc = run_blklab("run", str(s), "--jobs", "1", "--no-report", "--out", str(out))
    ((cid, cell),) = cells_of(out).items()
    return proc, out / "cells" / cid, cell


def _histogram_total(text: str) -> int:
    return sum(int(line.split(":")[1].split("|")[0]) for line in text.splitlines()
               if "->" in line)


def test_iostat_and_biolatency_beside_the_workload(apps_built, tmp_path):
    proc, cdir, cell = _run(tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert cell["status"] == "ok", cell["error"]
    rec = {o["name"]: o for o in cell["guest"]["observe"]}
    assert rec["biolatency"] == {"name": "biolatency", "exit_status": 0,
                                 "stopped": "interrupted", "file": "observe-biolatency.txt"}
    assert rec["iostat"]["stopped"] == "interrupted"
    # A shell loop ignores SIGINT (started in the background without job
    # control) and cannot trap it: SIGTERM 2 s later ends it.
    assert rec["loop"] == {"name": "loop", "exit_status": 143, "stopped": "terminated",
                           "file": "observe-loop.txt"}
    hist = (cdir / "observe-biolatency.txt").read_text()
    assert "disk = nvme0n1" in hist, hist
    reads = sum(row["total_ios"] for row in cell["summary"])
    assert reads > 0
    assert _histogram_total(hist) >= reads, hist
    iostat = (cdir / "observe-iostat.txt").read_text()
    assert iostat.count('"disk_device": "nvme0n1"') >= 2, iostat
    assert cell["request"]["observe"][1]["ready_after_ms"] == 2000


def test_a_bpf_tool_that_does_not_load_fails_the_cell(apps_built, tmp_path):
    if not (REPO / "build" / "images" / "5.10-amd64" / "image.json").exists():
        pytest.fail("build/images/5.10-amd64 missing: run 'make images' first")
    proc, cdir, cell = _run(tmp_path, "5.10-amd64")
    assert proc.returncode != 0
    assert cell["status"] == "failed"
    assert "observe 'biolatency' ended within its ready_after_ms" in cell["error"], cell["error"]
    assert "failed to load BPF object" in (cdir / "observe-biolatency.txt").read_text()
