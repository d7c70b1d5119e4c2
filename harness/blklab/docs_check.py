"""Checks of the project's Markdown (make test, harness/tests/test_docs.py):

- every relative link in a tracked .md file names a file or directory that
  exists, and a #anchor names a heading (GitHub's slugs) or an explicit
  <a id/name> of the page it points to;
- every command quoted in a code block of the getting-started guide exists:
  a `make X` target in the Makefile, a `blklab SUB` subcommand of the CLI's
  parser, a path in the repository.

Each function returns a list of problems ("file:line: what"), empty when
all is well.
"""

from __future__ import annotations

import re
import shlex
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
GETTING_STARTED = "docs/getting-started.md"

FENCE = re.compile(r"^\s*(```|~~~)")
_LINK = re.compile(r"(?<!\\)!?\[(?:[^\]\\]|\\.)*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
_REF_DEF = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+.*)?$")
_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_ANCHOR = re.compile(r"<a\s+(?:id|name)=\"([^\"]+)\"")
_INLINE_CODE = re.compile(r"(`+).*?\1")


def tracked_markdown(root: Path = REPO) -> list[Path]:
    out = subprocess.run(["git", "-C", str(root), "ls-files", "*.md"], capture_output=True,
                         text=True, check=True).stdout
    return [root / line for line in out.splitlines() if (root / line).exists()]


def prose_lines(text: str) -> list[tuple[int, str]]:
    """(line number, line) of the lines outside fenced code blocks."""
    out, fenced = [], None
    for n, line in enumerate(text.splitlines(), 1):
        m = FENCE.match(line)
        if m:
            if fenced is None:
                fenced = m.group(1)
            elif m.group(1) == fenced:
                fenced = None
            continue
        if fenced is None:
            out.append((n, line))
    return out


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: the text without markup, lowercased,
    everything but letters, digits, spaces, '-' and '_' dropped, spaces to
    '-'."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # links: their text
    text = re.sub(r"<[^>]+>", "", text).replace("`", "")
    text = text.strip().lower()
    text = re.sub(r"[^\w\- ]", "", text, flags=re.UNICODE)
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    seen: dict[str, int] = {}
    out = set()
    for _, line in prose_lines(path.read_text()):
        m = _HEADING.match(line)
        if m:
            base = slug(m.group(2))
            n = seen.get(base, 0)
            seen[base] = n + 1
            out.add(base if n == 0 else f"{base}-{n}")
        out.update(_ANCHOR.findall(line))
    return out


def links(path: Path) -> list[tuple[int, str]]:
    """(line, target) of every link in the page's prose."""
    out = []
    previous_n, previous_def = 0, False
    for n, line in prose_lines(path.read_text()):
        bare = _INLINE_CODE.sub("", line)
        out.extend((n, t) for t in _LINK.findall(bare))
        # A reference definition cannot interrupt a paragraph: it follows a
        # blank line, a fence or another definition.
        m = _REF_DEF.match(bare)
        if m and (n != previous_n + 1 or previous_def or not prose_before(path, n)):
            out.append((n, m.group(1)))
        previous_n, previous_def = n, bool(m)
    return out


def prose_before(path: Path, n: int) -> bool:
    """Whether line n - 1 of the page holds text."""
    lines = path.read_text().splitlines()
    return n >= 2 and bool(lines[n - 2].strip())


def link_problems(files: list[Path], root: Path = REPO) -> list[str]:
    problems = []
    cache: dict[Path, set[str]] = {}
    for path in files:
        shown = path.relative_to(root)
        for n, target in links(path):
            if re.match(r"^[a-z][a-z0-9+.-]*:", target) or target.startswith("//"):
                continue  # an absolute URL (http:, mailto:): not checked offline
            file_part, _, anchor = target.partition("#")
            dest = (path.parent / file_part).resolve() if file_part else path
            if file_part.startswith("/"):
                problems.append(f"{shown}:{n}: {target}: an absolute path; link relatively")
                continue
            if not dest.exists():
                problems.append(f"{shown}:{n}: {target}: no such file")
                continue
            try:
                dest.relative_to(root)
            except ValueError:
                problems.append(f"{shown}:{n}: {target}: outside the repository")
                continue
            if anchor and dest.suffix == ".md":
                if dest not in cache:
                    cache[dest] = anchors(dest)
                if anchor not in cache[dest]:
                    problems.append(f"{shown}:{n}: {target}: no heading '#{anchor}' in "
                                    f"{dest.relative_to(root)}")
    return problems


def makefile_targets(root: Path) -> set[str]:
    targets = set()
    for line in (root / "Makefile").read_text().splitlines():
        m = re.match(r"^([A-Za-z0-9_.%/ -]+?)\s*:(?!=)", line)
        if m and not line.startswith(("\t", "#")):
            targets.update(t for t in m.group(1).split() if not t.startswith("."))
    return targets


def cli_commands() -> set[tuple[str, ...]]:
    import argparse

    from blklab import cli

    out: set[tuple[str, ...]] = set()

    def walk(parser: argparse.ArgumentParser, prefix: tuple[str, ...]) -> None:
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    out.add(prefix + (name,))
                    walk(sub, prefix + (name,))

    walk(cli.build_parser(), ())
    return out


def code_blocks(path: Path) -> list[tuple[int, str, list[str]]]:
    """(first line, info string, lines) of each fenced block."""
    blocks, current = [], None
    for n, line in enumerate(path.read_text().splitlines(), 1):
        m = FENCE.match(line)
        if m and current is None:
            current = (n + 1, line.strip()[3:].strip(), [])
        elif m and current is not None:
            blocks.append(current)
            current = None
        elif current is not None:
            current[2].append(line)
    return blocks


_SHELL_INFO = ("", "sh", "shell", "bash", "console")


def command_problems(path: Path, root: Path = REPO) -> list[str]:
    """Each command in a shell code block of `path` must exist (see the
    module's docstring). Lines are shell: `#` starts a comment, `&&` and `;`
    separate commands, `cd DIR` changes where later commands run (for the
    rest of the page, as in the reader's shell),
    and `cp SRC DST` makes DST a path that exists for what follows."""
    shown = path.relative_to(root)
    targets = makefile_targets(root)  # the one Makefile, at the top
    subcommands = cli_commands()
    made: set[Path] = set()
    problems = []
    cwd = root  # the reader's shell: a cd in one block holds for the next
    for first, info, lines in code_blocks(path):
        if info not in _SHELL_INFO:
            continue
        for i, raw in enumerate(lines):
            n = first + i
            line = raw.strip()
            if line.startswith("$ "):
                line = line[2:]
            if not line or line.startswith("#"):
                continue
            try:
                words = shlex.split(line, comments=True)
            except ValueError as e:
                problems.append(f"{shown}:{n}: cannot read the command: {e}")
                continue
            for command in _split_commands(words):
                cwd = _check_command(command, cwd, root, targets, subcommands, made,
                                     f"{shown}:{n}", problems)
    return problems


def _split_commands(words: list[str]) -> list[list[str]]:
    out, cur = [], []
    for w in words:
        if w in ("&&", "||", ";", "|"):
            out.append(cur)
            cur = []
        else:
            cur.append(w.rstrip(";"))
    out.append(cur)
    return [c for c in out if c]


def _check_command(words: list[str], cwd: Path, root: Path, targets: set[str],
                   subcommands: set[tuple[str, ...]], made: set[Path], where: str,
                   problems: list[str]) -> Path:
    while words and re.match(r"^[A-Z_]+=", words[0]):
        words = words[1:]  # VAR=value before a command
    if not words:
        return cwd
    head, args = words[0], words[1:]
    if head == "cd":
        dest = (cwd / args[0]).resolve() if args else root
        if not dest.is_dir():
            problems.append(f"{where}: cd {args[0] if args else ''}: no such directory")
            return cwd
        return dest
    if head == "make":
        if not (cwd / "Makefile").exists():
            problems.append(f"{where}: make: no Makefile in {cwd.relative_to(root)}/ (the "
                            "commands before it changed directory)")
            return cwd
        for a in args:
            if a.startswith("-") or "=" in a:
                continue
            if a not in targets:
                problems.append(f"{where}: make {a}: no such target in the Makefile")
        return cwd
    if head.endswith("python3") and args[:2] == ["-m", "blklab"]:
        head, args = "blklab", args[2:]
    if head == "blklab":
        positional = [a for a in args if not a.startswith("-")]
        if not positional:
            return cwd
        two = tuple(positional[:2])
        if (positional[0],) not in subcommands:
            problems.append(f"{where}: blklab {positional[0]}: no such subcommand")
        elif any(c[:1] == two[:1] and len(c) == 2 for c in subcommands) and two not in subcommands:
            problems.append(f"{where}: blklab {' '.join(two)}: no such subcommand")
        args = positional[1:]
    for k, a in enumerate(args):
        if a.startswith("-") or "://" in a or not _looks_like_path(a):
            continue
        p = (cwd / a).resolve()
        if head in ("cp", "mv", "install") and k == len(args) - 1:
            made.add(p)  # the destination: exists from here on
            continue
        if not p.exists() and p not in made:
            problems.append(f"{where}: {a}: no such file or directory (from "
                            f"{cwd.relative_to(root) if cwd != root else '.'})")
    return cwd


def _looks_like_path(word: str) -> bool:
    if any(c in word for c in "<>*?$"):
        return False  # a placeholder or a glob
    if word.startswith(("results/", "../results/")) or "/results/" in word:
        return False  # written by a run
    return "/" in word or bool(re.search(r"\.(toml|md|json|py|sh|fio|txt)$", word))


def problems(root: Path = REPO) -> list[str]:
    out = link_problems(tracked_markdown(root), root)
    guide = root / GETTING_STARTED
    if guide.exists():
        out += command_problems(guide, root)
    else:
        out.append(f"{GETTING_STARTED}: missing")
    return out
