"""restore-cost.py's and restore-phases.py's pure parts on made-up inputs:
which cells count as restored, and the phase marks read from QEMU's
trace."""

import importlib.util
import json
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))


def _load(name, file):
    spec = importlib.util.spec_from_file_location(name, HERE / file)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


cost = _load("restore_cost", "restore-cost.py")
phases = _load("restore_phases", "restore-phases.py")


def _cell(d: Path, cell_id: str, kind: str, boot: dict, seconds: float, status="ok"):
    (d / f"cell-{cell_id}.json").write_text(json.dumps({
        "cell_id": cell_id, "status": status, "error": None if status == "ok" else "boom",
        "request": {"device": {"kind": kind}},
        "host": {"boot": boot, "seconds_to_workload": seconds}}))


def test_only_cells_restored_from_an_earlier_cells_snapshot_count(tmp_path):
    _cell(tmp_path, "a.none.r0", "nvme", {"from": "snapshot", "made_by_this_cell": True}, 9.0)
    _cell(tmp_path, "a.mq-deadline.r0", "nvme",
          {"from": "snapshot", "made_by_this_cell": False}, 1.5)
    _cell(tmp_path, "b.none.r0", "ide-hd", {"from": "cold", "why": "realtime"}, 4.0)
    _cell(tmp_path, "b.mq-deadline.r0", "ide-hd",
          {"from": "snapshot", "made_by_this_cell": False}, 2.5)
    assert cost.restored_times(tmp_path) == {"nvme": [1.5], "ide-hd": [2.5]}


def test_a_failed_cell_or_an_empty_run_is_an_error(tmp_path):
    with pytest.raises(RuntimeError, match="no cell"):
        cost.restored_times(tmp_path)
    _cell(tmp_path, "a.none.r0", "nvme", {"from": "snapshot"}, 1.0, status="failed")
    with pytest.raises(RuntimeError, match="status failed"):
        cost.restored_times(tmp_path)


def test_marks_are_the_first_of_each_event_and_the_first_read_past_1_mib(tmp_path):
    q = tmp_path / "q.qlog"
    q.write_text(
        "7@100.5:loadvm_state_setup \n"
        "7@101.0:vm_state_notify running 0 reason 9 (running)\n"
        "7@101.5:vm_state_notify running 1 reason 9 (running)\n"
        "9@102.0:device_model_submit dm 0x1 tag 1 queue 1 read offset 0 len 4096 now 1 "
        "deadline 2 final 0\n"
        "9@102.5:device_model_submit dm 0x1 tag 2 queue 1 read offset 1048575 len 1 now 1 "
        "deadline 2 final 0\n"
        "9@103.0:device_model_submit dm 0x1 tag 3 queue 1 read offset 1048576 len 4096 now 1 "
        "deadline 2 final 0\n"
        "7@104.0:vm_state_notify running 1 reason 9 (running)\n")
    assert phases.marks_of(q) == {"setup": 100.5, "running": 101.5, "first_io": 102.0,
                                  "workload": 103.0}
