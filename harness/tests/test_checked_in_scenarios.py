"""Every scenario in scenarios/ loads, in its full and its short form.

The e2e tests run each short form in a guest; a key the loader no longer
accepts would only show there, an hour into make test. This finds it in
a second.
"""
from pathlib import Path

import pytest

from blklab import scenario

REPO = Path(__file__).resolve().parents[2]
SCENARIOS = sorted((REPO / "scenarios").glob("*.toml"))


def test_there_are_scenarios():
    assert len(SCENARIOS) >= 10


@pytest.mark.parametrize("short", [False, True], ids=["full", "short"])
@pytest.mark.parametrize("path", SCENARIOS, ids=[p.stem for p in SCENARIOS])
def test_checked_in_scenario_loads(path, short):
    sc = scenario.load(path, short=short, check_profiles=True)
    assert sc.short == short
    assert sc.devices and sc.schedulers and sc.jobs, f"{path.name}: nothing to run"
