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
    (o,) = expectations.evaluate(s, CELLS)
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
    outcomes = expectations.evaluate(s, CELLS)
    nvme = [o for o in outcomes if o.device == "nvme0"][0]
    # The writer has no read direction: the right side has no data.
    assert nvme.status == "ERROR" and "no read clat_p99_ns" in nvme.detail


def test_right_may_name_another_device(tmp_path):
    s = load(tmp_path, """
[[expect]]
what = "the HDD's read p99 is under a fiftieth of the NVMe's"
metric = "clat_p99_ns"
device = "hdd0"
left = {scheduler = "none", job = "reader"}
op = "<"
factor = 0.02
right = {device = "nvme0", scheduler = "none", job = "reader"}
""")
    (o,) = expectations.evaluate(s, CELLS)
    assert o.device == "hdd0" and o.left == 10.0 and o.right == 1000.0
    assert o.status == "PASS" and "device nvme0 none job reader" in o.detail


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
    o = expectations.evaluate(s, CELLS)
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
    ('what = "x"\nmetric = "iops"\ndevice = "hdd0"\nleft = {device = "nvme0"}\nbelow = 1',
     "expect[0].left.device", "only right names a device"),
    ('what = "x"\nmetric = "iops"\nleft = {}\nright = {device = "nvme0"}\nratio = [1, 2]',
     "expect[0].right.device", "needs device"),
    ('what = "x"\nmetric = "iops"\ndevice = "hdd0"\nleft = {}\nright = {device = "sdz"}\n'
     'ratio = [1, 2]', "expect[0].right.device", "no [[device]] is named 'sdz'"),
])
def test_bad_expectations(tmp_path, expect, key, words):
    with pytest.raises(ScenarioError) as e:
        load(tmp_path, "[[expect]]\n" + expect + "\n")
    assert e.value.key == key and words in e.value.message


# Statuses: one scenario with a short form, expectations of each kind, and
# cells with three seeds whose values each test sets.
STATUS_BASE = """
[scenario]
schedulers = ["none", "kyber", "bfq"]
seeds = [1, 2, 3]
[short]
schedulers = ["none", "kyber"]
[[device]]
name = "nvme0"
kind = "nvme"
profile = "zero-latency"
[[job]]
name = "reader"
rw = "randread"
"""


def seeded(sched: str, seed: int, p99: float, repeat: int = 0, status: str = "ok") -> dict:
    c = cell(f"nvme0.{sched}.seed={seed}.r{repeat}", "nvme0", sched, {},
             {("reader", "read"): p99})
    c["request"]["seed"] = seed
    c["status"] = status
    return c


def outcome_of(tmp_path: Path, expect: str, cells: list, short: bool = False):
    p = tmp_path / "s.toml"
    p.write_text(STATUS_BASE + "[[expect]]\n" + expect)
    (o,) = expectations.evaluate(scenario.load(p, short=short), cells)
    return o


BELOW_1000 = 'what = "p99 below 1000"\nmetric = "clat_p99_ns"\nleft = {scheduler = "none"}\nbelow = 1000\n'
KNOWN = 'known_failure = "the drive GCs when idle"\n'


@pytest.mark.parametrize("expect,values,status", [
    (BELOW_1000, (900, 950, 990), "PASS"),
    (BELOW_1000, (900, 1100, 990), "FAIL"),           # one seed fails: it fails
    (BELOW_1000 + KNOWN, (900, 1100, 990), "KNOWN-FAIL"),
    (BELOW_1000 + KNOWN, (900, 950, 990), "UNEXPECTED-PASS"),
    (BELOW_1000 + 'quorum = "median"\n', (900, 1100, 990), "PASS"),  # median 990
    (BELOW_1000 + 'quorum = "median"\n', (900, 1100, 1200), "FAIL"),  # median 1100
])
def test_every_status_is_decided_over_every_seed(tmp_path, expect, values, status):
    cells = [seeded("none", seed, v) for seed, v in zip((1, 2, 3), values)]
    o = outcome_of(tmp_path, expect, cells)
    assert o.status == status
    assert [(s.seed, s.value) for s in o.seeds] == list(zip((1, 2, 3), map(float, values)))
    assert o.spread() == (min(values), max(values))
    assert all(f"seed {seed}: {v:g}" in o.per_seed() for seed, v in zip((1, 2, 3), values))
    assert o.left == float(sorted(values)[1])
    assert (status in expectations.FAILING) == (status in ("FAIL", "UNEXPECTED-PASS"))


def test_a_seed_value_is_the_median_of_its_repeats(tmp_path):
    cells = [seeded("none", 1, 900, 0), seeded("none", 1, 1300, 1), seeded("none", 1, 950, 2),
             seeded("none", 2, 100), seeded("none", 3, 100)]
    o = outcome_of(tmp_path, BELOW_1000, cells)
    assert [s.value for s in o.seeds] == [950.0, 100.0, 100.0] and o.status == "PASS"


def test_ratio_per_seed_shows_a_fragile_split(tmp_path):
    """A 4.82 / 3.12 / 1.34 split is visible, and fails on two seeds."""
    expect = ('what = "5x"\nmetric = "clat_p99_ns"\nleft = {scheduler = "kyber"}\n'
              'right = {scheduler = "none"}\nratio = [4.0, 6.0]\n')
    cells = [seeded("none", s, 100.0) for s in (1, 2, 3)]
    cells += [seeded("kyber", s, v) for s, v in ((1, 482.0), (2, 312.0), (3, 134.0))]
    o = outcome_of(tmp_path, expect, cells)
    assert o.status == "FAIL"
    assert [round(s.value, 2) for s in o.seeds] == [4.82, 3.12, 1.34]
    assert [s.holds for s in o.seeds] == [True, False, False]
    assert "spread 1.34-4.82" in o.line()


def test_a_failed_cell_of_one_seed_leaves_it_undecided(tmp_path):
    cells = [seeded("none", 1, 900), seeded("none", 2, 900, status="failed"),
             seeded("none", 3, 900)]
    o = outcome_of(tmp_path, BELOW_1000 + KNOWN, cells)
    assert o.status == "ERROR" and "1 failed cell(s)" in o.detail


def test_sides_with_different_seeds_are_an_error(tmp_path):
    expect = ('what = "x"\nmetric = "clat_p99_ns"\nleft = {scheduler = "kyber"}\n'
              'right = {scheduler = "none"}\nop = "<"\n')
    cells = [seeded("none", s, 100.0) for s in (1, 2, 3)] + [seeded("kyber", 1, 50.0)]
    o = outcome_of(tmp_path, expect, cells)
    assert o.status == "ERROR" and "only on one side: 2, 3" in o.detail


def test_full_only_is_not_run_in_the_short_form_and_still_counted(tmp_path):
    expect = ('what = "bfq below none"\nmetric = "clat_p99_ns"\nleft = {scheduler = "bfq"}\n'
              'right = {scheduler = "none"}\nop = "<"\nfull_only = true\n' + KNOWN)
    cells = [seeded("none", s, 100.0) for s in (1, 2, 3)]
    o = outcome_of(tmp_path, expect, cells, short=True)
    assert o.status == "NOT-RUN" and o.device == "every device" and not o.seeds
    assert "known failure: the drive GCs when idle" in o.line()
    assert expectations.failing([o]) == []
    # Without full_only, the short form would have to run bfq: an error.
    p = tmp_path / "s.toml"
    p.write_text(STATUS_BASE + "[[expect]]\n" + expect.replace("full_only = true\n", ""))
    with pytest.raises(ScenarioError) as e:
        scenario.load(p)
    assert e.value.key == "expect[0].left.scheduler" and "full_only = true" in e.value.message
    full = outcome_of(tmp_path, expect, cells + [seeded("bfq", s, 50.0) for s in (1, 2, 3)])
    assert full.status == "UNEXPECTED-PASS"
    assert "remove its known_failure mark" in full.line()


def test_summary_counts_every_status():
    def o(status):
        return expectations.Outcome("w", "d", status, None, None, "")
    outs = [o(s) for s in ("PASS", "PASS", "FAIL", "KNOWN-FAIL", "UNEXPECTED-PASS", "NOT-RUN",
                           "NOT-RUN", "ERROR")]
    assert expectations.summary(outs) == (
        "2 hold, 1 fail, 1 known failures, 1 unexpected passes, 2 not run in this form, "
        "1 errors (8 expectation outcomes)")
    assert [x.status for x in expectations.failing(outs)] == ["FAIL", "UNEXPECTED-PASS", "ERROR"]


@pytest.mark.parametrize("expect,key,words", [
    ('short = false', "expect[0].short", "full_only = true"),
    ('full_only = "yes"', "expect[0].full_only", "must be a boolean"),
    ('known_failure = ""', "expect[0].known_failure", "must say why"),
    ('known_failure = true', "expect[0].known_failure", "must be a string"),
    ('quorum = "most"', "expect[0].quorum", "not one of: all, median"),
])
def test_bad_status_keys(tmp_path, expect, key, words):
    p = tmp_path / "s.toml"
    p.write_text(STATUS_BASE + "[[expect]]\n" + BELOW_1000 + expect + "\n")
    for short in (False, True):
        with pytest.raises(ScenarioError) as e:
            scenario.load(p, short=short)
        assert e.value.key == key and words in e.value.message, e.value


def test_report_shows_each_seed_and_the_counts(tmp_path):
    from blklab import report

    expect = ('what = "5x"\nmetric = "clat_p99_ns"\nleft = {scheduler = "kyber"}\n'
              'right = {scheduler = "none"}\nratio = [4.0, 6.0]\n')
    cells = [seeded("none", s, 100.0) for s in (1, 2, 3)]
    cells += [seeded("kyber", s, v) for s, v in ((1, 482.0), (2, 312.0), (3, 134.0))]
    o = outcome_of(tmp_path, expect, cells)
    html = report.render(Path("run"), [], {"mode": "deterministic"}, [o])
    assert ("seed 1: 4.82 holds, seed 2: 3.12 fails, seed 3: 1.34 fails; spread 1.34-4.82"
            in html)
    assert "0 hold, 1 fail, 0 known failures" in html
