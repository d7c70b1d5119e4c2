"""Every scenario in scenarios/ loads, in its full and its short form.

The e2e tests run each short form in a guest; a key the loader no longer
accepts would only show there, an hour into make test. This finds it in
a second, and so does a scenario without a short form or a README.
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


def _readme_of(path: Path) -> Path | None:
    """The README that documents scenario PATH: scenarios/NAME.md, or, for a
    companion scenario, a scenarios/*.md that names its file."""
    own = path.with_suffix(".md")
    if own.exists():
        return own
    for md in sorted(path.parent.glob("*.md")):
        if md.name != "README.md" and f"`{path.name}`" in md.read_text():
            return md
    return None


@pytest.mark.parametrize("path", [p for p in SCENARIOS if p.stem != "default"],
                         ids=lambda p: p.stem)
def test_checked_in_scenario_has_a_readme_and_a_deterministic_short_form(path):
    text = path.read_text()
    assert "\n[short]" in text, f"{path.name}: no [short] table"
    sc = scenario.load(path, short=False, check_profiles=False)
    assert sc.mode == "deterministic", f"{path.name}: mode {sc.mode}"
    assert _readme_of(path) is not None, (
        f"{path.name}: no scenarios/{path.stem}.md and no scenarios/*.md names `{path.name}`")
