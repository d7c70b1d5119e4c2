"""scenarios/cloud-mysql-incident-app.toml in `make test`: one of its cells
(the gp3 volume on NVMe under none, seed 1, its short form's 2 s of
sysbench), checked against the scenario's own expectations that one cell
decides (those without a right side on the NVMe volume: the insert rate,
the flushes and writes per insert, the p99), so the bounds are the file's, derived before
they were measured (scenarios/cloud-mysql-incident-app.md). The whole short
form, the schedulers' and the drivers' comparisons, is one of
test_scenarios.py's LONG_SHORT_FORMS. The host time of the run is printed
(pytest -s)."""

import time
import tomllib

from conftest import REPO, cells_of, run_blklab
from blklab import appjobs

SCENARIO = REPO / "scenarios" / "cloud-mysql-incident-app.toml"
SHORT = """
[short]
seeds = [1]
devices = ["gp3"]
schedulers = ["none"]
timeout_s = 1800
job.insert = {options = {tables = 1, table_size = 10000, threads = 1, time = 2}}
"""


def one_cell_scenario() -> str:
    """The scenario file's text with its [short] table replaced by SHORT
    and only its one-sided expectations kept."""
    text = SCENARIO.read_text()
    head, rest = text.split("\n[short]\n", 1)
    blocks = rest.split("\n[[expect]]\n")[1:]
    kept = [b for b in blocks if "\nright = " not in "\n" + b
            and 'device = "gp3-vda"' not in b]
    one_sided = [e for e in tomllib.loads(text)["expect"]
                 if "right" not in e and e.get("device", "gp3") == "gp3"]
    assert len(kept) == len(one_sided) == 4, (len(kept), len(one_sided))
    return head + SHORT + "".join("\n[[expect]]\n" + b for b in kept)


def test_one_cell_meets_the_scenario_s_own_bounds(apps_built, tmp_path):
    scenario = tmp_path / "cloud-mysql-incident-app-one-cell.toml"
    scenario.write_text(one_cell_scenario())
    out = tmp_path / "run"
    started = time.monotonic()
    proc = run_blklab("run", "--short", "--jobs", "1", "--no-report", "--out", str(out),
                      str(scenario))
    print(f"\ncloud-mysql-incident-app, one cell: {time.monotonic() - started:.0f} s of "
          "host time")
    print(proc.stdout)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    ((cid, cell),) = cells_of(out).items()
    assert cell["status"] == "ok", cell["error"]
    (insert,) = cell["workload"]["apps"]
    assert insert["test"] == "oltp_insert" and insert["errors"] == 0
    # oltp_insert.lua: one INSERT per event, each its own transaction.
    assert insert["queries"] == insert["transactions"] > 0
    said = f"Initializing random number generator from seed ({appjobs.sysbench_seed(1)})."
    assert said in (out / "cells" / cid / "command" / "insert-run.txt").read_text()
    proc = run_blklab("check", str(out))
    print(proc.stdout)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "4 hold, 0 fail, 0 known failures" in proc.stdout, proc.stdout
