"""The table `make test-full` writes: a run directory's cells and
expectations by verdict."""

import copy
import json
from pathlib import Path

from blklab import summary
from blklab.runner import SCENARIO_COPY

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "cells"

SCENARIO = """
[scenario]
schedulers = ["none", "bfq"]
[short]
schedulers = ["none"]
[[device]]
name = "nvme0"
kind = "nvme"
profile = "samsung-970evoplus-1t"
[[job]]
name = "r"
rw = "randread"
[[expect]]
what = "none reads at least 1000 IOPS"
metric = "iops"
left = {scheduler = "none"}
above = 1000
[[expect]]
what = "none's p99 under 10 us"
metric = "clat_p99_ns"
left = {scheduler = "none"}
below = 10000
known_failure = "the model's reads take 50 us"
[[expect]]
what = "bfq reads at most half of none's"
metric = "iops"
left = {scheduler = "bfq"}
op = "<"
factor = 0.5
right = {scheduler = "none"}
full_only = true
"""


def make_run(tmp_path: Path, short: bool, bfq_iops: float | None) -> Path:
    run = tmp_path / ("short" if short else "full")
    run.mkdir()
    (run / SCENARIO_COPY).write_text(SCENARIO)
    base = json.loads((FIXTURES / "today-qemu.json").read_text())
    cells = [base]
    if bfq_iops is not None:
        bfq = copy.deepcopy(base)
        bfq["cell_id"] = "nvme0.bfq.r0"
        bfq["request"]["scheduler"] = "bfq"
        bfq["summary"][0]["iops"] = bfq_iops
        cells.append(bfq)
    for c in cells:
        (run / f"cell-{c['cell_id']}.json").write_text(json.dumps(c))
    (run / "manifest.json").write_text(json.dumps({
        "short": short, "mode": "deterministic",
        "cells": [c["cell_id"] for c in cells] + ([] if short else ["nvme0.bfq.r1"])}))
    return run


def test_short_run_counts_every_expectation(tmp_path):
    r = summary.row("s", make_run(tmp_path, short=True, bfq_iops=None), 61.0)
    assert (r.cells_ok, r.cells_failed) == (1, 0)
    assert r.counts == {"PASS": 1, "FAIL": 0, "KNOWN-FAIL": 1, "UNEXPECTED-PASS": 0,
                        "NOT-RUN": 1, "ERROR": 0}
    assert r.passed
    text = summary.markdown([r])
    assert "| s | 1 | 0 | 1 | 0 | 1 | 0 | 1 | 0 | 1 min 01 s |" in text


def test_full_run_with_a_failure_and_a_missing_cell(tmp_path):
    # bfq at 15000 IOPS is not below half of none's 20000: FAIL; the
    # manifest lists a cell with no result: a failed cell.
    r = summary.row("s", make_run(tmp_path, short=False, bfq_iops=15000.0), 3725.0)
    assert r.counts["FAIL"] == 1 and r.counts["NOT-RUN"] == 0
    assert (r.cells_ok, r.cells_failed) == (2, 1) and not r.passed
    assert summary.markdown([r]).splitlines()[-1].endswith("| **62 min 05 s** |")


def test_report_markdown_names_the_run_and_regenerates_the_tables(tmp_path, capsys):
    from blklab import cli

    run = make_run(tmp_path, short=True, bfq_iops=None)
    manifest = json.loads((run / "manifest.json").read_text())
    manifest.update(run_id="abc123", scenario={"name": "s", "path": "/x/scenarios/s.toml"},
                    qemu={"cache_key": "7820c7ad72f1381d"}, image={"hash": "f" * 64})
    (run / "manifest.json").write_text(json.dumps(manifest))
    assert cli.main(["report", "--markdown", str(run)]) == 0
    text = capsys.readouterr().out
    lines = text.splitlines()
    assert lines[0] == (f"Run `blklab run --short scenarios/s.toml` (run abc123, deterministic "
                        f"mode, QEMU build 7820c7ad72f1381d, guest image ffffffffffff); tables "
                        f"by `blklab report --markdown results/s/abc123`:")
    assert "| nvme0.none.r0 | r | read | 20000 | 52 us | 51.2 us | 70.7 us | 88.1 us |" in lines
    assert "- note: nvme0.none.r0: host-timed completions not reported" in text
    assert "| KNOWN-FAIL | none's p99 under 10 us | nvme0 |" in text
    assert "| NOT-RUN | bfq reads at most half of none's | every device |" in text
    # The docs' check accepts what it prints, pasted into a scenario page.
    from blklab import docs_figures
    tables = docs_figures.tables(text)
    assert any(docs_figures.figure_cells(t) for t in tables)
    assert docs_figures.page_problems(docs_figures.REPO / "scenarios" / "s.md", text=text) == []


def test_check_exit_status_follows_the_verdicts(tmp_path, capsys):
    """0 with PASS, KNOWN-FAIL and NOT-RUN only; 1 on a FAIL, and 1 on an
    UNEXPECTED-PASS (a known failure that holds)."""
    from blklab import cli

    short = make_run(tmp_path, short=True, bfq_iops=None)
    assert cli.main(["check", str(short)]) == 0
    assert "0 fail, 1 known failures, 0 unexpected passes, 1 not run" in capsys.readouterr().out
    full = make_run(tmp_path, short=False, bfq_iops=15000.0)
    assert cli.main(["check", str(full)]) == 1
    fixed = tmp_path / "short" / SCENARIO_COPY
    fixed.write_text(SCENARIO.replace("below = 10000", "below = 1e9"))
    assert cli.main(["check", str(short)]) == 1
    out = capsys.readouterr().out
    assert "UNEXPECTED-PASS" in out and "remove its known_failure mark" in out


def load_run_full():
    """tests/full/run-full.py, a script rather than a module, loaded as one."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "run_full", Path(__file__).resolve().parents[2] / "tests" / "full" / "run-full.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_test_full_names_the_default_kernels_image(tmp_path, monkeypatch):
    """run-full.py's header: the QEMU build and the image of the default
    kernel, as build/images/<series>-amd64 holds it."""
    from blklab import kernels

    run_full = load_run_full()
    build = tmp_path / "build"
    (build / "qemu").mkdir(parents=True)
    (build / "qemu" / "manifest.json").write_text(json.dumps({"cache_key": "feedfacefeedface"}))
    image = build / "images" / f"{kernels.default_series()}-amd64"
    image.mkdir(parents=True)
    (image / "image.json").write_text(json.dumps({
        "hash": "0123456789abcdef", "kernel_package": "linux-image-x", "kernel_package_version": "1-1"}))
    monkeypatch.setenv("BLKLAB_BUILD", str(build))
    line = run_full.build_line()
    assert line.endswith(", QEMU build feedfacefeedface, guest image 0123456789ab "
                         "(linux-image-x 1-1)"), line


def test_test_full_resumes_only_a_finished_run_of_this_build(tmp_path, monkeypatch):
    """run-full.py --resume: a run without its wall time did not finish and
    is run again; one with it is taken up if its manifest names this
    build's QEMU and image, and refused, naming both builds, if not."""
    import pytest

    run_full = load_run_full()
    build = tmp_path / "build"
    (build / "qemu").mkdir(parents=True)
    (build / "qemu" / "manifest.json").write_text(json.dumps({"cache_key": "feedfacefeedface"}))
    run = make_run(tmp_path, short=False, bfq_iops=None)
    kernel = summary.runner.load_run(run).scenario.guest.kernel
    (build / "images" / kernel).mkdir(parents=True)
    (build / "images" / kernel / "image.json").write_text(json.dumps({"hash": "0123456789abcdef"}))
    monkeypatch.setenv("BLKLAB_BUILD", str(build))
    manifest = json.loads((run / "manifest.json").read_text())
    manifest |= {"qemu": {"cache_key": "feedfacefeedface"}, "image": {"hash": "0123456789abcdef"}}
    (run / "manifest.json").write_text(json.dumps(manifest))

    assert run_full.reusable(run) is None  # no wall time: it did not finish
    (run / run_full.WALL_FILE).write_text("3725.0\n")
    assert run_full.reusable(run) == 3725.0
    manifest["image"]["hash"] = "fedcba9876543210"
    (run / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(SystemExit) as e:
        run_full.reusable(run)
    assert "image fedcba9876543210, not this build's feedfacefeedface and 0123456789abcdef" \
        in str(e.value)
