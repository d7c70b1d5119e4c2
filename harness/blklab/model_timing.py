"""Whether every completion of a model-driven device came at its model
deadline.

QEMU's device-model glue reports, in the `devmodel-counters` JSON of every
model-driven device:

  rejected        requests the model refused; QEMU completed them on host time
  host_timed      completions not delivered at a model deadline
  first_rejected  {"op": read|write|flush|trim, "offset": bytes,
                   "length": bytes, "why": text}, when rejected > 0

A QEMU without these keys does not report them: the cell records them as
not reported, never as zero. In deterministic mode a cell with either
counter above zero fails, and its error names the first rejected request;
in realtime mode host time is the clock anyway, and the counters are only
recorded.
"""

from __future__ import annotations

from typing import Any

COUNTERS = ("rejected", "host_timed")
OPS = ("read", "write", "flush", "trim")


def _count(counters: dict[str, Any], key: str) -> int:
    value = counters[key]
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"devmodel-counters '{key}' is {value!r}, not a count (an integer "
                         ">= 0)")
    return value


def _first_rejected(counters: dict[str, Any]) -> dict[str, Any]:
    fr = counters.get("first_rejected")
    if not isinstance(fr, dict):
        raise ValueError(f"devmodel-counters 'rejected' is {counters['rejected']} but "
                         "'first_rejected' is missing or not an object")
    if fr.get("op") not in OPS:
        raise ValueError(f"devmodel-counters 'first_rejected.op' is {fr.get('op')!r}, not one "
                         f"of: {', '.join(OPS)}")
    for key in ("offset", "length"):
        v = fr.get(key)
        if isinstance(v, bool) or not isinstance(v, int) or v < 0:
            raise ValueError(f"devmodel-counters 'first_rejected.{key}' is {v!r}, not a byte "
                             "count")
    if not isinstance(fr.get("why"), str):
        raise ValueError("devmodel-counters 'first_rejected.why' is missing or not text")
    return {k: fr[k] for k in ("op", "offset", "length", "why")}


def assess(counters: dict[str, Any] | None) -> dict[str, Any] | None:
    """The cell's record of host timing, from the device model's counters:
    {"reported": True, "rejected": n, "host_timed": n[, "first_rejected":
    {...}]}, or {"reported": False, "missing": [keys]} from a QEMU that
    does not count them, or {"reported": False, "error": text} when they
    break the contract above. None for a device without a model."""
    if counters is None:
        return None
    missing = [k for k in COUNTERS if k not in counters]
    if missing:
        return {"reported": False, "missing": missing}
    try:
        record: dict[str, Any] = {"reported": True, "rejected": _count(counters, "rejected"),
                                  "host_timed": _count(counters, "host_timed")}
        if record["rejected"]:
            record["first_rejected"] = _first_rejected(counters)
    except ValueError as e:
        return {"reported": False, "error": str(e)}
    return record


def failure(record: dict[str, Any] | None, mode: str) -> str | None:
    """Why a cell with this record fails, or None. Only deterministic cells
    fail: their results must not depend on the host's speed."""
    if mode != "deterministic" or record is None:
        return None
    if "error" in record:
        return f"host timing cannot be checked: {record['error']}"
    if not record["reported"] or not (record["rejected"] or record["host_timed"]):
        return None
    text = (f"{record['rejected']} request(s) the device model rejected and "
            f"{record['host_timed']} completion(s) not at a model deadline: deterministic "
            "mode needs every completion at its model deadline")
    fr = record.get("first_rejected")
    if fr:
        text += (f"; first rejected: {fr['op']} of {fr['length']} bytes at offset "
                 f"{fr['offset']}: {fr['why']}")
    return text


def note(record: dict[str, Any] | None) -> str | None:
    """What a cell's reader must know about host timing, or None."""
    if record is None or record.get("reported"):
        if record and (record["rejected"] or record["host_timed"]):
            return (f"{record['rejected']} request(s) rejected by the device model and "
                    f"{record['host_timed']} completion(s) not at a model deadline "
                    "(completed on host time)")
        return None
    if "error" in record:
        return f"host timing not checked: {record['error']}"
    return ("host-timed completions not reported: this QEMU's devmodel-counters have no "
            f"{' or '.join(repr(k) for k in record['missing'])}, so whether any completion "
            "was on host time is not known")
