"""Cell results: one JSON file per cell, with a schema version.

The workload's own JSON (fio's layout, from blkgen or fio) is kept whole
under "workload"; blklab adds what was asked, what was in effect in the
guest, the /sys/block/<dev>/stat delta with iostat's derived figures, and a
per-job summary. Fields that depend on the host's clock live under "host"
only, so that two runs in deterministic mode differ in nothing else.

Files are written atomically (temp file + rename): a half-written cell is
never read as a result.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

SCHEMA_VERSION = 1
SCHEMA_PATH = Path(__file__).with_name("schemas") / "cell.schema.json"

# Fields of /sys/block/<dev>/stat, in order (Documentation/block/stat.rst).
DISKSTAT_FIELDS = (
    "read_ios", "read_merges", "read_sectors", "read_ticks_ms",
    "write_ios", "write_merges", "write_sectors", "write_ticks_ms",
    "in_flight", "io_ticks_ms", "time_in_queue_ms",
    "discard_ios", "discard_merges", "discard_sectors", "discard_ticks_ms",
    "flush_ios", "flush_ticks_ms",
)

SUMMARY_PERCENTILES = ("50.000000", "99.000000", "99.900000", "99.990000")
# The figures of each summary row that statistics, expectations and
# baselines work with (latencies in ns).
SUMMARY_METRICS = ("iops", "bw_bytes", "clat_mean_ns", "clat_p50_ns", "clat_p99_ns",
                   "clat_p99.9_ns", "clat_p99.99_ns", "clat_max_ns")


@dataclass
class CellResult:
    cell_id: str
    status: str  # "ok" or "failed"
    error: str | None
    request: dict[str, Any]  # what the scenario asked for this cell
    guest: dict[str, Any] = field(default_factory=dict)
    in_effect: dict[str, Any] = field(default_factory=dict)
    disk_stats: dict[str, Any] = field(default_factory=dict)
    workload: dict[str, Any] | None = None
    summary: list[dict[str, Any]] = field(default_factory=list)
    image: dict[str, Any] = field(default_factory=dict)
    btt: dict[str, Any] | None = None  # btt's figures when the cell was traced
    devmodel: dict[str, Any] | None = None  # the device model's counters
    # Whether every completion came at a model deadline (blklab.model_timing).
    model_timing: dict[str, Any] | None = None
    # Under [guest] vcpu_clocks = "parallel": how far apart the vCPUs' own
    # clocks ran and how late interrupts found their vCPU (QEMU's
    # "vcpu-clocks", qemu-patches/0033); None otherwise.
    vcpu_clocks: dict[str, Any] | None = None
    # The device's [[fault]]s as asked, with the window each had on the
    # virtual clock and the requests it moved (blklab.device_faults.fired);
    # None when the device has none.
    faults: list[dict[str, Any]] | None = None
    # What the workload changed of what it was asked (blklab.notes).
    workload_notes: list[str] = field(default_factory=list)
    host: dict[str, Any] = field(default_factory=dict)  # host wall clock, command line
    files: dict[str, str] = field(default_factory=dict)  # logs kept beside the JSON
    schema_version: int = SCHEMA_VERSION

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=2, sort_keys=True) + "\n"


def parse_kv(text: str) -> dict[str, str]:
    """Lines of key=value, as the guest init writes them."""
    out = {}
    for line in text.splitlines():
        if "=" in line:
            k, v = line.split("=", 1)
            out[k] = v
    return out


def parse_diskstat(text: str) -> dict[str, int]:
    values = [int(v) for v in text.split()]
    return dict(zip(DISKSTAT_FIELDS, values))


def disk_delta(before: dict[str, int], after: dict[str, int],
               elapsed_ms: float | None) -> dict[str, Any]:
    """The stat delta and iostat's derived figures (iostat -x: r_await,
    w_await in ms, aqu-sz, %util) over the workload's run."""
    delta = {k: after[k] - before[k] for k in before if k in after and k != "in_flight"}
    derived: dict[str, float | None] = {
        "r_await_ms": (delta["read_ticks_ms"] / delta["read_ios"]) if delta.get("read_ios") else None,
        "w_await_ms": (delta["write_ticks_ms"] / delta["write_ios"]) if delta.get("write_ios") else None,
    }
    if elapsed_ms:
        derived["aqu_sz"] = delta["time_in_queue_ms"] / elapsed_ms
        derived["util_pct"] = min(100.0, 100.0 * delta["io_ticks_ms"] / elapsed_ms)
        derived["elapsed_ms"] = elapsed_ms
    return {"before": before, "after": after, "delta": delta, "derived": derived}


def summarize(workload: dict[str, Any]) -> list[dict[str, Any]]:
    """Per job and direction: IOPS, bandwidth and completion-latency figures
    (ns), read from fio's layout."""
    rows = []
    for job in workload.get("jobs", []):
        for direction in ("read", "write", "trim"):
            d = job.get(direction)
            if not d or not d.get("total_ios"):
                continue
            clat = d.get("clat_ns", {})
            pct = clat.get("percentile", {})
            rows.append({
                "job": job.get("jobname"),
                "direction": direction,
                "iops": d.get("iops"),
                "bw_bytes": d.get("bw_bytes"),
                "total_ios": d.get("total_ios"),
                "clat_mean_ns": clat.get("mean"),
                **{f"clat_p{p.rstrip('0').rstrip('.')}_ns": pct.get(p) for p in SUMMARY_PERCENTILES},
                "clat_max_ns": clat.get("max"),
            })
    return rows


_BTT_ROW = re.compile(r"^(Q2Q|Q2G|G2I|Q2M|I2D|M2D|D2C|Q2C|Q2D)\s+([\d.]+)\s+([\d.]+)\s+"
                      r"([\d.]+)\s+(\d+)\s*$")
_BTT_MERGE = re.compile(r"^\s*\(\s*\d+,\s*\d+\)\s*\|\s*(\d+)\s+(\d+)\s+([\d.]+)\s*\|")


def parse_btt(text: str) -> dict[str, Any]:
    """btt's 'All Devices' phase figures (seconds: min, avg, max, N) and the
    merge ratio (#Q / #D) from its device merge table."""
    out: dict[str, Any] = {}
    section = ""
    for line in text.splitlines():
        if line.startswith("====="):
            section = line.strip("= ")
            continue
        if section == "All Devices":
            m = _BTT_ROW.match(line)
            if m:
                name = m.group(1).lower()
                out[f"{name}_min_s"] = float(m.group(2))
                out[f"{name}_avg_s"] = float(m.group(3))
                out[f"{name}_max_s"] = float(m.group(4))
                out[f"{name}_n"] = int(m.group(5))
        elif section == "Device Merge Information":
            m = _BTT_MERGE.match(line)
            if m:
                out["queued"] = int(m.group(1))
                out["dispatched"] = int(m.group(2))
                out["merge_ratio"] = float(m.group(3))
    if "q2c_avg_s" in out and "d2c_avg_s" in out:
        # Q2C = Q2D + D2C for every request, so the averages subtract.
        out["q2d_avg_s"] = round(out["q2c_avg_s"] - out["d2c_avg_s"], 9)
    return out


def write_atomic(path: Path, text: str) -> None:
    write_atomic_bytes(path, text.encode())


def write_atomic_bytes(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def load_cell(path: Path) -> dict[str, Any] | None:
    """A cell's result, or None if it is missing, unreadable or not a
    complete result of this schema version."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("schema_version") != SCHEMA_VERSION:
        return None
    return data


def schema() -> dict[str, Any]:
    return json.loads(SCHEMA_PATH.read_text())


def validate(data: dict[str, Any]) -> None:
    """Raise jsonschema.ValidationError if `data` is not a valid cell."""
    import jsonschema

    jsonschema.validate(data, schema())
