"""Reports render in a real browser with every plot and no console error;
check, baseline and compare work on real runs."""

import json
import re
import shutil

import pytest

from browser import open_page
from conftest import nvme, randread, run_blklab


def _body_attr(dom: str, name: str) -> int:
    m = re.search(rf'<body[^>]*{name}="(\d+)"', dom)
    assert m, f"{name} missing from <body>"
    return int(m.group(1))


def test_report_renders_in_chromium(four_schedulers, tmp_path):
    proc, out = four_schedulers
    assert (out / "report.html").exists()  # written by run
    proc = run_blklab("report", str(out), "-o", str(tmp_path / "r.html"))
    assert proc.returncode == 0, proc.stderr
    shot = tmp_path / "report.png"
    page = open_page(tmp_path / "r.html", tmp_path / "profile", shot)
    assert page.console == []
    plots = _body_attr(page.dom, "data-plots")
    assert _body_attr(page.dom, "data-plots-loaded") == plots
    # Per device: a latency CDF, percentile bars and the timeline of blkgen's
    # time series (2-second jobs, 100 ms intervals).
    for device in ("nvme0", "hdd0"):
        for plot in ("cdf", "percentiles", "timeline"):
            assert f'data-plot="{device}-{plot}"' in page.dom
    assert plots >= 6
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 20000
    for scheduler in ("none", "mq-deadline", "kyber", "bfq"):
        assert f"nvme0.{scheduler}" in page.dom
    assert "Manifest" in page.dom and "kernel_package_version" in page.dom


@pytest.fixture(scope="module")
def deterministic_pair(built, tmp_path_factory):
    """none and mq-deadline on a model-driven NVMe SSD, deterministic mode."""
    tmp = tmp_path_factory.mktemp("compare")
    scenario = tmp / "pair.toml"
    scenario.write_text('[scenario]\nschedulers = ["none", "mq-deadline"]\n'
                        'mode = "deterministic"\ntimeout_s = 600\n'
                        '[guest]\nvcpus = 1\nmemory_mib = 512\n'
                        + nvme(profile="samsung-970evoplus-1t") + randread("200ms", iodepth=16))
    out = tmp / "run"
    proc = run_blklab("run", str(scenario), "--out", str(out), "--no-report")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return out


def test_baseline_and_compare(deterministic_pair, tmp_path):
    out = deterministic_pair
    results = tmp_path / "results"
    proc = run_blklab("--results", str(results), "baseline", "save", str(out), "before")
    assert proc.returncode == 0, proc.stderr
    assert (results / "baselines/before.json").exists()
    # A run compared with itself: every metric exactly unchanged.
    proc = run_blklab("--results", str(results), "compare", "before", str(out))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "0 regression(s)" in proc.stdout
    rows = [line for line in proc.stdout.splitlines() if line.startswith("nvme0.")]
    assert rows and all(line.endswith("unchanged") for line in rows), proc.stdout
    # The same run with one cell at half the IOPS and three times the p99: a regression.
    worse = tmp_path / "worse"
    shutil.copytree(out, worse)
    cell_path = worse / "cell-nvme0.none.r0.json"
    cell = json.loads(cell_path.read_text())
    for row in cell["summary"]:
        row["iops"] /= 2
        row["clat_p99_ns"] *= 3
    cell_path.write_text(json.dumps(cell))
    proc = run_blklab("--results", str(results), "compare", "before", str(worse))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    regressed = {line.split()[1] for line in proc.stdout.splitlines()
                 if line.startswith("nvme0.none/") and line.endswith("regressed")}
    assert regressed == {"iops", "clat_p99_ns"}, proc.stdout
    assert "2 regression(s)" in proc.stdout
    proc = run_blklab("--results", str(results), "compare", "nope", str(out))
    assert proc.returncode == 1 and "no such baseline" in proc.stderr


def test_compare_of_single_realtime_runs_gives_no_verdict(four_schedulers, tmp_path):
    """One realtime sample per side has no interval: compare says so and
    calls nothing a regression, however large the change."""
    _, out = four_schedulers
    results = tmp_path / "results"
    assert run_blklab("--results", str(results), "baseline", "save", str(out),
                      "rt").returncode == 0
    worse = tmp_path / "worse"
    shutil.copytree(out, worse)
    cell_path = worse / "cell-nvme0.none.r0.json"
    cell = json.loads(cell_path.read_text())
    for row in cell["summary"]:
        row["iops"] /= 2
    cell_path.write_text(json.dumps(cell))
    proc = run_blklab("--results", str(results), "compare", "rt", str(worse))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    iops = [line for line in proc.stdout.splitlines()
            if line.startswith("nvme0.none/") and line.split()[1] == "iops"]
    assert iops and iops[0].endswith("no interval") and "-50.0%" in iops[0], proc.stdout
    assert "with no verdict" in proc.stdout and "0 regression(s)" in proc.stdout
