"""blklab fit's parts without a long fit: the suite's jobs as simulator
jobs, profile text edits, the evaluation proxy, the error, the search, and
the simulator's figures against ones derived from a profile."""

import json
import math
import subprocess
import tomllib
from pathlib import Path

import pytest

from blklab import characterize, cited_runs, fit, paths, simulate
from blklab.scenario import PROFILE_DIR
from conftest import REFERENCE_RUNS

# The reference drive's rep_0 (tests/reference/hotcloudperf24-kyber): the
# `reference_drive` fixture writes it as a drive directory.
REFERENCE_DOC = cited_runs.load(REFERENCE_RUNS).fio_doc("rep_0")
JOB = "read-beside-writes-max"
CHECK = paths.build_dir() / "cmake" / "devmodel" / "devmodel-check"


def _option(job: characterize.SuiteJob, name: str) -> list[str]:
    return [line.split("=", 1)[1] for line in job.text.splitlines()
            if line.startswith(name + "=")]


@pytest.mark.parametrize("job", [j for j in characterize.suite() if not j.optional],
                         ids=lambda j: j.name)
def test_every_timed_suite_job_maps_with_its_own_options(job):
    sim = simulate.sim_job(job, characterize.defaults())
    assert isinstance(sim, simulate.SimJob)
    for key in ("iodepth", "rw", "rate"):
        for value in _option(job, key):
            assert any(f"{key}={value}" in s for s in sim.specs), (key, value, sim.specs)
    assert len(sim.specs) == sum(1 for line in job.text.splitlines()
                                 if line.startswith("[") and line != "[global]")


def test_the_fill_does_not_map_and_says_why():
    fill = next(j for j in characterize.suite() if j.name == "fill")
    out = simulate.sim_job(fill, characterize.defaults() | {"FILL_SIZE": "8g"})
    assert isinstance(out, simulate.Unmapped) and "FILL_SIZE" in out.reason


def test_a_job_with_an_option_the_simulator_lacks_does_not_map(tmp_path):
    p = tmp_path / "odd.fio"
    p.write_text("[global]\nbs=4k\n[x]\nrw=randread\nnumjobs=4\n")
    job = characterize.SuiteJob("odd", p, p.read_text(), "", ())
    out = simulate.sim_job(job, {})
    assert isinstance(out, simulate.Unmapped) and "numjobs=4" in out.reason


def test_set_keys_replaces_lines_and_adds_missing_keys():
    text = "# head\n[device]\nmodel = \"ssd\"\n\n[ssd]\npage_read_us = 45.0  # us [P2]\n"
    out = fit.set_keys(text, "ssd", {"page_read_us": 30.5, "suspend": True},
                       {"suspend": "why"})
    data = tomllib.loads(out)
    assert data["ssd"] == {"page_read_us": 30.5, "suspend": True}
    assert "page_read_us = 30.5  # us [P2]" in out
    assert out.startswith("# head\n")


def test_sym_error_is_symmetric_and_zero_when_equal():
    assert fit.sym_error(2.0, 1.0) == fit.sym_error(1.0, 2.0) == 1.0
    assert fit.sym_error(5.0, 5.0) == 0.0
    assert fit.sym_error(None, 5.0) == fit.MISSING_ERROR
    assert fit.sym_error(5.0, None) == 0.0


def test_coordinate_descent_finds_a_bowls_bottom_and_stays_in_range():
    params = [fit.Param("a", 10.0, 1.0, 100.0), fit.Param("b", 5.0, 0.0, 10.0)]
    want = (30.0, 2.0)

    def f(x):
        a, b = params[0].value(x[0]), params[1].value(x[1])
        return abs(math.log(a / want[0])) + abs(b - want[1])

    x, best = fit.coordinate_descent(params, f, rounds=8)
    assert best < 0.05
    assert 1.0 <= params[0].value(x[0]) <= 100.0 and 0 <= params[1].value(x[1]) <= 10


@pytest.mark.parametrize("name", sorted(fit.ssd_profiles()))
def test_the_proxy_of_each_ssd_profile_is_valid_and_keeps_its_shape(name, tmp_path):
    text = (PROFILE_DIR / f"{name}.toml").read_text()
    keys = fit.ssd_keys(text)
    factor = fit.proxy_factor(keys)
    proxy = fit.ssd_keys(fit.proxy_text(text, factor))
    assert proxy["pages_per_block"] * factor == keys["pages_per_block"]
    if keys["pages_per_block"] % 3 == 0:
        assert proxy["pages_per_block"] % 3 == 0
    if keys.get("capacity_bytes"):
        assert abs(proxy["capacity_bytes"] * factor / keys["capacity_bytes"] - 1) < 1e-3
    p = tmp_path / f"{name}.toml"
    p.write_text(fit.proxy_text(text, factor))
    proc = subprocess.run([str(CHECK), str(p)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


def test_qd1_on_fixed_10us_gives_100k_iops_in_the_simulator():
    job = simulate.SimJob("qd1", ("reader:rw=randread,bs=4k,iodepth=1",), False, True, 0)
    doc = simulate.run((PROFILE_DIR / "fixed-10us.toml").read_text(), job, 0, 0.1, 1)
    figs = simulate.figures(doc, "devmodel-sim")
    assert figs["read"].values["iops"] == 100000
    assert figs["read"].values["p50_us"] == pytest.approx(10.048)  # fio's bucket of 10 us


def _reference_copy(tmp_path: Path, **options: str | None) -> Path:
    """The reference drive's result with global options changed (None: removed)."""
    doc = json.loads(json.dumps(REFERENCE_DOC))
    for k, v in options.items():
        if v is None:
            doc["global options"].pop(k, None)
        else:
            doc["global options"][k] = v
    (tmp_path / f"{JOB}.json").write_text(json.dumps(doc))
    return tmp_path


def test_a_drive_job_past_the_cache_is_evaluated_without_one(tmp_path, reference_drive):
    drive = fit.load_drive(reference_drive, [], [], None, guest_fio="3.33")
    ev = fit.Evaluator(drive, 1, 0.1, 0.1)
    job = drive.jobs[JOB]
    text = (PROFILE_DIR / "samsung-980pro-1t.toml").read_text()
    assert ev.past_cache(job, fit.ssd_keys(text))
    keys = fit.ssd_keys(ev.eval_text(text, job, 1))
    assert keys["slc_static_bytes"] == 0 and keys["precondition"] == "steady"
    short = fit.load_drive(_reference_copy(tmp_path, ramp_time="1s"), [], [], None,
                           guest_fio="3.33")
    assert not fit.Evaluator(short, 1, 0.1, 0.1).past_cache(short.jobs[JOB], fit.ssd_keys(text))


def test_the_reference_drive_records_its_ramp_and_its_span(reference_drive):
    # Its fio ran ramp_time=360s on filename=/dev/nvme9n1, size=100%: the whole
    # device, so the simulator's jobs stay as the suite maps them.
    job = fit.load_drive(reference_drive, [], [], None, guest_fio="3.33").jobs[JOB]
    assert job.ramp_s == 360.0 and job.span == fit.WHOLE
    text = (PROFILE_DIR / "samsung-980pro-1t.toml").read_text()
    assert fit.Evaluator.sim_job(job, text) is job.sim


def test_ramp_comes_from_the_json_and_a_different_ramp_flag_is_refused(tmp_path, reference_drive):
    with pytest.raises(fit.FitError, match=f"{JOB}.json: job {JOB}: ramp_time=360s recorded, "
                       "--ramp 5s differs"):
        fit.load_drive(reference_drive, [], [], "5s", guest_fio="3.33")
    unrecorded = _reference_copy(tmp_path, ramp_time=None)
    assert fit.load_drive(unrecorded, [], [], "2m", guest_fio="3.33").jobs[JOB].ramp_s == 120.0


def test_a_writer_on_part_of_the_drive_is_simulated_on_the_same_part(tmp_path):
    drive = fit.load_drive(_reference_copy(tmp_path, offset="50%", size="25%"), [], [], None,
                           guest_fio="3.33")
    job = drive.jobs[JOB]
    assert job.span == (0.5, 0.25)
    text = (PROFILE_DIR / "samsung-980pro-1t.toml").read_text()
    capacity = fit.ssd_keys(text)["capacity_bytes"]
    mib = 1 << 20
    want = f"offset={capacity // 2 // mib * mib},size={capacity // 4 // mib * mib}"
    specs = fit.Evaluator.sim_job(job, text).specs
    assert len(specs) == len(job.sim.specs) and all(s.endswith("," + want) for s in specs)
    # a size past the device's end is cut at it, as fio does
    assert fit.load_drive(_reference_copy(tmp_path, offset="75%", size="50%"), [], [], None,
                          guest_fio="3.33").jobs[JOB].span == (0.75, 0.25)


@pytest.mark.parametrize("options, message", [
    ({"filename": "/mnt/nvme_test/fio_file"}, "filename=/mnt/nvme_test/fio_file: not a device"),
    ({"filename": "/dev/nvme2n1:/dev/nvme3n1"},
     "filename=/dev/nvme2n1:/dev/nvme3n1: several files"),
    ({"filename": "/dev/nvme0n1p2"}, "filename=/dev/nvme0n1p2: a partition"),
    ({"size": "100g"}, "size=100g: a size in bytes, and the drive's size is not recorded"),
    ({"size": "150%"}, r"size=150%: a percentage must be in \[0, 100\]"),
    ({"offset": "100%"}, "offset=100% size=100%: no part of the device"),
    ({"ramp_time": "soon"}, "ramp_time=soon: not a fio time"),
], ids=["file", "files", "partition", "bytes", "percent", "offset", "ramp"])
def test_conditions_the_fit_cannot_place_are_refused_naming_the_key(tmp_path, options, message):
    with pytest.raises(fit.FitError, match=f"{JOB}.json: job {JOB}: {message}"):
        fit.load_drive(_reference_copy(tmp_path, **options), [], [], None, guest_fio="3.33")


def test_a_span_or_ramp_set_for_one_fio_job_is_refused(tmp_path):
    doc = json.loads(json.dumps(REFERENCE_DOC))
    doc["jobs"][0]["job options"]["size"] = "10%"
    (tmp_path / f"{JOB}.json").write_text(json.dumps(doc))
    with pytest.raises(fit.FitError, match="size=10% set for one fio job"):
        fit.load_drive(tmp_path, [], [], None, guest_fio="3.33")


def test_a_size_in_bytes_is_a_share_of_the_recorded_drive(tmp_path):
    drive_dir = _reference_copy(tmp_path, size="250g")
    (drive_dir / "characterize.json").write_text(json.dumps({"size_bytes": 1000 << 30}))
    assert fit.load_drive(drive_dir, [], [], None, guest_fio="3.33").jobs[JOB].span == (0, 0.25)


def test_load_drive_refuses_a_hold_out_the_drive_did_not_run(reference_drive):
    with pytest.raises(fit.FitError, match="randread-qd4.json: job randread-qd4: missing"):
        fit.load_drive(reference_drive, [], ["randread-qd4"], None, guest_fio="3.33")


def test_holding_out_every_job_leaves_nothing_to_fit(reference_drive):
    with pytest.raises(fit.FitError, match="every job is held out"):
        fit.load_drive(reference_drive, [], ["read-beside-writes-max"], None, guest_fio="3.33")


def test_a_drive_job_run_with_another_block_size_or_rw_is_refused(tmp_path):
    with pytest.raises(fit.FitError, match=f"{JOB}.json: job {JOB}: fio ran bs=128k; the "
                       f"suite's {JOB}.fio runs rw=randread bs=4096, rw=randwrite bs=4096"):
        fit.load_drive(_reference_copy(tmp_path, bs="128k"), [], [], None, guest_fio="3.33")
    doc = json.loads(json.dumps(REFERENCE_DOC))
    doc["jobs"][0]["job options"]["rw"] = "write"
    (tmp_path / f"{JOB}.json").write_text(json.dumps(doc))
    with pytest.raises(fit.FitError, match=f"{JOB}.json: job {JOB}: fio ran rw=write;"):
        fit.load_drive(tmp_path, [], [], None, guest_fio="3.33")


def test_the_sequential_reads_map_as_128k_reads_in_order():
    jobs = simulate.suite_sim_jobs()
    for qd in (1, 32):
        job = jobs[f"seqread-qd{qd}"]
        assert isinstance(job, simulate.SimJob) and job.reads and not job.writes
        assert job.specs == (f"reader:bs=128k,rw=read,iodepth={qd}",)
