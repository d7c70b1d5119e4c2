"""A customer's fio JSON beside a run's cells (blklab compare-fio and the
report's table)."""

import json
from pathlib import Path

import pytest

from blklab import compare_fio, report, scenario
from blklab.errors import ScenarioError

PCT = {"50.000000": 2_000_000, "99.000000": 9_000_000, "99.900000": 12_000_000,
       "99.990000": 15_000_000}


def fio_doc(read_iops=3000.0, mean_ns=8_000_000.0, pct=PCT, jobs=1, write=False):
    job = {"jobname": "randread",
           "read": {"total_ios": 180000, "iops": read_iops,
                    "clat_ns": {"mean": mean_ns, "percentile": dict(pct)}}}
    if write:
        job["write"] = {"total_ios": 1000, "iops": 100.0,
                        "clat_ns": {"mean": 500_000.0, "percentile": dict(PCT)}}
    return {"fio version": "fio-3.28", "jobs": [dict(job) for _ in range(jobs)]}


def cell(cid, iops, mean_ns, status="ok"):
    return {"cell_id": cid, "status": status,
            "request": {"device": {"name": "d"}, "scheduler": cid.split(".")[1],
                        "tunables": {}},
            "workload": fio_doc(iops, mean_ns, {k: v * 2 for k, v in PCT.items()}),
            "summary": [{"job": "randread", "direction": "read", "iops": iops,
                         "bw_bytes": iops * 4096, "clat_mean_ns": mean_ns}]}


def test_ratios_are_cell_over_customer(tmp_path):
    path = tmp_path / "customer.json"
    path.write_text("note: fio printed this first\n" + json.dumps(fio_doc()))
    doc = compare_fio.load_fio_json(path)
    rows = compare_fio.compare(path, doc, [cell("d.none.r0", 1500.0, 4_000_000.0)])
    (row,) = rows
    assert row.direction == "read"
    body = compare_fio.table_rows(rows)
    by_metric = {line[2]: line for line in body[1:]}
    assert by_metric["iops"][3:] == ["3000", "1500", "0.50"]
    assert by_metric["mean_us"][3:] == ["8000", "4000", "0.50"]
    assert by_metric["p99.99_us"][3:] == ["15000", "30000", "2.00"]
    text = compare_fio.render(path, rows)
    assert "d.none.r0" in text and "p99.9_us" in text


def test_several_jobs_add_iops_and_weigh_the_mean_but_leave_percentiles():
    figures = compare_fio.direction_figures("c.json", fio_doc(jobs=2), "read")
    assert figures.values["iops"] == 6000.0
    assert figures.values["mean_us"] == 8000.0
    assert figures.values["p99_us"] is None
    assert "percentiles of separate jobs do not combine" in figures.note


def test_a_failed_cell_and_a_direction_the_customer_lacks(tmp_path):
    path = tmp_path / "c.json"
    path.write_text(json.dumps(fio_doc(write=True)))
    rows = compare_fio.compare(path, compare_fio.load_fio_json(path),
                               [cell("d.bfq.r0", 100.0, 1.0, status="failed")])
    assert [(r.direction, r.ours) for r in rows] == [("read", None), ("write", None)]
    assert "cells without figures" in compare_fio.render(path, rows)


@pytest.mark.parametrize("doc, message", [
    ({"fio version": "x"}, "jobs: missing or not a list"),
    ({"jobs": [{"read": {"total_ios": 5, "iops": 1, "clat": {}}}]},
     "jobs[0].read.clat_ns: missing (fio 2.x reported 'clat' in us"),
    ({"jobs": [{"read": {"total_ios": 5, "iops": "fast", "clat_ns": {"mean": 1}}}]},
     "jobs[0].read.iops: must be a number"),
    ({"jobs": [{"read": {"total_ios": 0}}]}, "no job did any I/O"),
])
def test_bad_customer_json(tmp_path, doc, message):
    path = tmp_path / "c.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(compare_fio.FioJsonError) as e:
        compare_fio.compare(path, compare_fio.load_fio_json(path), [])
    assert message in str(e.value)


def test_not_json(tmp_path):
    path = tmp_path / "c.json"
    path.write_text("fio: option error\n")
    with pytest.raises(compare_fio.FioJsonError, match="no JSON object"):
        compare_fio.load_fio_json(path)


def test_report_shows_the_table_when_the_run_kept_the_customers_json(tmp_path):
    cells = [cell("d.none.r0", 1500.0, 4_000_000.0)]
    manifest = {"mode": "deterministic", "run_id": "r", "scenario": {"name": "s"}}
    html = report.render(tmp_path, cells, manifest, [])
    assert "The customer's fio beside blklab" not in html
    (tmp_path / "customer-fio.json").write_text(json.dumps(fio_doc()))
    html = report.render(tmp_path, cells, manifest, [])
    assert "The customer's fio beside blklab" in html
    assert "<td>3000</td><td>1500</td><td>0.50</td>" in html


def test_scenario_customer_fio_is_checked_when_validated(tmp_path):
    base = ('[scenario]\ncustomer_fio = "c.json"\n[[device]]\nname = "d"\nkind = "nvme"\n'
            'profile = "zero-latency"\n[[job]]\nname = "j"\n')
    (tmp_path / "s.toml").write_text(base)
    (tmp_path / "c.json").write_text(json.dumps(fio_doc()))
    s = scenario.load(tmp_path / "s.toml")
    assert json.loads(s.customer_fio)["jobs"][0]["jobname"] == "randread"
    (tmp_path / "c.json").write_text('{"jobs": 3}')
    with pytest.raises(ScenarioError) as e:
        scenario.load(tmp_path / "s.toml")
    assert e.value.key == "scenario.customer_fio"
    assert "c.json: jobs: missing or not a list" in e.value.message
