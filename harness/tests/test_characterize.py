"""blklab characterize: the suite's job files, the scenarios made from
them, the drive-against-model table (checked against the reference data in
tests/reference/) and every bad input, without a VM."""

import json
import re
import subprocess
from pathlib import Path

import pytest

from blklab import characterize as ch
from blklab import characterize_compare as cc
from blklab import blkgen_options, cited_runs, cli, jobfiles, paths, simulate
from blklab import scenario as scenario_mod
from blklab.errors import BlklabError
from conftest import REFERENCE_RUNS

REPO = paths.REPO
REFERENCE = REPO / "tests" / "reference" / "hotcloudperf24-kyber"
CITED = cited_runs.load(REFERENCE_RUNS)
JOB = "read-beside-writes-max"


def _option(job: ch.SuiteJob, section: str, name: str) -> str | None:
    current = None
    for line in job.text.splitlines():
        m = re.match(r"^\[(.+)\]$", line.strip())
        if m:
            current = m.group(1)
        elif current == section and line.startswith(name + "="):
            return line.split("=", 1)[1]
    return None


# -- the job files ----------------------------------------------------------


def test_the_suite_has_the_jobs_issue_37_names():
    names = {j.name for j in ch.suite()}
    assert {f"randread-qd{q}" for q in (1, 4, 16, 32)} <= names
    assert {"randwrite-steady", "mix-70-30", "fill"} <= names
    assert {f"read-beside-writes-{r}" for r in ("50mbs", "100mbs", "200mbs", "max")} <= names


def test_the_qd_sweep_reads_4k_at_its_depth():
    for job in ch.suite():
        m = re.match(r"randread-qd(\d+)$", job.name)
        if m:
            assert _option(job, "reader", "iodepth") == m.group(1)
            assert _option(job, "reader", "rw") == "randread"
            assert _option(job, "global", "bs") == "4k"


def test_each_writer_is_held_to_the_rate_its_name_says():
    rates = {}
    for job in ch.suite():
        m = re.match(r"read-beside-writes-(\d+)mbs$", job.name)
        if m:
            rates[job.name] = (_option(job, "writer", "rate"), m.group(1))
            assert _option(job, "reader", "iodepth") == "1"
    assert rates and all(rate == f",{mb}000000" for rate, mb in rates.values())
    unlimited = next(j for j in ch.suite() if j.name == JOB)
    assert _option(unlimited, "writer", "rate") is None
    assert _option(unlimited, "writer", "iodepth") == "256"  # the reference's shape


def test_every_job_is_timed_by_the_knobs_but_the_fill():
    knobs = ch.defaults()
    assert set(knobs) == {"RUNTIME", "RAMP"}
    for job in ch.suite():
        assert job.description, job.name
        if job.name == "fill":
            assert job.knobs == ("FILL_SIZE",) and job.optional
            assert _option(job, "fill", "write_bw_log") == "fill"
            continue
        assert set(job.knobs) == {"RUNTIME", "RAMP"}, job.name
        assert not job.optional


@pytest.mark.parametrize("job", ch.suite(), ids=lambda j: j.name)
def test_every_job_file_passes_blklabs_own_fio_file_check(job, tmp_path):
    knobs = dict(ch.defaults(), FILL_SIZE="1g")
    (tmp_path / f"{job.name}.fio").write_text(ch.expand(job, knobs))
    table = blkgen_options.table_if_built()  # None: blkgen is not built
    known, not_yet = (table.options, table.not_supported_yet) if table else (None, ())
    jf = jobfiles.parse_fio_file(tmp_path / "s.toml", "s.toml", "job[0].fio_file",
                                 f"{job.name}.fio", None, known, not_yet, "fio", "0-")
    assert jf.sections and not jf.dropped
    assert b"${" not in jf.attachment.data


def test_the_drive_script_runs_the_same_job_files():
    proc = subprocess.run(["bash", str(REPO / "tools" / "characterize-drive.sh"), "--list"],
                          capture_output=True, text=True, timeout=30)
    assert proc.returncode == 0, proc.stderr
    listed = [line.split(":", 1)[0] for line in proc.stdout.splitlines()]
    assert listed == [j.name for j in ch.suite()]


@pytest.mark.parametrize("args, message", [
    ([], "no --device"),
    (["--device", "/dev/null", "--out", "OUT"], "/dev/null: not a block device"),
    (["--job", "fill", "--device", "/dev/null", "--destroy-data", "--out", "OUT"],
     "--job fill needs --fill-size"),
    (["--job", "nope", "--device", "/dev/null", "--out", "OUT"], "--job nope: no "),
])
def test_the_drive_script_refuses_without_device_and_flag(args, message, tmp_path):
    args = [str(tmp_path / "out") if a == "OUT" else a for a in args]
    proc = subprocess.run(["bash", str(REPO / "tools" / "characterize-drive.sh"), *args],
                          capture_output=True, text=True, timeout=30)
    assert proc.returncode == 2
    assert message in proc.stderr
    assert not (tmp_path / "out").exists()


def test_the_drive_script_runs_the_jobs_that_only_read_before_those_that_write():
    # The script's own block that orders the jobs, run alone: the fill, then
    # every job that only reads (the sequential reads meet the fill's order),
    # then every job that writes.
    text = (REPO / "tools" / "characterize-drive.sh").read_text()
    block = text[text.index("# Which jobs:"):]
    block = block[:block.index("\nfi\n") + 4]
    proc = subprocess.run(["bash", "-c", "set -euo pipefail; jobs=(); " + block
                           + 'echo "${jobs[@]}"'], capture_output=True, text=True, timeout=30,
                          env={"jobdir": str(ch.JOB_DIR), "FILL_SIZE": "100%",
                               "PATH": "/usr/bin:/bin"})
    assert proc.returncode == 0, proc.stderr
    order = proc.stdout.split()
    writes = {j.name for j in ch.suite()
              if any(isinstance(s, simulate.SimJob) and s.writes
                     for s in [simulate.sim_job(j, ch.defaults())])}
    assert order[0] == "fill" and sorted(order) == sorted(j.name for j in ch.suite())
    first_writer = min(order.index(n) for n in writes)
    assert all(order.index(n) < first_writer for n in order[1:] if n not in writes)
    assert {"seqread-qd1", "seqread-qd32", "mix-70-30"} <= set(order)


def test_the_script_wants_the_destroy_flag_before_anything_else():
    text = (REPO / "tools" / "characterize-drive.sh").read_text()
    refuse = text.index("without --destroy-data")
    assert refuse < text.index("mkdir -p \"$out\"") < text.index("fio --filename")


# -- knobs, selection and the scenarios ------------------------------------


def test_expand_substitutes_as_fio_does_and_refuses_an_unset_knob():
    job = next(j for j in ch.suite() if j.name == "randread-qd4")
    text = ch.expand(job, {"RUNTIME": "2s", "RAMP": "100ms"})
    assert "runtime=2s" in text and "ramp_time=100ms" in text
    with pytest.raises(ch.CharacterizeError, match=r"randread-qd4.fio: job randread-qd4: "
                       r"\$\{RAMP\} has no value"):
        ch.expand(job, {"RUNTIME": "2s"})


def test_select_leaves_the_fill_out_unless_sized():
    jobs = ch.suite()
    assert "fill" not in [j.name for j in ch.select(jobs, [], ch.defaults())]
    assert "fill" in [j.name for j in ch.select(jobs, [], dict(ch.defaults(), FILL_SIZE="8g"))]
    with pytest.raises(ch.CharacterizeError, match="--job fill: fill.fio needs FILL_SIZE"):
        ch.select(jobs, ["fill"], ch.defaults())
    with pytest.raises(ch.CharacterizeError, match="--job nope: not a job of the suite"):
        ch.select(jobs, ["nope"], ch.defaults())


def test_times_and_sizes():
    assert ch.seconds("30s", "RUNTIME") == 30 and ch.seconds("500ms", "RAMP") == 0.5
    assert ch.seconds("2m", "RUNTIME") == 120 and ch.seconds("7", "RUNTIME") == 7
    with pytest.raises(ch.CharacterizeError, match="--runtime 3 days: not a time"):
        ch.seconds("3 days", "RUNTIME")
    assert ch.size_gib("8g", 0) == 8 and ch.size_gib("512m", 0) == 0.5
    assert ch.size_gib("50%", 4 << 30) == 2
    with pytest.raises(ch.CharacterizeError, match="--fill-size 0%"):
        ch.size_gib("0%", 1 << 30)


def _devmodel_built() -> bool:
    try:
        return paths.devmodel_info().is_file()
    except BlklabError:
        return False


@pytest.mark.skipif(not _devmodel_built(), reason="devmodel-info is not built")
def test_each_job_becomes_a_one_cell_deterministic_fio_scenario(tmp_path):
    jobs = ch.select(ch.suite(), ["randread-qd1", JOB], ch.defaults())
    tgt = ch.target("fixed-10us")
    prepared = ch.prepare(jobs, tgt, tmp_path / "out", ch.defaults(), "kyber", None, 1 << 30)
    for p in prepared:
        s = scenario_mod.load(p.scenario)
        (cell,) = s.cells()
        assert (s.mode, s.workload, s.schedulers) == ("deterministic", "fio", ["kyber"])
        assert [d.kind for d in s.devices] == ["nvme"]
        assert s.devices[0].profile.name == "fixed-10us"
        assert cell.id == "drive.kyber.r0"
        assert s.timeout_s >= ch.BOOT_ALLOWANCE_S + 35 * ch.HOST_SECONDS_PER_GUEST_SECOND
        assert "runtime=30s" in (tmp_path / "out" / f"{p.job.name}.fio").read_text()


def test_prepare_overwrites_nothing(tmp_path):
    out = tmp_path / "out"
    (out / JOB).mkdir(parents=True)
    jobs = ch.select(ch.suite(), ["randread-qd1", JOB], ch.defaults())
    with pytest.raises(ch.CharacterizeError, match=f"{out / JOB}: already exists \\(job {JOB}\\)"):
        ch.prepare(jobs, ch.Target("fixed-10us", {}, "fixed-10us"), out, ch.defaults(), "none",
                   "full", 1 << 30)
    assert [p.name for p in out.iterdir()] == [JOB]  # randread-qd1's files not written


def test_a_scenario_lends_its_profile_and_guest(tmp_path):
    s = tmp_path / "s.toml"
    s.write_text('[guest]\nvcpus = 4\n[[device]]\nname = "a"\nkind = "ide-hd"\n'
                 '[[device]]\nname = "b"\nkind = "nvme"\nprofile = "samsung-980pro-1t"\n')
    tgt = ch.target(str(s))
    assert (tgt.profile, tgt.guest) == ("samsung-980pro-1t", {"vcpus": 4})
    assert 'vcpus = 4' in ch.scenario_text(ch.suite()[1], tgt, "none", "full", 900)
    (tmp_path / "p.toml").write_text('[device]\nmodel = "ssd"\n')
    assert ch.target(str(tmp_path / "p.toml")).profile == str(tmp_path / "p.toml")
    with pytest.raises(ch.CharacterizeError, match="no-such: not a profile"):
        ch.target("no-such")


# -- the table: a drive directory beside a run directory --------------------

# A model's figures for the reader and the writer, made up for the test
# (ns): every ratio below follows from them and from the reference file.
MODEL_READ = {"iops": 5000.0, "total_ios": 150000, "clat_ns": {"mean": 150000.0, "percentile": {
    "50.000000": 99840, "99.000000": 1515520, "99.900000": 8028160, "99.990000": 9000000}}}
MODEL_WRITE = {"iops": 120000.0, "total_ios": 3600000, "clat_ns": {"mean": 2e6, "percentile": {
    "50.000000": 1892352, "99.000000": 8978432, "99.900000": 10551296, "99.990000": 2e7}}}


def workload(read=MODEL_READ, write=MODEL_WRITE, version="fio-3.33"):
    jobs = []
    if read is not None:
        jobs.append({"jobname": "reader", "read": read,
                     "write": {"iops": 0, "total_ios": 0}})
    if write is not None:
        jobs.append({"jobname": "writer", "read": {"iops": 0, "total_ios": 0}, "write": write})
    return {"fio version": version, "jobs": jobs}


def make_run(root: Path, job: str = JOB, wl: dict | None = None, status: str = "ok") -> Path:
    """A run directory as blklab characterize --out leaves it for `job`."""
    run = root / job
    run.mkdir(parents=True)
    (run / "scenario.toml").write_text(
        f'[scenario]\nname = "characterize-{job}"\nschedulers = ["kyber"]\n'
        'workload = "fio"\n[[device]]\nname = "drive"\nkind = "nvme"\n'
        'profile = "fixed-10us"\n[[job]]\n'
        f'fio_file = "{job}.fio"\nname = "{job}"\n')
    (run / "manifest.json").write_text(json.dumps({"cells": ["drive.kyber.r0"],
                                                   "mode": "deterministic"}))
    cell = {"schema_version": 1, "cell_id": "drive.kyber.r0", "status": status,
            "error": None if status == "ok" else "guest panicked",
            "workload": workload() if wl is None else wl}
    (run / "cell-drive.kyber.r0.json").write_text(json.dumps(cell))
    return root


def drive_dir(tmp_path: Path, docs: dict[str, object]) -> Path:
    d = tmp_path / "drive"
    d.mkdir()
    for name, doc in docs.items():
        (d / name).write_text(doc if isinstance(doc, str) else json.dumps(doc))
    return d


def test_the_reference_is_fio_3_json_of_the_reader_and_the_writer():
    assert list(CITED.runs) == [f"rep_{rep}" for rep in range(5)]
    for rep in range(5):
        doc = CITED.fio_doc(f"rep_{rep}")
        assert doc["fio version"] == "fio-3.35"
        assert doc["global options"]["filename"] == "/dev/nvme9n1"
        (job,) = doc["jobs"]
        assert set(job) == {"jobname", "job options", "read", "write"}
        assert CITED.runs[f"rep_{rep}"].path.endswith(
            f"/rep_{rep}/fio_output/r256-w256_sche_kyber_r_2ms_w_10ms.txt")
    assert CITED.source["licence"] == "MIT"
    assert CITED.source["commit"] == "269a4f8526fe887d31c04fe2ceb678ed4e90bbed"
    readme = (REFERENCE / "README.md").read_text()
    assert "269a4f8526fe887d31c04fe2ceb678ed4e90bbed" in readme
    assert "r256-w256_sche_kyber_r_2ms_w_10ms.txt" in readme


def test_the_table_sets_the_model_beside_the_reference(tmp_path, reference_drive):
    run = make_run(tmp_path / "run")
    rows = cc.compare(reference_drive, run, guest_fio="3.33")
    assert [(r.job, r.direction) for r in rows] == [(JOB, "read"), (JOB, "write")]
    read, write = rows
    # The reference's rep_0: reader p50 199,680 ns, p99 3,031,040, p99.9 4,014,080;
    # 1447.729312 IOPS; writer 149712.384931 IOPS, p50 946,176 ns.
    assert read.drive.values["p50_us"] == pytest.approx(199.68)
    assert read.drive.values["iops"] == pytest.approx(1447.729312)
    assert write.drive.values["iops"] == pytest.approx(149712.384931)
    doc = cc.as_json(reference_drive, run, rows)
    r = {(x["direction"], m): v for x in doc["rows"] for m, v in x["metrics"].items()}
    assert r["read", "p50_us"]["ratio"] == pytest.approx(0.5)  # 99,840 / 199,680
    assert r["read", "p99_us"]["ratio"] == pytest.approx(0.5)  # 1,515,520 / 3,031,040
    assert r["read", "p99.9_us"]["ratio"] == pytest.approx(2.0)  # 8,028,160 / 4,014,080
    assert r["write", "p50_us"]["ratio"] == pytest.approx(2.0)  # 1,892,352 / 946,176
    assert r["write", "iops"]["ratio"] == pytest.approx(120000 / 149712.384931)

    text = cc.render(reference_drive, run, rows)
    line = next(x for x in text.splitlines() if x.split()[1:3] == ["read", "p50_us"])
    assert line.split()[3:] == ["200", "99.8", "0.50"]
    md = cc.render(reference_drive, run, rows, "markdown")
    assert f"| {JOB} | read | p99.9_us | 4014 | 8028 | 2.00 |" in md
    assert json.loads(cc.render(reference_drive, run, rows, "json")) == json.loads(
        json.dumps(doc))


def test_the_cli_prints_the_table_and_writes_it_once(tmp_path, capsys, reference_drive):
    run = make_run(tmp_path / "run")
    assert cli.main(["characterize", "--compare", str(reference_drive), str(run)]) == 0
    assert "p99.9_us" in capsys.readouterr().out
    out = tmp_path / "table.md"
    args = ["characterize", "--compare", str(reference_drive), str(run), "--format",
            "markdown", "-o", str(out)]
    assert cli.main(args) == 0
    written = out.read_text()
    assert cli.main(args) == 1
    assert f"{out}: already exists" in capsys.readouterr().err
    assert out.read_text() == written


# -- bad input: the file and the job named, exit 2, nothing written ---------

GOOD = CITED.fio_doc("rep_0")


def _bad(tmp_path, capsys, drive_docs=None, run_wl=None, status="ok", jobs=(JOB,)):
    drive = drive_dir(tmp_path, {f"{JOB}.json": GOOD} if drive_docs is None else drive_docs)
    run = tmp_path / "run"
    run.mkdir()
    for job in jobs:
        make_run(run, job, run_wl, status)
    out = tmp_path / "table.json"
    rc = cli.main(["characterize", "--compare", str(drive), str(run), "-o", str(out),
                   "--format", "json"])
    err = capsys.readouterr().err
    assert not out.exists()
    return rc, err, drive, run


def test_a_job_missing_from_the_run(tmp_path, capsys):
    docs = {f"{JOB}.json": GOOD, "randread-qd1.json": GOOD}
    rc, err, _, run = _bad(tmp_path, capsys, docs)
    assert rc == 2
    assert err == (f"blklab: {run / 'randread-qd1'}: job randread-qd1: missing (no run "
                   "directory; blklab characterize --job randread-qd1)\n")


def test_a_job_missing_from_the_drive(tmp_path, capsys):
    rc, err, drive, _ = _bad(tmp_path, capsys, jobs=(JOB, "mix-70-30"))
    assert rc == 2
    assert err.startswith(f"blklab: {drive / 'mix-70-30.json'}: job mix-70-30: missing")


def test_a_job_named_is_compared_alone(tmp_path, reference_drive):
    run = tmp_path / "run"
    for job in (JOB, "mix-70-30"):
        make_run(run, job)
    rows = cc.compare(reference_drive, run, [JOB], guest_fio="3.33")
    assert {r.job for r in rows} == {JOB}


def test_a_file_that_is_no_job_of_the_suite(tmp_path, capsys):
    rc, err, drive, _ = _bad(tmp_path, capsys, {f"{JOB}.json": GOOD, "randread.json": GOOD})
    assert rc == 2
    assert err.startswith(f"blklab: {drive / 'randread.json'}: job randread: not a job of "
                          "the suite (")


def test_fio_json_of_another_major_version(tmp_path, capsys):
    rc, err, drive, _ = _bad(tmp_path, capsys, {f"{JOB}.json": dict(GOOD,
                                                                    **{"fio version": "fio-2.21"})})
    assert rc == 2
    assert err == (f"blklab: {drive / (JOB + '.json')}: job {JOB}: written by fio-2.21, and "
                   "the guest runs fio 3.33 (guest-images/userland.lock): run the drive with "
                   "fio 3.x\n")


def test_a_model_run_by_another_fio_major_version(tmp_path, capsys):
    rc, err, _, run = _bad(tmp_path, capsys, run_wl=workload(version="fio-4.0"))
    assert rc == 2
    assert err.startswith(f"blklab: {run / JOB}/cell-drive.kyber.r0.json: job {JOB}: "
                          "written by fio-4.0")


@pytest.mark.parametrize("text, why", [
    ("hello", "no JSON object (expected fio --output-format=json)"),
    ("{not json", "not valid JSON: "),
    ('{"jobs": []}', f"job {JOB}: no 'fio version': not fio's --output-format=json"),
    ('{"fio version": "3.33", "jobs": []}', f"job {JOB}: 'fio version' is '3.33', expected"),
    ('{"fio version": "fio-3.33", "jobs": {}}', "jobs: missing or not a list"),
    ('{"fio version": "fio-3.33", "jobs": []}', f"job {JOB}: no fio job did any I/O"),
])
def test_a_file_that_is_not_fio_json(tmp_path, capsys, text, why):
    rc, err, drive, _ = _bad(tmp_path, capsys, {f"{JOB}.json": text})
    assert rc == 2
    assert err.startswith(f"blklab: {drive / (JOB + '.json')}: {why}"), err


def test_a_failed_cell(tmp_path, capsys):
    rc, err, _, run = _bad(tmp_path, capsys, status="failed")
    assert rc == 2
    assert err == (f"blklab: {run / JOB}/cell-drive.kyber.r0.json: job {JOB}: the cell "
                   "failed: guest panicked\n")


def test_a_model_without_the_drives_direction(tmp_path, capsys):
    rc, err, _, run = _bad(tmp_path, capsys, run_wl=workload(write=None))
    assert rc == 2
    assert err == (f"blklab: {run / JOB}/cell-drive.kyber.r0.json: job {JOB}: no write I/O, "
                   f"and the drive's {tmp_path / 'drive' / (JOB + '.json')} has some\n")


def test_directories_that_are_not_there(tmp_path, capsys):
    rc = cli.main(["characterize", "--compare", str(tmp_path / "nope"), str(tmp_path)])
    assert rc == 2
    assert f"{tmp_path / 'nope'}: not a directory" in capsys.readouterr().err


def test_the_guest_fio_version_comes_from_the_lock_file():
    assert cc.guest_fio_version() == "3.33"


# -- blklab characterize PROFILE --out DIR, with the runner stubbed ----------


@pytest.mark.skipif(not _devmodel_built(), reason="devmodel-info is not built")
def test_characterize_runs_one_scenario_per_job_into_out(tmp_path, monkeypatch, capsys):
    from blklab import runner

    calls = []

    def fake_run(s, options):
        calls.append((s.name, s.devices[0].profile.precondition, options.out))
        return options.out, []

    monkeypatch.setattr(runner, "run", fake_run)
    out = tmp_path / "out"
    rc = cli.main(["characterize", "samsung-970evoplus-1t", "--out", str(out), "--job",
                   "randread-qd1", "--job", JOB, "--runtime", "200ms", "--ramp", "0"])
    assert rc == 1  # no cell results from the stub
    assert calls == [("characterize-randread-qd1", "full", out / "randread-qd1"),
                     (f"characterize-{JOB}", "full", out / JOB)]
    assert "runtime=200ms" in (out / f"{JOB}.fio").read_text()
    assert f"compare: blklab characterize --compare DRIVE_DIR {out}" in capsys.readouterr().out


@pytest.mark.parametrize("args, message", [
    (["no-such-profile"], "blklab: no-such-profile: not a profile in devmodel/profiles"),
    (["fixed-10us", "--runtime", "soon"], "blklab: --runtime soon: not a time"),
    (["fixed-10us", "--job", "fill"], "blklab: --job fill: fill.fio needs FILL_SIZE"),
    (["fixed-10us", "--precondition", "steady", "--job", JOB],
     "device[0].precondition: applies to SSD profiles only"),
])
def test_characterize_refuses_bad_input_before_a_vm(args, message, tmp_path, monkeypatch,
                                                    capsys):
    if not _devmodel_built():
        pytest.skip("devmodel-info is not built")
    from blklab import runner

    monkeypatch.setattr(runner, "run", lambda *a: pytest.fail("a VM would boot"))
    out = tmp_path / "out"
    out.mkdir()
    rc = cli.main(["characterize", *args, "--out", str(out)])
    assert rc == 2
    assert message in capsys.readouterr().err
    assert list(out.iterdir()) == []


def test_compare_takes_no_profile(tmp_path, capsys):
    rc = cli.main(["characterize", "fixed-10us", "--compare", str(tmp_path), str(tmp_path)])
    assert rc == 1
    assert "takes no profile" in capsys.readouterr().err


def test_a_scheduler_other_than_the_drives_is_warned_of(tmp_path, capsys):
    run = tmp_path / "run"
    make_run(run)
    cell = run / JOB / "cell-drive.kyber.r0.json"
    cell.write_text(json.dumps(dict(json.loads(cell.read_text()),
                                    in_effect={"scheduler": "kyber"})))
    drive = drive_dir(tmp_path, {f"{JOB}.json": GOOD,
                                 "characterize.json": {"scheduler": "none"}})
    assert cli.main(["characterize", "--compare", str(drive), str(run)]) == 0
    assert capsys.readouterr().err == (f"warning: job {JOB}: the drive ran under none "
                                       f"({drive / 'characterize.json'}), the model under "
                                       "kyber\n")


def test_the_cells_timeout_grows_with_the_guest_time_and_the_fill():
    jobs = {j.name: j for j in ch.suite()}
    knobs = {"RUNTIME": "30s", "RAMP": "5s", "FILL_SIZE": "100%"}
    assert ch.timeout_for(jobs["randread-qd1"], knobs, 0) == (
        ch.BOOT_ALLOWANCE_S + 35 * ch.HOST_SECONDS_PER_GUEST_SECOND)
    one_tb = 1000204886016  # samsung-970evoplus-1t's capacity_bytes
    fill = ch.timeout_for(jobs["fill"], knobs, one_tb)
    assert fill == int(ch.BOOT_ALLOWANCE_S + ch.FILL_HOST_SECONDS_PER_GIB * one_tb / (1 << 30))
    assert fill <= 7 * 24 * 3600  # scenario.timeout_s's limit


@pytest.mark.skipif(not _devmodel_built(), reason="devmodel-info is not built")
def test_a_profile_that_does_not_load(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text('[device]\nmodel = "ssd"\n[ssd]\nchannels = -1\n')
    with pytest.raises(ch.CharacterizeError, match=f"{bad}: profile {bad} does not load: "):
        ch.plan(str(bad), tmp_path / "out", [JOB], {}, "none", None)
    assert not (tmp_path / "out").exists()


# -- the page with plots (--format html) -------------------------------------

def _global(job: ch.SuiteJob, name: str) -> str | None:
    return _option(job, "global", name) or next(
        (_option(job, s, name) for s in ("fill", "writer") if _option(job, s, name)), None)


def test_the_plots_byte_sizes_are_the_job_files():
    from blklab import characterize_plots as cp

    jobs = {j.name: j for j in ch.suite()}
    for name, job in jobs.items():
        if name.startswith(cp.BESIDE_WRITES):
            assert _global(job, "bs") == "4k" == f"{cp.WRITE_BYTES // 1024}k", name
    assert _global(jobs[cp.FILL_JOB], "bs") == f"{cp.FILL_BYTES // 1024}k"
    assert _option(jobs[cp.FILL_JOB], "fill", "write_bw_log") == "fill"  # logs/fill_bw.1.log


def _beside_writes_runs(tmp_path):
    """The reference's read-beside-writes-max and a made-up 50 MB/s job on
    the drive's side; the model's figures (MODEL_READ, MODEL_WRITE) for both."""
    ref = CITED.fio_doc("rep_0")
    slow = json.loads(json.dumps(ref))
    (job,) = slow["jobs"]
    job["write"]["iops"] = 12207.03125  # 50 MB/s of 4 KiB writes
    job["read"]["clat_ns"]["percentile"]["50.000000"] = 100000
    drive = drive_dir(tmp_path, {f"{JOB}.json": ref, "read-beside-writes-50mbs.json": slow})
    run = make_run(tmp_path / "run")
    make_run(tmp_path / "run", "read-beside-writes-50mbs")
    return drive, run


def test_reads_beside_writes_are_plotted_against_the_write_rate(tmp_path):
    from blklab import characterize_plots as cp

    drive, run = _beside_writes_runs(tmp_path)
    points = cp.beside_writes(cc.compare(drive, run, guest_fio="3.33"))
    # the drive: 50 MB/s, then the reference's 149,712 IOPS x 4 KiB = 613.2 MB/s
    assert [round(p["write_mb_s"], 1) for p in points["drive"]] == [50.0, 613.2]
    assert [p["p50_us"] for p in points["drive"]] == [100.0, pytest.approx(199.68)]
    # the model: 120,000 IOPS x 4 KiB in both runs, reader p50 99.84 us
    assert [round(p["write_mb_s"], 1) for p in points["model"]] == [491.5, 491.5]
    assert [p["p99.9_us"] for p in points["model"]] == [pytest.approx(8028.16)] * 2


def test_the_fill_curve_comes_from_the_drives_bandwidth_log(tmp_path):
    from blklab import characterize_plots as cp

    d = tmp_path / "drive"
    (d / "logs").mkdir(parents=True)
    assert cp.fill_curve(d) is None
    # 3,000,000 KiB/s for 2 s, then 1,000,000 KiB/s for 1 s
    (d / cp.FILL_LOG).write_text("1000, 3000000, 1, 131072, 0\n2000, 3000000, 1, 131072, 0\n"
                                 "3000, 1000000, 1, 131072, 0\n")
    curve = cp.fill_curve(d)
    assert [round(g, 3) for g, _ in curve] == [3.072, 6.144, 7.168]
    assert [round(r, 1) for _, r in curve] == [3072.0, 3072.0, 1024.0]
    (d / cp.FILL_LOG).write_text("1000, 3000000, 1, 131072, 0\nfill done\n")
    with pytest.raises(ch.CharacterizeError, match=r"fill_bw.1.log: line 2: not a fio"):
        cp.fill_curve(d)
    (d / cp.FILL_LOG).write_text("1000, 3000000, 1, 131072, 0\n1000, 5, 1, 131072, 0\n")
    with pytest.raises(ch.CharacterizeError, match=r"line 2: times must increase"):
        cp.fill_curve(d)


def test_the_page_has_the_table_and_says_which_plot_it_lacks(tmp_path, capsys):
    drive, run = _beside_writes_runs(tmp_path)
    out = tmp_path / "compare.html"
    args = ["characterize", "--compare", str(drive), str(run), "--format", "html",
            "-o", str(out)]
    assert cli.main(args) == 0
    page = out.read_text()
    assert page.count('<img alt="Reads beside writes" src="data:image/png;base64,') == 1
    assert "Not plotted: no fill log" in page and "p99.9_us" in page
    assert cli.main(args) == 1  # never overwritten
    assert f"{out}: already exists" in capsys.readouterr().err
