"""The documentation's links and the getting-started guide's commands
(blklab.docs_check), and the site build (blklab.docs_site): on the
repository, and on small pages made to fail each check."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from blklab import docs_check, docs_site

REPO = Path(__file__).resolve().parents[2]


def test_every_relative_link_in_the_docs_resolves():
    pages = docs_check.tracked_markdown()
    assert REPO / "README.md" in pages and REPO / "docs" / "README.md" in pages
    assert docs_check.link_problems(pages) == []


def test_every_command_of_the_getting_started_guide_exists():
    guide = REPO / docs_check.GETTING_STARTED
    assert docs_check.code_blocks(guide), "the guide quotes no commands"
    assert docs_check.command_problems(guide) == []


def test_the_readme_and_the_docs_index_lead_to_the_guide():
    assert "docs/getting-started.md" in (REPO / "README.md").read_text()
    assert "(getting-started.md)" in (REPO / "docs" / "README.md").read_text()


@pytest.mark.parametrize("heading, anchor", [
    ("Where to read next", "where-to-read-next"),
    ("`make scenario` on a fresh machine", "make-scenario-on-a-fresh-machine"),
    ("Lab 2: a throttled cloud volume, and where cfq went",
     "lab-2-a-throttled-cloud-volume-and-where-cfq-went"),
    ("The [vCPUs'](x.md) clocks", "the-vcpus-clocks"),
])
def test_slug_is_githubs(heading, anchor):
    assert docs_check.slug(heading) == anchor


def _repo(tmp_path: Path, pages: dict[str, str]) -> Path:
    for name, text in pages.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    subprocess.run(["git", "-C", str(tmp_path), "add", "."], check=True)
    return tmp_path


def test_broken_links_and_anchors_are_found(tmp_path):
    root = _repo(tmp_path, {
        "README.md": "# Top\n\n## Two commands\n\n[ok](docs/a.md#a-heading) [self](#two-commands)\n"
                     "[gone](docs/nope.md) [bad anchor](docs/a.md#nope)\n"
                     "```sh\n[in code](nope.md)\n```\n`[in inline code](nope.md)`\n"
                     "\n[ref]: docs/missing.md\n",
        "docs/a.md": "# A heading\n\n[up](../README.md#two-commands) [dir](../docs)\n"
                     "[web](https://example.invalid/x.md)\n",
    })
    problems = docs_check.link_problems(docs_check.tracked_markdown(root), root)
    assert problems == [
        "README.md:6: docs/nope.md: no such file",
        "README.md:6: docs/a.md#nope: no heading '#nope' in docs/a.md",
        "README.md:12: docs/missing.md: no such file",
    ]


def test_commands_that_do_not_exist_are_found(tmp_path):
    shutil.copyfile(REPO / "Makefile", tmp_path / "Makefile")
    (tmp_path / "scenarios").mkdir()
    (tmp_path / "scenarios" / "default.toml").write_text("")
    (tmp_path / "harness").mkdir()
    guide = tmp_path / "guide.md"
    guide.write_text(
        "```sh\n"
        "make scenario test   # fine\n"
        "make no-such-target\n"
        "cp scenarios/default.toml scenarios/mine.toml\n"
        "cd harness\n"
        "/usr/bin/python3 -m blklab validate ../scenarios/mine.toml\n"
        "/usr/bin/python3 -m blklab nosuch ../scenarios/default.toml\n"
        "/usr/bin/python3 -m blklab baseline nosuch RUN\n"
        "/usr/bin/python3 -m blklab check ../results/default/<run-id>\n"
        "/usr/bin/python3 -m blklab run ../scenarios/missing.toml\n"
        "make scenario\n"
        "cd ..\n"
        "make scenario SCENARIO=mine\n"
        "```\n"
        "```toml\n[scenario]\nnot = \"a command\"\n```\n")
    assert docs_check.command_problems(guide, tmp_path) == [
        "guide.md:3: make no-such-target: no such target in the Makefile",
        "guide.md:7: blklab nosuch: no such subcommand",
        "guide.md:8: blklab baseline nosuch: no such subcommand",
        "guide.md:10: ../scenarios/missing.toml: no such file or directory (from harness)",
        "guide.md:11: make: no Makefile in harness/ (the commands before it changed directory)",
    ]


def test_the_site_build_fails_on_a_link_to_a_missing_page(tmp_path):
    shutil.copyfile(REPO / "mkdocs.yml", tmp_path / "mkdocs.yml")
    root = _repo(tmp_path / "repo", {"README.md": "# Top\n\n[a](docs/a.md)\n",
                                     "docs/a.md": "# A\n\n[back](../README.md)\n"})
    shutil.copyfile(REPO / "mkdocs.yml", root / "mkdocs.yml")
    site = docs_site.build(tmp_path / "out", root)
    assert (site / "index.html").exists() and (site / "docs" / "a.html").exists()
    (root / "docs" / "a.md").write_text("# A\n\n[gone](gone.md)\n")
    with pytest.raises(subprocess.CalledProcessError):
        docs_site.build(tmp_path / "out", root)
