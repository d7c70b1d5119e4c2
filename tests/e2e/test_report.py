"""Reports render in a real browser with every plot and no console error;
check, baseline and compare work on real runs."""

import json
import re
import shutil

from browser import open_page
from conftest import cells_of, run_blklab


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
    # Per device: a latency CDF and percentile bars, at least.
    for device in ("nvme0", "hdd0"):
        for plot in ("cdf", "percentiles"):
            assert f'data-plot="{device}-{plot}"' in page.dom
    assert plots >= 4
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 20000
    for scheduler in ("none", "mq-deadline", "kyber", "bfq"):
        assert f"nvme0.{scheduler}" in page.dom
    assert "Manifest" in page.dom and "kernel_package_version" in page.dom


def test_baseline_and_compare(four_schedulers, tmp_path):
    _, out = four_schedulers
    results = tmp_path / "results"
    proc = run_blklab("--results", str(results), "baseline", "save", str(out), "before")
    assert proc.returncode == 0, proc.stderr
    assert (results / "baselines/before.json").exists()
    # A run compared with itself: every metric unchanged.
    proc = run_blklab("--results", str(results), "compare", "before", str(out))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "0 regression(s)" in proc.stdout
    assert len(cells_of(out)) == 8
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
