"""Tables of figures in the docs name the command that made them
(harness/tests/test_docs_figures.py, in make test).

The pages: every tracked Markdown file (README.md, docs/, scenarios/, the
components' READMEs) but docs/reference/, which is generated whole and
says so in its first line.

A *figure cell* is a table body cell that, with its code spans, links,
HTML tags and emphasis taken out, holds a number and nothing else but
units (`us`, `MiB/s`, `IOPS`, ...), signs and separators: `2,609`, `52 us`,
`+20.6%`, `0.82x`, `3.8-6.7 s`. A version (`6.12.118-1`) and a serial
with a leading zero (patch `0050`, lab `01`) are not numbers here. A cell with words beside its number (`4 KiB random reads`, `mean
683 us`) is prose, and so is a key or value in a code span (`read_expire
= 500`): what a table *says*, not what it *measured*. A *figure table* is
a table with at least one figure cell.

Each figure table names, in the text between it and the heading or table
before it, the command that printed it, as a code span (or a line of a
fenced code block) whose first word is a `make` target, a `blklab`
subcommand (also as `/usr/bin/python3 -m blklab ...` or after `cd harness
&&`), an executable the CMake tree builds (`devmodel-sim`) or a tracked
script's path (`tests/bench/cpu-paths.py ...`, also
after `/usr/bin/python3`). Every such command there must exist. `blklab report
--markdown RUN` writes such a line above the tables it prints.

A figure table whose figures are not measured (exit statuses, bounds a
check uses) says so instead, in the same place, with an HTML comment
`<!-- not measured: PATH -->` naming the tracked file that defines them;
a reviewer reads each one.

`problems()` returns "file:line: what" for each table that breaks this.
"""

from __future__ import annotations

import re
import shlex
import subprocess
from dataclasses import dataclass
from pathlib import Path

from blklab import docs_check

REPO = docs_check.REPO

_DIVIDER = re.compile(r"^\s*\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)*\|?\s*$")
_CODE_SPAN = re.compile(r"(`+)\s*(.+?)\s*\1", re.S)
_LINK = re.compile(r"!?\[[^\]]*\]\([^)]*\)")
_TAG = re.compile(r"<[^>]+>")
_VERSION = re.compile(r"\d+(\.\d+){2,}(-\d+)?")
_SERIAL = re.compile(r"(?<![\d.,])0\d+(?![\d.,])")  # 0050, 01: a patch's or a lab's number
# Units and the like a figure cell may carry beside its number.
UNITS = frozenset("""
    ns us µs ms s sec min h ns/op B KiB MiB GiB TiB kB KB MB GB TB K M G k x
    KiB/s MiB/s GiB/s kB/s MB/s GB/s IOPS kIOPS MIOPS rpm tps ops/s Hz kHz MHz GHz
""".split())
_NOT_MEASURED = re.compile(r"<!--\s*not measured:\s*(\S+)\s*-->")
COMMANDS = ("make", "blklab")


@dataclass(frozen=True)
class Table:
    line: int          # the header row's line, from 1
    header: list[str]
    rows: list[list[str]]
    before: str        # the text from the previous heading or table to the header


def pages(root: Path = REPO) -> list[Path]:
    """The pages the check reads: every tracked Markdown file but the
    generated reference (docs/reference/)."""
    return sorted(p for p in docs_check.tracked_markdown(root)
                  if not p.relative_to(root).as_posix().startswith("docs/reference/"))


def _cells(row: str) -> list[str]:
    row = row.strip()
    row = row[1:] if row.startswith("|") else row
    row = row[:-1] if row.endswith("|") and not row.endswith("\\|") else row
    out, cur, code = [], "", False
    for i, ch in enumerate(row):
        if ch == "`":
            code = not code
        if ch == "|" and not code and (i == 0 or row[i - 1] != "\\"):
            out.append(cur.strip())
            cur = ""
        else:
            cur += ch
    out.append(cur.strip())
    return out


def tables(text: str) -> list[Table]:
    """Every Markdown table outside fenced code, with the text before it."""
    lines = text.splitlines()
    prose = dict(docs_check.prose_lines(text))
    out, i, floor = [], 0, 0
    while i < len(lines):
        n = i + 1
        if n in prose and "|" in lines[i] and i + 1 < len(lines) \
                and _DIVIDER.match(lines[i + 1]) and "|" in lines[i + 1]:
            end = i + 2
            while end < len(lines) and "|" in lines[end] and lines[end].strip():
                end += 1
            k = i - 1
            while k > floor and not (k + 1 in prose and lines[k].startswith("#")):
                k -= 1
            out.append(Table(n, _cells(lines[i]), [_cells(r) for r in lines[i + 2:end]],
                             "\n".join(lines[k:i])))
            floor = i = end
        else:
            i += 1
    return out


def is_figure(cell: str) -> bool:
    """A cell that is a number and its unit (see the module's docstring)."""
    text = _CODE_SPAN.sub(" ", cell)
    text = _LINK.sub(" ", text)
    text = _TAG.sub(" ", text).replace("*", " ").replace("~", " ")
    text = _SERIAL.sub(" ", _VERSION.sub(" ", text))
    if not re.search(r"\d", text):
        return False
    words = re.findall(r"[A-Za-zµ][A-Za-zµ/]*", text)
    return all(w in UNITS for w in words)


def figure_cells(table: Table) -> list[str]:
    return [c for row in table.rows for c in row if is_figure(c)]


def _command_words(span: str, tools: frozenset[str] = frozenset()) -> list[str] | None:
    """The command of a code span, as words, or None if it is not one:
    VAR=value, `cd DIR &&` and `/usr/bin/python3` (-m blklab) dropped.
    `tools`: the CMake tree's executables, commands by their names."""
    try:
        words = shlex.split(span, comments=True)
    except ValueError:
        return None
    while words and re.match(r"^[A-Z_]+=", words[0]):
        words = words[1:]
    if len(words) >= 3 and words[0] == "cd" and words[2] == "&&":
        words = words[3:]
    python = bool(words) and words[0].endswith("python3")
    if python:
        words = words[1:]
        if words[:2] == ["-m", "blklab"]:
            words = ["blklab"] + words[2:]
    if not words or words == ["blklab"] or words == ["make"]:
        return None  # the tool's name in prose, no command
    head = words[0]
    if head in COMMANDS or head in tools or re.search(r"/[\w.-]+\.(py|sh)$", head) \
            or (python and re.fullmatch(r"[\w-]+\.py", head)):
        return words
    return None


def cmake_tools(root: Path = REPO) -> set[str]:
    """The executables the CMake tree builds (add_executable), e.g.
    devmodel-sim: a command a page may name by its name."""
    out = subprocess.run(["git", "-C", str(root), "grep", "-h", "add_executable("],
                         capture_output=True, text=True).stdout
    return set(re.findall(r"add_executable\(([A-Za-z][\w-]*)", out))


class _Resolver:
    def __init__(self, root: Path):
        self.root = root
        self._targets: set[str] | None = None
        self._subcommands: set[tuple[str, ...]] | None = None
        self._tracked: set[str] | None = None
        self.tools = frozenset(cmake_tools(root))

    def tracked(self) -> set[str]:
        """The repository's tracked files, relative to its root."""
        if self._tracked is None:
            out = subprocess.run(["git", "-C", str(self.root), "ls-files"], capture_output=True,
                                 text=True, check=True).stdout
            self._tracked = set(out.splitlines())
        return self._tracked

    def problem(self, words: list[str], page: Path) -> str | None:
        """Why the command does not exist, or None when it does."""
        head = words[0]
        if head in self.tools:
            return None  # an add_executable of the CMake tree
        if head == "make":
            if self._targets is None:
                self._targets = docs_check.makefile_targets(self.root)
            missing = [a for a in words[1:] if not a.startswith("-") and "=" not in a
                       and a not in self._targets]
            return f"make {missing[0]}: no such target in the Makefile" if missing else None
        if head == "blklab":
            if self._subcommands is None:
                self._subcommands = docs_check.cli_commands()
            positional = [a for a in words[1:] if not a.startswith("-")]
            if positional and (positional[0],) not in self._subcommands:
                return f"blklab {positional[0]}: no such subcommand"
            return None
        rel = head.lstrip("./")
        candidates = {rel, (page.parent.relative_to(self.root) / rel).as_posix(), f"harness/{rel}"}
        candidates |= {c.replace("../", "", 1) for c in candidates}
        if candidates & self.tracked():
            return None
        return f"{head}: not a tracked script"


def markers(table: Table, tools: frozenset[str] = frozenset()) -> list[list[str]]:
    """The commands named in the text before the table: its code spans,
    and each line of its fenced code blocks."""
    out, prose, fenced = [], [], None
    for line in table.before.splitlines():
        m = docs_check.FENCE.match(line)
        if m:
            fenced = m.group(1) if fenced is None else (None if m.group(1) == fenced else fenced)
            continue
        if fenced is None:
            prose.append(line)
        else:
            words = _command_words(line.strip().removeprefix("$ "), tools)
            if words:
                out.append(words)
    for _, span in _CODE_SPAN.findall(_TAG.sub(" ", "\n".join(prose))):
        words = _command_words(" ".join(span.split()), tools)
        if words:
            out.append(words)
    return out


def page_problems(page: Path, root: Path = REPO, text: str | None = None) -> list[str]:
    """The page's problems; with `text`, those of that text as if it were
    the page (what `blklab report --markdown` prints, before it is pasted)."""
    shown = page.relative_to(root).as_posix()
    resolver = _Resolver(root)
    problems = []
    for table in tables(page.read_text() if text is None else text):
        exempt = _NOT_MEASURED.findall(table.before)
        commands = markers(table, resolver.tools)
        bad = [(w, resolver.problem(w, page)) for w in commands]
        for words, why in bad:
            if why:
                problems.append(f"{shown}:{table.line}: `{' '.join(words)}`: {why}")
        if not figure_cells(table):
            continue
        if exempt:
            for path in exempt:
                if path not in resolver.tracked():
                    problems.append(f"{shown}:{table.line}: not measured: {path}: "
                                    "not a tracked file")
            continue
        if not any(why is None for _, why in bad):
            problems.append(
                f"{shown}:{table.line}: a table of figures ({figure_cells(table)[0]!r}, ...) "
                "names no command that made it: put the command in a code span between the "
                "table and the heading or table before it (`blklab report --markdown RUN` "
                "writes the line), or `<!-- not measured: PATH -->` if its figures are "
                "defined in PATH")
    return problems


def problems(root: Path = REPO) -> list[str]:
    return [p for page in pages(root) for p in page_problems(page, root)]
