"""Every table of figures in the tracked Markdown (but the generated
reference) names the command that made it (blklab.docs_figures); and the
check, on small pages made to pass and to fail it."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from blklab import docs_figures

REPO = Path(__file__).resolve().parents[2]
PAGES = docs_figures.pages()


@pytest.mark.parametrize("page", PAGES, ids=[p.relative_to(REPO).as_posix() for p in PAGES])
def test_every_table_of_figures_names_its_command(page):
    assert docs_figures.page_problems(page) == []


def test_the_pages_are_every_tracked_markdown_file_but_the_reference():
    shown = {p.relative_to(REPO).as_posix() for p in PAGES}
    assert {"README.md", "docs/getting-started.md", "docs/labs/README.md",
            "scenarios/default.md", "devmodel/profiles/README.md"} <= shown
    # generated whole, with its own first-line mark and test (test_reference.py)
    assert not any(s.startswith("docs/reference/") for s in shown)


@pytest.mark.parametrize("cell", [
    "2,609", "52 us", "+20.6%", "0.82x", "3.8-6.7 s", "1", "**671**", "1.50 ms", "20.0K",
    "383,287 IOPS", "2,274 / 2,609 (0.87)", "100%",
])
def test_a_number_with_its_unit_is_a_figure(cell):
    assert docs_figures.is_figure(cell)


@pytest.mark.parametrize("cell", [
    "", "m", "not set", "4 KiB random reads at that queue depth", "`read_expire = 500`",
    "[01](labs/01-scheduler-defaults.md)", "6.12.118-1", "`irq=` (0050)",
    "mean 683 us, p50 200 us", "hdd0.kyber.r0",
])
def test_prose_keys_names_and_versions_are_not_figures(cell):
    assert not docs_figures.is_figure(cell)


def _repo(tmp_path: Path, page: str) -> Path:
    tmp_path.mkdir(exist_ok=True)
    shutil.copyfile(REPO / "Makefile", tmp_path / "Makefile")
    (tmp_path / "tests" / "bench").mkdir(parents=True)
    (tmp_path / "tests" / "bench" / "x.py").write_text("")
    (tmp_path / "CMakeLists.txt").write_text("add_executable(devmodel-sim tools/sim.cc)\n")
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "page.md").write_text(page)
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    subprocess.run(["git", "-C", str(tmp_path), "add", "."], check=True)
    return tmp_path


FIGURES = "| cell | IOPS |\n|---|---|\n| nvme0.none.r0 | 237,283 |\n"
PROSE = "| key | what |\n|---|---|\n| `fifo_batch = 16` | requests per batch |\n"


def _problems(tmp_path: Path, page: str) -> list[str]:
    root = _repo(tmp_path, page)
    return docs_figures.page_problems(root / "docs" / "page.md", root)


def test_an_unmarked_table_of_figures_fails(tmp_path):
    problems = _problems(tmp_path, "# A\n\nMeasured by hand:\n\n" + FIGURES)
    assert len(problems) == 1
    assert problems[0].startswith("docs/page.md:5: a table of figures ('237,283', ...) names no "
                                  "command")


@pytest.mark.parametrize("marker", [
    "Tables by `blklab report --markdown results/default/0123abcd`:",
    "`make bench-cpu-paths` prints:",
    "From `tests/bench/x.py --rounds 3`:",
    "From `/usr/bin/python3 ../tests/bench/x.py`:",
    "From `devmodel-sim --seed 1 PROFILE.toml` (an executable of the CMake tree):",
    "```sh\ncd harness\n/usr/bin/python3 -m blklab run --short ../scenarios/default.toml\n```",
])
def test_a_table_of_figures_marked_with_a_command_that_exists_passes(tmp_path, marker):
    assert _problems(tmp_path, f"# A\n\n{marker}\n\n{FIGURES}") == []


@pytest.mark.parametrize("marker, why", [
    ("`make no-such-target`", "make no-such-target: no such target in the Makefile"),
    ("`blklab nosuch RUN`", "blklab nosuch: no such subcommand"),
    ("`tests/bench/gone.py`", "tests/bench/gone.py: not a tracked script"),
])
def test_a_marker_naming_a_command_that_does_not_exist_fails(tmp_path, marker, why):
    problems = _problems(tmp_path, f"# A\n\nFrom {marker}:\n\n{FIGURES}")
    assert problems[0] == f"docs/page.md:5: {marker}: {why}"
    assert len(problems) == 2  # and so the table names no command


def test_the_marker_must_be_after_the_heading_or_table_before(tmp_path):
    page = ("# A\n\n`make bench-cpu-paths` prints:\n\n" + FIGURES + "\nAnd by hand:\n\n"
            + FIGURES + "\n## B\n\nAgain by hand:\n\n" + FIGURES)
    assert [p.split(": ")[0] for p in _problems(tmp_path, page)] == ["docs/page.md:11",
                                                                     "docs/page.md:19"]


def test_tables_without_figures_need_no_command(tmp_path):
    assert _problems(tmp_path, "# A\n\n" + PROSE + "\n```\n" + FIGURES + "```\n") == []


def test_figures_not_measured_name_the_tracked_file_that_defines_them(tmp_path):
    page = "# A\n\n<!-- not measured: Makefile -->\n\n" + FIGURES
    assert _problems(tmp_path, page) == []
    problems = _problems(tmp_path / "b", page.replace("Makefile", "gone.txt"))
    assert problems == ["docs/page.md:5: not measured: gone.txt: not a tracked file"]


def test_an_indented_table_in_a_list_is_a_table(tmp_path):
    indented = "".join("  " + line + "\n" for line in FIGURES.splitlines())
    assert len(_problems(tmp_path, "# A\n\n- by hand:\n\n" + indented)) == 1
