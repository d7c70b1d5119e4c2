"""scenarios/mariadb-media-error.toml in `make test`: one cell (none, seed
1, the short form's 2 s of sysbench oltp_point_select) checked against what
scenarios/mariadb-media-error.md derives from Linux 6.12's and MariaDB
10.11.18's source before it ran: the fault counts from the measured run
(after the install, the server's start and the prepare step); the kernel
logs each failed read once (two lines, no retry: Do Not Retry); InnoDB does
not read the page again: the point select that missed the buffer pool
fails (one "Retry attempts" warning, one "index corruption" error, one
"Got error 168 when reading table" error), the client gets error 1030,
sysbench stops at that first error and exits 1, the server stays up; the
cell is ok, its job's exit_status 1. The whole short form (three seeds) is
one of test_scenarios.py's LONG_SHORT_FORMS. The host time is printed
(pytest -s)."""

import re
import time

from conftest import REPO, cells_of, run_blklab

SCENARIO = REPO / "scenarios" / "mariadb-media-error.toml"
SHORT = """
[short]
seeds = [1]
schedulers = ["none"]
timeout_s = 1800
job.select = {options = {tables = 1, table_size = 100000, threads = 1, time = 2, create_secondary = "off"}}
"""
RETRY_WARNING = "[Warning] InnoDB: Retry attempts for reading partial data failed."
CORRUPTION = "[ERROR] InnoDB: We detected index corruption in an InnoDB type table."
READ_ERROR = "[ERROR] Got error 168 when reading table './sbtest_0/sbtest1'"
CLIENT_ERROR = re.compile(r"^FATAL: mysql_stmt_execute\(\) returned error 1030 \(Got error 168 "
                          r"\"Unknown \(generic\) error from engine\" from storage engine InnoDB\)")


def one_cell_scenario() -> str:
    head, _ = SCENARIO.read_text().split("\n[short]\n", 1)
    return head + SHORT


def check_cell(out, cell) -> None:
    """The derivation's checks on one cell of the scenario (its short form's
    or this file's one-cell run); `out` is the run's directory."""
    app_errors = cell["guest"].get("app_errors", {})
    # A client that stops at an error the fault made is the cell's outcome:
    # the cell is ok; the job carries the run's exit status.
    assert cell["status"] == "ok", cell["error"]
    (fault,) = cell["faults"]
    picks = fault["requests"]
    # The origin is the measured run's start: the script marked it after the
    # prepare step's sync and before the run (workload.stdout's step lines,
    # in order), and no pick precedes it.
    steps = [ln.split()[1] for ln in (out / cell["files"]["workload.stdout"]).read_text()
             .splitlines() if ln.startswith("== ")]
    assert steps.index("prepare-sync") < steps.index("fault-origin") == \
        steps.index("select-run") - 1, steps
    assert fault["origin_ns"] is not None
    assert all(p["ns"] >= fault["origin_ns"] for p in fault["picks"]), fault
    # The model failed each pick; the kernel logged each once, both lines,
    # none suppressed at this rate and none retried (DNR).
    assert fault["fired"] and picks == len(fault["picks"]) > 0
    assert cell["devmodel"]["media_errors"] == {"read": picks, "write": 0}
    kernel = cell["guest"]["kernel_errors"]
    assert sum("critical medium error, dev nvme0n1" in k for k in kernel) == picks, kernel
    assert sum("(sct 0x2 / sc 0x81)" in k for k in kernel) == picks, kernel
    # InnoDB: the point select's synchronous read failed once (os_file_io's
    # warning), buf_page_get_low returned it without reading again,
    # row_mysql_handle_errors called it index corruption (an error, not
    # fatal), the server logged the handler's 168; one of each, since the
    # client stopped at that statement. No abort, no fatal line.
    server = app_errors["mariadbd"]
    assert sum(ln == RETRY_WARNING for ln in server) == 1, server
    assert sum(ln.startswith(CORRUPTION) for ln in server) == 1, server
    assert sum(ln == READ_ERROR for ln in server) == 1, server
    assert not [ln for ln in server if "[FATAL]" in ln or "signal" in ln], server
    # The client: error 1030 is not among sysbench's ignored errors
    # (--mysql-ignore-errors 1213,1020,1205): FATAL, and sysbench exits 1.
    run = app_errors["select-run"]
    assert run and CLIENT_ERROR.match(run[0]), run
    (select,) = cell["workload"]["apps"]
    assert select["exit_status"] == 1 and "error" not in select and "tps" not in select
    # The kernel logged the failed read before the client's error ended the
    # run: its console time precedes the script's next step (the servers'
    # stop), both on the guest's clock from boot.
    console = (out / cell["files"]["console_log"]).read_text(errors="replace")
    first = next(float(m.group(1)) for m in re.finditer(
        r"^\[\s*([\d.]+)\].*critical medium error, dev nvme0n1", console, re.M))
    stdout = (out / cell["files"]["workload.stdout"]).read_text()
    stop = float(re.search(r"^== stopping the servers at ([\d.]+) s", stdout, re.M).group(1))
    run_start = float(re.search(r"^== select-run at ([\d.]+) s", stdout, re.M).group(1))
    assert run_start < first < stop, (run_start, first, stop)


def test_a_media_error_under_mariadb(apps_built, tmp_path):
    scenario = tmp_path / "mariadb-media-error-one-cell.toml"
    scenario.write_text(one_cell_scenario())
    out = tmp_path / "run"
    started = time.monotonic()
    proc = run_blklab("run", "--short", "--jobs", "1", "--no-report", "--out", str(out),
                      str(scenario))
    print(f"\nmariadb-media-error, one cell: {time.monotonic() - started:.0f} s of host time")
    print(proc.stdout)
    ((cid, cell),) = cells_of(out).items()
    print(cell["guest"].get("kernel_errors"), cell["guest"].get("app_errors"))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    check_cell(out, cell)

