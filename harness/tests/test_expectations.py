"""Parsing and evaluating [[expect]] entries."""

from pathlib import Path

import pytest

from blklab import expectations, scenario
from blklab.errors import ScenarioError

BASE = """
[scenario]
schedulers = ["none", "kyber", "bfq"]
[iosched.kyber]
read_lat_nsec = [2000000, 500000]
[[device]]
name = "nvme0"
kind = "nvme"
profile = "zero-latency"
[[device]]
name = "hdd0"
kind = "ide-hd"
profile = "hdd-7200-desktop-1t"
[[job]]
name = "reader"
rw = "randread"
[[job]]
name = "writer"
rw = "randwrite"
"""


def load(tmp_path: Path, expect: str) -> scenario.Scenario:
    p = tmp_path / "s.toml"
    p.write_text(BASE + expect)
    return scenario.load(p)


def cell(cid, device, sched, tunables, job_values):
    return {"cell_id": cid, "status": "ok",
            "request": {"device": {"name": device}, "scheduler": sched, "tunables": tunables},
            "summary": [{"job": j, "direction": d, "clat_p99_ns": v, "iops": 1000.0 / v,
                         "bw_bytes": 1e6 / v}
                        for (j, d), v in job_values.items()]}


CELLS = [
    cell("nvme0.none.r0", "nvme0", "none", {}, {("reader", "read"): 900.0,
                                                ("writer", "write"): 50.0}),
    cell("nvme0.none.r1", "nvme0", "none", {}, {("reader", "read"): 1100.0,
                                                ("writer", "write"): 50.0}),
    cell("nvme0.kyber.read_lat_nsec=2000000.r0", "nvme0", "kyber",
         {"iosched/read_lat_nsec": "2000000"}, {("reader", "read"): 700.0}),
    cell("nvme0.kyber.read_lat_nsec=500000.r0", "nvme0", "kyber",
         {"iosched/read_lat_nsec": "500000"}, {("reader", "read"): 400.0}),
    cell("hdd0.none.r0", "hdd0", "none", {}, {("reader", "read"): 10.0}),
    {"cell_id": "hdd0.bfq.r0", "status": "failed",
     "request": {"device": {"name": "hdd0"}, "scheduler": "bfq", "tunables": {}}},
]


def test_op_expectation_per_device(tmp_path):
    s = load(tmp_path, """
[[expect]]
what = "tighter kyber target lowers read p99 below none's"
metric = "clat_p99_ns"
device = "nvme0"
left = {scheduler = "kyber", job = "reader", tunables = {"iosched/read_lat_nsec" = 500000}}
op = "<"
factor = 0.5
right = {scheduler = "none", job = "reader"}
source = "block/kyber-iosched.c: kyber_domain_wake"
""")
    (o,) = expectations.evaluate(s.expectations, CELLS)
    assert o.status == "PASS" and o.left == 400.0 and o.right == 1000.0  # median of 900, 1100
    assert "< 0.5 x none job reader clat_p99_ns = 1000" in o.detail
    assert o.source.startswith("block/kyber-iosched.c")


def test_ratio_expectation_and_failure(tmp_path):
    s = load(tmp_path, """
[[expect]]
what = "reader p99 is 15-25x writer p99 under none"
metric = "clat_p99_ns"
left = {scheduler = "none", job = "reader"}
right = {scheduler = "none", job = "writer"}
direction = "read"
ratio = [15, 25]
""")
    outcomes = expectations.evaluate(s.expectations, CELLS)
    nvme = [o for o in outcomes if o.device == "nvme0"][0]
    # The writer has no read direction: the right side has no data.
    assert nvme.status == "ERROR" and "no read clat_p99_ns" in nvme.detail


def test_bounds_ambiguity_and_failed_cells(tmp_path):
    s = load(tmp_path, """
[[expect]]
what = "none read p99 under 950 ns"
metric = "clat_p99_ns"
left = {scheduler = "none", job = "reader"}
below = 950
[[expect]]
what = "kyber, ambiguous"
metric = "clat_p99_ns"
device = "nvme0"
left = {scheduler = "kyber"}
above = 1
[[expect]]
what = "bfq on the hdd"
metric = "iops"
device = "hdd0"
left = {scheduler = "bfq"}
above = 1
""")
    o = expectations.evaluate(s.expectations, CELLS)
    by = {(x.what, x.device): x for x in o}
    assert by[("none read p99 under 950 ns", "nvme0")].status == "FAIL"
    assert by[("none read p99 under 950 ns", "hdd0")].status == "PASS"
    amb = by[("kyber, ambiguous", "nvme0")]
    assert amb.status == "ERROR" and "matches 2 groups" in amb.detail
    bfq = by[("bfq on the hdd", "hdd0")]
    assert bfq.status == "ERROR" and "1 failed cell(s)" in bfq.detail


@pytest.mark.parametrize("expect,key,words", [
    ('what = "x"\nmetric = "p99"\nleft = {}\nbelow = 1', "expect[0].metric", "not one of"),
    ('what = "x"\nmetric = "iops"\nleft = {scheduler = "mq-deadline"}\nbelow = 1',
     "expect[0].left.scheduler", "not in scenario.schedulers"),
    ('what = "x"\nmetric = "iops"\nleft = {job = "nope"}\nbelow = 1', "expect[0].left.job",
     "no [[job]] is named 'nope'"),
    ('what = "x"\nmetric = "iops"\nleft = {}\nop = "<"', "expect[0].right", "is required"),
    ('what = "x"\nmetric = "iops"\nleft = {}\nright = {}\nop = "<"\nbelow = 3', "expect[0]",
     "exactly one of"),
    ('what = "x"\nmetric = "iops"\nleft = {}\nright = {}\nratio = [6, 4]', "expect[0].ratio",
     "low <= high"),
    ('what = "x"\nmetric = "iops"\nleft = {}\nright = {}\nop = "=="', "expect[0].op",
     "not one of"),
    ('what = "x"\nmetric = "iops"\ndevice = "sdz"\nleft = {}\nbelow = 1', "expect[0].device",
     "no [[device]] is named 'sdz'"),
    ('metric = "iops"\nleft = {}\nbelow = 1', "expect[0].what", "is required"),
    ('what = "x"\nmetric = "iops"\nleft = {colour = 1}\nbelow = 1', "expect[0].left.colour",
     "unknown key"),
])
def test_bad_expectations(tmp_path, expect, key, words):
    with pytest.raises(ScenarioError) as e:
        load(tmp_path, "[[expect]]\n" + expect + "\n")
    assert e.value.key == key and words in e.value.message
