"""No silent host timing, halt or fallback: the device model's host-timing
counters (fixtures in fixtures/cells/), the workload's fix-ups, the guest's
halt and the accelerator fallback reach the cell, the console table and
the report."""

import copy
import json
import time
from pathlib import Path

import pytest

from blklab import accel, channel, model_timing, notes, report, results, scenario, table
from blklab.cell import _failure
from blklab import vm
from blklab.vm import HALT_GRACE_S, settled_vcpu_clocks, wait_for_halt

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "cells"


def fixture(name: str) -> dict:
    return json.loads((FIXTURES / name).read_text())


def with_timing(cell: dict) -> dict:
    cell = copy.deepcopy(cell)
    cell["model_timing"] = model_timing.assess(cell["devmodel"])
    results.validate(cell)
    return cell


def test_todays_qemu_is_not_reported_and_not_zero():
    cell = with_timing(fixture("today-qemu.json"))
    assert cell["model_timing"] == {"reported": False, "missing": ["rejected", "host_timed"]}
    assert model_timing.failure(cell["model_timing"], "deterministic") is None
    (note,) = notes.cell_notes(cell)
    assert "not reported" in note and "'rejected' or 'host_timed'" in note


def test_every_completion_at_its_deadline_says_nothing():
    cell = with_timing(fixture("all-at-deadline.json"))
    assert cell["model_timing"] == {"reported": True, "rejected": 0, "host_timed": 0}
    assert model_timing.failure(cell["model_timing"], "deterministic") is None
    assert notes.cell_notes(cell) == []


def test_a_rejected_request_fails_a_deterministic_cell_and_is_named():
    cell = with_timing(fixture("rejected.json"))
    why = model_timing.failure(cell["model_timing"], "deterministic")
    assert why == ("2 request(s) the device model rejected and 2 completion(s) not at a model "
                   "deadline: deterministic mode needs every completion at its model deadline; "
                   "first rejected: write of 131072 bytes at offset 1099511627776: beyond the "
                   "profile's capacity")
    # Realtime mode runs on host time anyway: recorded and shown, not a failure.
    assert model_timing.failure(cell["model_timing"], "realtime") is None
    assert "2 request(s) rejected" in notes.cell_notes(cell)[0]


def test_host_timed_completions_alone_fail_a_deterministic_cell():
    cell = with_timing(fixture("host-timed.json"))
    why = model_timing.failure(cell["model_timing"], "deterministic")
    assert why.startswith("0 request(s) the device model rejected and 5 completion(s)")
    assert "first rejected" not in why


def test_counters_that_break_the_contract_fail_with_the_key():
    cell = with_timing(fixture("rejected-without-first.json"))
    assert cell["model_timing"]["reported"] is False
    why = model_timing.failure(cell["model_timing"], "deterministic")
    assert "'first_rejected' is missing" in why
    for bad, key in (({"rejected": -1, "host_timed": 0}, "'rejected'"),
                     ({"rejected": 0, "host_timed": "3"}, "'host_timed'"),
                     ({"rejected": 1, "host_timed": 0, "first_rejected": {
                         "op": "discard", "offset": 0, "length": 1, "why": "x"}},
                      "'first_rejected.op'")):
        record = model_timing.assess(bad)
        assert key in model_timing.failure(record, "deterministic")


def test_the_cell_fails_through_the_same_check(tmp_path):
    path = tmp_path / "s.toml"
    path.write_text('[scenario]\nschedulers = ["none"]\n[[device]]\nname = "nvme0"\n'
                    'kind = "nvme"\nprofile = "samsung-970evoplus-1t"\n'
                    '[[job]]\nname = "r"\nrw = "randread"\n')
    (c,) = scenario.load(path, check_profiles=False).cells()
    data = fixture("rejected.json")
    result = results.CellResult(**{k: v for k, v in data.items() if k != "schema_version"})
    result.model_timing = model_timing.assess(result.devmodel)
    ok = channel.ChannelData(hello="6.1", status="ok")
    assert "first rejected: write of 131072 bytes" in _failure(c, result, ok, None, "")
    result.model_timing = model_timing.assess(fixture("today-qemu.json")["devmodel"])
    assert _failure(c, result, ok, None, "") is None


FIO_NO_ENGINE = {"jobname": "randread", "job options": {"name": "randread", "iodepth": "32",
                                                         "rw": "randread"},
                 "iodepth_level": {"1": 100.0, "2": 0.0, "32": 0.0}}


def test_fio_without_an_engine_ran_psync_at_depth_one():
    # fio 3.33's JSON for `--iodepth=32 --rw=randread` and no --ioengine.
    (note,) = notes.fio_notes({"jobs": [FIO_NO_ENGINE]})
    assert note == ("job 'randread': iodepth=32 asked, but it names no ioengine, so fio ran its "
                    "default, psync, which is synchronous: queue depth 1 (fio's iodepth_level: "
                    "100% of I/Os at depth 1)")
    sync = copy.deepcopy(FIO_NO_ENGINE)
    sync["job options"]["ioengine"] = "pvsync2"
    assert notes.fio_notes({"jobs": [sync]}) == [
        "job 'randread': iodepth=32 asked, but ioengine pvsync2 is synchronous: queue depth 1 "
        "(fio's iodepth_level: 100% of I/Os at depth 1)"]
    uring = copy.deepcopy(FIO_NO_ENGINE)
    uring["job options"]["ioengine"] = "io_uring"
    assert notes.fio_notes({"jobs": [uring]}) == []
    qd1 = copy.deepcopy(FIO_NO_ENGINE)
    qd1["job options"]["iodepth"] = "1"
    assert notes.fio_notes({"jobs": [qd1]}) == [
        "job 'randread': names no ioengine; fio ran its default, psync"]


def test_blkgen_notes_reach_cell_table_and_report():
    stderr = ("note: job 'randread': psync is synchronous, queue depth capped at 1\n"
              "something else\n")
    assert notes.blkgen_notes(stderr) == [
        "job 'randread': psync is synchronous, queue depth capped at 1"]
    cell = with_timing(fixture("all-at-deadline.json"))
    cell["workload_notes"] = notes.blkgen_notes(stderr)
    results.validate(cell)
    text = table.render([cell])
    assert ("note: nvme0.none.r0: blkgen: job 'randread': psync is synchronous, queue depth "
            "capped at 1") in text.splitlines()
    html = report.render(Path("run"), [cell], {"mode": "deterministic"}, [])
    assert ("<td class=\"l\">nvme0.none.r0</td><td class=\"l\">blkgen: job 'randread': psync is "
            "synchronous, queue depth capped at 1</td>") in html.replace("&#39;", "'")


def test_a_note_every_cell_has_is_printed_once():
    a = with_timing(fixture("today-qemu.json"))
    b = copy.deepcopy(a)
    b["cell_id"] = "nvme0.bfq.r0"
    b["host"]["halt"] = "no halt within 60 s of its results"
    lines = notes.lines([a, b])
    assert len(lines) == 2
    assert lines[0].startswith("note: every cell: host-timed completions not reported")
    assert lines[1] == ("note: nvme0.bfq.r0: the guest did not halt cleanly: no halt within "
                        "60 s of its results")


class _Console:
    def __init__(self, lines_after_polls=None):
        self.seen = {}
        self.polls = 0
        self.halt_after = lines_after_polls

    def poll(self):
        self.polls += 1
        if self.halt_after is not None and self.polls >= self.halt_after:
            self.seen["halted"] = 0.0


def test_halt_is_recorded_clean_or_why_not():
    assert wait_for_halt(_Console(2), lambda: True, time.monotonic() + 5) == "clean"
    late = wait_for_halt(_Console(), lambda: True, time.monotonic() - 1)
    assert late.startswith(f"no halt within {HALT_GRACE_S:.0f} s") and "shutdown" in late
    gone = wait_for_halt(_Console(), lambda: False, time.monotonic() + 5)
    assert gone.startswith("QEMU ended before the guest's halt line")


def clocks_read(runnable: list[int]):
    """A reader of vcpu-clocks whose vCPUs stop one by one, as after a halt
    line; the last reading repeats."""
    readings = [{"irqs": 100 + i, "vcpus_runnable": r} for i, r in enumerate(runnable)]
    return lambda: readings.pop(0) if len(readings) > 1 else readings[0]


def test_vcpu_clocks_are_read_once_no_vcpu_can_run(monkeypatch):
    monkeypatch.setattr(vm, "POLL_S", 0)
    assert settled_vcpu_clocks(clocks_read([3, 1, 0]), "clean") == \
        {"irqs": 102, "vcpus_runnable": 0}
    # Without a clean halt one reading, which says it is not final.
    assert settled_vcpu_clocks(clocks_read([3, 0]), "no halt within 60 s")["vcpus_runnable"] == 3
    assert settled_vcpu_clocks(lambda: None, "clean") is None  # QEMU gone
    # A guest whose vCPU never stops: the last reading once the grace is over.
    now = iter(range(0, 1000, 10))
    monkeypatch.setattr(vm.time, "monotonic", lambda: next(now))
    assert settled_vcpu_clocks(clocks_read([1]), "clean") == {"irqs": 100, "vcpus_runnable": 1}


def test_accelerator_fallback_says_why(tmp_path, monkeypatch):
    monkeypatch.setattr(accel.os, "access", lambda *a: False)
    assert accel.probe(Path("qemu"), tmp_path, tmp_path / "probe.json") == (
        "tcg", accel.NO_KVM_DEVICE)
    cell = with_timing(fixture("all-at-deadline.json"))
    cell["host"]["accel_fallback"] = accel.NO_KVM_DEVICE
    results.validate(cell)
    assert notes.cell_notes(cell) == [f"accelerator: {accel.NO_KVM_DEVICE}"]
    monkeypatch.setattr(accel.os, "access", lambda *a: True)
    monkeypatch.setattr(accel, "kvm_boots", lambda *a: False)
    assert accel.probe(Path("qemu"), tmp_path, tmp_path / "probe.json") == (
        "tcg", accel.KVM_DID_NOT_BOOT)
    # The cached answer keeps its reason.
    assert accel.probe(Path("qemu"), tmp_path, tmp_path / "probe.json")[1] == \
        accel.KVM_DID_NOT_BOOT


@pytest.mark.parametrize("name", sorted(p.name for p in FIXTURES.glob("*.json")))
def test_fixtures_are_valid_cells(name):
    results.validate(with_timing(fixture(name)))
