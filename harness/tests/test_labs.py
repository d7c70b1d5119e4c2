"""Every lab in docs/labs/ has its sections, is listed in the labs README,
runs scenarios' short forms (which tests/e2e/test_scenarios.py runs and
checks for every scenario) and points into the kernel source."""

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
LABS = sorted((REPO / "docs" / "labs").glob("[0-9][0-9]-*.md"))
COMMAND = re.compile(r"/usr/bin/python3 -m blklab run --short [^\n]*?\.\./scenarios/([a-z0-9-]+)\.toml")


def test_there_are_at_least_six_labs():
    assert len(LABS) >= 6


@pytest.mark.parametrize("lab", LABS, ids=[p.stem for p in LABS])
def test_lab_has_its_sections_a_command_and_kernel_sources(lab):
    text = lab.read_text()
    for heading in ("## Objective", "## The command", "## What to look at",
                    "## Questions", "## Expected observation, and why"):
        assert heading in text, f"{lab.name}: no '{heading}'"
    # The first command is the lab's; a lab may run a companion scenario after it.
    commands = COMMAND.findall(text)
    assert commands, f"{lab.name}: no blklab run --short command"
    for name in commands:
        assert (REPO / "scenarios" / f"{name}.toml").is_file(), f"{lab.name}: no scenario {name}"
    readme = (REPO / "docs" / "labs" / "README.md").read_text()
    assert f"]({lab.name}) | {commands[0]}" in readme, f"{lab.name} is not in docs/labs/README.md"
    # the expected observation points into the kernel source
    assert re.search(r"(block|mm)/[a-z0-9-]+\.c", text), f"{lab.name}: no kernel source file"
