"""blklab fit's link and channel rate (blklab.link_fit): a drive's random
and sequential reads written by devmodel-sim from tlc-250g-used with
another link or channel rate, fitted from tlc-250g-used, held to the
bounds docs/characterize-a-drive.md states ("Bounds on sequential reads
the model wrote"), set from its formulas before the tests were run: a
link recovered, channels that a link cannot be told apart from, a link
that never binds, and a drive without the sequential reads."""

import json
import re
import tomllib

import pytest

from blklab import fit, link_fit
from test_fit_geometry import SIM, SWEEP, _drive, _profile

START = "tlc-250g-used"  # 8 channels x 1,400 MB/s, link 3,500 MB/s, 16 read units
JOBS = SWEEP + ("seqread-qd1", "seqread-qd32")
_CANDIDATE = re.compile(r"the (link|channels) binds? at R: host_link_mb_s (\d+), "
                        r"channel_mb_s (\d+)")


def _fit(tmp_path, jobs=JOBS, **keys) -> fit.Result:
    drive = _drive(tmp_path, _profile(START, **keys), jobs)
    return fit.fit(drive, start=START, guest_fio="3.33", **SIM)


def _ssd(res: fit.Result) -> dict:
    return tomllib.loads(res.text)["ssd"]


def _candidates(res: fit.Result) -> dict[str, tuple[int, int]]:
    out = {}
    for line in res.link_lines:
        m = _CANDIDATE.match(line)
        if m:
            out[m.group(1)] = (int(m.group(2)), int(m.group(3)))
    return out


def test_the_closed_form_gives_the_link_and_the_channel_rate():
    # The docs' first case in the formula alone: R = 2,000 MB/s below
    # 0.95 M; D - D0 = 28672 B x (1/1000 - 1/1400) + 126976 B x
    # (1/2000 - 1/3500) = 35.40 us gives c = 1000 with L = R; the channels'
    # candidate (c = 250) needs 1/L < 0.
    keys = fit.ssd_keys(_profile(START))
    assert link_fit.channel_bytes(keys) == 32768
    delta = 28672 * (1 / 1000 - 1 / 1400) + 126976 * (1 / 2000 - 1 / 3500)
    sol = link_fit.solve(keys, 2000.0, 4587.0, 50.0 + delta, 50.0, {})
    assert sol.binding
    assert [(c.binds, c.values) for c in sol.candidates] == [
        ("link", {"host_link_mb_s": 2000, "channel_mb_s": 1000})]
    assert any("no link gives D" in line for line in sol.lines)


@pytest.fixture(scope="module")
def link_binds(tmp_path_factory) -> fit.Result:
    return _fit(tmp_path_factory.mktemp("link"), host_link_mb_s=2000, channel_mb_s=1000)


def test_a_slower_link_and_channels_are_recovered(link_binds):
    ssd = _ssd(link_binds)
    assert ssd["host_link_mb_s"] == pytest.approx(2000, rel=0.02)
    assert ssd["channel_mb_s"] == pytest.approx(1000, rel=0.10)
    assert ssd["channels"] == 8  # the count is the start's
    assert list(_candidates(link_binds)) == ["link"]  # the only candidate
    assert not any(line.startswith("not told apart") for line in link_binds.link_lines)


def test_the_header_records_the_link_step(link_binds, tmp_path):
    head = link_binds.text.split("\n#\n", 1)[0]
    assert "# Link and channels (from the sequential reads" in head
    assert "#   host_link_mb_s: 3500 -> " in head
    assert "seqread-qd32.json" in head and "seqread-qd1.json" in head
    for job in ("seqread-qd1", "seqread-qd32"):
        assert f"job {job} (fitted): mean error" in head
    out = json.loads(fit.render(link_binds, "json"))
    assert out["link"]["keys"]["host_link_mb_s"]["start"] == 3500
    assert out["link"]["lines"] == link_binds.link_lines
    assert "link: host_link_mb_s: 3500 -> " in fit.render(link_binds, "text")
    path = tmp_path / "fitted.toml"
    path.write_text(link_binds.text)
    fit.check_profile(path)  # devmodel-check: an ordinary profile


def test_channels_that_bind_are_not_told_apart_from_a_link(tmp_path):
    res = _fit(tmp_path, channel_mb_s=200)
    cands = _candidates(res)
    assert set(cands) == {"link", "channels"}, res.link_lines
    assert cands["link"][0] == pytest.approx(1600, rel=0.10)
    assert cands["link"][1] == pytest.approx(286, rel=0.10)
    assert cands["channels"][1] == pytest.approx(200, rel=0.10)
    assert cands["channels"][0] == pytest.approx(3500, rel=0.10)
    assert any(line.startswith("not told apart") for line in res.link_lines), res.link_lines
    ssd = _ssd(res)
    assert (ssd["host_link_mb_s"], ssd["channel_mb_s"]) in cands.values()


def test_a_link_that_never_binds_is_not_fitted(tmp_path):
    res = _fit(tmp_path, host_link_mb_s=6000)
    assert any("the link does not bind" in line for line in res.link_lines)
    assert any(line.startswith("not fitted: the link carries at least R")
               for line in res.link_lines)
    ssd = _ssd(res)
    assert ssd["host_link_mb_s"] == pytest.approx(4590, rel=0.02)  # R, a lower bound
    assert ssd["channel_mb_s"] == 1400


def test_a_drive_without_the_sequential_reads_keeps_the_link(tmp_path):
    res = _fit(tmp_path, jobs=SWEEP, host_link_mb_s=2000)
    assert res.link_lines == ["not fitted: no seqread-qd32 job; host_link_mb_s and "
                              "channel_mb_s are the start's"]
    ssd = _ssd(res)
    assert ssd["host_link_mb_s"] == 3500 and ssd["channel_mb_s"] == 1400
    assert "not fitted: no seqread-qd32 job" in res.text.split("\n#\n", 1)[0]
