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


def time_reversals(blkparse_text: str) -> int:
    """The events stamped earlier than the event before them on the same
    CPU. The kernel numbers each CPU's events in the order it records them
    and stamps each as it numbers it (kernel/trace/blktrace.c,
    __blk_add_trace: ++ of the per-CPU sequence, then ktime_get(), with
    interrupts off), so where the guest's clock is sound the times of one
    CPU's events never fall in sequence order. A reversal is a clock fault
    of a host-timed guest; btt reads the events in time order and every
    latency is a difference of stamps, so btt's phase figures over such a
    trace are not sound."""
    by_cpu: dict[str, list[tuple[int, int]]] = {}
    for line in blkparse_text.splitlines():
        f = line.split()
        # "259,0 1 513 0.042512345 131 Q R 682966704 + 8 [fio]"
        if len(f) < 6 or "," not in f[0] or not f[2].isdigit():
            continue
        sec, _, frac = f[3].partition(".")
        if not (sec.isdigit() and frac.isdigit()):
            continue
        ns = int(sec) * 1_000_000_000 + int(frac.ljust(9, "0")[:9])
        by_cpu.setdefault(f"{f[0]} {f[1]}", []).append((int(f[2]), ns))
    reversals = 0
    for events in by_cpu.values():
        events.sort()
        reversals += sum(1 for a, b in zip(events, events[1:]) if b[1] < a[1])
    return reversals


def blkparse_text(trace: Path) -> str:
    """blkparse's default output (the blktrace package, which make deps
    installs) over a cell's cells/<cell>/blktrace.bin."""
    try:
        data = trace.read_bytes()
    except OSError as e:
        raise BlklabError(f"{trace}: cannot read it: {e}") from None
    return blkparse_bytes(data, str(trace))


def blkparse_bytes(data: bytes, name: str) -> str:
    """blkparse's default output over the bytes of a blktrace.bin; `name`
    names it in an error."""
    try:
        proc = subprocess.run(["blkparse", "-i", "-"], input=data, capture_output=True)
    except OSError as e:
        raise BlklabError(f"{name}: cannot run blkparse on it: {e}") from None
    if proc.returncode != 0:
        err = proc.stderr.decode(errors="replace").strip()[-300:]
        raise BlklabError(f"{name}: blkparse failed: {err}")
    return proc.stdout.decode(errors="replace")


def dispatches(trace: Path) -> Dispatches:
    """Who dispatched a cell's traced requests (cells/<cell>/blktrace.bin)."""
    return parse_dispatches(blkparse_text(trace))
