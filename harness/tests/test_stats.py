"""Bootstrap intervals and comparisons on known data."""

import numpy as np
import pytest

from blklab import stats


def test_group_id():
    assert stats.group_id("nvme0.kyber.r3") == "nvme0.kyber"
    assert stats.group_id("nvme0.mq-deadline.read_expire=100.seed=7.r0") == \
        "nvme0.mq-deadline.read_expire=100"


def test_median_interval_on_known_data():
    values = list(range(1, 22))  # median 11
    e = stats.bootstrap_median(values)
    assert e.median == 11 and e.n == 21 and not e.identical
    assert e.low < 11 < e.high
    # The bootstrap median of 21 ordered values lies between the 6th and the 16th.
    assert 6 <= e.low and e.high <= 16
    assert stats.bootstrap_median(values) == e  # fixed generator: same answer


def test_interval_coverage_on_normal_samples():
    # Over many samples from N(100, 10), the 95% interval of the median
    # covers the true median in roughly 95% of cases.
    rng = np.random.default_rng(1)
    hits = 0
    trials = 200
    for _ in range(trials):
        e = stats.bootstrap_median(list(rng.normal(100, 10, size=25)), resamples=500)
        hits += e.low <= 100 <= e.high
    assert 0.88 <= hits / trials <= 0.99


def test_identical_repeats_are_recognised():
    e = stats.bootstrap_median([5.0, 5.0, 5.0])
    assert e.identical and (e.low, e.median, e.high) == (5.0, 5.0, 5.0)
    c = stats.compare("iops", "a", [6.0, 6.0], "b", [5.0, 5.0])
    assert c.verdict == "exact" and c.ratio == pytest.approx(1.2)


def test_comparison_significance():
    rng = np.random.default_rng(2)
    a = list(rng.normal(120, 5, size=15))
    b = list(rng.normal(100, 5, size=15))
    c = stats.compare("iops", "a", a, "b", b)
    assert c.verdict == "significant" and c.low > 1
    c = stats.compare("iops", "a", list(rng.normal(100, 5, size=15)), "b", b)
    assert c.verdict == "not significant" and c.low <= 1 <= c.high
    assert stats.compare("iops", "a", [1.0], "b", [2.0]).verdict == "single values"
    assert stats.compare("iops", "a", [1.0], "b", [0.0]).verdict == "undefined"


def _cell(cid, sched, iops, p99, tunables=None):
    return {"cell_id": cid, "status": "ok",
            "request": {"device": {"name": "d"}, "scheduler": sched, "tunables": tunables or {}},
            "summary": [{"job": "j", "direction": "read", "iops": iops, "bw_bytes": iops * 4096,
                         "clat_mean_ns": p99 / 2, "clat_p50_ns": p99 / 3, "clat_p99_ns": p99,
                         "clat_p99.9_ns": p99 * 2}]}


def test_aggregate_and_scheduler_comparisons():
    cells = [_cell("d.none.r0", "none", 100, 10), _cell("d.none.r1", "none", 110, 12),
             _cell("d.bfq.r0", "bfq", 50, 30), _cell("d.bfq.r1", "bfq", 52, 31),
             {"cell_id": "d.kyber.r0", "status": "failed"}]
    rows = stats.aggregate(cells)
    assert [r.key for r in rows] == ["d.none/j/read", "d.bfq/j/read"]
    assert rows[0].estimates["iops"].median == 105
    (c,) = stats.scheduler_comparisons(cells, "iops")
    assert c.a == "d.none/j/read" and c.b == "d.bfq/j/read"
    assert c.ratio == pytest.approx(105 / 51)
