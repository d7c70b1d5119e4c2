"""scenarios/mariadb-media-error.toml in `make test`: one cell (none, seed
1, the short form's 2 s of sysbench oltp_point_select) checked against what
scenarios/mariadb-media-error.md derives from the kernel's and InnoDB's
source before it ran: the kernel logs each failed read once (two lines, no
retry: Do Not Retry), InnoDB retries each failed page read in
buf_page_get_low() and logs one warning per failed synchronous read, and
the client sees no error. The whole short form (three seeds) is one of
test_scenarios.py's LONG_SHORT_FORMS. The host time is printed (pytest -s)."""

import time

import pytest

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


def one_cell_scenario() -> str:
    head, _ = SCENARIO.read_text().split("\n[short]\n", 1)
    return head + SHORT


@pytest.mark.xfail(strict=True, reason=(
    "the derivation's InnoDB half is contradicted by the first run (2026-12-07, seed 1): "
    "10.11.18 did not retry the failed page read; it logged 'We detected index corruption', "
    "the SELECT failed with 1030 (error 168) and sysbench exited 1. The 10.11 read path "
    "(btr_cur_t::search_leaf -> buf_page_get_gen) must be read again before the checks change "
    "(scenarios/mariadb-media-error.md, 'Measured')"))
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
    app_errors = cell["guest"].get("app_errors", {})
    print(cell["guest"].get("kernel_errors"), app_errors)
    # 4: no hang, no abort; the command (and so sysbench) exited 0.
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert cell["status"] == "ok", cell["error"]
    (fault,) = cell["faults"]
    picks = fault["requests"]
    # 1: about 2 x 1,700 reads at 0.001 (the page: a seed picks none with
    # a chance of some 3%).
    assert fault["fired"] and picks == len(fault["picks"]) > 0
    # 2: the model failed each pick; the kernel logged each once, both
    # lines, none suppressed at this rate and none retried (DNR).
    assert cell["devmodel"]["media_errors"] == {"read": picks, "write": 0}
    kernel = cell["guest"]["kernel_errors"]
    assert sum("critical medium error, dev nvme0n1" in k for k in kernel) == picks, kernel
    assert sum("(sct 0x2 / sc 0x81)" in k for k in kernel) == picks, kernel
    # 3: at most one InnoDB warning per failed read, and no error or abort.
    server = app_errors["mariadbd"]
    retries = sum(line == RETRY_WARNING for line in server)
    assert 0 < retries <= picks, server
    assert not [ln for ln in server if "[ERROR]" in ln or "signal" in ln], server
    # 4: the client saw nothing.
    (select,) = cell["workload"]["apps"]
    assert select["errors"] == 0 and select["reconnects"] == 0 and select["tps"] > 0
    assert app_errors["select-run"] == []
