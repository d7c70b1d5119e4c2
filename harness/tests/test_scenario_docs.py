"""Scenario READMEs: every table of figures names the command it came
from, in the text between it and the heading or table before it, so a
reader can run it again (`blklab report --markdown RUN` prints such a line
above the tables it generates)."""

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
# A README per scenario (companions share one); scenarios/README.md is the
# file format's reference, not figures.
READMES = sorted(p for p in (REPO / "scenarios").glob("*.md") if p.name != "README.md")
COMMAND = re.compile(r"blklab\s+(run|report\s+--markdown|switches)\b|make\s+(scenario|test-full)\b")
DIVIDER = re.compile(r"^\|[-| :]+\|$")


def figure_tables(text: str) -> list[tuple[int, str]]:
    """(line number, the text before it up to the previous heading or
    table) of each Markdown table whose body holds a digit."""
    lines = text.splitlines()
    out, i, floor = [], 0, 0
    while i < len(lines):
        if lines[i].startswith("|") and i + 1 < len(lines) and DIVIDER.match(lines[i + 1]):
            end = i + 2
            while end < len(lines) and lines[end].startswith("|"):
                end += 1
            k = i - 1
            while k > floor and not lines[k].startswith("#"):
                k -= 1
            if any(re.search(r"\d", row) for row in lines[i + 2:end]):
                out.append((i + 1, "\n".join(lines[k:i])))
            floor, i = end, end
        else:
            i += 1
    return out


def test_the_check_finds_a_table_without_a_command():
    text = ("# x\n\nMeasured with `blklab run ../scenarios/x.toml`:\n\n| a | b |\n|---|---|\n"
            "| 1 | 2 |\n\nAnd again, by hand:\n\n| a | b |\n|---|---|\n| 3 | 4 |\n")
    found = [(n, bool(COMMAND.search(before))) for n, before in figure_tables(text)]
    assert found == [(5, True), (11, False)]


@pytest.mark.parametrize("readme", READMES, ids=[p.stem for p in READMES])
def test_every_figure_table_names_its_run_command(readme):
    missing = [n for n, before in figure_tables(readme.read_text()) if not COMMAND.search(before)]
    assert not missing, (f"{readme.name}: the tables of figures at lines {missing} do not name "
                         "the command that made them (blklab run ..., make scenario ...; "
                         "`blklab report --markdown RUN` writes the line for you)")
