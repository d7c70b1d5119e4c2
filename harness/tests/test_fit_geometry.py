"""blklab fit's read parallelism (blklab.geometry_fit): a drive's
random-read sweep written by devmodel-sim from a profile of known geometry,
fitted from a start of another geometry, held to the bounds
docs/characterize-a-drive.md states ("Bounds on reads the model wrote");
the case the reads cannot tell apart (dies against planes that read on
their own); the closed form against the simulator."""

import json
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from blklab import cited_runs, fit, geometry_fit, paths, simulate
from blklab.scenario import PROFILE_DIR, profile_with_precondition

SWEEP = ("randread-qd1", "randread-qd4", "randread-qd16", "randread-qd32")
DRIVE_SEED = 7  # the "drive"'s stream; the fit's simulator runs seed 1
SIM = {"sim_ramp_s": 0.1, "sim_runtime_s": 0.3, "rounds": 0}


def _profile(name: str, **keys) -> str:
    text = (PROFILE_DIR / f"{name}.toml").read_text()
    return fit.set_keys(text, "ssd", keys) if keys else text


def _drive(tmp_path: Path, text: str, jobs: tuple[str, ...] = SWEEP) -> Path:
    """The suite's read sweep (or `jobs`) run on `text` (precondition full,
    at the fit's proxy scale) by devmodel-sim, each job's JSON laid out as
    the drive script writes fio's."""
    mapping = simulate.suite_sim_jobs()
    pre = profile_with_precondition(text, "full")
    assert pre is not None
    pre = fit.proxy_text(pre, fit.proxy_factor(fit.ssd_keys(pre)))
    out = tmp_path / "drive"
    out.mkdir()
    for name in jobs:
        job = mapping[name]
        assert isinstance(job, simulate.SimJob)
        doc = simulate.run(pre, job, 0.2, 0.5, DRIVE_SEED)
        (out / f"{name}.json").write_text(json.dumps({
            "fio version": "fio-3.33",
            "global options": {"filename": "/dev/nvme0n1", "size": "100%",
                               "ramp_time": "0.2s", "runtime": "0.5s"},
            "jobs": doc["jobs"]}))
    return out


def _fitted(res: fit.Result) -> dict:
    return tomllib.loads(res.text)["ssd"]


# The source: tlc-250g-used (8 channels x 1 die x 2 planes reading on their
# own: 16 read units) with every read time x 1.3; the start:
# samsung-970evoplus-1t (8 x 4 x 2: 64 units, read times as the source's
# before the x 1.3).
SOURCE_KEYS = {"page_read_us": 58.5, "page_read_lower_us": 52.0, "page_read_middle_us": 71.5,
               "page_read_upper_us": 52.0}


@pytest.fixture(scope="module")
def recovered(tmp_path_factory) -> fit.Result:
    drive = _drive(tmp_path_factory.mktemp("geom"), _profile("tlc-250g-used", **SOURCE_KEYS))
    return fit.fit(drive, start="samsung-970evoplus-1t", guest_fio="3.33", **SIM)


def test_the_read_units_are_recovered_from_another_geometry(recovered):
    # Bound, from the model before the run: exactly the source's 16 units.
    # Candidates differ by a factor 2, and at QD16 and QD32 reads on U and 2U
    # units (U <= 32) busy U (1 - (1 - 1/U)^n) units: 14.0 against 20.4 at
    # U = 16, n = 32, 46% apart, far past the simulator's sampling noise.
    assert recovered.geometry is not None
    assert recovered.geometry.start_units == 64
    assert recovered.geometry.chosen.units == 16
    ssd = _fitted(recovered)
    assert geometry_fit.read_units(ssd) == 16
    start = fit.ssd_keys(_profile("samsung-970evoplus-1t"))
    raw = ("dies_per_channel", "planes_per_die", "blocks_per_plane", "pages_per_block")
    size = 1
    for k in raw:
        size *= ssd[k]
    want = 1
    for k in raw:
        want *= start[k]
    assert size == want  # the raw capacity is the start's


def test_the_profile_with_the_chosen_geometry_validates(recovered, tmp_path):
    path = tmp_path / "fitted.toml"
    path.write_text(recovered.text)
    fit.check_profile(path)  # devmodel-check: an ordinary profile


def test_the_qd1_step_sets_the_sources_read_times(recovered):
    # The start's overhead (3 us), channel and link equal the source's, so
    # one factor on the read times gives the source's: 1.3, within the
    # drive's sampling of its QD1 mean (1 s at ~15K IOPS) and 3 digits: 1%.
    ssd = _fitted(recovered)
    for k, v in SOURCE_KEYS.items():
        assert ssd[k] == pytest.approx(v, rel=0.01), k


def test_the_header_records_the_candidates_and_the_choice(recovered):
    head = recovered.text.split("\n#\n", 1)[0]
    assert "Read parallelism" in head
    for units in (16, 32, 64, 128, 256, 512):
        assert f"({units} read units" in head
    assert "dies_per_channel 1 (16 read units, blocks_per_plane 5460): error" in head
    assert "<- chosen" in head
    out = json.loads(fit.render(recovered, "json"))
    assert out["read_parallelism"]["units"] == 16
    assert len(out["read_parallelism"]["candidates"]) == 6


def test_dies_and_planes_that_read_on_their_own_are_not_told_apart(tmp_path):
    # The source has 16 read units as 8 x 2 dies with one sensing unit each;
    # the start, tlc-250g-used, as 8 x 1 die x 2 planes reading on their own.
    # Expected before the run: the start's geometry stays (within MARGIN),
    # and the header says the split is not shown.
    source = _profile("tlc-250g-used", dies_per_channel=2, pages_per_block=384,
                      independent_plane_reads=False)
    res = fit.fit(_drive(tmp_path, source), start="tlc-250g-used", guest_fio="3.33", **SIM)
    assert res.geometry is not None
    assert res.geometry.chosen.units == res.geometry.start_units == 16
    ssd = _fitted(res)
    assert ssd["dies_per_channel"] == 1 and ssd["independent_plane_reads"] is True
    assert "not their split into dies and planes" in res.text


def test_units_far_past_the_deepest_queue_are_shown_only_roughly(tmp_path):
    # 256 units (8 x 16 dies x 2 planes): at QD32, 128, 256 and 512 units keep
    # 28.3, 30.0 and 31.0 busy, 64 keep 25.2. Expected before the run: a
    # choice within a factor 2 of 256, and candidates not told apart named.
    source = _profile("samsung-970evoplus-1t", dies_per_channel=16, pages_per_block=192)
    res = fit.fit(_drive(tmp_path, source), start="samsung-970evoplus-1t", guest_fio="3.33",
                  **SIM)
    assert res.geometry is not None
    assert res.geometry.chosen.units in (128, 256, 512)
    assert any(line.startswith("not told apart") for line in res.geometry.lines)


def test_one_read_job_fits_no_geometry(tmp_path):
    drive = _drive(tmp_path, _profile("tlc-250g-used"))
    res = fit.fit(drive, start="tlc-250g-used", names=["randread-qd1"], guest_fio="3.33",
                  **SIM)
    assert res.geometry is None
    assert any("shows no parallelism" in line for line in res.geometry_lines)


@pytest.mark.parametrize("name", sorted(fit.ssd_profiles()))
def test_every_candidate_keeps_the_raw_capacity(name):
    keys = fit.ssd_keys(_profile(name))
    cands, _ = geometry_fit.candidates(keys)
    raw = keys["dies_per_channel"] * keys["blocks_per_plane"] * keys["pages_per_block"]
    assert any(not c.values for c in cands)
    for c in cands:
        k = keys | c.values
        assert k["dies_per_channel"] * k["blocks_per_plane"] * k["pages_per_block"] == raw


def test_the_qd1_formula_is_the_simulators_qd1(tmp_path):
    # o + s + x + l from the profile, against the simulator's mean at QD1
    # (1 / IOPS): within 1% (the retry draws over 1 s of reads).
    text = _profile("tlc-250g-used")
    keys = fit.ssd_keys(text)
    pre = profile_with_precondition(text, "full")
    assert pre is not None
    pre = fit.proxy_text(pre, fit.proxy_factor(keys))
    job = simulate.suite_sim_jobs()["randread-qd1"]
    doc = simulate.run(pre, job, 0.2, 1.0, 1)
    iops = simulate.figures(doc, "sim")["read"].values["iops"]
    assert 1e6 / iops == pytest.approx(geometry_fit.qd1_us(keys), rel=0.01)


def test_the_reference_sweep_maps_onto_the_read_jobs(tmp_path):
    script = paths.REPO / "tests" / "reference" / "icpe24-fig1-qd-sweep" / "drive_dir.py"
    out = tmp_path / "icpe24"
    subprocess.run([sys.executable, str(script), str(out)], check=True)
    drive = fit.load_drive(out, [], [], None, guest_fio="3.33")
    assert sorted(drive.jobs) == sorted(SWEEP)
    sweep = cited_runs.load(script.with_name("runs.toml"))
    for name, job in drive.jobs.items():
        read = job.figures["read"].values
        run = sweep.fio_doc(name.replace("randread-", ""))
        assert read["iops"] == run["jobs"][0]["read"]["iops"]
        assert read.get("p50_us") is None  # the runs have no percentiles
        assert job.ramp_s == 30.0 and job.span == fit.WHOLE
    proc = subprocess.run([sys.executable, str(script), str(out)], capture_output=True,
                          text=True)
    assert proc.returncode != 0 and "already exists; nothing is written" in proc.stderr
