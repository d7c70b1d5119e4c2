"""A traced cell's blktrace as blkparse reads it (the blktrace package,
which make deps installs): how many requests were queued, how many plugs
were started, and which process dispatched each request to the driver.
`blklab report --markdown` prints it per traced cell; lab 12 reads it."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

from blklab.errors import BlklabError


@dataclass(frozen=True)
class Dispatches:
    """A traced cell's requests as blkparse reads its blktrace.bin: how many
    were queued (Q), how many plugs were started (P), and who dispatched
    them to the driver (D), by process name ("kworker/1:1H" as "kworker")."""

    queued: int
    plugs: int
    by: dict[str, int]


def parse_dispatches(blkparse_text: str) -> Dispatches:
    queued = plugs = 0
    by: dict[str, int] = {}
    for line in blkparse_text.splitlines():
        fields = line.split()
        # Event lines: "259,0 0 1 0.000000000 131 Q R 682966704 + 8 [blkgen]".
        if len(fields) < 7 or "," not in fields[0] or "[" not in line:
            continue
        action = fields[5]
        if action == "Q":
            queued += 1
        elif action == "P":
            plugs += 1
        elif action == "D":
            process = line.rsplit("[", 1)[1].rstrip("]").split("/", 1)[0]
            by[process] = by.get(process, 0) + 1
    return Dispatches(queued, plugs, by)


def blkparse_text(trace: Path) -> str:
    """blkparse's default output (the blktrace package, which make deps
    installs) over a cell's cells/<cell>/blktrace.bin."""
    try:
        with trace.open("rb") as f:
            proc = subprocess.run(["blkparse", "-i", "-"], stdin=f, capture_output=True,
                                  text=True)
    except OSError as e:
        raise BlklabError(f"{trace}: cannot run blkparse on it: {e}") from None
    if proc.returncode != 0:
        raise BlklabError(f"{trace}: blkparse failed: {proc.stderr.strip()[-300:]}")
    return proc.stdout


def dispatches(trace: Path) -> Dispatches:
    """Who dispatched a cell's traced requests (cells/<cell>/blktrace.bin)."""
    return parse_dispatches(blkparse_text(trace))
