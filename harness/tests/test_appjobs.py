"""[[job]] app = "sysbench" / "pgbench" (blklab.appjobs): what a scenario
may ask, the script the guest runs, and how the benchmarks' own reports
are read. The fixtures are one cell's files (sysbench oltp_insert and
pgbench's TPC-B-like run, seed 1, tests/e2e/test_app_jobs.py's scenario)."""

import subprocess
from pathlib import Path

import pytest

from blklab import appjobs, report, scenario
from blklab.errors import ScenarioError

FIXTURES = Path(__file__).parent / "fixtures" / "appjobs"
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
SYSBENCH = """
[[job]]
name = "insert"
app = "sysbench"
test = "oltp_insert"
options = {tables = 2, table_size = 1000, threads = 2, time = 1, skip_trx = true}
"""
PGBENCH = """
[[job]]
name = "tpcb"
app = "pgbench"
init = {scale = 1, unlogged_tables = true}
options = {client = 2, time = 1, no_vacuum = true, connect = false, builtin = "simple-update"}
"""


def _load(tmp_path, text):
    p = tmp_path / "s.toml"
    p.write_text(text)
    return scenario.load(p)


def _fixture(name: str) -> str:
    return (FIXTURES / name).read_text()


def test_jobs_in_order_with_their_options(tmp_path):
    s = _load(tmp_path, SCENARIO + SYSBENCH + PGBENCH)
    sb, pg = s.app_jobs
    assert (sb.name, sb.app, sb.test) == ("insert", "sysbench", "oltp_insert")
    # Written with '_' or '-', passed with '-'; sysbench's booleans are on/off.
    assert sb.options == (("tables", "2"), ("table-size", "1000"), ("threads", "2"),
                          ("time", "1"), ("skip-trx", "on"))
    # pgbench's booleans are flags: true given, false left out.
    assert pg.init == (("scale", "1"), ("unlogged-tables", ""))
    assert pg.options == (("client", "2"), ("time", "1"), ("no-vacuum", ""),
                          ("builtin", "simple-update"))
    # One command job runs them all.
    (job,) = s.jobs
    assert s.workload == "command" and job.command == appjobs.script(s.app_jobs)


def test_the_script_parses_and_prepares_before_it_measures(tmp_path):
    text = _load(tmp_path, SCENARIO + SYSBENCH + PGBENCH).jobs[0].command
    subprocess.run(["sh", "-n"], input=text, text=True, check=True)
    lines = text.splitlines()
    first_mark = next(i for i, line in enumerate(lines) if line.startswith("mark "))
    prepares = [i for i, line in enumerate(lines) if "-prepare " in line]
    assert len(prepares) == 2 and max(prepares) < first_mark
    sysbench = [line for line in lines if line.startswith("step insert-")
                and "sysbench" in line]
    assert len(sysbench) == 2  # prepare and run, both seeded
    assert all("--rand-seed=$sbseed" in line for line in sysbench)
    (run,) = [line for line in lines if line.startswith("step tpcb-run ")]
    assert "--random-seed=$BLKLAB_SEED" in run and " -l " in run
    # The measured runs are bracketed by the device's counters.
    for name in ("insert", "tpcb"):
        start, end = lines.index(f"mark {name}-start"), lines.index(f"mark {name}-end")
        assert lines[start + 1].startswith(f"step {name}-run ") and end == start + 2


def test_only_the_servers_the_jobs_need_start(tmp_path):
    text = _load(tmp_path, SCENARIO + PGBENCH).jobs[0].command
    assert "mariadbd" not in text and "/postgres -D" in text
    text = _load(tmp_path, SCENARIO + SYSBENCH).jobs[0].command
    assert "mariadbd" in text and "postgres" not in text


@pytest.mark.parametrize("seed", [0, 1, 2**31 - 2, 2**31 - 1, 2**32 - 1])
def test_the_shell_computes_the_documented_sysbench_seed(seed):
    """sysbench takes 0 for the time of day and reads an int: the script's
    seed is in 1..2^31-1, and the shell's arithmetic gives sysbench_seed."""
    line = next(line for line in appjobs.script(()).splitlines() if line.startswith("sbseed="))
    out = subprocess.run(["sh", "-c", f"BLKLAB_SEED={seed}; {line}; echo $sbseed"],
                         capture_output=True, text=True, check=True).stdout
    assert int(out) == appjobs.sysbench_seed(seed)
    assert 1 <= appjobs.sysbench_seed(seed) <= 2**31 - 1


def test_sysbench_seeds_differ_for_different_cell_seeds():
    seeds = [0, 1, 2, 2**31 - 2]
    assert len({appjobs.sysbench_seed(s) for s in seeds}) == len(seeds)


def test_sysbench_percentiles_follow_sysbench_s_own_rule():
    # floor(100 * p / 100 + 0.5) events: 50 -> 1.0, 51..95 -> 2.0, 96.. -> 3.0.
    hist = [(1.0, 50), (2.0, 45), (3.0, 5)]
    assert [appjobs.histogram_percentile(hist, p) for p in (50, 95, 95.4, 95.6, 99.9)] == [
        1.0, 2.0, 2.0, 3.0, 3.0]
    assert appjobs.histogram_percentile([], 50) is None


def test_sysbench_report_read():
    r = appjobs.parse_sysbench(_fixture("insert-run.txt"))
    assert r["transactions"] > 0 and r["errors"] == 0 and r["reconnects"] == 0
    # oltp_insert: one INSERT per transaction (oltp_insert.lua's event).
    assert r["queries"] == r["transactions"] and r["qps"] == r["tps"]
    # The histogram counts every event.
    assert sum(c for _, c in r["histogram_ms"]) == r["transactions"]
    lat = r["latency_ms"]
    pct = [lat["percentiles"][k] for k in ("50", "95", "99", "99.9")]
    assert lat["min"] <= pct[0] <= pct[1] <= pct[2] <= pct[3] <= lat["max"]
    # The 95th from the histogram is the one sysbench printed (to its %.2f).
    assert abs(lat["percentiles"]["95"] - lat["reported_percentile"]["95"]) <= 0.005
    # tps is transactions over the run's total time.
    assert r["tps"] == pytest.approx(r["transactions"] / r["time_s"], rel=1e-3)


def test_pgbench_report_and_log_read():
    # 1000 transactions of 1..1000 us, and two that did not complete, as
    # pgbench logs them and the script's awk counts them.
    log = "".join(f"{i % 2} {i} {i} 0 1577836800 {i}\n" for i in range(1, 1001))
    log += "0 1001 failed 0 1577836801 0\n1 1002 skipped 0 1577836801 0\n"
    awk = next(line for line in appjobs.script(
        (appjobs.AppJob("t", "pgbench"),)).splitlines() if "| awk " in line)
    program = awk.split("awk '", 1)[1].split("'", 1)[0]
    counts = subprocess.run(["busybox", "awk", program], input=log, capture_output=True,
                            text=True, check=True).stdout
    r = appjobs.parse_pgbench(_fixture("tpcb-run.txt"), counts)
    assert r["transactions"] > 0 and r["errors"] == 0 and r["tps"] > 0
    assert r["logged_transactions"] == 1000
    lat = r["latency_ms"]
    # Nearest rank: the ceil(p/100 * n)-th smallest.
    assert lat["percentiles"] == {"50": 0.5, "95": 0.95, "99": 0.99, "99.9": 0.999}
    assert (lat["min"], lat["max"], lat["mean"]) == (0.001, 1.0, 0.5005)
    assert lat["avg"] == 0.647  # pgbench's own line, as printed


def test_results_carry_the_measured_window(tmp_path):
    s = _load(tmp_path, SCENARIO + SYSBENCH)
    files = {f"command-{p.name}": p.read_bytes() for p in FIXTURES.iterdir()}
    (r,) = appjobs.results(s.app_jobs, files)
    assert "error" not in r and r["name"] == "insert"
    d = r["disk_stats"]
    start = float(_fixture("insert-start-uptime.txt"))
    end = float(_fixture("insert-end-uptime.txt"))
    assert d["derived"]["elapsed_ms"] == pytest.approx((end - start) * 1000.0)
    assert d["delta"]["write_ios"] == d["after"]["write_ios"] - d["before"]["write_ios"] > 0


def test_a_missing_report_is_an_error_of_its_job(tmp_path):
    s = _load(tmp_path, SCENARIO + SYSBENCH + PGBENCH)
    rows = appjobs.results(s.app_jobs, {})
    assert [r["error"] for r in rows] == ["no 'transactions:' line in sysbench's report",
                                          "no transaction count or tps in pgbench's report"]


def test_the_report_has_a_row_per_job(tmp_path):
    s = _load(tmp_path, SCENARIO + SYSBENCH)
    files = {f"command-{p.name}": p.read_bytes() for p in FIXTURES.iterdir()}
    cell = {"cell_id": "d0.none.r0", "workload": {"apps": appjobs.results(s.app_jobs, files)}}
    (row,) = report.app_rows([cell])
    assert row["bench"] == "sysbench oltp_insert" and row["job"] == "insert"
    r = appjobs.parse_sysbench(_fixture("insert-run.txt"))
    assert row["cols"][0] == f"{r['transactions']:,}"
    assert row["cols"][6] == f"{r['latency_ms']['percentiles']['95']:,.3f}"


@pytest.mark.parametrize("extra, key, message", [
    ('[[job]]\nname = "a"\napp = "sysbench"\ntest = "fileio"\n', "job[0].test",
     "'fileio' is not one of"),
    ('[[job]]\nname = "a"\napp = "sysbench"\ntest = "bulk_insert"\noptions = {tables = 1}\n',
     "job[0].options.tables", "not an option of sysbench bulk_insert"),
    ('[[job]]\nname = "a"\napp = "pgbench"\noptions = {random_seed = 3}\n',
     "job[0].options.random_seed", "set by blklab"),
    ('[[job]]\nname = "a"\napp = "pgbench"\noptions = {client = [1, 2]}\n',
     "job[0].options.client", "must be a string, a number or a boolean"),
    ('[[job]]\nname = "a"\napp = "pgbench"\n[[job]]\nname = "a"\napp = "pgbench"\n',
     "job[1].name", "names an earlier job too"),
    ('[[job]]\nname = "a"\napp = "pgbench"\n[[job]]\nname = "b"\ncommand = "true"\n',
     "job[1]", "a command job runs alone"),
])
def test_bad_app_jobs(tmp_path, extra, key, message):
    with pytest.raises(ScenarioError) as e:
        _load(tmp_path, SCENARIO + extra)
    assert e.value.key == key and message in e.value.message


def test_an_app_job_needs_the_command_workload(tmp_path):
    with pytest.raises(ScenarioError) as e:
        _load(tmp_path, SCENARIO.replace('workload = "command"\n', "") + PGBENCH)
    assert e.value.key == "job[0].app" and 'workload = "command"' in e.value.message


def test_the_servers_get_their_settings(tmp_path):
    text = _load(tmp_path, SCENARIO + SYSBENCH + PGBENCH + """
[mariadb]
options = {innodb_flush_log_at_trx_commit = 2, innodb-buffer-pool-size = "256M"}
[postgresql]
options = {checkpoint_timeout = "30s", fsync = true}
""").jobs[0].command
    subprocess.run(["sh", "-n"], input=text, text=True, check=True)
    (mariadbd,) = [line for line in text.splitlines()
                   if "--innodb_flush_log_at_trx_commit=" in line]
    assert mariadbd.split() == ["--innodb_flush_log_at_trx_commit=2",
                                "--innodb-buffer-pool-size=256M", '>', '"$out/mariadbd.txt"',
                                "2>&1", "&"]
    (postgres,) = [line for line in text.splitlines() if "/postgres -D" in line]
    assert postgres.endswith('-c jit=off -c log_line_prefix=%n: -c log_checkpoints=on '
                             '-c checkpoint_timeout=30s -c fsync=on" \\')


@pytest.mark.parametrize("extra, key, message", [
    ('[mariadb]\noptions = {innodb_flush_method = "O_DIRECT"}\n', "mariadb",
     'no [[job]] has app = "sysbench"'),
    ('[postgresql]\noptions = {data_directory = "/tmp/x"}\n', "postgresql.options.data_directory",
     "is set by blklab"),
    ('[postgresql]\noptions = {"shared buffers" = "1GB"}\n', 'postgresql.options.shared buffers',
     "a setting's name"),
    ('[postgresql]\nsettings = {fsync = false}\n', "postgresql.settings", "unknown key"),
])
def test_bad_server_settings(tmp_path, extra, key, message):
    with pytest.raises(ScenarioError) as e:
        _load(tmp_path, SCENARIO + PGBENCH + extra)
    assert e.value.key == key and message in e.value.message


def test_a_server_s_settings_without_app_jobs(tmp_path):
    with pytest.raises(ScenarioError) as e:
        _load(tmp_path, SCENARIO + '[[job]]\nname = "c"\ncommand = "true"\n'
              '[postgresql]\noptions = {fsync = false}\n')
    assert e.value.key == "postgresql" and 'app = "pgbench"' in e.value.message


def test_a_job_whose_report_does_not_parse_fails_the_cell(tmp_path):
    from blklab import cell as cell_mod, channel
    from blklab.results import CellResult

    s = _load(tmp_path, SCENARIO + SYSBENCH + PGBENCH)
    (c,) = scenario.expand_cells(s)
    files = {f"command-{p.name}": p.read_bytes() for p in FIXTURES.iterdir()}
    result = CellResult(c.id, "ok", None, {}, in_effect={"scheduler": c.scheduler})
    result.workload = {"command": {"exit_code": 0, "files": []},
                       "apps": appjobs.results(s.app_jobs, files)}
    data = channel.ChannelData(hello="6.12", status="ok")
    # The fixtures hold pgbench's report but not its transaction log.
    assert cell_mod._failure(c, result, data, None, "") == (
        "job 'tpcb' (pgbench): pgbench counted transactions and its transaction log has none")
    result.workload["apps"] = result.workload["apps"][:1]
    assert cell_mod._failure(c, result, data, None, "") is None


def _fixture_results(tmp_path):
    s = _load(tmp_path, SCENARIO + SYSBENCH)
    files = {f"command-{p.name}": p.read_bytes() for p in FIXTURES.iterdir()}
    (r,) = appjobs.results(s.app_jobs, files)
    return r


def test_an_app_job_s_metrics(tmp_path):
    r = _fixture_results(tmp_path)
    d = r["disk_stats"]["delta"]
    assert appjobs.metric(r, "app_tps") == r["tps"]
    assert appjobs.metric(r, "app_latency_mean_ns") == r["latency_ms"]["avg"] * 1e6
    assert appjobs.metric(r, "app_latency_p99_ns") == r["latency_ms"]["percentiles"]["99"] * 1e6
    assert appjobs.metric(r, "app_latency_p95_ns") == r["latency_ms"]["percentiles"]["95"] * 1e6
    assert appjobs.metric(r, "app_flushes_per_transaction") == \
        d["flush_ios"] / r["transactions"]
    assert appjobs.metric(r, "app_writes_per_transaction") == \
        d["write_ios"] / r["transactions"]
    # A job that failed has no figures.
    assert appjobs.metric({**r, "error": "x"}, "app_tps") is None
    no_stats = {k: v for k, v in r.items() if k != "disk_stats"}
    assert appjobs.metric(no_stats, "app_flushes_per_transaction") is None


APP_EXPECT = """
[[expect]]
what = "tps in bounds"
metric = "app_tps"
left = {{scheduler = "none", job = "insert"}}
above = {above}
below = {below}
"""


def _app_cell(r, seed):
    return {"cell_id": f"d0.none.seed={seed}.r0", "status": "ok",
            "request": {"device": {"name": "d0"}, "scheduler": "none", "tunables": {},
                        "seed": seed},
            "summary": [], "workload": {"command": "x", "apps": [r]}}


@pytest.mark.parametrize("margin, status", [(1.0, "PASS"), (-1.0, "FAIL")])
def test_an_expectation_reads_an_app_job_s_metric(tmp_path, margin, status):
    from blklab import expectations

    r = _fixture_results(tmp_path)
    tps = r["tps"]
    text = SCENARIO + SYSBENCH + APP_EXPECT.format(above=tps - margin, below=tps + margin)
    (o,) = expectations.evaluate(_load(tmp_path, text), [_app_cell(r, 1), _app_cell(r, 2)])
    assert o.status == status and o.left == tps
    assert [s.value for s in o.seeds] == [tps, tps]


def test_an_app_metric_of_a_failed_job_is_an_error(tmp_path):
    from blklab import expectations

    r = {**_fixture_results(tmp_path), "error": "no 'transactions:' line"}
    text = SCENARIO + SYSBENCH + APP_EXPECT.format(above=0, below=1e9)
    (o,) = expectations.evaluate(_load(tmp_path, text), [_app_cell(r, 1)])
    assert o.status == "ERROR" and "has no app_tps" in o.detail


@pytest.mark.parametrize("body, key, message", [
    ('metric = "app_tps"\ndirection = "read"\nleft = {job = "insert"}\nbelow = 1',
     "expect[0].direction", "which has no direction"),
    ('metric = "app_tps"\nleft = {job = "apps"}\nbelow = 1', "expect[0].left.job",
     "no [[job]] is named 'apps'"),
    ('metric = "iops"\nleft = {job = "insert"}\nbelow = 1', "expect[0].left.job",
     "no [[job]] is named 'insert'"),
])
def test_bad_app_expectations(tmp_path, body, key, message):
    with pytest.raises(ScenarioError) as e:
        _load(tmp_path, SCENARIO + SYSBENCH + '[[expect]]\nwhat = "x"\n' + body + "\n")
    assert e.value.key == key and message in e.value.message


def test_an_app_metric_needs_an_app_job(tmp_path):
    text = """
[scenario]
schedulers = ["none"]
[[device]]
name = "d0"
kind = "nvme"
profile = "zero-latency"
[[job]]
name = "r"
rw = "randread"
[[expect]]
what = "x"
metric = "app_tps"
left = {}
below = 1
"""
    with pytest.raises(ScenarioError) as e:
        _load(tmp_path, text)
    assert e.value.key == "expect[0].metric" and "no [[job]] has an app" in e.value.message


# PostgreSQL 15's checkpoint lines as log_line_prefix = "%n:" writes them
# (xlog.c LogCheckpointStart, LogCheckpointEnd).
PG_LOG = """1700000000.050:LOG:  database system is ready to accept connections
1700000001.000:LOG:  checkpoint starting: wal
1700000001.450:LOG:  checkpoint complete: wrote 800 buffers (4.9%); 0 WAL file(s) added, \
0 removed, 1 recycled; write=0.310 s, sync=0.140 s, total=0.450 s; sync files=5, \
longest=0.100 s, average=0.030 s; distance=16384 kB, estimate=16384 kB
1700000001.450:LOG:  checkpoint starting: wal
1700000009.000:LOG:  checkpoint complete: wrote 10 buffers (0.1%); 0 WAL file(s) added, \
0 removed, 0 recycled; write=6.000 s, sync=1.000 s, total=7.000 s; sync files=1, \
longest=1.000 s, average=1.000 s; distance=16390 kB, estimate=16390 kB
"""
# Intervals of 100 ms since the epoch: index, transactions, latency sum (us), max (us).
INTERVALS = """17000000005 10 10000 1500
17000000012 4 40000 20000
17000000013 10 10000 1200
"""


def test_checkpoint_lines_read():
    a, b = appjobs.parse_checkpoints(PG_LOG)
    assert a == {"start_epoch_s": 1700000001.0, "end_epoch_s": 1700000001.45, "reason": "wal",
                 "buffers": 800, "wal_added": 0, "wal_removed": 0, "wal_recycled": 1,
                 "write_s": 0.31, "sync_s": 0.14, "total_s": 0.45, "sync_files": 5,
                 "longest_sync_s": 0.1, "distance_kb": 16384}
    # The second starts in the millisecond the first ended in.
    assert b["start_epoch_s"] == 1700000001.45 and b["end_epoch_s"] == 1700000009.0
    assert b["buffers"] == 10 and b["sync_s"] == 1.0 and b["distance_kb"] == 16390


def test_the_timeline_marks_the_intervals_a_sync_phase_overlaps():
    t = appjobs.checkpoint_timeline(INTERVALS, PG_LOG)
    assert t["origin_epoch_s"] == 1700000000.5
    # The first checkpoint writes from 1.0 s past the epoch's second
    # 1700000000 and syncs from 1.31 to 1.45 s: [1.2, 1.3) is in its write
    # phase, [1.3, 1.4) in its sync phase. The second ends after the run.
    assert [r[0] for r in t["intervals"]] == [0.0, 0.7, 0.8]
    assert [r[4] for r in t["intervals"]] == ["-", "write", "sync"]
    assert t["intervals"][1][1:4] == [4, 10.0, 20.0]
    assert t["checkpoints_in_run"] == 0  # the first ended at 1.45 s, after the last interval
    assert t["sync_phase"] == {"intervals": 1, "transactions": 10, "mean_ms": 1.0,
                               "max_ms": 1.2}
    assert t["other"] == {"intervals": 2, "transactions": 14,
                          "mean_ms": round(50000 / 14 / 1000, 6), "max_ms": 20.0}
    assert [c["in_run"] for c in t["checkpoints"]] == [False, False]
    assert t["checkpoints"][0]["start_s"] == 0.5 and t["checkpoints"][0]["end_s"] == 0.95


def test_checkpoint_metrics():
    longer = INTERVALS + "17000000014 2 2000 1000\n"
    t = appjobs.checkpoint_timeline(longer, PG_LOG)
    assert t["checkpoints_in_run"] == 1
    entry = {"timeline": t, "wal_bytes": 20 * 2**20, "latency_ms": {"max": 20.0}}
    assert appjobs.metric(entry, "app_checkpoints") == 1.0
    assert appjobs.metric(entry, "app_wal_bytes_per_checkpoint") == 20 * 2**20
    assert appjobs.metric(entry, "app_latency_max_ns") == 20.0e6
    assert appjobs.metric(entry, "app_sync_phase_latency_max_ns") == 1.2e6
    assert appjobs.metric(entry, "app_other_latency_max_ns") == 20.0e6
    assert appjobs.metric(entry, "app_sync_phase_latency_mean_ns") == 1.0e6
    # No checkpoint in the run: no WAL per checkpoint.
    t0 = appjobs.checkpoint_timeline(INTERVALS, PG_LOG)
    assert appjobs.metric({"timeline": t0, "wal_bytes": 1}, "app_wal_bytes_per_checkpoint") is None


def test_the_script_counts_pgbench_s_log_per_interval(tmp_path):
    """The awk program the script runs, on two transactions in one 100 ms
    interval and a failed one (pgbench -l: client transaction time script
    epoch epoch_us)."""
    j = appjobs.AppJob("tpcb", "pgbench", "", (("time", "1"),), ())
    text = appjobs.script((j,))
    line = next(s for s in text.splitlines() if "-intervals.txt" in s)
    log = tmp_path / "pgbench-log-0.1"
    log.write_text("0 1 1500 0 1700000000 50000\n0 2 2500 0 1700000000 99999\n"
                   "0 3 failed 0 1700000000 120000\n0 4 700 0 1700000001 0\n")
    out = tmp_path / "out"
    out.mkdir()
    cmd = line.replace("/tmp/pgbench-log-0", str(tmp_path / "pgbench-log-0"))
    subprocess.run(["sh", "-c", cmd], check=True, env={"out": str(out), "PATH": "/usr/bin:/bin"})
    assert (out / "tpcb-intervals.txt").read_text() == (
        "17000000000 2 4000 2500\n17000000010 1 700 700\n")


@pytest.mark.parametrize("log, line, key", [
    ("postgres.txt", '1700000000.100:FATAL:  unrecognized configuration parameter '
     '"checkpoint_flush_aftr"', "postgresql.options.checkpoint_flush_aftr"),
    ("postgres.txt", 'FATAL:  invalid value for parameter "max_wal_size": "32XB"',
     "postgresql.options.max_wal_size"),
    ("postgres.txt", 'FATAL:  1 MB is outside the valid range for parameter "max_wal_size" '
     '(2 .. 2147483647)', "postgresql.options.max_wal_size"),
    ("postgres.txt", 'FATAL:  "max_wal_size" must be at least twice "wal_segment_size"',
     "postgresql.options.max_wal_size"),
    ("mariadbd.txt", "mariadbd: unknown variable 'innodb_flush_log_at_trx_comit=1'",
     "mariadb.options.innodb_flush_log_at_trx_comit"),
    ("postgres.txt", "LOG:  database system is ready to accept connections", None),
])
def test_a_refused_server_setting_is_named_by_its_key(log, line, key):
    from blklab import cell as cell_mod, channel
    files = {f"command-{log}": f"LOG:  starting PostgreSQL 15\n{line}\n".encode()}
    got = appjobs.refused_setting(files)
    assert got == (f"{key}: {line}" if key else None)
    c = scenario.Cell.__new__(scenario.Cell)
    data = channel.ChannelData(hello="6.12", status="fail", reason="command exited 1: ",
                               files=files)
    failure = cell_mod._failure(c, None, data, None, "")
    assert failure == (f"{key}: the server refused this setting at its start: {line} "
                       "(guest: command exited 1: )" if key else "guest: command exited 1: ")


def test_the_report_draws_a_pgbench_timeline():
    t = appjobs.checkpoint_timeline(INTERVALS, PG_LOG)
    cell = {"cell_id": "gp3.none.r0", "request": {"scheduler": "none"},
            "workload": {"apps": [{"name": "tpcb", "timeline": t}]}}
    assert report.app_timeline_plot("gp3", [cell]).startswith("data:image/png")
    cell["workload"]["apps"][0]["timeline"] = {"intervals": []}
    assert report.app_timeline_plot("gp3", [cell]) is None

def test_the_servers_and_benchmarks_error_lines(tmp_path):
    # Lines in the forms MariaDB 10.11's error log and sysbench 1.0.20 print
    # them (written for this test, not a cell's output): only the error,
    # warning and fatal lines are kept, without the server's date, time and
    # thread id; a file the guest did not send is left out.
    s = _load(tmp_path, SCENARIO + SYSBENCH)
    log = (b"2026-12-07  6:55:01 0 [Note] InnoDB: Buffer pool(s) load completed\n"
           b"2026-12-07  6:55:03 5 [ERROR] InnoDB: Operating system error number 61 in a "
           b"file operation.\n"
           b"2026-12-07  6:55:03 5 [Warning] InnoDB: Retry attempts for reading partial "
           b"data failed.\n"
           b"2026-12-07 16:55:04 0 [ERROR] [FATAL] InnoDB: IO Error: 61 during read\n"
           b"mariadbd got signal 6 ;\n")
    run = (b"Running the test with following options:\n"
           b"FATAL: mysql_stmt_execute() returned error 2013 (Lost connection to server "
           b"during query) for query 'SELECT c FROM sbtest1 WHERE id=?'\n"
           b"FATAL: `thread_run' function failed: ...\n")
    files = {"command-mariadbd.txt": log, "command-insert-run.txt": run}
    assert appjobs.error_lines(s.app_jobs, files) == {
        "mariadbd": ["[ERROR] InnoDB: Operating system error number 61 in a file operation.",
                     "[Warning] InnoDB: Retry attempts for reading partial data failed.",
                     "[ERROR] [FATAL] InnoDB: IO Error: 61 during read",
                     "mariadbd got signal 6 ;"],
        "insert-run": [run.decode().splitlines()[1], run.decode().splitlines()[2]]}
    assert appjobs.error_lines(s.app_jobs, {}) == {}
    clean = {"command-mariadbd.txt": log.splitlines(keepends=True)[0]}
    assert appjobs.error_lines(s.app_jobs, clean) == {"mariadbd": []}


FAULT = """
[scenario]
mode = "deterministic"
[[fault]]
device = "d0"
kind = "media_error"
probability = 0.001
"""


def _with_fault(tmp_path, jobs):
    text = SCENARIO.replace("[scenario]\n", FAULT.lstrip().split("[[fault]]")[0], 1)
    return _load(tmp_path, text + jobs + "[[fault]]" + FAULT.split("[[fault]]")[1])


def test_with_faults_the_script_marks_their_origin_once_before_the_measured_runs(tmp_path):
    """docs/faults.md, "The origin": an application job's faults count from
    its measured run, so the script marks the origin once, after the
    servers started and every prepare step (and its sync) ran, and before
    the first measured run's mark."""
    s = _with_fault(tmp_path, SYSBENCH + PGBENCH)
    text = s.jobs[0].command
    assert text == appjobs.script(s.app_jobs, appjobs.Servers(), faults=True)
    subprocess.run(["sh", "-n"], input=text, text=True, check=True)
    lines = text.splitlines()
    (origin,) = [i for i, line in enumerate(lines) if "blklab-jobpoint --origin" in line]
    before = [i for i, line in enumerate(lines)
              if line.startswith(("mariadbd ", "wait_for ", "step mariadb-install",
                                  "step postgres-initdb"))
              or "-prepare " in line or "-createdb " in line or line == "step prepare-sync sync"]
    first_mark = next(i for i, line in enumerate(lines) if line.startswith("mark "))
    assert len(before) >= 8 and max(before) < origin < first_mark
    # Only in a cell whose device has faults (the init says so).
    assert lines[origin - 1] == 'if [ "${BLKLAB_FAULT_ORIGIN:-}" = command ]; then'
    # The measured runs keep their exit status.
    assert [line.split()[1] for line in lines if line.startswith("measured ")] == [
        "insert-run", "tpcb-run"]
    assert not [line for line in lines if line.startswith("step ") and "-run " in line]


def test_without_faults_the_script_has_no_origin(tmp_path):
    text = _load(tmp_path, SCENARIO + SYSBENCH).jobs[0].command
    assert "blklab-jobpoint" not in text and "measured()" not in text
    assert not [line for line in text.splitlines() if line.startswith("measured ")]


def _measured(tmp_path, env: dict[str, str], status: int) -> subprocess.CompletedProcess:
    """The script's measured() on a command that exits `status`."""
    body = (f"set -eu\nout={tmp_path}\n" + appjobs._FAULT_RUN
            + f"measured job-run sh -c 'echo FATAL: it failed; exit {status}'\necho went on\n")
    return subprocess.run(["sh", "-c", body], env={"PATH": "/usr/bin:/bin"} | env,
                          capture_output=True, text=True)


def test_a_failed_measured_run_is_kept_as_the_outcome_under_faults(tmp_path):
    r = _measured(tmp_path, {"BLKLAB_FAULT_ORIGIN": "command"}, 3)
    assert r.returncode == 0 and "went on" in r.stdout
    assert (tmp_path / "job-run-exit.txt").read_text() == "3\n"
    assert (tmp_path / "job-run.txt").read_text() == "FATAL: it failed\n"


def test_a_failed_measured_run_stops_the_script_without_faults(tmp_path):
    """A scenario with faults whose cell's device has none (another
    device's faults): a failed run is the harness's failure, as without."""
    r = _measured(tmp_path, {}, 3)
    assert r.returncode == 1 and "went on" not in r.stdout and "job-run failed" in r.stdout
    assert (tmp_path / "job-run-exit.txt").read_text() == "3\n"


def test_a_job_whose_measured_run_failed_under_faults(tmp_path):
    """The cell is ok: the job says how its run ended (exit_status) and has
    no report figures, so an expectation on them is an error, not a pass."""
    from blklab import cell as cell_mod, channel
    from blklab.results import CellResult

    s = _with_fault(tmp_path, SYSBENCH)
    (c,) = scenario.expand_cells(s)
    fatal = (b"FATAL: mysql_stmt_execute() returned error 1030 (Got error 168 \"Unknown "
             b"(generic) error from engine\" from storage engine InnoDB) for query "
             b"'SELECT c FROM sbtest1 WHERE id=?'\n")
    files = {"command-insert-run.txt": fatal, "command-insert-run-exit.txt": b"1\n"}
    (r,) = appjobs.results(s.app_jobs, files)
    assert r["exit_status"] == 1 and "error" not in r and "tps" not in r
    assert appjobs.metric(r, "app_tps") is None
    (row,) = report.app_rows([{"cell_id": c.id, "workload": {"apps": [r]}}])
    assert row["bench"] == "sysbench oltp_insert (exited 1)" and row["cols"][1] == "-"
    assert appjobs.error_lines(s.app_jobs, files)["insert-run"] == [fatal.decode().rstrip()]
    result = CellResult(c.id, "ok", None, {}, in_effect={"scheduler": c.scheduler})
    result.workload = {"command": {"exit_code": 0, "files": []}, "apps": [r]}
    data = channel.ChannelData(hello="6.12", status="ok")
    assert cell_mod._failure(c, result, data, None, "") is None
    # A run that ended well is read as without faults, with its status.
    files = {f"command-{p.name}": p.read_bytes() for p in FIXTURES.iterdir()}
    (r,) = appjobs.results(s.app_jobs, files | {"command-insert-run-exit.txt": b"0\n"})
    assert r["exit_status"] == 0 and r["tps"] > 0 and "error" not in r
    (r,) = appjobs.results(s.app_jobs, {"command-insert-run-exit.txt": b"x\n"})
    assert r["error"] == "the measured run's exit status is not a number: 'x\\n'"
