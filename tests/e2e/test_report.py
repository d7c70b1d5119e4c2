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


PAIR_EXPECTATIONS = """
[[expect]]
what = "mq-deadline's dispatch costs little at QD16 on an SSD"
metric = "iops"
left = {scheduler = "mq-deadline"}
ratio = [0.5, 2.0]
right = {scheduler = "none"}
source = "block/mq-deadline.c: dd_dispatch_request"

[[expect]]
what = "none completes more than 1000 reads per second"
metric = "iops"
left = {scheduler = "none"}
above = 1000
source = "block/blk-mq.c: blk_mq_dispatch_rq_list"
"""


@pytest.fixture(scope="module")
def deterministic_pair(built, tmp_path_factory):
    """none and mq-deadline on a model-driven NVMe SSD, deterministic mode,
    traced with blktrace, with two expectations."""
    tmp = tmp_path_factory.mktemp("compare")
    scenario = tmp / "pair.toml"
    scenario.write_text('[scenario]\nschedulers = ["none", "mq-deadline"]\n'
                        'mode = "deterministic"\ntimeout_s = 600\nblktrace = true\n'
                        '[guest]\nvcpus = 1\nmemory_mib = 512\n'
                        + nvme(profile="samsung-970evoplus-1t") + randread("200ms", iodepth=16)
                        + PAIR_EXPECTATIONS)
    out = tmp / "run"
    proc = run_blklab("run", str(scenario), "--out", str(out), "--no-report")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return out


def test_report_shows_counters_btt_and_expectations(deterministic_pair, tmp_path):
    """The tables beside the plots: each expectation with the verdict
    `blklab check` gives, the device model's counters of each cell, and
    btt's figures of each traced cell."""
    out = deterministic_pair
    check = run_blklab("check", str(out))
    verdicts = {line.split()[0] for line in check.stdout.splitlines()
                if line.split() and line.split()[0] in ("PASS", "FAIL", "ERROR")}
    assert len(verdicts) >= 1 and check.returncode == (0 if verdicts == {"PASS"} else 1)
    proc = run_blklab("report", str(out), "-o", str(tmp_path / "r.html"))
    assert proc.returncode == 0, proc.stderr
    page = open_page(tmp_path / "r.html", tmp_path / "profile", tmp_path / "r.png")
    assert page.console == []
    rows = re.findall(r'<td class="l ([A-Z-]+)">\1</td><td class="l">([^<]*)</td>',
                      page.dom)
    assert {what for _, what in rows} == {
        "mq-deadline's dispatch costs little at QD16 on an SSD",
        "none completes more than 1000 reads per second"}
    assert {status for status, _ in rows} == verdicts
    assert "block/mq-deadline.c: dd_dispatch_request" in page.dom
    cells = {c["cell_id"]: c for c in (json.loads(p.read_text())
                                       for p in out.glob("cell-*.json"))}
    assert set(cells) == {"nvme0.none.r0", "nvme0.mq-deadline.r0"}
    # Device model counters: one column per cell, in cell order, and the
    # bytes each cell's model read for the host as its JSON holds them.
    counters = page.dom[page.dom.index("Device model counters"):]
    counters = counters[:counters.index("</table>")]
    columns = re.findall(r"<th>([^<]+)</th>", counters)
    assert sorted(columns) == sorted(cells)
    row = re.search(r'<td class="l">host_bytes_read</td>((?:<td>[^<]*</td>)+)', counters)
    assert row, counters[:2000]
    shown = re.findall(r"<td>([^<]*)</td>", row.group(1))
    assert shown == [f"{cells[cid]['devmodel']['host_bytes_read']:,}" for cid in columns]
    assert all(cells[cid]["devmodel"]["host_bytes_read"] > 0 for cid in columns)
    # btt: a row per traced cell with Q2C and D2C.
    btt = page.dom[page.dom.index("blktrace / btt"):]
    btt = btt[:btt.index("</table>")]
    for cid, cell in cells.items():
        assert cell["btt"]["q2c_n"] > 0
        assert f'<td class="l">{cid}</td>' in btt
    assert "q2c" in btt.lower() and "d2c" in btt.lower()


def test_iostat_figures_agree_with_blkgen_and_btt(deterministic_pair):
    """Each cell's /sys/block/<dev>/stat deltas and iostat's figures from
    them, against what blkgen counted and what blktrace timed."""
    for path in deterministic_pair.glob("cell-*.json"):
        cell = json.loads(path.read_text())
        (row,) = cell["summary"]
        delta, derived, btt = (cell["disk_stats"]["delta"], cell["disk_stats"]["derived"],
                               cell["btt"])
        # The guest does nothing else on the device: every read is blkgen's.
        assert delta["read_ios"] == row["total_ios"] > 0, cell["cell_id"]
        assert delta["read_sectors"] == 8 * row["total_ios"]
        assert delta["write_ios"] == 0 and derived["w_await_ms"] is None
        # r_await runs from the request's allocation to its completion:
        # blktrace's Q2C less Q2G (the bio before it had a request). The
        # kernel sums it in ns and shows ms, so allow a little.
        await_us = derived["r_await_ms"] * 1000
        g2c_us = (btt["q2c_avg_s"] - btt["q2g_avg_s"]) * 1e6
        assert abs(await_us - g2c_us) <= 0.25 * g2c_us, (cell["cell_id"], await_us, g2c_us)
        # Little's law within the block layer: at most the job's 16 in flight.
        assert 0 < derived["aqu_sz"] <= 16
        assert 0 < derived["util_pct"] <= 100


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
