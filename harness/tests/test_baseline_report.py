"""Baselines, comparisons and report rendering on synthetic cells."""

from pathlib import Path

import pytest

from blklab import baseline, report, turns
from blklab.errors import BlklabError


def cell(cid, sched, iops, p99):
    return {"cell_id": cid, "status": "ok", "guest": {"kernel_version": "Linux 6.1"},
            "request": {"device": {"name": "d"}, "scheduler": sched, "tunables": {}},
            "summary": [{"job": "j", "direction": "read", "iops": iops, "bw_bytes": iops * 4096,
                         "clat_mean_ns": p99 / 2, "clat_p50_ns": p99 / 3, "clat_p99_ns": p99,
                         "clat_p99.9_ns": p99 * 2}],
            "workload": {"jobs": [{"jobname": "j", "read": {"total_ios": 10, "clat_ns": {
                "percentile": {"50.000000": 1000, "99.000000": int(p99)}}},
                "blkgen": {"histogram": {"read": {"clat_ns": [[900, 1100, 50],
                                                              [int(p99), int(p99), 1]]}}}}]}}


def run_cells(iops_values, p99_values, sched="none"):
    return [cell(f"d.{sched}.r{i}", sched, v, p) for i, (v, p) in
            enumerate(zip(iops_values, p99_values))]


def test_compare_flags_regressions_with_intervals():
    base = baseline.snapshot(run_cells([100, 102, 98, 101, 99], [10, 11, 10, 9, 10]),
                             {"mode": "realtime"})
    same = baseline.snapshot(run_cells([101, 99, 100, 98, 102], [10, 10, 11, 9, 10]),
                             {"mode": "realtime"})
    worse = baseline.snapshot(run_cells([80, 82, 79, 81, 80], [20, 21, 19, 20, 22]),
                              {"mode": "realtime"})
    verdicts = {(c.key, c.metric): c.verdict for c in baseline.compare(base, same)}
    assert set(verdicts.values()) == {"unchanged"}
    changes = {c.metric: c for c in baseline.compare(base, worse)}
    assert changes["iops"].verdict == "regressed"
    assert changes["iops"].change_pct == pytest.approx(-20.0)
    assert changes["clat_p99_ns"].verdict == "regressed"
    # Better than the baseline is an improvement, not a regression.
    assert {c.verdict for c in baseline.compare(worse, base)} == {"improved"}


def test_compare_exact_values_in_deterministic_mode():
    det = {"mode": "deterministic"}
    base = baseline.snapshot(run_cells([100, 100], [10, 10]), det)
    new = baseline.snapshot(run_cells([99, 99], [10, 10]), det)
    changes = {c.metric: c for c in baseline.compare(base, new)}
    assert changes["iops"].verdict == "regressed"
    assert changes["clat_p99_ns"].verdict == "unchanged"
    changes = {c.metric: c for c in baseline.compare(base, new, tolerance_pct=2.0)}
    assert changes["iops"].verdict == "unchanged"


def test_compare_reports_missing_metrics():
    base = baseline.snapshot(run_cells([100], [10]), {"mode": "realtime"})
    new = baseline.snapshot(run_cells([100], [10], sched="bfq"), {"mode": "realtime"})
    assert {c.verdict for c in baseline.compare(base, new)} == {"missing"}


def test_save_and_load(tmp_path):
    path = baseline.baseline_path(tmp_path, "b1")
    baseline.save(path, run_cells([1, 2], [3, 4]), {"mode": "realtime", "run_id": "x"})
    assert baseline.load(path)["rows"]["d.none/j/read"]["iops"] == [1.0, 2.0]
    with pytest.raises(BlklabError, match="must be 1-64"):
        baseline.baseline_path(tmp_path, "../evil")
    with pytest.raises(BlklabError, match="no such baseline"):
        baseline.load(tmp_path / "nope.json")
    with pytest.raises(BlklabError, match="no successful cells"):
        baseline.save(path, [], {})


def test_report_is_self_contained(tmp_path):
    cells = run_cells([100, 110], [10000, 12000]) + run_cells([50, 55], [30000, 31000], "bfq")
    cells.append({"cell_id": "d.kyber.r0", "status": "failed", "error": "guest: boom <b>",
                  "request": {"device": {"name": "d"}, "scheduler": "kyber", "tunables": {}},
                  "files": {"console_log": "cells/d.kyber.r0/console.log"}})
    html = report.render(Path("run"), cells, {"mode": "realtime", "run_id": "r1",
                                              "scenario": {"name": "s"}}, [])
    assert "http://" not in html.replace("http://www.w3.org", "")  # no network resources
    assert html.count('class="plot"') == 2  # CDF and percentile bars
    assert html.count("data:image/png;base64,") == 2
    assert "guest: boom &lt;b&gt;" in html  # escaped
    # none has twice bfq's IOPS in both repeats: the comparison says so.
    assert ('<td class="l">iops</td><td class="l">d.none/j/read</td>\n'
            '<td class="l">d.bfq/j/read</td><td>2.000</td><td>[1.818, 2.200]</td>'
            '<td class="l">significant</td>') in html


def series(iops, p99):
    """blkgen's jobs[].blkgen.time_series layout: columns per direction."""
    return {"interval_ns": 100_000_000, "latency": "clat", "truncated": False,
            "end_ns": [100_000_000 * (k + 1) for k in range(len(iops))],
            "read": {"iops": iops, "bw_bytes": [v * 4096 for v in iops],
                     "clat_p50_ns": [v // 2 for v in p99], "clat_p99_ns": p99}}


def test_report_draws_the_timeline_of_blkgen_time_series():
    cells = run_cells([100, 110], [10000, 12000]) + run_cells([50, 55], [30000, 31000], "bfq")
    # An interval without completions has IOPS 0 and no percentile (0).
    cells[0]["workload"]["jobs"][0]["blkgen"]["time_series"] = series(
        [1000, 0, 1200], [90_000, 0, 95_000])
    cells[2]["workload"]["jobs"][0]["blkgen"]["member_time_series"] = [
        series([500, 520], [40_000, 41_000]), series([510, 505], [42_000, 40_500])]
    assert [label for label, _ in turns.job_series(cells[2]["workload"]["jobs"][0])] == \
        ["j[0]", "j[1]"]
    html = report.render(Path("run"), cells, {"mode": "realtime", "run_id": "r1",
                                              "scenario": {"name": "s"}}, [])
    assert html.count('class="plot"') == 3
    assert 'data-plot="d-timeline"' in html
    # Without a series there is no timeline, rather than an empty plot.
    assert report.timeline_plot("d", run_cells([100], [10])) is None


def test_counter_table_flattens_and_transposes():
    counters = [{"model": "ssd", "waf": 1.25, "gc_runs": 3, "erases": 0,
                 "die_busy_ns": [10, 30],
                 "service_ns": {"read": {"count": 4, "total": 400, "max": 250},
                                "trim": {"count": 0, "total": 0, "max": 0}}},
                {"model": "ssd", "waf": 2.0, "gc_runs": 5, "erases": 0,
                 "die_busy_ns": [20, 20],
                 "service_ns": {"read": {"count": 2, "total": 100, "max": 60},
                                "trim": {"count": 0, "total": 0, "max": 0}}}]
    cells = run_cells([100, 110], [10, 12])
    for c, k in zip(cells, counters):
        c["devmodel"] = k
    columns, rows, zero = report.counter_table(cells)
    assert columns == ["d.none.r0", "d.none.r1"]
    table = dict(rows)
    assert table["model"] == ["ssd", "ssd"]
    assert table["waf"] == ["1.25", "2"]
    assert table["service_ns.read.count"] == ["4", "2"]
    assert table["service_ns.read.mean"] == ["100", "50"]
    assert table["service_ns.read.max"] == ["250", "60"]
    assert table["die_busy_ns (mean of 2)"] == ["20", "20"]
    assert table["die_busy_ns (max of 2)"] == ["30", "20"]
    assert "erases" in zero and "service_ns.trim.mean" in zero and "erases" not in table
    html = report.render(Path("run"), cells, {"mode": "deterministic", "run_id": "r1",
                                              "scenario": {"name": "s"}}, [])
    assert '<tr><td class="l">service_ns.read.mean</td><td>100</td><td>50</td></tr>' in html
    assert "Zero in every cell: erases, service_ns.trim.count" in html


# A manifest's guest and QEMU records as build-image.sh and build-qemu.sh
# write them (keys blklab.inputs reads; values made up).
IMAGE = {"kernel": "6.1-amd64", "kernel_package": "linux-image-6.1.0-57-amd64",
         "kernel_package_version": "6.1.192-3", "userland_lock_sha256": "aa",
         "blkgen_sha256": "bb", "initramfs_sha256": "cc", "vmlinuz_sha256": "dd",
         "vmlinux_sha256": "d2"}
QEMU = {"qemu_source": {"package": "qemu", "version": "1:7.2+dfsg-7+deb12u13"},
        "series_sha256": "ee", "devmodel_sha256": "ff",
        "firmware_packages": {"seabios": "1.16.2-1"}, "variant": "release",
        "configure_flags": ["--prefix=/a", "--devmodel=/a/b", "--enable-kvm"]}


def manifest(image=None, qemu=None):
    return {"mode": "deterministic", "image": dict(IMAGE, **(image or {})),
            "qemu": dict(QEMU, **(qemu or {}))}


def test_compare_names_each_guest_and_qemu_input_that_differs(tmp_path):
    cells = run_cells([100], [10])
    base = baseline.snapshot(cells, manifest())
    assert baseline.input_warnings(base, baseline.snapshot(cells, manifest())) == []
    # A QEMU built in another directory is the same QEMU.
    moved = manifest(qemu={"configure_flags": ["--prefix=/x", "--devmodel=/x/b", "--enable-kvm"]})
    assert baseline.input_warnings(base, baseline.snapshot(cells, moved)) == []
    new = baseline.snapshot(cells, manifest(
        image={"kernel_package_version": "6.1.193-1", "userland_lock_sha256": "a2"},
        qemu={"series_sha256": "e2"}))
    warnings = baseline.input_warnings(base, new)
    assert len(warnings) == 3
    assert any(w.startswith("guest input differs: kernel package version") and
               "6.1.192-3 in the baseline, 6.1.193-1 in the run" in w for w in warnings)
    assert any("userland.lock" in w and "aa in the baseline, a2 in the run" in w
               for w in warnings)
    assert any(w.startswith("qemu input differs: QEMU patch series") for w in warnings)
    # The kernel ELF the cells boot is an input of its own.
    (elf,) = baseline.input_warnings(base, baseline.snapshot(cells, manifest(
        image={"vmlinux_sha256": "d3"})))
    assert elf.startswith("guest input differs: vmlinux") and "d2 in the baseline, d3 in the run" in elf
    # Saved and loaded, the inputs survive.
    path = tmp_path / "b.json"
    baseline.save(path, cells, manifest())
    assert baseline.input_warnings(baseline.load(path), new) == warnings


def test_compare_says_when_the_baseline_records_no_inputs():
    cells = run_cells([100], [10])
    old = baseline.snapshot(cells, manifest())
    del old["inputs"]
    [w] = baseline.input_warnings(old, baseline.snapshot(cells, manifest()))
    assert "records no guest or QEMU inputs" in w


def test_report_warns_about_inputs_that_differ():
    cells = run_cells([100, 110], [10000, 12000])
    for c in cells:
        c["image"] = dict(IMAGE)
    m = dict(manifest(), run_id="r1", scenario={"name": "s"})
    html = report.render(Path("run"), cells, m, [])
    assert "inputs differ" not in html
    # One cell measured with another initramfs (a run resumed after a rebuild).
    cells[1]["image"]["initramfs_sha256"] = "c2"
    html = report.render(Path("run"), cells, m, [])
    assert "Warning: inputs differ" in html
    assert f"cc in the run&#39;s manifest, c2 in cell {cells[1]['cell_id']}" in html
    # Against a baseline measured on another kernel.
    cells[1]["image"]["initramfs_sha256"] = "cc"
    base = baseline.snapshot(cells, manifest(image={"kernel": "6.12-amd64"}))
    html = report.render(Path("run"), cells, m, [], base)
    assert "guest kernel (kernel): 6.12-amd64 in the baseline, 6.1-amd64 in the run" in html


def test_report_shows_the_vcpu_clocks_of_parallel_cells():
    cells = run_cells([100], [10000])
    cells[0]["vcpu_clocks"] = {"parallel": True, "quantum_ns": 1000, "drift_max_ns": 998,
                               "irqs": 50, "irqs_late": 3, "irq_late_max_ns": 640,
                               "sync_waits": 12, "unsynced_reads": 0, "vcpus_runnable": 0}
    shared = run_cells([100], [10000], "bfq")
    html = report.render(Path("run"), cells + shared, {"mode": "deterministic"}, [])
    assert "<h3>vCPU clocks</h3>" in html
    row = html[html.index('<table class="vclocks">'):]
    row = row[:row.index("</table>")]
    assert "<th>drift_max_ns</th>" in row and "<th>irq_late_max_ns</th>" in row
    assert '<td class="l">d.none.r0</td>' in row and "<td>998</td>" in row
    assert "d.bfq.r0" not in row  # a cell on shared clocks has none
    assert "vCPU clocks" not in report.render(Path("run"), shared, {"mode": "deterministic"}, [])
