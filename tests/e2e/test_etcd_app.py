"""[[job]] app = "etcd" (blklab.etcdjob) in a guest: one cell of 20 puts,
no backup, whose WAL histogram counts one fdatasync per put; and a flag
etcd refuses at its start fails the cell naming the scenario's key. The
host time of each run is printed (pytest -s)."""

import time

from conftest import cells_of, run_blklab

PUTS = 20
SCENARIO = f"""[scenario]
name = "etcd-app"
schedulers = ["none"]
seeds = [1]
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
size_gib = 1
profile = "samsung-980pro-1t"
[filesystem]
type = "ext4"
[[job]]
name = "wal"
app = "etcd"
options = {{puts = {PUTS}, backup = "none"}}
"""


def _run(tmp_path, text):
    (tmp_path / "s.toml").write_text(text)
    started = time.monotonic()
    proc = run_blklab("run", str(tmp_path / "s.toml"), "--jobs", "1", "--out",
                      str(tmp_path / "out"))
    print(f"\netcd app: {time.monotonic() - started:.0f} s of host time")
    ((cid, cell),) = cells_of(tmp_path / "out").items()
    return proc, cell


def test_one_fdatasync_per_put(apps_built, tmp_path):
    """A single member saves each put's entry with a sync (etcdserver's
    raft loop, wal.Save), and etcd answers the put after it: the measured
    run's WAL histogram counts exactly PUTS fdatasyncs."""
    proc, cell = _run(tmp_path, SCENARIO)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert cell["status"] == "ok", cell["error"]
    (wal,) = cell["workload"]["apps"]
    assert "error" not in wal, wal["error"]
    assert wal["transactions"] == PUTS
    assert wal["wal_fsync"]["count"] == PUTS
    assert sum(n for _, n in wal["wal_fsync"]["buckets"]) == PUTS


def test_a_flag_etcd_refuses_names_its_key(apps_built, tmp_path):
    """etcd parses its flags as it starts and exits on one it refuses (Go's
    flag package); the cell fails naming the scenario's key, with etcd's
    own line. (The other refusal, a bad value, is the same path:
    harness/tests/test_etcdjob.py reads both of etcd 3.4.23's lines.)"""
    key, said = "snapshot-count", 'invalid value "abc" for flag -snapshot-count'
    proc, cell = _run(tmp_path, SCENARIO + '[etcd]\noptions = {snapshot-count = "abc"}\n')
    assert proc.returncode != 0
    assert cell["status"] == "failed"
    assert cell["error"].startswith(f"etcd.options.{key}: the server refused"), cell["error"]
    assert said in cell["error"], cell["error"]
