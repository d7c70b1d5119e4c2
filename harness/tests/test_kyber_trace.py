"""scenarios/database-tuning-claims/kyber-trace.py, the reader of the kyber
observer's trace, on a small run made here: a cell with two jobs (etcd's
alone and backup, as in etcd-backup/kyber-trace.toml), so --job picks the
measured run's marks and the job's own /sys/block figures, and the default
job stays "update" (database-tuning-claims/kyber-trace.toml)."""

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "scenarios" / "database-tuning-claims" / "kyber-trace.py"
CELL = "tlc.kyber.read_lat_nsec=100000.r0"

# Trace lines as tracefs prints them (trace_clock boot): a bad window that
# cuts WRITE before the runs, one in the alone run, and in the backup run
# (10.0-11.0 s) a timer run with 800 WRITE I/O samples, two unstarted empty
# writes, a READ throttle; an unstarted write in the alone run, outside it.
TRACE = """\
 kworker-1 [000] ..s..     5.100001: kyber_latency: 259,0 WRITE I/O p90 8/4 samples=40
 kworker-1 [000] ..s..     5.100002: kyber_latency: 259,0 WRITE total p99 1/4 samples=40
 kworker-1 [000] ..s..     5.100003: kyber_adjust: 259,0 WRITE 32
    etcd-9 [001] .....     8.200000: kyber_unstarted: (kyber_completed_request+0x0/0x90) op=0x801 len=0 io_start=0 start=8199000000 now=8200000000
 kworker-1 [000] ..s..     8.300001: kyber_latency: 259,0 WRITE I/O p90 8/4 samples=600
 kworker-1 [000] ..s..     8.300002: kyber_latency: 259,0 WRITE total p99 1/4 samples=600
 kworker-1 [000] ..s..     8.300003: kyber_adjust: 259,0 WRITE 8
        dd-7 [000] .....    10.100000: kyber_throttled: 259,0 READ
    etcd-9 [001] .....    10.200000: kyber_unstarted: (kyber_completed_request+0x0/0x90) op=0x801 len=0 io_start=0 start=10199000000 now=10200000000
    etcd-9 [001] .....    10.300000: kyber_unstarted: (kyber_completed_request+0x0/0x90) op=0x801 len=0 io_start=0 start=10299000000 now=10300000000
 kworker-1 [000] ..s..    10.400001: kyber_latency: 259,0 READ I/O p90 8/4 samples=500
 kworker-1 [000] ..s..    10.400002: kyber_latency: 259,0 WRITE I/O p90 8/4 samples=800
 kworker-1 [000] ..s..    10.400003: kyber_latency: 259,0 READ total p99 8/4 samples=500
 kworker-1 [000] ..s..    10.400004: kyber_latency: 259,0 WRITE total p99 1/4 samples=800
 kworker-1 [000] ..s..    10.400005: kyber_adjust: 259,0 WRITE 2
"""


def _run(tmp_path: Path) -> Path:
    run = tmp_path / "run"
    cell = run / "cells" / CELL
    (cell / "command").mkdir(parents=True)
    (cell / "observe-kyber.txt").write_text(TRACE)
    for mark, t in (("alone-start", 8.0), ("alone-end", 8.5),
                    ("backup-start", 10.0), ("backup-end", 11.0)):
        (cell / "command" / f"{mark}-uptime.txt").write_text(f"{t}\n")
    apps = [{"name": "alone", "disk_stats": {"delta": {"write_ios": 300, "flush_ios": 290}}},
            {"name": "backup", "disk_stats": {"delta": {"write_ios": 1500, "flush_ios": 1400}}}]
    (run / f"cell-{CELL}.json").write_text(json.dumps({"workload": {"apps": apps}}))
    return run


def _script(*args: str) -> str:
    out = subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True,
                         check=True)
    return out.stdout


def test_job_backup_counts_the_backup_run_with_its_own_block_figures(tmp_path):
    lines = _script("--job", "backup", str(_run(tmp_path))).splitlines()
    assert lines[0] == f"{CELL}: measured run 10.0-11.0 s (guest uptime), trace 5.100001-10.400005 s"
    assert lines[1:4] == [
        "  5.100001  WRITE I/O p90 8/4 (40); WRITE total p99 1/4 (40); WRITE -> 32",
        "  8.300001  WRITE I/O p90 8/4 (600); WRITE total p99 1/4 (600); WRITE -> 8",
        "  10.400001  READ I/O p90 8/4 (500); WRITE I/O p90 8/4 (800); READ total p99 8/4 (500); "
        "WRITE total p99 1/4 (800); WRITE -> 2",
    ]
    assert "  kyber_throttled in the measured run: READ 1" in lines
    assert ("  never started, counted by kyber, in the measured run: op 1 len 0: 2 "
            "(/sys/block: 1500 writes, 1400 flushes)") in lines
    assert lines[-1] == ("  WRITE I/O samples in the measured run's timer runs: 800; "
                         "never started among them: 0.2%")


def test_job_alone_counts_only_the_alone_run(tmp_path):
    out = _script("--job", "alone", str(_run(tmp_path)))
    assert "measured run 8.0-8.5 s" in out
    assert ("never started, counted by kyber, in the measured run: op 1 len 0: 1 "
            "(/sys/block: 300 writes, 290 flushes)") in out
    assert "WRITE I/O samples in the measured run's timer runs: 600; never started among them: 0.2%" in out


def test_the_default_job_is_update_and_a_cell_without_its_marks_says_so(tmp_path):
    out = _script(str(_run(tmp_path)))
    assert out == (f"{CELL}: no update-start and update-end marks (is --job a job of it?)\n")
