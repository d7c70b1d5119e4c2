"""The run report: one self-contained HTML file (no network access needed).

Plots are drawn with matplotlib and embedded as PNG data; tables come from
the statistics, the expectations, the model's counters and the manifest.
"""

from __future__ import annotations

import base64
import io
import json
from pathlib import Path
from typing import Any

import jinja2
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from blklab import expectations, notes, stats, turns  # noqa: E402
from blklab.expectations import Outcome  # noqa: E402

SCHEDULER_COLOURS = {"none": "#4c72b0", "mq-deadline": "#dd8452", "kyber": "#55a868",
                     "bfq": "#c44e52"}


def _png(fig: Any) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90, bbox_inches="tight", metadata={"Software": None})
    plt.close(fig)
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode()


def _colour(scheduler: str, index: int) -> str:
    return SCHEDULER_COLOURS.get(scheduler, f"C{index % 10}")


def _histogram(job: dict[str, Any], direction: str) -> list[tuple[float, float, int]] | None:
    h = job.get("blkgen", {}).get("histogram", {}).get(direction, {}).get("clat_ns")
    return [tuple(b) for b in h] if h else None


def _cdf_points(job: dict[str, Any], direction: str) -> tuple[np.ndarray, np.ndarray] | None:
    """Latency (us) and cumulative fraction, from blkgen's full histogram or,
    for fio, from its percentiles."""
    h = _histogram(job, direction)
    if h:
        lat = np.array([(lo + hi) / 2 for lo, hi, _ in h], dtype=float) / 1000.0
        counts = np.array([c for _, _, c in h], dtype=float)
        return lat, np.cumsum(counts) / counts.sum()
    pct = job.get(direction, {}).get("clat_ns", {}).get("percentile")
    if not pct:
        return None
    pairs = sorted((float(k) / 100.0, v / 1000.0) for k, v in pct.items())
    return np.array([v for _, v in pairs]), np.array([p for p, _ in pairs])


def cdf_plot(device: str, cells: list[dict[str, Any]]) -> str | None:
    fig, ax = plt.subplots(figsize=(8, 4.2))
    drawn = set()
    for i, c in enumerate(cells):
        g = stats.group_id(c["cell_id"])
        for job in (c.get("workload") or {}).get("jobs", []):
            for direction in ("read", "write"):
                if not job.get(direction, {}).get("total_ios"):
                    continue
                label = f"{g.split('.', 1)[1]} {job['jobname']} {direction}"
                pts = _cdf_points(job, direction)
                if pts is None or label in drawn:
                    continue
                drawn.add(label)
                ax.step(pts[0], pts[1], where="post", label=label,
                        color=_colour(c["request"]["scheduler"], i),
                        linestyle="-" if direction == "read" else "--")
    if not drawn:
        plt.close(fig)
        return None
    ax.set_xscale("log")
    ax.set_xlabel("completion latency (us, log scale)")
    ax.set_ylabel("fraction of I/Os")
    ax.set_title(f"{device}: latency CDF (first repeat of each group)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7, loc="lower right")
    return _png(fig)


def percentile_bars(device: str, rows: list[stats.Row]) -> str | None:
    rows = [r for r in rows if r.device == device and "clat_p99_ns" in r.estimates]
    if not rows:
        return None
    metrics = [("clat_p50_ns", "p50"), ("clat_p99_ns", "p99"), ("clat_p99.9_ns", "p99.9")]
    fig, ax = plt.subplots(figsize=(max(6, 1.2 * len(rows) + 2), 4.2))
    width = 0.8 / len(metrics)
    x = np.arange(len(rows))
    for k, (m, label) in enumerate(metrics):
        med = np.array([r.estimates[m].median / 1000 for r in rows])
        lo = np.array([r.estimates[m].low / 1000 for r in rows])
        hi = np.array([r.estimates[m].high / 1000 for r in rows])
        ax.bar(x + (k - 1) * width, med, width, label=label,
               yerr=[med - lo, hi - med], capsize=3)
    ax.set_xticks(x, [f"{r.group.split('.', 1)[1]}\n{r.job} {r.direction}" for r in rows],
                  fontsize=7)
    ax.set_yscale("log")
    ax.set_ylabel("completion latency (us, log scale)")
    ax.set_title(f"{device}: median over repeats with 95% bootstrap intervals")
    ax.legend(fontsize=8)
    ax.grid(True, axis="y", which="both", alpha=0.3)
    return _png(fig)


# A [[fault]] window's shade on the timeline, by kind (every one of
# blklab.device_faults.KINDS).
FAULT_COLOURS = {"stall": "0.3", "slow": "tab:orange", "media_error": "tab:red",
                 "timeout": "tab:purple", "reset": "tab:brown"}


def timeline_plot(device: str, cells: list[dict[str, Any]]) -> str | None:
    fig, (ax_iops, ax_p99) = plt.subplots(2, 1, figsize=(8, 5.5), sharex=True)
    drawn = 0
    seen = set()
    for i, c in enumerate(cells):
        g = stats.group_id(c["cell_id"])
        if g in seen:
            continue
        for job in (c.get("workload") or {}).get("jobs", []):
            for job_label, ts in turns.job_series(job):
                t = [end / 1e9 for end in ts["end_ns"]]
                for direction in ("read", "write", "trim"):
                    d = ts.get(direction)
                    if not isinstance(d, dict) or not any(d.get("iops") or []):
                        continue
                    label = f"{g.split('.', 1)[1]} {job_label} {direction}"
                    colour = _colour(c["request"]["scheduler"], i)
                    ax_iops.plot(t, d["iops"], label=label, color=colour)
                    p99 = d.get("clat_p99_ns") or []
                    # An interval without completions has no percentile (0).
                    ax_p99.plot(t, [v / 1000 if v else np.nan for v in p99],
                                color=colour)
                    drawn += 1
        seen.add(g)
    if not drawn:
        plt.close(fig)
        return None
    # The device's [[fault]] windows (the same in every cell of the device),
    # from the workload's start as the series are.
    first = next((c for c in cells if c["request"].get("faults")), None)
    asked = first["request"]["faults"] if first else []
    colours = FAULT_COLOURS
    for k, f in enumerate(asked):
        label = f["kind"] + (f" x{f['factor']:g}" if f.get("factor") else "")
        if f.get("lba_start") is not None:
            label += f" LBA {f['lba_start']}+{f['lba_count']}"
        if f.get("at_ms") is None:  # after_requests, probability: where it fired in that cell
            fired_list = first.get("faults") or []
            fired = fired_list[k] if k < len(fired_list) else {}
            _shade_fired(ax_iops, fired, f, colours[f["kind"]], f"fault: {label} "
                         f"({fault_when(f)}, {first['cell_id']})")
            continue
        for ax in (ax_iops, ax_p99):
            start = f["at_ms"] / 1e3
            if f["duration_ms"] is None:  # to the end of the run, or to the host's reset
                until = "until the host resets it" if f["kind"] == "reset" else "to the end"
                ax.axvline(start, color=colours[f["kind"]], alpha=0.5,
                           label=f"fault: {label} ({until})" if ax is ax_iops else None)
                continue
            ax.axvspan(start, (f["at_ms"] + f["duration_ms"]) / 1e3, color=colours[f["kind"]],
                       alpha=0.15, label=f"fault: {label}" if ax is ax_iops else None)
    ax_iops.set_ylabel("IOPS")
    ax_iops.set_title(f"{device}: IOPS and p99 per interval (first repeat of each group)")
    ax_iops.legend(fontsize=7)
    ax_p99.set_ylabel("p99 (us)")
    ax_p99.set_yscale("log")
    ax_p99.set_xlabel("time (s)")
    for ax in (ax_iops, ax_p99):
        ax.grid(True, alpha=0.3)
    return _png(fig)


def app_timeline_plot(device: str, cells: list[dict[str, Any]]) -> str | None:
    """pgbench jobs' slowest and mean transaction per interval of completion
    time (appjobs.checkpoint_timeline), one line per cell (first repeat of
    each group), with the first drawn cell's checkpoint sync phases shaded."""
    fig, (ax_max, ax_mean) = plt.subplots(2, 1, figsize=(8, 5.5), sharex=True)
    drawn = 0
    seen = set()
    shaded = None
    for i, c in enumerate(cells):
        g = stats.group_id(c["cell_id"])
        if g in seen:
            continue
        seen.add(g)
        for a in (c.get("workload") or {}).get("apps", []):
            tl = a.get("timeline") or {}
            rows = tl.get("intervals") or []
            if not rows:
                continue
            colour = _colour(c["request"]["scheduler"], i)
            t = [r[0] for r in rows]
            ax_max.plot(t, [r[3] for r in rows], color=colour, lw=0.8,
                        label=f"{g.split('.', 1)[1]} {a['name']}")
            ax_mean.plot(t, [r[2] for r in rows], color=colour, lw=0.8)
            drawn += 1
            if shaded is None:
                shaded = c["cell_id"]
                for k, ck in enumerate(x for x in tl.get("checkpoints", [])
                                       if x.get("start_s") is not None):
                    for ax in (ax_max, ax_mean):
                        ax.axvspan(ck["end_s"] - ck["sync_s"], ck["end_s"], color="0.5",
                                   alpha=0.25, label=(f"checkpoint sync phases ({shaded})"
                                                      if ax is ax_max and k == 0 else None))
    if not drawn:
        plt.close(fig)
        return None
    interval = next(a["timeline"]["interval_ms"] for c in cells
                    for a in (c.get("workload") or {}).get("apps", []) if a.get("timeline"))
    ax_max.set_title(f"{device}: pgbench transactions per {interval:g} ms of completion time")
    ax_max.set_ylabel("slowest (ms)")
    ax_max.set_yscale("log")
    ax_max.legend(fontsize=7)
    ax_mean.set_ylabel("mean (ms)")
    ax_mean.set_xlabel("time since the run's first interval (s)")
    for ax in (ax_max, ax_mean):
        ax.grid(True, alpha=0.3)
    return _png(fig)


def _shade_fired(ax, fired: dict[str, Any], asked: dict[str, Any], colour: str,
                 label: str) -> None:
    """An after_requests fault's window, or a probability fault's picks,
    as one cell's model applied them (s after the workload's start)."""
    origin = fired.get("origin_ns")
    if origin is None:
        return
    picks = fired.get("picks")
    if picks:
        for i, p in enumerate(picks):
            ax.axvline((p["ns"] - origin) / 1e9, color=colour, alpha=0.3, linewidth=0.5,
                       label=label if i == 0 else None)
        return
    if fired.get("start_ns") is None:
        return
    start = (fired["start_ns"] - origin) / 1e9
    if fired.get("end_ns") is None:
        ax.axvline(start, color=colour, alpha=0.5, label=label)
    else:
        ax.axvspan(start, (fired["end_ns"] - origin) / 1e9, color=colour, alpha=0.15,
                   label=label)


def _fmt(x: Any, scale: float = 1.0, digits: int = 1) -> str:
    if x is None:
        return "-"
    return f"{x / scale:,.{digits}f}"


TEMPLATE = jinja2.Template("""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>blklab report: {{ name }}</title>
<style>
body { font-family: sans-serif; margin: 2em; color: #222; max-width: 1200px; }
table { border-collapse: collapse; margin: 0.5em 0 1.5em; font-size: 0.85em; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.5em; text-align: right; }
th { background: #f0f0f0; } td.l, th.l { text-align: left; }
.PASS { color: #1a7f37; font-weight: bold; } .FAIL, .failed { color: #c62828; font-weight: bold; }
.ERROR, .UNEXPECTED-PASS { color: #b26a00; font-weight: bold; }
.KNOWN-FAIL { color: #8a4b00; } .NOT-RUN { color: #777; }
pre { background: #f7f7f7; padding: 1em; overflow-x: auto; font-size: 0.8em; }
img.plot { display: block; margin: 0.5em 0 1.5em; max-width: 100%; }
.note { color: #555; font-size: 0.9em; }
</style></head><body>
<h1>blklab report: {{ name }}</h1>
<p>{{ description }}</p>
<p class="note">Run {{ run_id }}; mode {{ mode }}, accelerator {{ accel }}; {{ ok }} cells ok,
{{ failed }} failed. Kernel {{ kernel }}. {{ mode_note }}</p>
{% if input_warnings %}<div class="input-warnings"><h2>Warning: inputs differ</h2>
<p class="note">These figures were not all measured with the same guest and QEMU; compare them
only knowing that.</p><ul>
{% for w in input_warnings %}<li class="FAIL">{{ w }}</li>
{% endfor %}</ul></div>{% endif %}

<h2>Expectations</h2>
{% if outcomes %}<p class="summary">{{ outcome_summary }}</p>
<table class="expectations"><tr><th class="l">result</th><th class="l">expectation</th>
<th class="l">device</th><th class="l">measured</th><th class="l">per seed</th>
<th class="l">known failure</th><th class="l">kernel source</th></tr>
{% for o in outcomes %}<tr><td class="l {{ o.status }}">{{ o.status }}</td><td class="l">{{ o.what }}</td>
<td class="l">{{ o.device }}</td><td class="l">{{ o.detail }}</td><td class="l">{{ o.per_seed() or "-" }}</td>
<td class="l">{{ o.known_failure or "" }}</td><td class="l">{{ o.source }}</td></tr>
{% endfor %}</table>{% else %}<p class="note">This scenario states no expectations.</p>{% endif %}

{% for d in devices %}
<h2>Device {{ d.name }}</h2>
<table><tr><th class="l">group</th><th class="l">job</th><th class="l">dir</th><th>n</th>
<th>IOPS (median [95% CI])</th><th>mean us</th><th>p50 us</th><th>p99 us [95% CI]</th><th>p99.9 us</th></tr>
{% for r in d.rows %}<tr><td class="l">{{ r.group }}</td><td class="l">{{ r.job }}</td>
<td class="l">{{ r.direction }}</td><td>{{ r.n }}{% if r.identical %} (identical){% endif %}</td>
<td>{{ r.iops }}</td><td>{{ r.mean }}</td><td>{{ r.p50 }}</td><td>{{ r.p99 }}</td><td>{{ r.p999 }}</td></tr>
{% endfor %}</table>
{% for p in d.plots %}<img class="plot" data-plot="{{ p.id }}" alt="{{ p.title }}" src="{{ p.src }}">
{% endfor %}
{% if d.comparisons %}<h3>Scheduler comparisons</h3>
<table><tr><th class="l">metric</th><th class="l">A</th><th class="l">B</th><th>A / B</th>
<th>95% CI</th><th class="l">verdict</th></tr>
{% for c in d.comparisons %}<tr><td class="l">{{ c.metric }}</td><td class="l">{{ c.a }}</td>
<td class="l">{{ c.b }}</td><td>{{ c.ratio }}</td><td>{{ c.ci }}</td><td class="l">{{ c.verdict }}</td></tr>
{% endfor %}</table>{% endif %}
{% if d.apps %}<h3>Applications</h3>
<p class="note">Each application job's own report over its measured run (its prepare step not included): transactions, their rate, queries per second (sysbench), errors (sysbench's ignored errors, pgbench's failed transactions), latency in ms (sysbench's percentiles from its histogram, within 0.9%; pgbench's exact, from its transaction log), and the block layer's w_await over the same run.</p>
<table class="apps"><tr><th class="l">cell</th><th class="l">job</th><th class="l">benchmark</th><th>transactions</th><th>tps</th><th>qps</th><th>errors</th><th>avg ms</th><th>p50 ms</th><th>p95 ms</th><th>p99 ms</th><th>p99.9 ms</th><th>w_await ms</th></tr>
{% for a in d.apps %}<tr><td class="l">{{ a.cell_id }}</td><td class="l">{{ a.job }}</td><td class="l">{{ a.bench }}</td>{% for v in a.cols %}<td>{{ v }}</td>{% endfor %}</tr>
{% endfor %}</table>{% endif %}
{% if d.counters %}<h3>Device model counters</h3>
<table class="counters"><tr><th class="l">counter</th>{% for cid in d.counter_cells %}<th>{{ cid }}</th>{% endfor %}</tr>
{% for name, vals in d.counters %}<tr><td class="l">{{ name }}</td>{% for v in vals %}<td>{{ v }}</td>{% endfor %}</tr>
{% endfor %}</table>
{% if d.counters_zero %}<p class="note">Zero in every cell: {{ d.counters_zero|join(", ") }}.</p>{% endif %}{% endif %}
{% if d.faults %}<h3>Device faults</h3>
<p class="note">The scenario's [[fault]] windows on this device: when each starts (ms after the workload's start, the guest's own mark from which the device model counts; after a number of requests since then; or a chance per request), and on the virtual clock as the model applied them; "requests" is how many completions each moved, failed or lost, "first request" the first of them (its number since the workload's start and its submission, ns), "trigger" the request that started an after_requests fault (docs/faults.md).</p>
<table class="faults"><tr><th class="l">cell</th><th class="l">kind</th><th class="l">when</th><th>duration (ms)</th><th>factor</th><th>start (ns)</th><th>end (ns)</th><th>requests</th><th class="l">first request</th><th class="l">trigger</th><th class="l">fired</th></tr>
{% for f in d.faults %}<tr><td class="l">{{ f.cell_id }}</td><td class="l">{{ f.kind }}</td><td class="l">{{ f.when }}</td><td>{{ f.duration_ms }}</td><td>{{ f.factor }}</td><td>{{ f.start_ns }}</td><td>{{ f.end_ns }}</td><td>{{ f.requests }}</td><td class="l">{{ f.first_request }}</td><td class="l">{{ f.trigger_request }}</td><td class="l">{{ f.fired }}</td></tr>
{% endfor %}</table>{% endif %}
{% if d.btt %}<h3>blktrace / btt</h3>
<table><tr><th class="l">cell</th>{% for k in d.btt_keys %}<th>{{ k }}</th>{% endfor %}</tr>
{% for cid, vals in d.btt %}<tr><td class="l">{{ cid }}</td>{% for v in vals %}<td>{{ v }}</td>{% endfor %}</tr>
{% endfor %}</table>{% endif %}
{% if d.vclocks %}<h3>vCPU clocks</h3>
<p class="note">Each vCPU on its own clock (vcpu_clocks = "parallel"): the largest gap between two running vCPUs' clocks (drift_max_ns) and the most an interrupt found its vCPU past the time it was raised (irq_late_max_ns) are bounded by the quantum; unsynced_reads, clock reads off the global clock, must be 0; vcpus_runnable, the vCPUs that could still run when they were read, is 0 once the guest has halted, and the figures are final only then (docs/determinism.md).</p>
<table class="vclocks"><tr><th class="l">cell</th>{% for k in d.vclock_keys %}<th>{{ k }}</th>{% endfor %}</tr>
{% for cid, vals in d.vclocks %}<tr><td class="l">{{ cid }}</td>{% for v in vals %}<td>{{ v }}</td>{% endfor %}</tr>
{% endfor %}</table>{% endif %}
{% if d.adjusted %}<h3>Tunables the kernel adjusted</h3>
<p class="note">Written without an error, read back with another value; these cells ran with the kernel's.</p>
<table class="adjusted"><tr><th class="l">cell</th><th class="l">tunable</th><th>written</th><th>in effect</th></tr>
{% for a in d.adjusted %}<tr><td class="l">{{ a.cell_id }}</td><td class="l">{{ a.tunable }}</td><td>{{ a.asked }}</td><td>{{ a.in_effect }}</td></tr>
{% endfor %}</table>{% endif %}
{% if d.notes %}<h3>Notes</h3>
<p class="note">What changed what these cells' figures mean: the workload's own fix-ups, host timing, the guest's halt, the accelerator.</p>
<table class="notes"><tr><th class="l">cell</th><th class="l">note</th></tr>
{% for cid, text in d.notes %}<tr><td class="l">{{ cid }}</td><td class="l">{{ text }}</td></tr>
{% endfor %}</table>{% endif %}
{% if d.failed %}<h3>Failed cells</h3><table><tr><th class="l">cell</th><th class="l">error</th><th class="l">console log</th></tr>
{% for f in d.failed %}<tr><td class="l failed">{{ f.cell_id }}</td><td class="l">{{ f.error }}</td><td class="l">{{ f.log }}</td></tr>
{% endfor %}</table>{% endif %}
{% endfor %}

{% if customer %}<h2>The customer's fio beside blklab</h2>
<p class="note">{{ customer.note }}</p>
<table class="customer"><tr>{% for h in customer.header %}<th class="l">{{ h }}</th>{% endfor %}</tr>
{% for row in customer.rows %}<tr>{% for v in row %}<td{% if loop.index <= 3 %} class="l"{% endif %}>{{ v }}</td>{% endfor %}</tr>
{% endfor %}</table>{% endif %}

<h2>Manifest</h2>
<pre>{{ manifest }}</pre>
<script>
document.addEventListener("DOMContentLoaded", function () {
  var imgs = document.querySelectorAll("img.plot");
  var ok = 0;
  imgs.forEach(function (i) { if (i.complete && i.naturalWidth > 0) { ok += 1; } });
  document.body.setAttribute("data-plots", String(imgs.length));
  document.body.setAttribute("data-plots-loaded", String(ok));
});
</script>
</body></html>
""", autoescape=True)


def input_warnings(cells: list[dict[str, Any]], manifest: dict[str, Any],
                   against: dict[str, Any] | None) -> list[str]:
    """Guest or QEMU inputs that differ between the run's cells and its
    manifest, and between the run and the baseline it is shown against."""
    from blklab import baseline, inputs

    out = inputs.within_run(manifest, cells)
    if against is not None:
        out += baseline.input_warnings(against, {"inputs": inputs.of_manifest(manifest)})
    return out


def render(run_dir: Path, cells: list[dict[str, Any]], manifest: dict[str, Any],
           outcomes: list[Outcome], against: dict[str, Any] | None = None) -> str:
    rows = stats.aggregate(cells)
    devices = []
    for name in dict.fromkeys(c["request"]["device"]["name"] for c in cells):
        dcells = [c for c in cells if c["request"]["device"]["name"] == name]
        ok_cells = [c for c in dcells if c["status"] == "ok"]
        plots = []
        for pid, title, src in (
                ("cdf", "latency CDF", cdf_plot(name, ok_cells)),
                ("percentiles", "latency percentiles", percentile_bars(name, rows)),
                ("timeline", "IOPS and p99 timeline", timeline_plot(name, ok_cells)),
                ("app-timeline", "pgbench latency and checkpoints",
                 app_timeline_plot(name, ok_cells))):
            if src:
                plots.append({"id": f"{name}-{pid}", "title": f"{name}: {title}", "src": src})
        table = []
        for r in rows:
            if r.device != name:
                continue
            e = r.estimates
            p99 = e.get("clat_p99_ns")
            table.append({
                "group": r.group, "job": r.job, "direction": r.direction,
                "n": e["iops"].n, "identical": e["iops"].identical and e["iops"].n > 1,
                "iops": f"{_fmt(e['iops'].median, 1, 0)} [{_fmt(e['iops'].low, 1, 0)}, "
                        f"{_fmt(e['iops'].high, 1, 0)}]",
                "mean": _fmt(e.get("clat_mean_ns") and e["clat_mean_ns"].median, 1000),
                "p50": _fmt(e.get("clat_p50_ns") and e["clat_p50_ns"].median, 1000),
                "p99": (f"{_fmt(p99.median, 1000)} [{_fmt(p99.low, 1000)}, "
                        f"{_fmt(p99.high, 1000)}]") if p99 else "-",
                "p999": _fmt(e.get("clat_p99.9_ns") and e["clat_p99.9_ns"].median, 1000),
            })
        comparisons = []
        for metric in ("iops", "clat_p99_ns"):
            for c in stats.scheduler_comparisons(ok_cells, metric):
                comparisons.append({
                    "metric": metric, "a": c.a, "b": c.b,
                    "ratio": "-" if c.ratio is None else f"{c.ratio:.3f}",
                    "ci": "-" if c.low is None else f"[{c.low:.3f}, {c.high:.3f}]",
                    "verdict": c.verdict})
        counter_cells, counters, counters_zero = counter_table(ok_cells)
        faults = fault_rows(dcells)
        apps = app_rows(ok_cells)
        btt, btt_keys = _flat_table(ok_cells, "btt")
        vclocks, vclock_keys = _flat_table(ok_cells, "vcpu_clocks")
        failed = [{"cell_id": c["cell_id"], "error": c.get("error"),
                   "log": c.get("files", {}).get("console_log", "")}
                  for c in dcells if c["status"] != "ok"]
        adjusted = [dict(a, cell_id=c["cell_id"]) for c in ok_cells
                    for a in (c.get("in_effect") or {}).get("adjusted", [])]
        cell_notes = [(c["cell_id"], n) for c in dcells
                      for n in notes.cell_notes(c, with_adjusted=False)]
        devices.append({"name": name, "rows": table, "plots": plots, "adjusted": adjusted,
                        "notes": cell_notes,
                        "comparisons": comparisons, "counters": counters,
                        "counter_cells": counter_cells, "counters_zero": counters_zero,
                        "btt": btt, "btt_keys": btt_keys, "faults": faults, "apps": apps,
                        "vclocks": vclocks, "vclock_keys": vclock_keys,
                        "failed": failed})
    kernel = next((c["guest"].get("kernel_version", "") for c in cells if c.get("guest")), "")
    mode = manifest.get("mode", "")
    mode_note = ("Deterministic mode: the same inputs give the same results; repeats with the "
                 "same seed are identical, and guest CPU time is part of what is measured."
                 if mode == "deterministic" else
                 "Realtime mode: results depend on the host's speed and load.")
    ok = sum(c["status"] == "ok" for c in cells)
    customer = _customer_table(run_dir, cells)
    return TEMPLATE.render(
        name=manifest.get("scenario", {}).get("name", run_dir.name),
        description=manifest.get("scenario", {}).get("description", ""),
        run_id=manifest.get("run_id", ""), mode=mode, accel=manifest.get("accel", ""),
        ok=ok, failed=len(cells) - ok, kernel=kernel, mode_note=mode_note,
        outcomes=outcomes, outcome_summary=expectations.summary(outcomes), devices=devices,
        customer=customer, input_warnings=input_warnings(cells, manifest, against),
        manifest=json.dumps(manifest, indent=2, sort_keys=True))


def _customer_table(run_dir: Path, cells: list[dict[str, Any]]) -> dict[str, Any] | None:
    """scenario.customer_fio beside the cells (the table blklab compare-fio
    prints), when the run kept one."""
    from blklab import compare_fio
    from blklab.runner import CUSTOMER_FIO_COPY

    path = run_dir / CUSTOMER_FIO_COPY
    if not path.exists():
        return None
    try:
        rows = compare_fio.compare(path, compare_fio.load_fio_json(path), cells)
    except compare_fio.FioJsonError as e:
        return {"note": f"not shown: {e}", "header": [], "rows": []}
    body = compare_fio.table_rows(rows)
    notes = sorted({f"customer {r.direction}: {r.customer.note}" for r in rows if r.customer.note})
    return {"note": "clat (completion latency) in us, IOPS per second; ratio = blklab / "
                    "customer. " + " ".join(notes),
            "header": body[0], "rows": body[1:]}


def flatten_counters(data: dict[str, Any], prefix: str = "") -> dict[str, float | str]:
    """The device model's counters as one level: nested tables joined with
    dots, each service-time table with its mean, and each per-die list as
    its mean and maximum."""
    out: dict[str, float | str] = {}
    for k, v in data.items():
        name = prefix + k
        if isinstance(v, bool):
            out[name] = str(v).lower()
        elif isinstance(v, (int, float, str)):
            out[name] = v
        elif isinstance(v, dict):
            out.update(flatten_counters(v, name + "."))
            if {"count", "total"} <= v.keys() and isinstance(v["count"], int):
                out[name + ".mean"] = v["total"] / v["count"] if v["count"] else 0
        elif isinstance(v, list) and v and all(isinstance(x, (int, float)) for x in v):
            out[f"{name} (mean of {len(v)})"] = sum(v) / len(v)
            out[f"{name} (max of {len(v)})"] = max(v)
    return out


def _counter_value(v: float | str) -> str:
    if isinstance(v, str):
        return v
    if float(v).is_integer():
        return f"{int(v):,}"
    return f"{v:.4g}"


def counter_table(cells: list[dict[str, Any]]) -> tuple[list[str], list, list[str]]:
    """The cells' device-model counters with one row per counter and one
    column per cell; counters that are zero in every cell are listed apart."""
    flat = [(c["cell_id"], flatten_counters(c["devmodel"])) for c in cells
            if isinstance(c.get("devmodel"), dict) and c["devmodel"]]
    names: list[str] = []
    for _, f in flat:
        names += [k for k in f if k not in names]
    rows, zero = [], []
    for name in names:
        values = [f.get(name) for _, f in flat]
        if all(v == 0 for v in values):
            zero.append(name)
            continue
        rows.append((name, ["-" if v is None else _counter_value(v) for v in values]))
    return [cid for cid, _ in flat], rows, zero


def fault_rows(cells: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per cell and [[fault]]: what was asked and what the model's
    counters say it did (a failed cell's faults as asked, unknown fired)."""
    rows = []
    for c in cells:
        fired = c.get("faults")
        for k, asked in enumerate(c["request"].get("faults") or []):
            f = fired[k] if fired and k < len(fired) else {}
            rows.append({"cell_id": c["cell_id"], "kind": asked["kind"],
                         "when": fault_when(asked),
                         "duration_ms": "to the end" if asked["duration_ms"] is None
                         else f"{asked['duration_ms']:g}",
                         "factor": "-" if asked.get("factor") is None else f"{asked['factor']:g}",
                         "start_ns": _fmt_int(f.get("start_ns")),
                         "end_ns": _fmt_int(f.get("end_ns")),
                         "requests": _fmt_int(f.get("requests")),
                         "first_request": _fmt_request(f.get("first_request")),
                         "trigger_request": _fmt_request(f.get("trigger_request")),
                         "fired": "-" if not f else ("yes" if f.get("fired") else "no")})
    return rows


def fault_when(asked: dict[str, Any]) -> str:
    """How a [[fault]] as recorded in a cell's request starts."""
    if asked.get("after_requests") is not None:
        return f"after {asked['after_requests']:,} requests"
    if asked.get("probability") is not None:
        return f"p = {asked['probability']:g} per request"
    return f"at {asked['at_ms']:g} ms"


def _fmt_request(r: dict[str, Any] | None) -> str:
    return "-" if not r else f"#{r['request']:,} at {r['ns']:,} ns"


def app_rows(cells: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per cell and application job (workload.apps, blklab.appjobs)."""
    rows = []
    for c in cells:
        for a in (c.get("workload") or {}).get("apps", []):
            lat = a.get("latency_ms", {})
            pct = lat.get("percentiles", {})
            w_await = a.get("disk_stats", {}).get("derived", {}).get("w_await_ms")
            rows.append({
                "cell_id": c["cell_id"], "job": a["name"],
                "bench": f"{a['app']} {a['test']}".strip()
                + (f" (exited {a['exit_status']})" if a.get("exit_status") else ""),
                "cols": [_fmt_int(a.get("transactions")), _fmt(a.get("tps"), 1, 1),
                           _fmt(a.get("qps"), 1, 1), _fmt_int(a.get("errors")),
                           _fmt(lat.get("avg"), 1, 3)]
                + [_fmt(pct.get(k), 1, 3) for k in ("50", "95", "99", "99.9")]
                + [_fmt(w_await, 1, 3)]})
    return rows


def _fmt_int(v: Any) -> str:
    return "-" if v is None else f"{int(v):,}"


def _flat_table(cells: list[dict[str, Any]], key: str) -> tuple[list, list[str]]:
    """Cells' numeric figures under `key` (one level deep) as table rows."""
    rows = []
    keys: list[str] = []
    for c in cells:
        data = c.get(key)
        if not isinstance(data, dict) or not data:
            continue
        flat = {k: v for k, v in data.items() if isinstance(v, (int, float, str))}
        for k in flat:
            if k not in keys:
                keys.append(k)
        rows.append((c["cell_id"], flat))
    return [(cid, [str(flat.get(k, "-")) for k in keys]) for cid, flat in rows], keys
