"""A run's figures as Markdown, for a scenario README: `blklab report
--markdown RUN`. The first line names the command that made the run and
the one that made the tables, so a reader can regenerate both; then one
row per cell, job and direction, the notes, and the expectations with
their verdicts."""

from __future__ import annotations

import re
import shlex
from typing import Any

from blklab import expectations as expectations_mod
from blklab import notes


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


def render(cells: list[dict[str, Any]], manifest: dict[str, Any],
           outcomes: list[expectations_mod.Outcome]) -> str:
    # The run directory `blklab run` gives by default, not wherever this
    # copy of it lives: the command a reader can repeat.
    run_name = (f"results/{manifest.get('scenario', {}).get('name', '?')}/"
                f"{manifest.get('run_id', '?')}")
    qemu = (manifest.get("qemu") or {}).get("cache_key", "unknown")
    image = str((manifest.get("image") or {}).get("hash", "unknown"))[:12]
    out = [f"Run `{run_command(manifest)}` (run {manifest.get('run_id', '?')}, "
           f"{manifest.get('mode', '?')} mode, QEMU build {qemu}, guest image {image}); "
           f"tables by `blklab report --markdown {run_name}`:", ""]
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
    lines = notes.lines(cells)
    if lines:
        out += [""] + [f"- {line}" for line in lines]
    if outcomes:
        out += ["", f"Expectations of the same run (`blklab report --markdown {run_name}`, "
                "as `blklab check` decides them):", "",
                "| verdict | expectation | device | measured | per seed |",
                "|---|---|---|---|---|"]
        for o in outcomes:
            out.append(f"| {o.status} | {o.what} | {o.device} | {o.detail} | "
                       f"{o.per_seed() or '-'} |")
        out += ["", f"Expectations: {expectations_mod.summary(outcomes)}."]
    return "\n".join(out) + "\n"
