"""The short form ([short], `blklab run --short`) and scheduler switching
(scenario.switch_schedulers): parsing, expansion and the job bundle."""

from pathlib import Path

import pytest

from blklab import scenario
from blklab.bundle import JobBundle
from blklab.errors import ScenarioError

SCENARIO = """
[scenario]
schedulers = ["none", "mq-deadline", "kyber"]
repeats = 3
seeds = [1, 2]

[queue]
nr_requests = [64, 256]

[iosched.kyber]
read_lat_nsec = [2000000, 250000]

[short]
runtime = "1s"
schedulers = ["none", "kyber"]
repeats = 1
seeds = [1]
devices = ["nvme0"]
queue = {nr_requests = 256}
iosched = {kyber = {read_lat_nsec = [2000000, 250000]}}
job.writer = {startdelay = "0.2s", iodepth = 4}

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
runtime = "10s"

[[job]]
name = "writer"
rw = "randwrite"
runtime = "10s"
startdelay = "2s"

[[job]]
name = "once"
rw = "read"
size = "1m"

[[expect]]
what = "kyber's tight target helps reads"
metric = "clat_p99_ns"
left = {scheduler = "kyber", tunables = {"iosched/read_lat_nsec" = 250000}}
op = "<"
right = {scheduler = "none"}

[[expect]]
what = "mq-deadline, long form only"
metric = "iops"
left = {scheduler = "mq-deadline"}
op = ">"
right = {scheduler = "none"}
full_only = true

[[expect]]
what = "on the disk only"
device = "hdd0"
metric = "iops"
left = {scheduler = "none"}
above = 10
full_only = true
"""


def write(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "s.toml"
    p.write_text(text)
    return p


def test_long_form_ignores_short(tmp_path):
    s = scenario.load(write(tmp_path, SCENARIO))
    assert not s.short
    assert len(s.cells()) == 2 * (2 + 2 + 4) * 2 * 3
    assert len(s.expectations) == 3
    assert dict(s.jobs[0].options)["runtime"] == "10s"


def test_short_form_applies_every_key(tmp_path):
    s = scenario.load(write(tmp_path, SCENARIO), short=True)
    assert s.short
    assert [c.id for c in s.cells()] == [
        "nvme0.none.nr_requests=256.r0",
        "nvme0.kyber.nr_requests=256.read_lat_nsec=2000000.r0",
        "nvme0.kyber.nr_requests=256.read_lat_nsec=250000.r0"]
    reader, writer, once = (dict(j.options) for j in s.jobs)
    assert reader["runtime"] == "1s"
    assert writer == {"rw": "randwrite", "runtime": "1s", "startdelay": "0.2s", "iodepth": "4"}
    assert "runtime" not in once  # a job without a runtime keeps none
    # Every expectation stays; the short form runs the one not marked full_only.
    assert [e.what for e in s.expectations if s.runs(e)] == ["kyber's tight target helps reads"]
    assert [e.index for e in s.expectations] == [0, 1, 2]


def test_short_form_has_its_own_run_id(tmp_path):
    from blklab.runner import run_id_of

    path = write(tmp_path, SCENARIO)
    ids = {run_id_of(scenario.load(path, short=short), "deterministic", "tcg", {}, {})
           for short in (False, True)}
    assert len(ids) == 2


def test_without_short_table_short_form_is_the_full_form(tmp_path):
    text = SCENARIO.split("[short]")[0] + SCENARIO.split('job.writer = {startdelay = "0.2s", '
                                                          'iodepth = 4}\n')[1]
    path = write(tmp_path, text)
    assert ([c.id for c in scenario.load(path, short=True).cells()]
            == [c.id for c in scenario.load(path).cells()])


def test_short_cells_runs_the_matching_cells_only(tmp_path):
    text = SCENARIO.replace('repeats = 1\n', 'repeats = 1\ncells = ["*.none.*", "*=250000.r?"]\n', 1)
    s = scenario.load(write(tmp_path, text), short=True)
    assert [c.id for c in s.cells()] == [
        "nvme0.none.nr_requests=256.r0",
        "nvme0.kyber.nr_requests=256.read_lat_nsec=250000.r0"]
    assert len(scenario.load(write(tmp_path, text)).cells()) == 2 * (2 + 2 + 4) * 2 * 3


@pytest.mark.parametrize("change,key,words", [
    (('right = {scheduler = "none"}\nfull_only = true', 'right = {scheduler = "none"}'),
     "expect[1].left.scheduler", "'mq-deadline' is not run"),
    (("left = {scheduler = \"kyber\", tunables = {\"iosched/read_lat_nsec\" = 250000}}",
      "left = {scheduler = \"kyber\", tunables = {\"iosched/read_lat_nsec\" = 100}}"),
     "expect[0].left.tunables.iosched/read_lat_nsec", "100 is not run by the short form"),
    (('devices = ["nvme0"]', 'devices = ["sdq"]'), "short.devices", "'sdq' is not a"),
    (('devices = ["nvme0"]', 'devices = []'), "short.devices", "at least one"),
    (('job.writer = {startdelay = "0.2s", iodepth = 4}', 'job.writer = {name = "w"}'),
     "short.job.writer.name", "keeps its name"),
    (('job.writer = {startdelay', 'job.w = {startdelay'), "short.job.w", "no [[job]]"),
    (('repeats = 1\n', 'repeats = 0\n'), "scenario.repeats", "(in the short form"),
    (('repeats = 1\n', 'repeats = 1\ncells = ["*.bfq.*"]\n'), "short.cells[0]",
     "'*.bfq.*' matches no cell of the short form (its cells: nvme0.none.nr_requests=256.r0"),
    (('repeats = 1\n', 'repeats = 1\ncells = []\n'), "short.cells", "non-empty array"),
    (('repeats = 1\n', 'repeats = 1\ncells = [3]\n'), "short.cells", "cell id patterns"),
    # The right side's own device is not run by the short form.
    (('what = "on the disk only"\ndevice = "hdd0"\nmetric = "iops"\nleft = {scheduler = "none"}\n'
      'above = 10\nfull_only = true',
      'what = "the SSD against the disk"\ndevice = "nvme0"\nmetric = "iops"\n'
      'left = {scheduler = "none"}\nratio = [1, 1000]\nright = {device = "hdd0", scheduler = "none"}'),
     "expect[2].right.device", "'hdd0' is not run by the short form"),
    # The kyber expectation's 250 us cell is not among the cells kept.
    (('repeats = 1\n', 'repeats = 1\ncells = ["*.none.*", "*=2000000.r0"]\n'),
     "expect[0].left", "selects no cell that short.cells runs (device nvme0)"),
])
def test_bad_short_forms(tmp_path, change, key, words):
    old, new = change
    assert old in SCENARIO
    text = SCENARIO.replace(old, new, 1)
    for short in (False, True):
        with pytest.raises(ScenarioError) as e:
            scenario.load(write(tmp_path, text), short=short)
        assert e.value.key == key and words in e.value.message, e.value


SWITCHING = """
[scenario]
schedulers = ["none"]
switch_schedulers = ["mq-deadline", "kyber", "bfq", "none"]
switch_interval_ms = 200

[[device]]
name = "nvme0"
kind = "nvme"
profile = "zero-latency"

[[job]]
name = "r"
rw = "randread"
"""


def test_switching_reaches_the_bundle(tmp_path):
    s = scenario.load(write(tmp_path, SWITCHING))
    (cell,) = s.cells()
    assert cell.switch_schedulers == ("mq-deadline", "kyber", "bfq", "none")
    env = JobBundle.for_cell(cell, s.workload, s.jobs).files()["job/job.env"].decode()
    assert "BLKLAB_SWITCH_SCHEDULERS='mq-deadline kyber bfq none'\n" in env
    assert "BLKLAB_SWITCH_INTERVAL_MS=200\n" in env


def test_default_interval_and_no_switching_leaves_bundle_alone(tmp_path):
    s = scenario.load(write(tmp_path, SWITCHING.replace("switch_interval_ms = 200\n", "")))
    assert s.cells()[0].switch_interval_ms == scenario.DEFAULT_SWITCH_INTERVAL_MS
    s = scenario.load(write(tmp_path, SWITCHING.replace(
        'switch_schedulers = ["mq-deadline", "kyber", "bfq", "none"]\nswitch_interval_ms = 200\n',
        "")))
    env = JobBundle.for_cell(s.cells()[0], s.workload, s.jobs).files()["job/job.env"].decode()
    assert "SWITCH" not in env


@pytest.mark.parametrize("change,key,words", [
    ('["mq-deadline", "kyber", "bfq", "none"]', "scenario.switch_schedulers",
     "at least two"),
])
def test_bad_switching(tmp_path, change, key, words):
    text = SWITCHING.replace(change, '["kyber"]')
    with pytest.raises(ScenarioError) as e:
        scenario.load(write(tmp_path, text))
    assert e.value.key == key and words in e.value.message
