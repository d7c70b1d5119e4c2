"""[[job]] app = "etcd" (blklab.etcdjob): what a scenario may ask, the
script's etcd part, and how etcd's /metrics become the cell's histograms
and percentiles. The fixtures are etcd 3.4.23's own /metrics (Debian's
etcd-server 3.4.23-4+b4, the package the applications' root pins), read
before and after 20 puts on the host, cut to the etcd_disk_* histograms and
one summary (go_gc_duration_seconds, whose labels are not `le`)."""

import math
import shutil
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
            "command-wal-end-stat.txt": b"4 0 10240 8 40 0 320 9 0 7 17\n",
            "command-wal-seeded.txt": b"start_delay_us 20270\nbackup_skip_blocks 200\n"}


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
    assert entry["start_delay_us"] == 20270 and entry["backup_skip_blocks"] == 200


def test_a_job_without_its_seeded_start_is_an_error_of_its_job(tmp_path):
    s = _load(tmp_path, SCENARIO + ETCD)
    files = _files()
    del files["command-wal-seeded.txt"]
    (entry,) = appjobs.results(s.app_jobs, files)
    assert "seeded start was not drawn" in entry["error"]
    no_backup = dict(_files(), **{"command-wal-seeded.txt": b"start_delay_us 0\n"})
    (entry,) = appjobs.results(s.app_jobs, no_backup)
    assert entry["start_delay_us"] == 0 and entry["backup_skip_blocks"] is None


def test_an_unfinished_put_loop_is_an_error_of_its_job(tmp_path):
    s = _load(tmp_path, SCENARIO + ETCD)
    (entry,) = appjobs.results(s.app_jobs, _files("put 7 failed\n"))
    assert "did not finish" in entry["error"]
    assert appjobs.metric(entry, "app_wal_fsync_mean_ns") is None


def test_the_job_s_options_and_their_defaults(tmp_path):
    (job,) = _load(tmp_path, SCENARIO + ETCD).app_jobs
    assert job.options == (("puts", "50"), ("value_bytes", "256"), ("backup", "sequential-read"),
                           ("backup_block_kib", "1024"), ("start_spread_ms", "100"))
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
    # The backup starts before the first mark, at its drawn block (stream
    # 1 of job 0, over the 256 blocks of 1 MiB of the 256 MiB file), and
    # stops after the second; the drawn delay (stream 0, under 100 ms)
    # comes after the backup's start and right before the first mark; the
    # file is written before anything is measured.
    assert lines.index("delay=$(seeded 0 100000)") < lines.index("skip=$(seeded 1 256)")
    assert lines.index("backup_reads /data/backup-0.img 1024k $skip "
                       '> "$out/wal-backup.txt" 2>&1 &') < lines.index("backup_pid=$!")
    assert lines[start - 1].startswith("[ $delay -eq 0 ] || sleep ")
    assert lines.index("backup_pid=$!") < start < end < lines.index("touch /tmp/backup-stop")
    assert lines.index("step prepare-sync sync") < start
    assert any(line.startswith("step wal-backup-file dd ") for line in lines)
    no_backup = _load(tmp_path, SCENARIO + ETCD.replace("puts = 50", 'puts = 5, backup = "none"'))
    assert "backup" not in no_backup.jobs[0].command.split("# Prepare")[1]
    at_once = _load(tmp_path, SCENARIO + ETCD.replace("puts = 50", "puts = 5, start_spread_ms = 0"))
    assert "delay=$(seeded 0 0)" in at_once.jobs[0].command.splitlines()


def test_the_second_job_draws_from_its_own_streams(tmp_path):
    text = _load(tmp_path, SCENARIO + ETCD + ETCD.replace('"wal"', '"two"').replace(
        "puts = 50", "puts = 5, backup_block_kib = 768")).jobs[0].command
    lines = text.splitlines()
    assert "delay=$(seeded 2 100000)" in lines
    # 256 MiB in blocks of 768 KiB: 341 whole ones and a last partial one.
    assert "skip=$(seeded 3 342)" in lines


# The shells the draw is run in: the guest's is busybox's ash (the
# applications' root has no other /bin/sh); the host's sh is checked too,
# so the draw does not lean on one shell's arithmetic.
SHELLS = [pytest.param(["busybox", "sh"], id="busybox",
                       marks=pytest.mark.skipif(shutil.which("busybox") is None,
                                                reason="no busybox on this host")),
          pytest.param(["sh"], id="sh")]


def _draws(shell, seeds, stream, n):
    """seeded STREAM N (etcdjob.SEEDED, as the guest runs it) for each seed."""
    body = etcdjob.SEEDED + (f'for s in {" ".join(map(str, seeds))}; do '
                             f'BLKLAB_SEED=$s; seeded {stream} {n}; done\n')
    out = subprocess.run(shell, input=body, text=True, capture_output=True, check=True).stdout
    return [int(v) for v in out.split()]


@pytest.mark.parametrize("shell", SHELLS)
def test_the_seeded_start_is_a_function_of_the_seed(shell):
    """The delay and the first block are drawn from the cell's seed alone:
    the same seed draws the same, seeds 1, 2 and 3 draw three different
    values, and the two streams of a job differ."""
    for stream, n in ((etcdjob.DELAY_STREAM, 100_000), (etcdjob.SKIP_STREAM, 256)):
        once, again = _draws(shell, [1, 2, 3], stream, n), _draws(shell, [1, 2, 3], stream, n)
        assert once == again
        assert len(set(once)) == 3, once
    assert _draws(shell, [1], 0, 100_000) != _draws(shell, [1], 1, 100_000)


@pytest.mark.parametrize("shell", SHELLS)
def test_the_seeded_start_is_bounded_and_spread_over_its_range(shell):
    """Each draw lies in [0, n), as derived (the delay under
    start_spread_ms, the block inside the file), and 200 seeds' draws
    reach both tenths of the range's ends: for uniform draws the chance
    that none falls in one end's tenth is 0.9^200 < 1e-9."""
    for stream, n in ((0, 100_000), (1, 256), (3, 342), (0, 10_000_000)):
        v = _draws(shell, range(200), stream, n)
        assert all(0 <= x < n for x in v)
        assert min(v) < n / 10 and max(v) >= n * 9 / 10, (stream, n, min(v), max(v))
    # The largest seed (2^32 - 1), a late stream and the largest range keep
    # to 64-bit arithmetic: in range, and both shells agree (below).
    (big,) = _draws(shell, [2**32 - 1], 41, 10_000_000)
    assert 0 <= big < 10_000_000
    assert _draws(shell, [0], 0, 0) == [0]


@pytest.mark.skipif(shutil.which("busybox") is None, reason="no busybox on this host")
def test_busybox_and_sh_draw_the_same():
    seeds = [0, 1, 2, 3, 2**31 - 1, 2**32 - 1]
    for stream, n in ((0, 100_000), (1, 256), (41, 10_000_000)):
        assert _draws(["busybox", "sh"], seeds, stream, n) == _draws(["sh"], seeds, stream, n)


def test_the_delay_is_slept_in_seconds_with_its_microseconds(tmp_path):
    (job,) = _load(tmp_path, SCENARIO + ETCD).app_jobs
    (line,) = [x for x in etcdjob.run_script("wal", 0, dict(job.init), dict(job.options),
                                              "mark").splitlines() if "sleep" in x]
    for delay, said in ((0, ""), (7, "0.000007"), (99_999, "0.099999"), (1_234_567, "1.234567")):
        out = subprocess.run(["sh", "-c", f"sleep() {{ echo $1; }}; delay={delay}; {line}"],
                             text=True, capture_output=True, check=True).stdout
        assert out.strip() == said


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
    ('[[job]]\nname = "a"\napp = "etcd"\noptions = {puts = 5, start_spread_ms = 10001}\n',
     "job[0].options.start_spread_ms", "an integer from 0 to 10000"),
    ('[[job]]\nname = "a"\napp = "etcd"\noptions = {puts = 5, start_spread_ms = -1}\n',
     "job[0].options.start_spread_ms", "an integer from 0 to 10000"),
    ('[[job]]\nname = "a"\napp = "etcd"\noptions = {puts = 5, start_spread_ms = 2.5}\n',
     "job[0].options.start_spread_ms", "an integer from 0 to 10000"),
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
