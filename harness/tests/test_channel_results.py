"""The results channel parser and cell result helpers."""

import json
from pathlib import Path

import pytest

from blklab import channel, results, scenario
from blklab.cell import scheduler_in_effect


def test_channel_parses_files_and_status():
    blob = (b"BLKLAB-HELLO 6.1.0-57-amd64\n"
            b"BLKLAB-FILE a.txt 5\nhello"
            b"BLKLAB-FILE b.bin 3\n\n\x00\n"
            b"BLKLAB-END ok\n")
    d = channel.parse(blob)
    assert d.hello == "6.1.0-57-amd64"
    assert d.files == {"a.txt": b"hello", "b.bin": b"\n\x00\n"}
    assert d.status == "ok" and not d.truncated


def test_channel_failure_reason_and_truncation():
    d = channel.parse(b"BLKLAB-HELLO x\nBLKLAB-END fail tunable queue/x: no such attribute\n")
    assert d.status == "fail"
    assert d.reason == "tunable queue/x: no such attribute"
    d = channel.parse(b"BLKLAB-HELLO x\nBLKLAB-FILE w.json 100\n{\"jobs\"")
    assert d.truncated and d.status is None and d.files == {}


def test_scheduler_in_effect():
    assert scheduler_in_effect("mq-deadline [kyber] bfq none") == "kyber"
    assert scheduler_in_effect("[none] mq-deadline") == "none"
    assert scheduler_in_effect("none") is None


def test_disk_delta_and_iostat_figures():
    before = results.parse_diskstat("10 0 80 5 0 0 0 0 0 4 5 0 0 0 0 0 0")
    after = results.parse_diskstat("110 2 880 205 4 0 32 40 1 104 245 0 0 0 0 0 0")
    d = results.disk_delta(before, after, elapsed_ms=200.0)
    assert d["delta"]["read_ios"] == 100
    assert d["delta"]["read_sectors"] == 800
    assert d["derived"]["r_await_ms"] == pytest.approx(2.0)
    assert d["derived"]["w_await_ms"] == pytest.approx(10.0)
    assert d["derived"]["aqu_sz"] == pytest.approx(1.2)
    assert d["derived"]["util_pct"] == pytest.approx(50.0)


def test_summary_from_fio_layout():
    wl = {"jobs": [{"jobname": "j", "read": {"iops": 10.5, "bw_bytes": 43008, "total_ios": 21,
                                            "clat_ns": {"mean": 1500.0, "max": 12000, "percentile": {
                                                "50.000000": 1000, "99.000000": 9000,
                                                "99.900000": 9900, "99.990000": 11000}}},
                    "write": {"total_ios": 0}}]}
    rows = results.summarize(wl)
    assert rows == [{"job": "j", "direction": "read", "iops": 10.5, "bw_bytes": 43008,
                     "total_ios": 21, "clat_mean_ns": 1500.0, "clat_p50_ns": 1000,
                     "clat_p99_ns": 9000, "clat_p99.9_ns": 9900, "clat_p99.99_ns": 11000,
                     "clat_max_ns": 12000}]


def test_atomic_write_and_load(tmp_path):
    p = tmp_path / "cell-x.json"
    r = results.CellResult("x", "failed", "boom", {"a": 1})
    results.write_atomic(p, r.to_json())
    assert results.load_cell(p)["error"] == "boom"
    assert not list(tmp_path.glob(".*.tmp"))
    p.write_text(r.to_json()[:40])  # a torn file is not a result
    assert results.load_cell(p) is None
    p.write_text(json.dumps({"schema_version": 99}))
    assert results.load_cell(p) is None


def test_atomic_write_keeps_old_file_on_failure(tmp_path, monkeypatch):
    p = tmp_path / "cell-x.json"
    results.write_atomic(p, "old\n")

    def boom(*a, **k):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(results.os, "replace", boom)
    with pytest.raises(OSError):
        results.write_atomic(p, "new\n")
    assert p.read_text() == "old\n"
    assert not list(tmp_path.glob(".*.tmp"))


BTT = """==================== All Devices ====================

            ALL           MIN           AVG           MAX           N
--------------- ------------- ------------- ------------- -----------

Q2Q               0.000011454   0.000117670   0.043849148        8264
D2C               0.000033524   0.000411618   0.020135520        8265
Q2C               0.000037435   0.000423725   0.020556243        8265

==================== Device Merge Information ====================

       DEV |       #Q       #D   Ratio |   BLKmin   BLKavg   BLKmax    Total
---------- | -------- -------- ------- | -------- -------- -------- --------
 (259,  0) |     8265     8000     1.0 |        8        8        8    66120
"""


def test_parse_btt():
    b = results.parse_btt(BTT)
    assert b["q2c_avg_s"] == 0.000423725 and b["q2c_n"] == 8265
    assert b["d2c_max_s"] == 0.02013552
    assert b["q2d_avg_s"] == pytest.approx(0.000012107)
    assert (b["queued"], b["dispatched"], b["merge_ratio"]) == (8265, 8000, 1.0)
    assert "q2q_avg_s" in b


def test_kernel_warnings_are_picked_from_the_console():
    from blklab.cell import kernel_warnings

    console = ("[    1.0] ok line\n"
               "[    2.477250] WARNING: CPU: 3 PID: 37 at arch/x86/kernel/traps.c:1089 exc_debug\n"
               "[    3.0] BUG: unable to handle page fault for address: 0000\n")
    assert kernel_warnings(console) == [
        "WARNING: CPU: 3 PID: 37 at arch/x86/kernel/traps.c:1089 exc_debug",
        "BUG: unable to handle page fault for address: 0000"]
    assert kernel_warnings("[ 1.0] all fine\n") == []


def test_resume_runs_only_cells_without_an_ok_result(tmp_path):
    from blklab import runner
    from blklab.cell import cell_json_path

    s = scenario.load(Path(__file__).resolve().parents[2] / "scenarios" / "default.toml",
                      check_profiles=False)
    cells = s.cells()[:5]
    assert len(cells) == 5
    ok, failed, torn, foreign, missing = cells

    def put(cell, status):
        results.write_atomic(cell_json_path(tmp_path, cell.id),
                             results.CellResult(cell.id, status, None, {}).to_json())

    put(ok, "ok")
    put(failed, "failed")
    put(torn, "ok")
    p = cell_json_path(tmp_path, torn.id)
    p.write_text(p.read_text()[:30])  # killed mid-write without the rename
    cell_json_path(tmp_path, foreign.id).write_text(json.dumps({"status": "ok"}))
    assert [c.id for c in runner.pending_cells(tmp_path, cells)] == [
        c.id for c in (failed, torn, foreign, missing)]
    put(failed, "ok")  # the rerun's result replaces the failed one
    assert failed not in runner.pending_cells(tmp_path, cells)
    assert runner.pending_cells(tmp_path, []) == []


def test_a_tunable_the_kernel_changed_is_recorded_shown_and_reported(tmp_path):
    from blklab import report, table
    from blklab.cell import adjusted_tunables

    path = tmp_path / "s.toml"
    path.write_text('[scenario]\nschedulers = ["bfq"]\n'
                    '[[device]]\nname = "d0"\nkind = "nvme"\nprofile = "zero-latency"\n'
                    '[queue]\nnr_requests = [2, 64]\nread_ahead_kb = 256\n'
                    '[iosched.bfq]\nslice_idle = 0\n'
                    '[[job]]\nname = "j"\nrw = "randread"\n')
    two, sixty_four = scenario.load(path).cells()
    # What queue_requests_store() does with 2 (BLKDEV_MIN_RQ is 4): the
    # cell records it; a value read back as written is not listed.
    in_effect = {"scheduler": "bfq", "iosched": {"slice_idle": "0"},
                 "queue": {"nr_requests": "4\n", "read_ahead_kb": "256"}}
    adjusted = adjusted_tunables(two, in_effect)
    assert adjusted == [{"tunable": "nr_requests", "asked": "2", "in_effect": "4"}]
    assert adjusted_tunables(sixty_four, {"scheduler": "bfq", "iosched": {"slice_idle": "0"},
                                          "queue": {"nr_requests": "64",
                                                    "read_ahead_kb": "256"}}) == []
    # An attribute the guest did not read back is not a difference.
    assert adjusted_tunables(two, {"scheduler": "bfq", "iosched": {}, "queue": {}}) == []
    assert adjusted_tunables(two, dict(in_effect, iosched={"slice_idle": "8"}))[-1] == \
        {"tunable": "iosched/slice_idle", "asked": "0", "in_effect": "8"}

    cell = {"cell_id": two.id, "status": "ok", "guest": {},
            "in_effect": dict(in_effect, adjusted=adjusted),
            "request": {"device": {"name": "d0", "kind": "nvme", "backing": "null"},
                        "scheduler": "bfq", "tunables": {"nr_requests": "2"}},
            "summary": [{"job": "j", "direction": "read", "iops": 10.0, "bw_bytes": 40960,
                         "total_ios": 10, "clat_mean_ns": 1000, "clat_p50_ns": 1000,
                         "clat_p99_ns": 2000, "clat_p99.9_ns": 3000}],
            "workload": {"jobs": []}}
    assert (f"note: {two.id}: nr_requests was written as 2, the kernel has 4"
            in table.render([cell]).splitlines())
    html = report.render(Path("run"), [cell], {"mode": "deterministic"}, [])
    assert (f"<tr><td class=\"l\">{two.id}</td><td class=\"l\">nr_requests</td>"
            "<td>2</td><td>4</td></tr>") in html
