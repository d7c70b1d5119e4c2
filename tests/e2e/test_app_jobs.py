"""Application jobs ([[job]] app = "sysbench" / "pgbench", blklab.appjobs)
in one small cell: MariaDB and PostgreSQL on ext4 on a file-backed NVMe
drive, sysbench oltp_insert (2 threads) and pgbench's TPC-B-like run (2
clients), 1 s each after their prepare steps, each server with one
setting of the scenario's. Their own results reach the
cell JSON and the report, seeded from the cell's seed, and the bounds
below follow from the tools' sources and the scenario, not from a run.
The host time of the run is printed (pytest -s)."""

import re
import time

import pytest

from conftest import cells_of, run_blklab
from blklab import appjobs

SEED = 5
THREADS = 2
CLIENTS = 2
SCENARIO = f"""[scenario]
name = "app-jobs"
schedulers = ["mq-deadline"]
seeds = [{SEED}]
mode = "deterministic"
timeout_s = 1800
workload = "command"
[guest]
memory_mib = 2048
apps = true
[[device]]
name = "nvme0"
kind = "nvme"
backing = "file"
size_gib = 2
profile = "samsung-980pro-1t"
[filesystem]
type = "ext4"
[[job]]
name = "insert"
app = "sysbench"
test = "oltp_insert"
options = {{tables = 1, table_size = 1000, threads = {THREADS}, time = 1}}
[[job]]
name = "tpcb"
app = "pgbench"
init = {{scale = 1}}
options = {{client = {CLIENTS}, time = 1}}
[mariadb]
options = {{innodb_buffer_pool_size = "64M"}}
[postgresql]
options = {{log_connections = true}}
"""


@pytest.fixture(scope="module")
def run(apps_built, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("app-jobs")
    (tmp / "s.toml").write_text(SCENARIO)
    started = time.monotonic()
    proc = run_blklab("run", str(tmp / "s.toml"), "--jobs", "1", "--out", str(tmp / "out"))
    print(f"\napp jobs: {time.monotonic() - started:.0f} s of host time")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    ((cid, cell),) = cells_of(tmp / "out").items()
    assert cell["status"] == "ok", cell["error"]
    apps = {a["name"]: a for a in cell["workload"]["apps"]}
    assert list(apps) == ["insert", "tpcb"]
    for a in apps.values():
        assert "error" not in a, a["error"]
    return tmp / "out", cid, apps


def _file(run, name: str) -> str:
    out, cid, _ = run
    return (out / "cells" / cid / "command" / name).read_text()


def _ordered(a: dict) -> None:
    lat = a["latency_ms"]
    pct = [lat["percentiles"][k] for k in ("50", "95", "99", "99.9")]
    assert lat["min"] <= pct[0] <= pct[1] <= pct[2] <= pct[3] <= lat["max"], lat


def test_sysbench_results(run):
    sb = run[2]["insert"]
    assert sb["transactions"] > 0 and sb["errors"] == 0 and sb["reconnects"] == 0
    # oltp_insert.lua's event is one INSERT, and each event a transaction.
    assert sb["queries"] == sb["transactions"]
    # --time=1: sysbench stops its threads once 1 s of the guest's time has passed.
    assert 1.0 <= sb["time_s"] < 1.1
    assert sb["tps"] == pytest.approx(sb["transactions"] / sb["time_s"], rel=1e-3)
    # The histogram holds every event; its 95th is the one sysbench printed.
    assert sum(c for _, c in sb["histogram_ms"]) == sb["transactions"]
    _ordered(sb)
    assert abs(sb["latency_ms"]["percentiles"]["95"] -
               sb["latency_ms"]["reported_percentile"]["95"]) <= 0.005
    # Seeded from the cell's seed, in prepare and run alike.
    said = f"Initializing random number generator from seed ({appjobs.sysbench_seed(SEED)})."
    assert said in _file(run, "insert-run.txt")


def test_pgbench_results(run):
    pg = run[2]["tpcb"]
    assert pg["transactions"] > 0 and pg["errors"] == 0 and pg["tps"] > 0
    # -l logs every transaction the report counts.
    assert pg["logged_transactions"] == pg["transactions"]
    _ordered(pg)
    assert f"pgbench: setting random seed to {SEED}\n" in _file(run, "tpcb-run.txt")


@pytest.mark.parametrize("job, committers", [("insert", THREADS), ("tpcb", CLIENTS)])
def test_the_block_layer_over_each_measured_run(run, job, committers):
    """Each transaction commits durably (InnoDB's innodb_flush_log_at_trx_commit
    = 1, PostgreSQL's synchronous_commit = on, both defaults): its log is
    fsynced before the commit returns, and on ext4 each fsync flushes the
    drive's volatile cache. Concurrent committers may share one fsync, so at
    least transactions / committers flushes reach the device in the run."""
    a = run[2][job]
    d = a["disk_stats"]
    assert d["derived"]["elapsed_ms"] >= 1000.0
    assert d["delta"]["write_ios"] > 0
    assert d["delta"]["flush_ios"] >= a["transactions"] / committers


def test_the_report_shows_them(run):
    out, cid, apps = run
    html = (out / "report.html").read_text()
    table = html[html.index('<table class="apps">'):]
    table = table[:table.index("</table>")]
    rows = re.findall(r"<tr><td class=\"l\">([^<]+)</td><td class=\"l\">([^<]+)</td>", table)
    assert rows == [(cid, "insert"), (cid, "tpcb")]
    assert f"{apps['tpcb']['transactions']:,}" in table


def test_the_servers_took_the_scenario_s_settings(run):
    assert "innodb_buffer_pool_size=64m" in _file(run, "mariadbd.txt")
    # log_connections: one line per connection, pgbench's among them.
    assert "connection authorized: user=postgres database=pgbench_1" in _file(run, "postgres.txt")


@pytest.mark.parametrize("setting, said", [
    ('max_wal_size = "16MB"', '"max_wal_size" must be at least twice "wal_segment_size"'),
    ('checkpoint_flush_aftr = 0', 'unrecognized configuration parameter "checkpoint_flush_aftr"'),
])
def test_a_setting_postgres_refuses_names_its_key(apps_built, tmp_path, setting, said):
    """PostgreSQL checks its settings as it starts and exits on one it
    refuses (xlog.c: max_wal_size below two segments; guc.c: a name it
    does not have); the cell fails naming the scenario's key, with the
    server's own line."""
    key = setting.split(" =")[0]
    text = SCENARIO.replace("log_connections = true", setting)
    text = text[:text.index("[[job]]")] + text[text.index('[[job]]\nname = "tpcb"'):]
    text = text[:text.index("[mariadb]")] + text[text.index("[postgresql]"):]
    (tmp_path / "s.toml").write_text(text)
    proc = run_blklab("run", str(tmp_path / "s.toml"), "--jobs", "1", "--out",
                      str(tmp_path / "out"))
    assert proc.returncode != 0
    ((cid, cell),) = cells_of(tmp_path / "out").items()
    assert cell["status"] == "failed"
    assert cell["error"].startswith(f"postgresql.options.{key}: the server refused"), cell["error"]
    assert said in cell["error"], cell["error"]
