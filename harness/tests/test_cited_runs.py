"""blklab.cited_runs: the reference runs cited in tests/reference/*/runs.toml,
as fio's JSON shape, checked against an artifact's files, and every bad
input named by file and key."""

import json
from pathlib import Path

import pytest

from blklab import cited_runs, paths, simulate

REFERENCE = paths.REPO / "tests" / "reference"
FILES = sorted(REFERENCE.glob("*/runs.toml"))


def test_both_references_are_cited():
    assert [p.parent.name for p in FILES] == ["hotcloudperf24-kyber", "icpe24-fig1-qd-sweep"]


@pytest.mark.parametrize("file", FILES, ids=lambda p: p.parent.name)
def test_every_run_names_its_file_in_the_artifact(file):
    cited = cited_runs.load(file)
    assert cited.source["url"].startswith("https://github.com/stonet-research/")
    assert len(cited.source["commit"]) == 40
    for run in cited.runs.values():
        assert run.path.endswith(".txt") and "fio_output/" in run.path
        doc = cited.fio_doc(run.id)
        assert doc["fio version"] == cited.source["fio_version"]
        assert doc["global options"]["filename"].startswith("/dev/nvme")


def test_the_fio_shape_carries_the_cited_figures(tmp_path):
    cited = cited_runs.load(REFERENCE / "hotcloudperf24-kyber" / "runs.toml")
    doc = cited.fio_doc("rep_0")
    # runs.toml, rep_0: [runs.read] iops and "99.9" = 4014080 (ns)
    read = doc["jobs"][0]["read"]
    assert read["iops"] == 1447.729312
    assert read["clat_ns"]["percentile"]["99.900000"] == 4014080
    (path,) = cited_runs.write_drive_dir(tmp_path, {"read-beside-writes-max": doc})
    assert json.loads(path.read_text()) == doc
    figs = simulate.figures(json.loads(path.read_text()), str(path))  # as blklab fit reads it
    assert figs["read"].values["p99.9_us"] == pytest.approx(4014.08)
    doc["jobs"][0]["read"]["iops"] = 0
    assert cited.fio_doc("rep_0")["jobs"][0]["read"]["iops"] == 1447.729312  # a fresh copy


def test_a_drive_directory_is_not_overwritten(tmp_path):
    cited = cited_runs.load(REFERENCE / "hotcloudperf24-kyber" / "runs.toml")
    (tmp_path / "b.json").write_text("kept")
    with pytest.raises(cited_runs.CitedRunsError, match="b.json: already exists; nothing is"):
        cited_runs.write_drive_dir(tmp_path, {"a": cited.fio_doc("rep_0"),
                                              "b": cited.fio_doc("rep_1")})
    assert sorted(p.name for p in tmp_path.iterdir()) == ["b.json"]


def _artifact(tmp_path: Path, cited: cited_runs.CitedRuns) -> Path:
    """An artifact's files as fio writes them: a line before the JSON, and
    fields and percentiles that are not cited."""
    src = tmp_path / "src"
    for run in cited.runs.values():
        doc = cited.fio_doc(run.id)
        doc["timestamp"] = 1703572080
        for job in doc["jobs"]:
            for d in ("read", "write"):
                if d in job:
                    job[d]["bw"] = 1
                    job[d]["clat_ns"].setdefault("percentile", {})["1.000000"] = 1
        (src / run.path).parent.mkdir(parents=True, exist_ok=True)
        (src / run.path).write_text("fio-3.35 starting\n" + json.dumps(doc))
    return src


@pytest.mark.parametrize("file", FILES, ids=lambda p: p.parent.name)
def test_the_check_passes_on_the_artifacts_figures(file, tmp_path):
    cited = cited_runs.load(file)
    assert cited_runs.check(cited, _artifact(tmp_path, cited)) == []


def test_the_check_names_each_figure_and_option_that_differs(tmp_path, capsys):
    file = REFERENCE / "hotcloudperf24-kyber" / "runs.toml"
    cited = cited_runs.load(file)
    src = _artifact(tmp_path, cited)
    path = src / cited.runs["rep_3"].path
    doc = json.loads(path.read_text().split("\n", 1)[1])
    doc["jobs"][0]["read"]["clat_ns"]["percentile"]["99.000000"] += 1
    doc["global options"]["size"] = "50%"
    doc["global options"]["offset"] = "10%"
    path.write_text(json.dumps(doc))
    (src / cited.runs["rep_4"].path).unlink()
    problems = cited_runs.check(cited, src)
    assert problems[:3] == [
        "rep_3: global options.offset: '10%' in the artifact, not cited",
        "rep_3: global options.size: cited '100%', the artifact has '50%'",
        f"rep_3: jobs.read.clat_ns.percentile.99.000000: cited "
        f"{cited.fio_doc('rep_3')['jobs'][0]['read']['clat_ns']['percentile']['99.000000']}, "
        f"the artifact has {doc['jobs'][0]['read']['clat_ns']['percentile']['99.000000']}"]
    assert len(problems) == 4 and problems[3].startswith(f"rep_4: {src / cited.runs['rep_4'].path}")
    assert cited_runs.main([str(file), str(src)]) == 1
    assert "4 differ from" in capsys.readouterr().out


GOOD = (REFERENCE / "icpe24-fig1-qd-sweep" / "runs.toml").read_text()


@pytest.mark.parametrize("change, message", [
    (lambda t: t.replace('licence = "MIT"\n', ""), "source.licence: expected a string, got None"),
    (lambda t: t + "\n[extra]\n", "extra: unknown table (source, runs)"),
    (lambda t: t.replace('id = "qd2"', 'id = "qd1"'), "runs[1].id: 'qd1' is used twice"),
    (lambda t: t.replace("iops = 14482.862643", 'iops = "many"', 1),
     "runs[0] (qd1).read.iops: expected a number of 0 or more, got 'many'"),
    (lambda t: t.replace("total_ios = 1737958", "total_ios = 1737958.5", 1),
     "runs[0] (qd1).read.total_ios: expected an integer of 0 or more, got 1737958.5"),
    (lambda t: t.replace("ctx = 1737965\n", "", 1), "runs[0] (qd1).cpu.ctx: missing"),
    (lambda t: t.replace('bs = "4kb"', "bs = 4096", 1),
     "runs[0] (qd1).global_options: expected a table of fio options, each a string"),
    (lambda t: t.replace("slat_mean_ns", "slat_p50_ns", 1),
     "runs[0] (qd1).read.slat_p50_ns: unknown key"),
    (lambda t: t.replace("[runs.read]", "[runs.trim]", 1), "runs[0] (qd1).trim: unknown key"),
    (lambda t: t + "x = [", "not TOML: "),
], ids=["source", "table", "duplicate", "number", "integer", "cpu", "option", "figure",
        "direction", "toml"])
def test_bad_input_names_the_file_and_the_key(tmp_path, change, message):
    bad = tmp_path / "runs.toml"
    bad.write_text(change(GOOD))
    with pytest.raises(cited_runs.CitedRunsError) as e:
        cited_runs.load(bad)
    assert str(e.value).startswith(f"{bad}: {message}"), str(e.value)


def test_a_missing_file_and_a_missing_run_are_named(tmp_path):
    with pytest.raises(cited_runs.CitedRunsError, match=f"{tmp_path / 'none.toml'}: "):
        cited_runs.load(tmp_path / "none.toml")
    cited = cited_runs.load(REFERENCE / "icpe24-fig1-qd-sweep" / "runs.toml")
    with pytest.raises(cited_runs.CitedRunsError, match=r"no run 'qd3' \(runs: qd1, qd2, "):
        cited.fio_doc("qd3")
