"""blklab fit from a fill: a fill log written by devmodel-sim from a profile
whose cache and rates the formulas give (blklab.fill_fit), fitted from
other shipped profiles, and held to the bounds docs/characterize-a-drive.md
states ("Bounds on a fill the model wrote"); the negative control, a fill
that never leaves the cache; and the rule on logs with a dip and a second
step."""

import json
import shutil
import tomllib
from pathlib import Path

import pytest

from blklab import fill_fit, fill_log, fit
from blklab.scenario import PROFILE_DIR, profile_with_precondition

SOURCE = "tlc-250g-used"  # the profile the "drive" is
FILL_BYTES = 30_000_000_000  # past its 13 GB cache
NO_DROP = ("samsung-980pro-1t", 80_000_000_000)  # inside its 114 GB cache: no drop
LONG_CACHE = ("samsung-970evoplus-1t", 100_000_000_000)  # 42 GB of cache, 12 intervals
IN_FLIGHT = 32 * 128 * 1024  # the fill's writes in flight
RATE_BOUND = 0.005


def _keys(name: str) -> dict:
    return fit.ssd_keys((PROFILE_DIR / f"{name}.toml").read_text())


def _source_text(name: str) -> str:
    text = profile_with_precondition((PROFILE_DIR / f"{name}.toml").read_text(), "none")
    assert text is not None
    return text


def _drive(tmp_path: Path, fill_bytes: int, source: str = SOURCE) -> Path:
    """A drive directory holding only the fill's log, as the drive script
    lays it out, the log written by the model of `source` made empty."""
    intervals, _ = fill_fit.run(_source_text(source), fill_bytes, 1000, "drive.toml")
    log = tmp_path / "drive" / fit.FILL_LOG
    log.parent.mkdir(parents=True)
    log.write_text("".join(f"{i.end_ms}, {i.kib_s}, 1, 0, 0\n" for i in intervals))
    return tmp_path / "drive"


def _buffer(name: str) -> int:
    return int(_keys(name).get("write_buffer_bytes", 0))


@pytest.fixture(scope="module")
def drive(tmp_path_factory) -> Path:
    return _drive(tmp_path_factory.mktemp("fill"), FILL_BYTES)


def test_the_log_shows_the_source_profiles_cache_and_rates(drive):
    want = fill_fit.expected(_keys(SOURCE), SOURCE)
    got = fill_log.figures(drive / fit.FILL_LOG)
    assert got.dropped
    assert abs(got.cache_bytes - want["cache_bytes"]) <= _buffer(SOURCE) + IN_FLIGHT
    assert got.rate_in == pytest.approx(want["rate_in"], rel=RATE_BOUND)
    assert got.rate_after == pytest.approx(want["rate_after"], rel=RATE_BOUND)


def test_a_fit_on_the_same_geometry_recovers_the_sources_keys(drive):
    start = "tlc-250g-used-suspend"
    res = fit.fit(drive, start=start, names=["fill"])
    fitted = tomllib.loads(res.text)["ssd"]
    source = _keys(SOURCE)
    for key in ("slc_program_us", "page_program_us"):
        assert fitted[key] == pytest.approx(source[key], rel=RATE_BOUND), key
    cache = fitted["slc_static_bytes"] + fitted["slc_dynamic_max_bytes"]
    want = source["slc_static_bytes"] + source["slc_dynamic_max_bytes"]
    assert abs(cache - want) <= _buffer(SOURCE) + IN_FLIGHT


def test_a_fit_on_another_geometry_gives_the_drives_figures(drive):
    start = "samsung-970evoplus-1t"
    res = fit.fit(drive, start=start, names=["fill"])
    want = fill_fit.expected(_keys(SOURCE), SOURCE)
    fitted = fit.ssd_keys(res.text.split("\n#\n", 1)[1])
    got = fill_fit.expected(fitted, "fitted")  # by the formulas, on the 970's 32 dies
    assert abs(got["cache_bytes"] - want["cache_bytes"]) <= _buffer(SOURCE) + IN_FLIGHT
    assert got["rate_in"] == pytest.approx(want["rate_in"], rel=RATE_BOUND)
    assert got["rate_after"] == pytest.approx(want["rate_after"], rel=RATE_BOUND)
    # The fitted profile's own fill, measured as the drive's was.
    rows = {r.metric: r for r in res.rows if r.job == "fill"}
    assert set(rows) == {"cache_gb", "in_cache_mb_s", "after_cache_mb_s"}
    assert abs(rows["cache_gb"].model - rows["cache_gb"].drive) * 1e9 \
        <= _buffer(SOURCE) + _buffer(start) + IN_FLIGHT
    for m in ("in_cache_mb_s", "after_cache_mb_s"):
        assert rows[m].model == pytest.approx(rows[m].drive, rel=RATE_BOUND), m
    assert "logs/fill_bw.1.log" in res.text and "cache_gb" in res.text
    assert not [line for line in fit.fill_lines(res) if line.startswith("not fitted")]


@pytest.mark.parametrize("fmt", fit.FORMATS)
def test_every_format_has_a_row_per_fill_figure(drive, fmt):
    res = fit.fit(drive, start="samsung-980pro-1t", names=["fill"])
    out = fit.render(res, fmt)
    if fmt == "json":
        doc = json.loads(out)
        assert {r["metric"] for r in doc["rows"] if r["job"] == "fill"} == \
            {"cache_gb", "in_cache_mb_s", "after_cache_mb_s"}
        assert set(doc["fill"]["keys"]) >= {"slc_static_bytes", "slc_dynamic_max_bytes",
                                            "slc_program_us", "page_program_us"}
    else:
        for m in ("cache_gb", "in_cache_mb_s", "after_cache_mb_s"):
            assert m in out, m


def test_no_drop_fits_no_cache_size_and_says_so(tmp_path):
    drive = _drive(tmp_path, NO_DROP[1], NO_DROP[0])
    start = "samsung-970evoplus-1t"
    res = fit.fit(drive, start=start, names=["fill"])
    fitted = fit.ssd_keys(res.text.split("\n#\n", 1)[1])
    for key in ("slc_static_bytes", "slc_dynamic_max_bytes", "page_program_us"):
        assert fitted[key] == _keys(start)[key], key
    lines = [line for line in fit.fill_lines(res) if line.startswith("not fitted")]
    log = str(drive / fit.FILL_LOG)
    assert any("no sustained drop" in line and log in line for line in lines), lines
    assert {r.metric for r in res.rows if r.job == "fill"} == {"in_cache_mb_s"}
    for fmt in fit.FORMATS:
        assert "no sustained drop" in fit.render(res, fmt)
    assert "no sustained drop" in res.text


def test_a_rate_above_the_starts_link_is_not_fitted_and_says_so(tmp_path):
    # The 980 PRO's figures by the formulas: 5,000 MB/s in its cache, above
    # the 970 EVO Plus's 3,500 MB/s link.
    want = fill_fit.expected(_keys("samsung-980pro-1t"), "samsung-980pro-1t")
    log = tmp_path / "fill_bw.1.log"
    figs = fill_log.FillFigures(log, 30, 1000.0, 3 * want["cache_bytes"], 30.0,
                                want["rate_in"], want["cache_bytes"], want["rate_after"], 20.0,
                                want["cache_bytes"])
    start = _keys("samsung-970evoplus-1t")
    out = fill_fit.derive(start, figs, "samsung-970evoplus-1t", fit._key_ranges())
    assert "slc_program_us" not in out.values
    assert any(line.startswith(f"slc_program_us: {log}: the rate in the cache") and
               "above the profile's channel and link bound (3,500 MB/s)" in line and
               line.endswith(f"kept at {start['slc_program_us']:g}") for line in out.not_fitted)
    # The rate after it is below the link: fitted.
    g = fill_fit.geometry(start, "start")
    assert out.values["page_program_us"] == pytest.approx(
        g.program_us(want["rate_after"] / 1e6), rel=1e-3)


def test_a_fit_to_the_fill_alone_needs_a_start(drive):
    with pytest.raises(fit.FitError, match="the fill is the only job to fit; name the profile"):
        fit.fit(drive)


def test_the_fill_held_out_alone_leaves_nothing_to_fit(drive):
    with pytest.raises(fit.FitError, match="no job to fit"):
        fit.fit(drive, start="samsung-970evoplus-1t", hold_out=["fill"])


def _edited(drive: Path, tmp_path: Path, edit) -> Path:
    """The drive's log with its rates changed by edit(index, kib_s)."""
    out = tmp_path / "edited"
    shutil.copytree(drive, out)
    log = out / fit.FILL_LOG
    rows = [line.split(", ") for line in log.read_text().splitlines()]
    log.write_text("".join(", ".join([r[0], str(edit(i, int(r[1]))), *r[2:]]) + "\n"
                           for i, r in enumerate(rows)))
    return out


@pytest.fixture(scope="module")
def long_cache(tmp_path_factory) -> Path:
    return _drive(tmp_path_factory.mktemp("long"), LONG_CACHE[1], LONG_CACHE[0])


def test_a_dip_in_the_cache_is_not_the_drop(long_cache, tmp_path):
    base = fill_log.figures(long_cache / fit.FILL_LOG)
    assert base.drop_s is not None and base.drop_s >= 8  # intervals 4 and 5 are in the cache
    intervals = fill_log.read(long_cache / fit.FILL_LOG)
    dipped = _edited(long_cache, tmp_path, lambda i, v: v // 2 if i in (4, 5) else v)
    got = fill_log.figures(dipped / fit.FILL_LOG)
    assert got.drop_s == base.drop_s
    assert (got.rate_in, got.rate_after) == (base.rate_in, base.rate_after)
    # The edit took bytes from before the step, which stays where it was.
    missing = sum(intervals[i].bytes - (intervals[i].kib_s // 2) * 1024 * intervals[i].seconds
                  for i in (4, 5))
    assert got.cache_bytes == pytest.approx(base.cache_bytes - missing, rel=1e-9)


def test_a_second_step_moves_the_rate_after_to_the_longer_one(long_cache, tmp_path):
    base = fill_log.figures(long_cache / fit.FILL_LOG)
    n = len(fill_log.read(long_cache / fit.FILL_LOG))
    later = int(base.drop_s) + 7  # a second step past the 5 intervals after the first
    stepped = _edited(long_cache, tmp_path, lambda i, v: v // 2 if i >= later else v)
    got = fill_log.figures(stepped / fit.FILL_LOG)
    assert got.cache_bytes == base.cache_bytes
    assert n - later > later - int(base.drop_s)
    assert got.rate_after == pytest.approx(base.rate_after / 2, rel=0.01)


@pytest.mark.parametrize("text,message", [
    ("", "empty (no interval logged)"),
    ("1000, 2000000, 1, 0, 0\n1000, 2000000, 1, 0, 0\n", "line 2: times must increase"),
    ("1000, fast, 1, 0, 0\n", "line 1: not a fio bandwidth log line"),
    ("".join(f"{1000 * (i + 1)}, 2000000, 1, 0, 0\n" for i in range(9)),
     "9 intervals; finding a sustained drop needs at least 10"),
])
def test_a_bad_fill_log_is_refused_naming_it(tmp_path, text, message):
    log = tmp_path / "drive" / fit.FILL_LOG
    log.parent.mkdir(parents=True)
    log.write_text(text)
    with pytest.raises(fit.FitError) as e:
        fit.fit(tmp_path / "drive", start="samsung-970evoplus-1t")
    assert str(e.value).startswith(f"{log}: job fill: ") and message in str(e.value)
