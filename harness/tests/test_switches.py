"""Scheduler switch logs against a workload's time series."""

import json

from blklab import switches

LOG = """# first_io_us=1577836805123456 interval_ms=100
100500 2100 kyber ok
201000 1500 bfq ok
302000 900 none fail Invalid argument
"""


def cell(p99: list[float], iops: list[float]) -> dict:
    n = len(p99)
    ts = {"interval_ns": 20_000_000, "end_ns": [20_000_000 * (i + 1) for i in range(n)],
          "read": {"iops": iops, "clat_p99_ns": p99, "clat_p50_ns": p99, "bw_bytes": iops}}
    return {"cell_id": "nvme0.none.r0", "status": "ok",
            "workload": {"jobs": [{"jobname": "r", "blkgen": {"time_series": ts}}]}}


def test_parse():
    sw = switches.parse(LOG)
    assert [s.scheduler for s in sw] == ["kyber", "bfq", "none"]
    assert sw[0] == switches.Switch(100500, 2100, "kyber", True, "")
    assert not sw[2].ok and sw[2].error == "Invalid argument"


def test_spike_is_the_worst_interval_around_each_switch():
    p99 = [100_000.0] * 20
    p99[5] = 900_000.0  # 100-120 ms: right after the first switch
    p99[11] = 400_000.0  # 220-240 ms: within two intervals after the second
    iops = [1000.0] * 20
    iops[5] = 10.0
    (cs,) = switches.analyze(cell(p99, iops), switches.parse(LOG))
    assert cs.baseline_p99_ns == 100_000.0 and cs.baseline_iops == 1000.0
    assert [s.p99_ns for s in cs.spikes] == [900_000.0, 400_000.0, 100_000.0]
    assert cs.spikes[0].iops == 10.0


def test_render_reads_a_run(tmp_path):
    c = cell([100_000.0] * 20, [1000.0] * 20)
    c["files"] = {"switches.txt": "cells/nvme0.none.r0/switches.txt"}
    (tmp_path / "cells/nvme0.none.r0").mkdir(parents=True)
    (tmp_path / "cells/nvme0.none.r0/switches.txt").write_text(LOG)
    (tmp_path / "cell-nvme0.none.r0.json").write_text(json.dumps(c))
    text = switches.render(tmp_path)
    assert "3 switches, 1 failed" in text and "FAILED: Invalid argument" in text


def test_held_is_how_far_the_longest_interval_around_each_switch_overran():
    c = cell([100_000.0] * 20, [1000.0] * 20)
    ends = c["workload"]["jobs"][0]["blkgen"]["time_series"]["end_ns"]
    # The interval after 100 ms ends 7.5 ms late (the first switch held the
    # workload); every later end moves with it.
    c["workload"]["jobs"][0]["blkgen"]["time_series"]["end_ns"] = [
        e + (7_500_000 if e > 100_000_000 else 0) for e in ends]
    (cs,) = switches.analyze(c, switches.parse(LOG))
    assert [s.held_ns for s in cs.spikes] == [7_500_000, 0, 0]
