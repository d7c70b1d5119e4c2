"""[[job]] app = "etcd" (blklab.etcdjob): what a scenario may ask, the
script's etcd part, and how etcd's /metrics become the cell's histograms
and percentiles. The fixtures are etcd 3.4.23's own /metrics (Debian's
etcd-server 3.4.23-4+b4, the package the applications' root pins), read
before and after 20 puts on the host, cut to the etcd_disk_* histograms and
one summary (go_gc_duration_seconds, whose labels are not `le`)."""

import math
import subprocess
from pathlib import Path

import pytest

from blklab import appjobs, etcdjob, scenario
from blklab.errors import ScenarioError

FIXTURES = Path(__file__).parent / "fixtures" / "etcdjob"
WAL = etcdjob.HISTOGRAMS["wal_fsync"]
COMMIT = etcdjob.HISTOGRAMS["backend_commit"]
SCENARIO = """
[scenario]
workload = "command"
schedulers = ["none"]
[guest]
apps = true
[[device]]
name = "d0"
kind = "nvme"
backing = "file"
profile = "zero-latency"
[filesystem]
type = "ext4"
"""
ETCD = """
[[job]]
name = "wal"
app = "etcd"
options = {puts = 50}
"""


def _load(tmp_path, text):
    p = tmp_path / "s.toml"
    p.write_text(text)
    return scenario.load(p)


def _metrics(n: int) -> str:
    return (FIXTURES / f"metrics-{n}.txt").read_text()


def test_the_histograms_of_etcd_s_metrics():
    h = etcdjob.parse_metrics(_metrics(1))
    wal = h[WAL]
    # etcd 3.4: ExponentialBuckets(0.001, 2, 14) and +Inf.
    assert [b for b, _ in wal["buckets"]] == [0.001 * 2**k for k in range(14)] + [math.inf]
    assert wal["count"] == 25 and wal["buckets"][-1][1] == 25
    assert wal["sum"] == pytest.approx(0.3372056580000001)
    cumulative = [c for _, c in wal["buckets"]]
    assert cumulative == sorted(cumulative)
    assert COMMIT in h
    # A summary's quantile lines are not a histogram's buckets.
    assert "go_gc_duration_seconds" not in h or not h["go_gc_duration_seconds"]["buckets"]


def test_the_measured_run_is_the_difference_of_two_reads():
    before, after = (etcdjob.parse_metrics(_metrics(n))[WAL] for n in (0, 1))
    d = etcdjob.histogram_delta(before, after)
    # 20 puts, one fdatasync each (a single member saves each entry with a sync).
    assert d["count"] == 20 and d["buckets"][-1][1] == 20
    assert all(c >= 0 for _, c in d["buckets"])
    assert d["sum"] == pytest.approx(after["sum"] - before["sum"])
    # Before the first read nothing was counted: the run is the second read.
    assert etcdjob.histogram_delta(None, after)["count"] == after["count"]


def test_a_delta_refuses_histograms_that_do_not_match():
    after = etcdjob.parse_metrics(_metrics(1))[WAL]
    fewer = {"buckets": after["buckets"][1:], "sum": 0.0, "count": 0}
    with pytest.raises(ValueError, match="buckets changed"):
        etcdjob.histogram_delta(fewer, after)
    more = {"buckets": [(b, c + 1) for b, c in after["buckets"]], "sum": 0.0, "count": 0}
    with pytest.raises(ValueError, match="fell"):
        etcdjob.histogram_delta(more, after)


def _cumulative(per_bucket):
    out, total = [], 0
    for bound, n in per_bucket:
        total += n
        out.append((bound, total))
    return out


def test_a_percentile_is_the_bucket_its_nearest_rank_falls_in():
    # 100 fdatasyncs: 98 under 1 ms, one in (1, 2] ms, one in (2, 4] ms.
    h = _cumulative([(0.001, 98), (0.002, 1), (0.004, 1), (math.inf, 0)])
    assert etcdjob.bucket_percentile(h, 50) == (0.0, 0.001)
    assert etcdjob.bucket_percentile(h, 98) == (0.0, 0.001)
    assert etcdjob.bucket_percentile(h, 99) == (0.001, 0.002)  # the 99th of 100
    assert etcdjob.bucket_percentile(h, 99.9) == (0.002, 0.004)  # ceil(99.9) = 100th
    assert etcdjob.bucket_percentile(_cumulative([(0.001, 0), (math.inf, 0)]), 99) is None


def test_the_rank_is_exact():
    # 1000 samples: the 99.9th percentile is the 999th; in floats 99.9 / 100
    # * 1000 is a little over 999 and would take the 1000th.
    h = _cumulative([(0.001, 999), (0.002, 1), (math.inf, 0)])
    assert etcdjob.bucket_percentile(h, 99.9) == (0.0, 0.001)


def test_past_the_last_bound_the_upper_bound_is_unknown():
    h = _cumulative([(0.001, 1), (8.192, 0), (math.inf, 1)])
    s = etcdjob.summary({"buckets": h, "sum": 10.0, "count": 2})
    assert s["percentiles"]["99"] == {"lower_s": 8.192, "upper_s": None}
    assert s["buckets"] == [[0.001, 1], [8.192, 0], ["+Inf", 1]]
    assert s["mean_s"] == 5.0


def _files(puts_line="puts: 20\n"):
    return {"command-wal-run.txt": puts_line.encode(),
            "command-wal-metrics-start.txt": _metrics(0).encode(),
            "command-wal-metrics-end.txt": _metrics(1).encode(),
            "command-wal-start-uptime.txt": b"10.00\n",
            "command-wal-end-uptime.txt": b"12.50\n",
            "command-wal-start-stat.txt": b"0 0 0 0 0 0 0 0 0 0 0\n",
            "command-wal-end-stat.txt": b"4 0 10240 8 40 0 320 9 0 7 17\n"}


def test_a_job_s_results_and_metrics(tmp_path):
    s = _load(tmp_path, SCENARIO + ETCD)
    (entry,) = appjobs.results(s.app_jobs, _files())
    assert entry["transactions"] == 20 and entry["run_s"] == 2.5 and entry["tps"] == 8.0
    wal = entry["wal_fsync"]
    assert wal["count"] == 20 and sum(n for _, n in wal["buckets"]) == 20
    before, after = (etcdjob.parse_metrics(_metrics(n))[WAL] for n in (0, 1))
    mean = (after["sum"] - before["sum"]) / 20
    assert appjobs.metric(entry, "app_wal_fsync_mean_ns") == pytest.approx(mean * 1e9)
    assert appjobs.metric(entry, "app_wal_fsync_count") == 20.0
    lo, hi = etcdjob.bucket_percentile(etcdjob.histogram_delta(before, after)["buckets"], 99)
    assert appjobs.metric(entry, "app_wal_fsync_p99_ns") == pytest.approx(hi * 1e9)
    assert appjobs.metric(entry, "app_wal_fsync_p99_lower_ns") == pytest.approx(lo * 1e9)
    assert appjobs.metric(entry, "app_backend_commit_mean_ns") is not None
    # 10240 sectors read in 2.5 s: 5 MiB / 2.5 s.
    assert appjobs.metric(entry, "app_backup_mib_s") == pytest.approx(2.0)
    assert appjobs.metric(entry, "app_tps") == 8.0


def test_an_unfinished_put_loop_is_an_error_of_its_job(tmp_path):
    s = _load(tmp_path, SCENARIO + ETCD)
    (entry,) = appjobs.results(s.app_jobs, _files("put 7 failed\n"))
    assert "did not finish" in entry["error"]
    assert appjobs.metric(entry, "app_wal_fsync_mean_ns") is None


def test_the_job_s_options_and_their_defaults(tmp_path):
    (job,) = _load(tmp_path, SCENARIO + ETCD).app_jobs
    assert job.options == (("puts", "50"), ("value_bytes", "256"), ("backup", "sequential-read"),
                           ("backup_block_kib", "1024"))
    assert job.init == (("backup_file_mib", "256"),)


def test_the_script_parses_and_brackets_the_puts(tmp_path):
    text = _load(tmp_path, SCENARIO + ETCD + """
[etcd]
options = {snapshot-count = 5000, quota-backend-bytes = 1073741824}
""").jobs[0].command
    subprocess.run(["sh", "-n"], input=text, text=True, check=True)
    lines = text.splitlines()
    assert any(line.endswith("--snapshot-count=5000 --quota-backend-bytes=1073741824 \\")
               for line in lines)
    start, end = lines.index("mark wal-start"), lines.index("mark wal-end")
    assert lines[start + 1] == 'step wal-run etcd_puts 50 "$v"' and end == start + 2
    # The backup starts before the first mark and stops after the second;
    # its file is written before anything is measured.
    assert lines.index("backup_pid=$!") < start < end < lines.index("touch /tmp/backup-stop")
    assert lines.index("step prepare-sync sync") < start
    assert any(line.startswith("step wal-backup-file dd ") for line in lines)
    no_backup = _load(tmp_path, SCENARIO + ETCD.replace("puts = 50", 'puts = 5, backup = "none"'))
    assert "backup" not in no_backup.jobs[0].command.split("# Prepare")[1]


@pytest.mark.parametrize("extra, key, message", [
    ('[[job]]\nname = "a"\napp = "etcd"\n', "job[0].options.puts", "required"),
    ('[[job]]\nname = "a"\napp = "etcd"\noptions = {puts = 0}\n', "job[0].options.puts",
     "an integer from 1"),
    ('[[job]]\nname = "a"\napp = "etcd"\noptions = {puts = 5, backup = "tar"}\n',
     "job[0].options.backup", "'tar' is not one of"),
    ('[[job]]\nname = "a"\napp = "etcd"\noptions = {puts = 5, clients = 2}\n',
     "job[0].options.clients", "not an option of an etcd job"),
    ('[[job]]\nname = "a"\napp = "etcd"\noptions = {puts = 5}\ninit = {backup_file_mib = 0.5}\n',
     "job[0].init.backup_file_mib", "an integer"),
    ('[[job]]\nname = "a"\napp = "etcd"\noptions = {puts = 5}\n[etcd]\noptions = {data-dir = "/x"}\n',
     "etcd.options.data-dir", "is set by blklab"),
])
def test_bad_etcd_jobs(tmp_path, extra, key, message):
    with pytest.raises(ScenarioError) as e:
        _load(tmp_path, SCENARIO + extra)
    assert e.value.key == key and message in e.value.message


@pytest.mark.parametrize("line, key", [
    # etcd 3.4.23's own first lines for a bad value and an unknown flag.
    ('invalid value "abc" for flag -snapshot-count: parse error', "snapshot-count"),
    ("flag provided but not defined: -no-such-flag", "no-such-flag"),
])
def test_a_setting_etcd_refuses_is_named(line, key):
    files = {"command-etcd.txt": f"{line}\nUsage:\n".encode()}
    assert appjobs.refused_setting(files) == f"etcd.options.{key}: {line}"
