"""io-path-cost.py's pure parts on made-up inputs: perf stat's CSV, the
scenario each step runs, and the table of medians per guest I/O with their
ratios to step a."""

import importlib.util
import sys
import tomllib
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import perf_window  # noqa: E402

_spec = importlib.util.spec_from_file_location("io_path_cost", HERE / "io-path-cost.py")
bench = importlib.util.module_from_spec(_spec)
sys.modules["io_path_cost"] = bench
_spec.loader.exec_module(bench)


def test_parse_reads_counts_and_unsupported_events():
    text = ("# started on Sun Dec  6 01:45:00 2026\n\n"
            "<not supported>,,instructions,0,100.00,,\n"
            "741.40,msec,task-clock,741397030,100.00,0.489,CPUs utilized\n"
            "87,,context-switches,741390324,100.00,117.346,/secEvents disabled\n"
            "Events enabled\n")
    assert perf_window.parse(text) == {"instructions": None, "task-clock": 741.4,
                                       "context-switches": 87.0}


def test_each_step_runs_the_default_scenario_with_its_own_drive():
    default = tomllib.loads(bench.DEFAULT_SCENARIO.read_text())
    (drive,) = [d for d in default["device"] if d["kind"] == "nvme"]
    scen = {s.key: tomllib.loads(bench.scenario(s, 5)) for s in bench.STEPS}
    for s in bench.STEPS:
        sc = scen[s.key]
        assert sc["guest"] == dict(default["guest"], boot="cold")
        assert sc["scenario"]["mode"] == s.mode and sc["scenario"]["schedulers"] == ["none"]
        (job,) = sc["job"]
        assert job == dict(default["job"][0], runtime="5s")
    assert "profile" not in scen["a"]["device"][0]
    assert scen["b"]["device"][0]["profile"] == "zero-latency"
    assert "precondition" not in scen["b"]["device"][0]
    assert scen["d"]["device"] == [drive]


def test_kind_puts_the_same_drive_behind_another_front_end():
    default = tomllib.loads(bench.DEFAULT_SCENARIO.read_text())
    (drive,) = [d for d in default["device"] if d["kind"] == "nvme"]
    for kind, name in (("ahci-hd", "ahci0"), ("virtio-blk", "virtio0")):
        (d,) = tomllib.loads(bench.scenario(bench.STEPS[-1], 5, kind))["device"]
        assert d == dict(drive, kind=kind, name=name)


def round_(ios, wall_s, instructions, task_ms, switches):
    return {"ios": ios, "wall_s": wall_s, "instructions": instructions,
            "task_clock_ms": task_ms, "context_switches": switches}


def test_table_gives_medians_per_io_and_ratios_to_the_first_step():
    steps = bench.STEPS[:2]
    rounds = {"a": [round_(1000, 0.05, 1e8, 60.0, 500), round_(1000, 0.07, 3e8, 80.0, 700),
                    round_(1000, 0.06, 2e8, 70.0, 600)],
              "b": [round_(2000, 0.24, 8e8, 300.0, 4000), round_(2000, 0.20, 8e8, 200.0, 4000),
                    round_(2000, 0.30, 8e8, 400.0, 4000)]}
    head, a, b = bench.table(steps, rounds)
    assert head.split()[:2] == ["step", "I/Os"]
    # a: 60 us wall, 200000 instructions, 70 us task-clock, 0.6 switches per I/O
    assert a.startswith("a. ")
    assert a.split()[-9:] == ["1000", "60.0", "1.00", "200000", "1.00", "70.0", "1.00",
                              "0.600", "1.00"]
    # b: 120 us, 400000, 150 us, 2 switches: x2.00, x2.00, x2.14, x3.33
    assert b.split()[-9:] == ["2000", "120.0", "2.00", "400000", "2.00", "150.0", "2.14",
                              "2.000", "3.33"]


def test_a_metric_perf_cannot_count_is_n_a_not_zero():
    steps = bench.STEPS[:2]
    rounds = {"a": [round_(1000, 0.05, None, 60.0, 500)],
              "b": [round_(1000, 0.10, None, 90.0, 900)]}
    _, a, b = bench.table(steps, rounds)
    assert b.split()[-8:] == ["100.0", "2.00", "n/a", "n/a", "90.0", "1.50", "0.900", "1.80"]


def test_baseline_runs_each_blklab_step_first_on_the_other_build():
    steps = bench.with_baseline(bench.STEPS)
    assert [s.key for s in steps] == ["a", "b0", "b", "c0", "c", "d0", "d"]
    assert [s.qemu for s in steps] == ["stock", "baseline", "blklab", "baseline", "blklab",
                                       "baseline", "blklab"]
    for base, new in zip(steps[1::2], steps[2::2]):
        assert (base.mode, base.drive) == (new.mode, new.drive)
        assert bench.scenario(base, 5) == bench.scenario(new, 5)


def test_against_baseline_gives_each_steps_ratio_to_its_baseline():
    steps = bench.with_baseline(bench.STEPS[:2])
    rounds = {"a": [round_(1000, 0.05, None, 60.0, 500)],
              "b0": [round_(1000, 0.10, None, 90.0, 3000), round_(1000, 0.08, None, 70.0, 2000),
                     round_(1000, 0.12, None, 80.0, 2500)],
              "b": [round_(2000, 0.18, None, 140.0, 4000), round_(2000, 0.16, None, 120.0, 4000),
                    round_(2000, 0.14, None, 160.0, 4000)]}
    head, b = bench.against_baseline(steps, rounds)
    assert head.split()[0] == "step"
    # b0: 100 us wall, 80 us task, 2.5 switches per I/O; b: 80, 70, 2.0
    assert b.split() == ["b", "0.800", "n/a", "0.875", "0.800"]


def test_steps_picks_steps_by_key_in_order_and_refuses_others():
    assert [s.key for s in bench.select_steps("dc")] == ["c", "d"]
    assert [s.key for s in bench.with_baseline(bench.select_steps("c"))] == ["c0", "c"]
    for bad in ("", "x", "ax"):
        with pytest.raises(ValueError, match="give one or more of a, b, c, d"):
            bench.select_steps(bad)
