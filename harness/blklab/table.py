"""The table `blklab run` prints: per device, one row per cell and job
direction with IOPS and completion latency (clat) in microseconds."""

from __future__ import annotations

from typing import Any

from blklab import notes as notes_mod

HEADER = ("cell", "job", "dir", "IOPS", "mean us", "p50 us", "p99 us", "p99.9 us")


def _us(ns: Any) -> str:
    return "-" if ns is None else f"{ns / 1000.0:.1f}"


def _rows(cells: list[dict[str, Any]]) -> dict[str, list[tuple[str, ...]]]:
    by_device: dict[str, list[tuple[str, ...]]] = {}
    for c in cells:
        device = c["request"]["device"]
        title = f"{device['name']} ({device['kind']}, {device['backing']})"
        rows = by_device.setdefault(title, [])
        label = c["cell_id"].split(".", 1)[1] if "." in c["cell_id"] else c["cell_id"]
        if c["status"] != "ok":
            rows.append((label, "-", "-", "FAILED", "", "", "", c["error"] or ""))
            continue
        for s in c["summary"]:
            rows.append((label, s["job"], s["direction"], f"{s['iops']:.0f}",
                         _us(s["clat_mean_ns"]), _us(s["clat_p50_ns"]),
                         _us(s["clat_p99_ns"]), _us(s["clat_p99.9_ns"])))
    return by_device


def render(cells: list[dict[str, Any]]) -> str:
    out = []
    for title, rows in _rows(cells).items():
        widths = [max([len(HEADER[i])] + [len(r[i]) for r in rows if r[3] != "FAILED"])
                  for i in range(len(HEADER))]
        out.append(f"== {title}")
        out.append("  ".join(h.ljust(w) if i < 3 else h.rjust(w)
                             for i, (h, w) in enumerate(zip(HEADER, widths))))
        for r in rows:
            if r[3] == "FAILED":
                out.append(f"{r[0].ljust(widths[0])}  FAILED: {r[7]}")
                continue
            out.append("  ".join(v.ljust(w) if i < 3 else v.rjust(w)
                                 for i, (v, w) in enumerate(zip(r, widths))))
        out.append("")
    notes = notes_mod.lines(cells)
    if notes:
        out.extend(notes + [""])
    return "\n".join(out)
