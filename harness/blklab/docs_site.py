"""Builds the documentation site (`make docs`): every tracked Markdown file
of the repository, at its own path, and every other file a page links to,
staged under OUT/src; mkdocs (Debian's package) builds OUT/site from it with
the settings of mkdocs.yml, offline and strict, so a link to a page that is
not there fails the build. Nothing is written into the checkout.

    /usr/bin/python3 -m blklab.docs_site OUT
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import yaml

from blklab import docs_check

REPO = docs_check.REPO


def stage(out: Path, root: Path = REPO) -> Path:
    """Copy the pages and what they link to into out/src; return it."""
    src = out / "src"
    if src.exists():
        shutil.rmtree(src)
    pages = docs_check.tracked_markdown(root)
    wanted = set(pages)
    for page in pages:
        for _, target in docs_check.links(page):
            file_part = target.partition("#")[0]
            if not file_part or ":" in file_part.split("/")[0]:
                continue
            dest = (page.parent / file_part).resolve()
            if dest.is_file() and dest.is_relative_to(root):
                wanted.add(dest)
    for path in sorted(wanted):
        copy = src / path.relative_to(root)
        copy.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, copy)
    return src


def build(out: Path, root: Path = REPO) -> Path:
    """Stage and build; return the site's directory. Raises
    subprocess.CalledProcessError when mkdocs fails (its log names why)."""
    out.mkdir(parents=True, exist_ok=True)
    stage(out, root)
    config = yaml.safe_load((root / "mkdocs.yml").read_text())
    config["docs_dir"] = "src"
    config["site_dir"] = "site"
    (out / "mkdocs.yml").write_text(yaml.safe_dump(config, sort_keys=True))
    subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--clean", "--quiet",
                    "--config-file", str(out / "mkdocs.yml")], check=True)
    return out / "site"


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python3 -m blklab.docs_site OUT", file=sys.stderr)
        return 2
    try:
        site = build(Path(argv[0]).resolve())
    except subprocess.CalledProcessError as e:
        print(f"docs: mkdocs failed (exit {e.returncode}); its messages are above",
              file=sys.stderr)
        return 1
    print(f"docs: {site}/index.html")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
