"""A run's figures as Markdown, for a scenario README: `blklab report
--markdown RUN`. The first line names the command that made the run and
the one that made the tables, so a reader can regenerate both; then one
row per cell, job and direction, the notes, and the expectations with
their verdicts."""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from blklab import expectations as expectations_mod
from blklab import notes
from blklab.blktrace import dispatches


def latency(ns: float | None) -> str:
    """A latency as the READMEs write it: 52 us, 1.50 ms, 1.06 s."""
    if ns is None:
        return "-"
    if ns >= 1e9:
        return f"{ns / 1e9:.3g} s"
    if ns >= 1e6:
        return f"{ns / 1e6:.3g} ms"
    return f"{ns / 1e3:.3g} us"


def _plain(item: str) -> str:
    """KEY=VALUE as one would type it: a TOML string of plain characters
    without its quotes (--guest reads an unquoted value as text)."""
    key, _, value = item.partition("=")
    m = re.fullmatch(r'"([A-Za-z0-9._-]+)"', value)
    return f"{key}={m.group(1)}" if m else item


def run_command(manifest: dict[str, Any]) -> str:
    scenario = manifest.get("scenario", {})
    path = scenario.get("path", "")
    shown = "scenarios/" + path.rsplit("/scenarios/", 1)[1] if "/scenarios/" in path \
        else path or f"{scenario.get('name', '?')}.toml"
    guest = "".join(f"--guest {shlex.quote(_plain(item))} "
                    for item in manifest.get("guest_set") or ())
    return "blklab run " + ("--short " if manifest.get("short") else "") + guest + shown


def run_name(manifest: dict[str, Any]) -> str:
    """The run directory `blklab run` gives by default, not wherever this
    copy of it lives: what a reader can pass to the command again."""
    return (f"results/{manifest.get('scenario', {}).get('name', '?')}/"
            f"{manifest.get('run_id', '?')}")


def _run_line(manifest: dict[str, Any]) -> str:
    qemu = (manifest.get("qemu") or {}).get("cache_key", "unknown")
    image = str((manifest.get("image") or {}).get("hash", "unknown"))[:12]
    return (f"`{run_command(manifest)}` (run {manifest.get('run_id', '?')}, "
            f"{manifest.get('mode', '?')} mode, QEMU build {qemu}, guest image {image})")


@dataclass(frozen=True)
class Totals:
    """One cell's figures over all its jobs, and what the device model says
    of them. `in_device` is Little's law: requests in the device on average,
    IOPS times the model's mean service time; `dies_busy` the share of the
    workload's time the flash dies worked (SSD models only)."""

    iops: float
    service_ns: float | None
    in_device: float | None
    dies_busy: float | None


def totals(cell: dict[str, Any]) -> Totals:
    jobs = cell["summary"]
    iops = sum(s["iops"] for s in jobs)
    # The workload's measured length: its longest job's I/Os over its rate.
    seconds = max((s["total_ios"] / s["iops"] for s in jobs if s.get("iops")), default=0.0)
    model = cell.get("devmodel") or {}
    ops = (model.get("service_ns") or {}).values()
    count = sum(op["count"] for op in ops)
    service = sum(op["total"] for op in ops) / count if count else None
    dies = model.get("die_busy_ns") or []
    busy = sum(dies) / (len(dies) * seconds * 1e9) if dies and seconds else None
    return Totals(iops, service, iops * service / 1e9 if service is not None else None, busy)


def _none_of(cell: dict[str, Any]) -> tuple:
    """What identifies a cell's counterpart under none: the same device,
    queue tunables, seed and repeat (iosched tunables are the scheduler's own)."""
    req = cell["request"]
    queue = tuple(sorted((k, v) for k, v in req.get("tunables", {}).items()
                         if not k.startswith("iosched/")))
    return req["device"]["name"], queue, req.get("seed"), req.get("repeat")


def shares_of_none(cells: list[dict[str, Any]]) -> dict[str, float]:
    """Each ok cell's IOPS (all jobs) over its none counterpart's, where the
    run has one."""
    ok = [c for c in cells if c["status"] == "ok"]
    none = {_none_of(c): totals(c).iops for c in ok if c["request"]["scheduler"] == "none"}
    return {c["cell_id"]: totals(c).iops / none[_none_of(c)] for c in ok
            if none.get(_none_of(c))}


def _figure(value: float | None, fmt: str) -> str:
    return "-" if value is None else format(value, fmt)


def totals_table(cells: list[dict[str, Any]]) -> list[str]:
    shares = shares_of_none(cells)
    out = ["| cell | IOPS, all jobs | of none's | model's mean service | in the device "
           "(Little) | dies busy |", "|---|---|---|---|---|---|"]
    for c in cells:
        if c["status"] != "ok":
            continue
        t = totals(c)
        out.append(f"| {c['cell_id']} | {t.iops:,.0f} | {_figure(shares.get(c['cell_id']), '.2f')} "
                   f"| {latency(t.service_ns)} | {_figure(t.in_device, '.1f')} | "
                   f"{_figure(None if t.dies_busy is None else 100 * t.dies_busy, '.1f')}"
                   f"{'' if t.dies_busy is None else '%'} |")
    return out


def _traced(run_dir: Path | None, cells: list[dict[str, Any]]) -> list[tuple[dict, Path]]:
    """The ok cells of a run directory that carry a blktrace, with its path."""
    if run_dir is None:
        return []
    traces = [(c, run_dir / "cells" / c["cell_id"] / "blktrace.bin") for c in cells
              if c["status"] == "ok"]
    return [(c, trace) for c, trace in traces if trace.is_file()]


def dispatch_rows(label: str | None, traced: list[tuple[dict, Path]]) -> list[str]:
    rows = []
    for c, trace in traced:
        d = dispatches(trace)
        ios = sum(s["total_ios"] for s in c["summary"])
        switches = sum(j.get("ctx", 0) for j in (c.get("workload") or {}).get("jobs", []))
        who = ", ".join(f"{k} {v:,}" for k, v in sorted(d.by.items())) or "-"
        rows.append(f"| {'' if label is None else label + ' | '}{c['cell_id']} | {d.queued:,} | "
                    f"{d.plugs:,} | {who} | {switches / ios if ios else 0:.2f} |")
    return rows


DISPATCH_HEAD = ("| cell | queued (Q) | plugs (P) | dispatched by (D) | "
                 "workload context switches per I/O |")


def render(cells: list[dict[str, Any]], manifest: dict[str, Any],
           outcomes: list[expectations_mod.Outcome], run_dir: Path | None = None) -> str:
    out = [f"Run {_run_line(manifest)}; "
           f"tables by `blklab report --markdown {run_name(manifest)}`:", ""]
    out += ["| cell | job | dir | IOPS | mean | p50 | p99 | p99.9 |",
            "|---|---|---|---|---|---|---|---|"]
    for c in cells:
        if c["status"] != "ok":
            out.append(f"| {c['cell_id']} | - | - | failed: {c.get('error') or ''} "
                       "| | | | |")
            continue
        for s in c["summary"]:
            out.append(f"| {c['cell_id']} | {s['job']} | {s['direction']} | {s['iops']:.0f} | "
                       f"{latency(s['clat_mean_ns'])} | {latency(s['clat_p50_ns'])} | "
                       f"{latency(s['clat_p99_ns'])} | {latency(s['clat_p99.9_ns'])} |")
    if any(c["status"] == "ok" for c in cells):
        out += ["", f"Each cell over all its jobs (`blklab report --markdown "
                f"{run_name(manifest)}`):", ""] + totals_table(cells)
    traced = _traced(run_dir, cells)
    if traced:
        out += ["", f"Each traced cell's requests (`blklab report --markdown "
                f"{run_name(manifest)}`, from blkparse of cells/CELL/blktrace.bin):", "",
                DISPATCH_HEAD, "|---|---|---|---|---|"] + dispatch_rows(None, traced)
    lines = notes.lines(cells)
    if lines:
        out += [""] + [f"- {line}" for line in lines]
    if outcomes:
        out += ["", f"Expectations of the same run (`blklab report --markdown "
                f"{run_name(manifest)}`, "
                "as `blklab check` decides them):", "",
                "| verdict | expectation | device | measured | per seed |",
                "|---|---|---|---|---|"]
        for o in outcomes:
            out.append(f"| {o.status} | {o.what} | {o.device} | {o.detail} | "
                       f"{o.per_seed() or '-'} |")
        out += ["", f"Expectations: {expectations_mod.summary(outcomes)}."]
    return "\n".join(out) + "\n"


# The guest settings a run's cells record (request.*), by the [guest] key
# (and --guest key) that sets each.
GUEST_KEYS = ("kernel", "vcpus", "memory_mib", "cpu", "cpu_rate", "vcpu_clocks",
              "vcpu_quantum_ns", "pause_ns", "irq_ns", "syscall_ns", "wake_ns", "nvme_poll_queues")


def _guest_of(cells: list[dict[str, Any]]) -> dict[str, str]:
    """A run's guest settings, as its first cell's request records them."""
    req = dict(next((c["request"] for c in cells if c.get("request")), {}))
    if req.get("mode") == "deterministic":
        # Recorded since the key came; before it a PAUSE was one instruction.
        req.setdefault("pause_ns", 0)
        # Recorded since presets came; before them the model had no events.
        for key in ("irq_ns", "syscall_ns", "wake_ns"):
            req.setdefault(key, 0)
    return {k: format(req[k], "g") if isinstance(req.get(k), float) else str(req.get(k))
            for k in GUEST_KEYS}


def labels(runs: list[tuple[list[dict[str, Any]], dict[str, Any]]]) -> list[str]:
    """Each run's column heading: the guest settings that differ between the
    runs, as KEY=VALUE (what --guest would set); the run id where none do."""
    guests = [_guest_of(cells) for cells, _ in runs]
    differ = [k for k in GUEST_KEYS if len({g.get(k) for g in guests}) > 1]
    return [" ".join(f"{k}={g.get(k)}" for k in differ) or str(m.get("run_id", "?"))
            for g, (_, m) in zip(guests, runs)]


def render_runs(runs: list[tuple[list[dict[str, Any]], dict[str, Any]]],
                run_dirs: list[Path] | None = None) -> str:
    """Several runs of one scenario side by side (for example the same file
    at several `--guest` settings), a column per run headed by the guest
    settings that differ: each cell's IOPS over all jobs, its share of
    none's, each job's p99, and what the guests read back where they differ."""
    scenarios = {m.get("scenario", {}).get("name") for _, m in runs}
    if len(scenarios) != 1:
        raise ValueError("runs of different scenarios cannot share a table: "
                         + ", ".join(sorted(str(n) for n in scenarios)))
    ids = []
    for cells, _ in runs:
        ids += [c["cell_id"] for c in cells if c["cell_id"] not in ids]
    # Per run: each cell's IOPS, None for a cell that failed, and shares.
    figures = [({c["cell_id"]: totals(c).iops if c["status"] == "ok" else None for c in cells},
                shares_of_none(cells)) for cells, _ in runs]
    heads = labels(runs)
    head = "| cell | " + " | ".join(heads) + " |"
    divider = "|---|" + "---|" * len(runs)
    names = [run_name(m) for _, m in runs]
    out = ["Tables by `blklab report --markdown " + " ".join(names) + "`, from these runs:", ""]
    out += [f"- {_run_line(m)}" for _, m in runs]
    out += ["", "IOPS of each cell, all jobs summed:", "", head, divider]
    for cid in ids:
        out.append(f"| {cid} | " + " | ".join(
            "-" if cid not in iops else "failed" if iops[cid] is None
            else f"{iops[cid]:,.0f}" for iops, _ in figures)
            + " |")
    if any(shares for _, shares in figures):
        out += ["", f"Each cell's IOPS over none's (`blklab report --markdown {' '.join(names)}`):",
                "", head, divider]
        for cid in ids:
            if any(cid in shares for _, shares in figures):
                out.append(f"| {cid} | " + " | ".join(
                    _figure(shares.get(cid), ".2f") for _, shares in figures) + " |")
    jobs: list[tuple[str, str, str]] = []
    p99s = []
    for cells, _ in runs:
        seen = {}
        for c in cells:
            for r in c["summary"] if c["status"] == "ok" else ():
                key = (c["cell_id"], r["job"], r["direction"])
                seen[key] = r["clat_p99_ns"]
                if key not in jobs:
                    jobs.append(key)
        p99s.append(seen)
    if jobs:
        out += ["", f"Each job's p99 (`blklab report --markdown {' '.join(names)}`):", "",
                "| cell | job | dir | " + " | ".join(heads) + " |",
                "|---|---|---|" + "---|" * len(runs)]
        for key in jobs:
            out.append(f"| {' | '.join(key)} | "
                       + " | ".join(latency(p.get(key)) if key in p else "-" for p in p99s)
                       + " |")
    traced = [(label, _traced(d, cells)) for label, d, (cells, _) in
              zip(heads, run_dirs or [None] * len(runs), runs)]
    if any(t for _, t in traced):
        out += ["", f"Each traced cell's requests (`blklab report --markdown {' '.join(names)}`, "
                "from blkparse of cells/CELL/blktrace.bin):", "",
                "| run " + DISPATCH_HEAD, "|---|---|---|---|---|---|"]
        for label, t in traced:
            out += dispatch_rows(label, t)
    differ = in_effect_differences(runs)
    if differ:
        out += ["", "What the guest read back where the runs differ (`blklab report --markdown "
                f"{' '.join(names)}`; '-': that run's guest has no such attribute):", "",
                "| device | scheduler | attribute | " + " | ".join(heads) + " |",
                "|---|---|---|" + "---|" * len(runs)]
        out += [f"| {' | '.join(key)} | " + " | ".join(values) + " |"
                for key, values in differ]
    return "\n".join(out) + "\n"


def in_effect_differences(runs: list[tuple[list[dict[str, Any]], dict[str, Any]]]
                          ) -> list[tuple[tuple[str, str, str], list[str]]]:
    """Each (device, scheduler, attribute) of the queue and the scheduler's
    tunables as the guest read them back, with its value in every run,
    where the runs do not all agree: for example, what one kernel exposes
    and another lacks, or a default that changed. A device's queue
    attributes come from its none cell, the scheduler's tunables from that
    scheduler's first cell on the device."""
    per_run = []
    for cells, _ in runs:
        values: dict[tuple[str, str, str], str] = {}
        for c in cells:
            effect = c.get("in_effect") or {}
            if c["status"] != "ok" or not effect:
                continue
            device, sched = c["request"]["device"]["name"], effect.get("scheduler", "?")
            table = dict(effect.get("iosched") or {})
            if sched == "none":
                table.update({f"queue/{k}": v for k, v in (effect.get("queue") or {}).items()})
            for key, value in table.items():
                values.setdefault((device, sched, key), str(value))
        per_run.append(values)
    keys: list[tuple[str, str, str]] = []
    for values in per_run:
        keys += [k for k in values if k not in keys]
    out = []
    for key in keys:
        row = [values.get(key, "-") for values in per_run]
        if len(set(row)) > 1:
            out.append((key, row))
    return out
