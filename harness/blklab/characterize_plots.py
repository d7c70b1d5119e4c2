"""The characterization comparison as a page with its plots (blklab
characterize --compare ... --format html): the table, the QD1 reader's
latency against the write rate beside it (the read-beside-writes jobs,
drive and model), and the drive's fill curve (its per-second bandwidth
log, tools/characterize/fill.fio) with the model's fill rate over it.

One self-contained HTML file, plots embedded as PNG, as the run report.
"""

from __future__ import annotations

import html
from pathlib import Path

from blklab import characterize, fill_log
from blklab.characterize_compare import Row, render

# The jobs whose reader runs beside writers (tools/characterize/), their
# writes 4 KiB each (test_characterize.py checks the job files say so).
BESIDE_WRITES = "read-beside-writes-"
WRITE_BYTES = 4096
FILL_JOB = "fill"
FILL_BYTES = 128 * 1024  # tools/characterize/fill.fio: bs=128k
# fio's bandwidth log for the fill (write_bw_log=fill), in the drive
# script's logs/: msec, KiB/s, direction, block size, offset per line.
FILL_LOG = fill_log.LOG
PERCENTILES = (("p50_us", "p50"), ("p99_us", "p99"), ("p99.9_us", "p99.9"))
SIDES = ("drive", "model")


def beside_writes(rows: list[Row]) -> dict[str, list[dict[str, float]]]:
    """Per side, one point per read-beside-writes job that has a reader and
    a writer: the write rate (MB/s) and the reader's percentiles (us),
    sorted by write rate."""
    by_job: dict[str, dict[str, Row]] = {}
    for r in rows:
        if r.job.startswith(BESIDE_WRITES):
            by_job.setdefault(r.job, {})[r.direction] = r
    out: dict[str, list[dict[str, float]]] = {s: [] for s in SIDES}
    for dirs in by_job.values():
        if "read" not in dirs or "write" not in dirs:
            continue
        for side in SIDES:
            write_iops = getattr(dirs["write"], side).values.get("iops")
            read = getattr(dirs["read"], side).values
            if write_iops is None:
                continue
            point = {"write_mb_s": write_iops * WRITE_BYTES / 1e6}
            point.update({k: read[k] for k, _ in PERCENTILES if read.get(k) is not None})
            out[side].append(point)
    for points in out.values():
        points.sort(key=lambda p: p["write_mb_s"])
    return out


def fill_curve(drive_dir: Path) -> list[tuple[float, float]] | None:
    """The drive's fill as (GB written at the end of each logged interval,
    MB/s over it), from its bandwidth log; None without a log or with an
    empty one."""
    path = drive_dir / FILL_LOG
    if not path.exists() or not path.read_text().strip():
        return None
    try:
        intervals = fill_log.read(path)
    except fill_log.FillLogError as e:
        raise characterize.CharacterizeError(str(e)) from None
    points, written = [], 0.0
    for i in intervals:
        written += i.bytes
        points.append((written / 1e9, i.bytes_per_s / 1e6))
    return points


def _model_fill_mb_s(rows: list[Row]) -> float | None:
    for r in rows:
        if r.job == FILL_JOB and r.direction == "write":
            iops = r.model.values.get("iops")
            return None if iops is None else iops * FILL_BYTES / 1e6
    return None


def _png(fig) -> str:
    from blklab import report
    return report._png(fig)


def beside_writes_plot(points: dict[str, list[dict[str, float]]]) -> str | None:
    if not any(points.values()):
        return None
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4))
    for side, style in zip(SIDES, ("-o", "--s")):
        for i, (key, label) in enumerate(PERCENTILES):
            xy = [(p["write_mb_s"], p[key]) for p in points[side] if key in p]
            if xy:
                ax.plot(*zip(*xy), style, color=f"C{i}", label=f"{side} {label}")
    ax.set_yscale("log")
    ax.set_xlabel("write rate beside the reader (MB/s)")
    ax.set_ylabel("QD1 4 KiB read latency (us)")
    ax.set_title("Reads beside writes: drive (solid) and model (dashed)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8, ncol=2)
    return _png(fig)


def fill_plot(curve: list[tuple[float, float]] | None, model_mb_s: float | None) -> str | None:
    if curve is None:
        return None
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4))
    ax.plot([g for g, _ in curve], [r for _, r in curve], "-", label="drive, per second")
    if model_mb_s is not None:
        ax.axhline(model_mb_s, color="C1", linestyle="--",
                   label=f"model, whole fill ({model_mb_s:,.0f} MB/s)")
    ax.set_xlabel("written (GB)")
    ax.set_ylabel("sequential write rate (MB/s)")
    ax.set_title("Sequential fill, 128 KiB writes at QD32")
    ax.set_ylim(bottom=0)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    return _png(fig)


def render_html(drive_dir: Path, run_dir: Path, rows: list[Row]) -> str:
    curve = fill_curve(drive_dir)
    plots = [("Reads beside writes", beside_writes_plot(beside_writes(rows)),
              "no read-beside-writes job on both sides"),
             ("The fill", fill_plot(curve, _model_fill_mb_s(rows)),
              f"no fill log ({drive_dir / FILL_LOG})" if curve is None else "")]
    parts = ["<!doctype html>", '<html><head><meta charset="utf-8">',
             "<title>blklab characterize: drive against model</title>",
             "<style>body{font-family:sans-serif;margin:2em}pre{background:#f6f6f6;"
             "padding:1em}</style></head><body>",
             "<h1>Drive against model</h1>",
             f"<pre>{html.escape(render(drive_dir, run_dir, rows, 'text'))}</pre>"]
    for title, png, missing in plots:
        parts.append(f"<h2>{html.escape(title)}</h2>")
        parts.append(f'<img alt="{html.escape(title)}" src="{png}">' if png
                     else f"<p>Not plotted: {html.escape(missing)}.</p>")
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"
