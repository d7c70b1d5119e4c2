"""Finding where two runs of the same cell part ways.

`blklab diverge SCENARIO [--cell ID]` runs one cell twice, side by side,
with QEMU's determinism trace on (the det_* trace events of blklab's patch
series, see docs/determinism.md), and prints the first event the guest saw
differently in the two runs, with the callback that caused it.

Each trace line is one thing that can reach the guest: an MMIO or port
access and the value it returned, a device's write to guest RAM, an
interrupt request or line change, a virtual-clock timer firing, an
interrupt taken by a vCPU. It carries the thread it happened in, the
instruction count and virtual time at that point, and its source (the
bottom half, timer, fd handler or MMIO region being dispatched):

    det_mmio_read cpu0 ic=81234 vt=81234 src=- region=serial addr=0x5 size=1 value=0x60

In a deterministic run the events of the vCPU thread ("cpuN") are the same
sequence every time, and nothing outside it ("bql": the main loop or
another thread holding the iothread lock; "other") touches the guest.
So the report has two parts: the first difference between the two vCPU
sequences, and the guest-visible events that came from outside the vCPU
thread before it, which are where a divergence comes from.
"""

from __future__ import annotations

import bisect
import json
import logging
import math
import re
import shutil
import subprocess
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from blklab.cell import CellContext, run_cell
from blklab.errors import BlklabError

log = logging.getLogger(__name__)

TRACE_EVENTS = "det_*"  # the -trace pattern: every determinism event
TRACE_FILE = "trace.log"
UNMAP = "det_dma_unmap"  # a mapped DMA buffer's data, whichever thread wrote it
# Keys of a cell's JSON that record the host rather than the guest: "host"
# (wall clock, scratch paths in the QEMU command line, backend; see
# results.py) and "files" (which host-side files were kept: QEMU's stderr
# only when it wrote something, the domain XML only through libvirt).
HOST_KEYS = ("host", "files")
# What the guest init prints once the cell's results are sent
# (guest-images/init); the guest then halts whenever the harness ends it,
# so two consoles of one cell are compared up to here.
CELL_DONE = "blklab: cell done"


def cells_of(run_dir: Path) -> dict[str, dict]:
    """A run directory's cells (cell-*.json), by cell id."""
    return {p.name[len("cell-"):-len(".json")]: json.loads(p.read_text())
            for p in sorted(run_dir.glob("cell-*.json"))}


def console_until_done(run_dir: Path, cell: dict) -> str | None:
    """The cell's console log up to CELL_DONE; None when the guest never
    got there (or the run kept no console)."""
    path = run_dir / cell.get("files", {}).get("console_log", "-")
    text = path.read_text(errors="replace") if path.is_file() else ""
    return text[:text.index(CELL_DONE)] if CELL_DONE in text else None

_PREFIX = re.compile(r"^\d+@\d+\.\d+:")  # the log backend's optional "pid@time:"
_LINE = re.compile(r"^(det_\w+) (\S+) ic=(-?\d+) vt=(-?\d+) src=(\S+) ?(.*)$")


@dataclass(frozen=True)
class Event:
    """One line of a determinism trace."""

    line: int  # 1-based line number in its file
    name: str  # det_mmio_read, det_irq, ...
    thread: str  # "cpuN" (the vCPU thread), "bql" or "other"
    icount: int
    vtime: int
    source: str  # "-", "bh:<name>", "timer:+0x..", "fd:+0x..", "mmio:<region>"
    detail: str  # the event's own fields

    @property
    def in_vcpu(self) -> bool:
        return self.thread.startswith("cpu")

    @property
    def sequenced(self) -> bool:
        """Part of the sequence two deterministic runs must share: the
        vCPU thread's events, except the end of a mapped DMA transfer,
        which may come from any thread at any time (only its data counts)."""
        return self.in_vcpu and self.name != UNMAP

    @property
    def from_outside(self) -> bool:
        """Reached the guest from outside the vCPU thread once the guest ran."""
        return not self.in_vcpu and self.name != UNMAP and self.icount > 0

    def key(self) -> tuple:
        return (self.name, self.thread, self.icount, self.vtime, self.source, self.detail)

    def text(self, symbols: "Symbols | None" = None) -> str:
        source, detail = self.source, self.detail
        if symbols is not None:
            source, detail = symbols.resolve(source), symbols.resolve(detail)
        return (f"{self.name} {self.thread} ic={self.icount} vt={self.vtime} "
                f"src={source} {detail}").rstrip()


def parse_trace(lines: Iterable[str]) -> list[Event]:
    """The det_* events of a trace log; other lines are skipped."""
    events = []
    for n, raw in enumerate(lines, start=1):
        m = _LINE.match(_PREFIX.sub("", raw.rstrip("\n"), count=1))
        if m:
            events.append(Event(n, m.group(1), m.group(2), int(m.group(3)), int(m.group(4)),
                                m.group(5), m.group(6)))
    return events


def read_trace(path: Path) -> list[Event]:
    with open(path, errors="replace") as f:
        return parse_trace(f)


@dataclass
class Divergence:
    """Where two traces part ways. `index` counts vCPU-thread events."""

    index: int
    common: list[Event]  # the last vCPU events both runs share, oldest first
    first: tuple[Event | None, Event | None]  # each run's event at `index` (None: it ended)
    outside: tuple[list[Event], list[Event]]  # events outside the vCPU thread that led there


@dataclass
class Comparison:
    vcpu_events: tuple[int, int]
    outside_events: tuple[int, int]
    divergence: Divergence | None
    outside_sources: tuple[Counter, Counter] = field(default_factory=lambda: (Counter(), Counter()))
    # mapped DMA buffers (region, address, length, crc) one run wrote and the other did not
    dma_only: tuple[list[str], list[str]] = ([], [])

    @property
    def identical(self) -> bool:
        return self.divergence is None and not any(self.dma_only)


def compare(a: list[Event], b: list[Event], context: int = 5) -> Comparison:
    """The first difference between the vCPU-thread sequences of two
    traces, and the events from outside the vCPU thread that preceded it."""
    va = [e for e in a if e.sequenced]
    vb = [e for e in b if e.sequenced]
    sources = (_outside_sources(a), _outside_sources(b))
    counts = (sum(e.from_outside for e in a), sum(e.from_outside for e in b))
    da, db = _dma_data(a), _dma_data(b)
    dma_only = (sorted((da - db).elements()), sorted((db - da).elements()))
    n = min(len(va), len(vb))
    index = next((i for i in range(n) if va[i].key() != vb[i].key()), None)
    if index is None:
        # One trace is a prefix of the other: the harness ends QEMU at a
        # host-dependent time after the guest halted, and a halted guest's
        # timers go on firing until then. Whether the guest finished the
        # same way is for its results to say.
        return Comparison((len(va), len(vb)), counts, None, sources, dma_only)
    first = (va[index] if index < len(va) else None, vb[index] if index < len(vb) else None)
    last_line = (va[index - 1].line if index else 0, vb[index - 1].line if index else 0)
    outside = tuple(
        [e for e in events if e.from_outside and last <= e.line
         and (stop is None or e.line < stop.line)][-4 * context:]
        for events, last, stop in zip((a, b), last_line, first))
    div = Divergence(index, va[max(0, index - context):index], first, outside)  # type: ignore[arg-type]
    return Comparison((len(va), len(vb)), counts, div, sources, dma_only)


def _outside_sources(events: list[Event]) -> Counter:
    return Counter((e.name, e.source) for e in events if e.from_outside)


def _dma_data(events: list[Event]) -> Counter:
    return Counter(e.detail for e in events if e.name == UNMAP)


class Symbols:
    """Turns the "+0x<offset>" callback addresses of a trace (offsets from
    det_trace_anchor) into function names, with nm on the QEMU binary."""

    _OFFSET = re.compile(r"([+-]0x[0-9a-f]+)\b")

    def __init__(self, binary: Path):
        self._addrs: list[int] = []
        self._names: list[str] = []
        self._anchor: int | None = None
        try:
            out = subprocess.run(["nm", "--defined-only", str(binary)], capture_output=True,
                                 text=True, check=True, timeout=60).stdout
        except (OSError, subprocess.SubprocessError) as e:
            log.warning("no symbols from %s: %s", binary, e)
            return
        table = []
        for row in out.splitlines():
            parts = row.split()
            if len(parts) == 3 and parts[1] in "tTwW":
                table.append((int(parts[0], 16), parts[2]))
        table.sort()
        self._addrs = [a for a, _ in table]
        self._names = [n for _, n in table]
        self._anchor = next((a for a, name in table if name == "det_trace_anchor"), None)

    def name(self, offset: int) -> str | None:
        if self._anchor is None:
            return None
        addr = self._anchor + offset
        i = bisect.bisect_right(self._addrs, addr) - 1
        if i < 0:
            return None
        delta = addr - self._addrs[i]
        return self._names[i] if delta == 0 else f"{self._names[i]}+0x{delta:x}"

    def resolve(self, text: str) -> str:
        def one(m: re.Match) -> str:
            name = self.name(int(m.group(1), 16))
            return name if name else m.group(1)

        return self._OFFSET.sub(one, text)


# --- how long interrupts wait ---------------------------------------------

# x86's interrupt_request bits (include/exec/cpu-interrupt.h,
# target/i386/cpu.h), in the order x86_cpu_pending_interrupt() takes them:
# the one a det_intr took is the first of these its request holds that was
# raised and not yet taken.
X86_INTERRUPTS = (("poll", 0x10), ("sipi", 0x800), ("smi", 0x40), ("nmi", 0x200),
                  ("mce", 0x1000), ("hard", 0x2), ("virq", 0x100))
_CPU_MASK = re.compile(r"\bcpu=(\d+) (?:mask|request)=0x([0-9a-f]+)")


@dataclass(frozen=True)
class Wait:
    """An interrupt from the moment it was raised for a vCPU
    (det_cpu_interrupt) to the moment that vCPU took it (det_intr)."""

    kind: str  # "hard", "poll", "nmi", ...
    cpu: int
    raised: Event
    taken: Event

    @property
    def ns(self) -> int:
        return self.taken.vtime - self.raised.vtime


@dataclass
class Waits:
    waits: list[Wait]
    withdrawn: Counter  # kind -> raised, then cleared without being taken
    pending: list[tuple[str, int, Event]]  # raised and still untaken when the trace ends


def interrupt_waits(events: Iterable[Event]) -> Waits:
    """Pairs each interrupt raised for a vCPU with the det_intr that took
    it. A kind raised again while pending keeps its first raise (the
    guest waits from then). Taking an interrupt clears its bit first
    (x86_cpu_exec_interrupt() calls cpu_reset_interrupt() before it
    delivers), so a det_cpu_reset_interrupt is a take when a det_intr of
    that kind is that vCPU's next event, and a withdrawal otherwise (as the APIC clears one when nothing is pending
    any more)."""
    pending: dict[tuple[int, str], Event] = {}
    cleared: dict[tuple[int, str], tuple[Event, Event]] = {}  # (raise, reset)
    waits: list[Wait] = []
    withdrawn: Counter = Counter()

    def withdraw(key: tuple[int, str]) -> None:
        if cleared.pop(key, None) is not None:
            withdrawn[key[1]] += 1

    last: dict[str, Event] = {}  # each thread's latest event
    for e in events:
        before, last[e.thread] = last.get(e.thread), e
        if e.name not in ("det_cpu_interrupt", "det_cpu_reset_interrupt", "det_intr"):
            continue
        m = _CPU_MASK.search(e.detail)
        if not m:
            continue
        cpu, bits = int(m.group(1)), int(m.group(2), 16)
        kinds = [kind for kind, bit in X86_INTERRUPTS if bits & bit]
        if e.name == "det_cpu_interrupt":
            for kind in kinds:
                withdraw((cpu, kind))
                pending.setdefault((cpu, kind), e)
        elif e.name == "det_cpu_reset_interrupt":
            for kind in kinds:
                raised = pending.pop((cpu, kind), None)
                if raised is not None:
                    withdraw((cpu, kind))
                    cleared[(cpu, kind)] = (raised, e)
        else:
            def just_cleared(kind: str) -> bool:
                # The reset was this vCPU's last event: with -icount irq=
                # the interrupt's own time (qemu-patches/0050) is paid
                # between the two, so the count may have moved.
                c = cleared.get((cpu, kind))
                return c is not None and before is c[1]

            kind = next((k for k in kinds if (cpu, k) in pending or just_cleared(k)), None)
            if kind is not None:
                raised = (pending.pop((cpu, kind), None)
                          or cleared.pop((cpu, kind))[0])
                cleared.pop((cpu, kind), None)
                waits.append(Wait(kind, cpu, raised, e))
            for key in [k for k in cleared if k[0] == cpu]:
                withdraw(key)
    for key in list(cleared):
        withdraw(key)
    return Waits(waits, withdrawn,
                 [(kind, cpu, e) for (cpu, kind), e in sorted(pending.items())])


def _rank(ordered: list[int], q: float) -> int:
    """The nearest-rank q-th percentile of an ascending list."""
    return ordered[max(0, math.ceil(q / 100 * len(ordered)) - 1)]


def render_waits(w: Waits, symbols: Symbols | None = None, top: int = 5) -> str:
    """Per kind of interrupt: how many were taken and how long they waited
    (virtual ns: p50, p99, max), then the longest waits with where each
    was raised."""
    if not w.waits and not w.pending:
        return "no interrupt was raised for a vCPU in this trace"
    lines = ["interrupts raised for a vCPU until it took them (virtual ns; 'hard' "
             "includes any time the guest kept interrupts masked, 'poll' does not):"]
    for kind, _ in X86_INTERRUPTS:
        ns = sorted(x.ns for x in w.waits if x.kind == kind)
        untaken = sum(1 for k, _, _ in w.pending if k == kind)
        if not ns and not untaken and not w.withdrawn[kind]:
            continue
        text = f"  {kind}: {len(ns)} taken"
        if ns:
            text += f", p50 {_rank(ns, 50)}, p99 {_rank(ns, 99)}, max {ns[-1]}"
        if w.withdrawn[kind]:
            text += f"; {w.withdrawn[kind]} withdrawn untaken"
        if untaken:
            text += f"; {untaken} still pending at the end"
        lines.append(text)
    longest = sorted(w.waits, key=lambda x: (-x.ns, x.raised.line))[:top]
    if longest:
        lines.append(f"the {len(longest)} longest:")
        for x in longest:
            lines.append(f"  {x.ns} ns: {x.kind} for cpu{x.cpu}, raised at vt={x.raised.vtime} "
                         f"by {x.raised.thread} (src={_source(x.raised.source, symbols)}, "
                         f"line {x.raised.line}), taken at vt={x.taken.vtime} "
                         f"(line {x.taken.line})")
    return "\n".join(lines)


def result_differences(a: Any, b: Any, path: str = "", skip: tuple[str, ...] = HOST_KEYS
                       ) -> list[str]:
    """JSON paths where two cell results differ, leaving out the keys that
    record the host (`skip`, at the top level)."""
    if isinstance(a, dict) and isinstance(b, dict):
        out = []
        for k in sorted(set(a) | set(b)):
            if not path and k in skip:
                continue
            sub = f"{path}.{k}" if path else k
            if k not in a or k not in b:
                out.append(sub)
            else:
                out += result_differences(a[k], b[k], sub, skip)
        return out
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        out = []
        for i, (x, y) in enumerate(zip(a, b)):
            out += result_differences(x, y, f"{path}[{i}]", skip)
        return out
    return [] if a == b else [path or "(root)"]


def render(cmp: Comparison, symbols: Symbols | None, names: tuple[str, str] = ("A", "B"),
           top: int = 8) -> str:
    lines = [f"vCPU-thread events: {names[0]} {cmp.vcpu_events[0]}, "
             f"{names[1]} {cmp.vcpu_events[1]}; events from outside the vCPU thread: "
             f"{names[0]} {cmp.outside_events[0]}, {names[1]} {cmp.outside_events[1]}"]
    d = cmp.divergence
    if d is None:
        common = min(cmp.vcpu_events)
        lines.append(f"the guest saw the same {common} events in both runs"
                     + (" (the longer trace goes on after the shorter one ended)"
                        if cmp.vcpu_events[0] != cmp.vcpu_events[1] else ""))
    else:
        lines.append(f"first difference at vCPU event #{d.index}:")
        for e in d.common:
            lines.append(f"  = {e.text(symbols)}")
        for name, e in zip(names, d.first):
            lines.append(f"  {name} {e.text(symbols) if e else '(trace ended)'}")
        for name, e in zip(names, d.first):
            if e is not None and e.source != "-":
                lines.append(f"  source in {name}: {_source(e.source, symbols)}")
        for name, outside in zip(names, d.outside):
            if outside:
                lines.append(f"  from outside the vCPU thread before it, in {name}:")
                lines += [f"    {e.text(symbols)}" for e in outside]
        if not any(d.outside):
            lines.append("  nothing reached the guest from outside the vCPU thread before it: "
                         "look at the values read (value=) and timers (det_timer) above")
    for name, only in zip(names, cmp.dma_only):
        if only:
            lines.append(f"mapped DMA data only in {name} ({len(only)}): {only[0]}"
                         + (" ..." if len(only) > 1 else ""))
    for name, sources in zip(names, cmp.outside_sources):
        if sources:
            lines.append(f"guest-visible events from outside the vCPU thread in {name} "
                         f"(event, source: count):")
            for (event, source), count in sources.most_common(top):
                lines.append(f"  {event} {_source(source, symbols)}: {count}")
    return "\n".join(lines)


def _source(source: str, symbols: Symbols | None) -> str:
    return symbols.resolve(source) if symbols else source


# --- running a cell twice -------------------------------------------------

@dataclass
class DivergeResult:
    comparison: Comparison
    result_diffs: list[str]
    run_dirs: tuple[Path, Path]
    statuses: tuple[str, str]


def run(scenario_path: Path, cell_id: str | None, out: Path | None, mode: str | None,
        results_root: Path, context: int = 5) -> tuple[DivergeResult, str]:
    """Run the cell twice with the determinism trace and compare."""
    from blklab import paths, scenario as scenario_mod

    s = scenario_mod.load(scenario_path, mode=mode)
    cells = s.cells()
    if cell_id is None:
        cell = cells[0]
    else:
        matches = [c for c in cells if c.id == cell_id]
        if not matches:
            raise BlklabError(f"{scenario_path}: no cell '{cell_id}'; cells: "
                              + ", ".join(c.id for c in cells))
        cell = matches[0]
    mode = mode or "deterministic"
    qemu = paths.qemu_binary()
    image_dir = paths.image_dir(s.guest.kernel)
    ctx_args = dict(qemu=qemu, image_dir=image_dir, image=json.loads((image_dir / "image.json").read_text()),
                    accel="tcg", mode=mode)
    root = out or (results_root / s.name / "diverge" / cell.id)
    dirs = (root / "a", root / "b")
    for d in dirs:
        shutil.rmtree(d, ignore_errors=True)
        d.mkdir(parents=True)

    def one(d: Path) -> tuple[dict, Path]:
        ctx = TracingContext(trace_path=d / TRACE_FILE, **ctx_args)
        result, files = run_cell(cell, s, ctx)
        for rel, blob in files.items():
            (d / Path(rel).name).write_bytes(blob)
        data = json.loads(result.to_json())
        (d / "cell.json").write_text(result.to_json())
        return data, d / TRACE_FILE

    with ThreadPoolExecutor(max_workers=2) as pool:
        (ra, ta), (rb, tb) = pool.map(one, dirs)
    for t in (ta, tb):
        if not t.exists():
            raise BlklabError(f"QEMU wrote no trace at {t}: is it built with blklab's "
                              "determinism trace patch?")
    events_a = read_trace(ta)
    cmp = compare(events_a, read_trace(tb), context)
    result = DivergeResult(cmp, result_differences(ra, rb), dirs,
                           (ra.get("status", "?"), rb.get("status", "?")))
    errors = (ra.get("error"), rb.get("error"))
    symbols = Symbols(qemu)
    text = [f"cell {cell.id} ({mode}), run twice: {dirs[0]} and {dirs[1]}",
            render(cmp, symbols)]
    if result.result_diffs:
        text.append("cell results differ in: " + ", ".join(result.result_diffs[:20])
                    + (" ..." if len(result.result_diffs) > 20 else ""))
    else:
        text.append("cell results are identical (leaving out: " + ", ".join(HOST_KEYS) + ")")
    for name, status, error, d in zip("AB", result.statuses, errors, dirs):
        if status != "ok":
            text.append(f"note: run {name} failed: {error}; see {d}")
    text.append(f"in run A, {render_waits(interrupt_waits(events_a), symbols, top=3)}")
    return result, "\n".join(text)


@dataclass
class TracingContext(CellContext):
    """A cell context whose VMs write the determinism trace."""

    trace_path: Path | None = None

    def make_vm(self, config):
        config.trace_path = self.trace_path
        return super().make_vm(config)
