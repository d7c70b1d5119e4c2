"""A customer's udev rules in the guest: a scenario's [udev] table.

A fix for a slow disk is often a udev rule that sets the scheduler when the
device appears. `[udev] rules = "FILE"` (relative to the scenario) puts the
file, unchanged, into the applications' root's /run/udev/rules.d beside the
packaged rules, and the guest applies the rules to the device under test's
add event with `udevadm test` before blklab sets the cell's own scheduler
(guest-images/init, apply_udev_rules). The cell records the scheduler
before and after and each line udev printed about the file: which rule
matched the device's name and what it wrote, or which line it could not
parse (that fails the cell).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.+-]*\.rules$")
MAX_BYTES = 1 << 20


@dataclass(frozen=True)
class UdevRules:
    name: str  # the file's name in rules.d: udev reads *.rules in name order
    data: bytes = b""

    def to_json(self) -> dict[str, Any]:
        return {"rules": self.name, "sha256": hashlib.sha256(self.data).hexdigest()}


def parse(reader, scenario_path: Path, read: bool) -> UdevRules | None:
    """[udev], read through the scenario's typed reader; None without it."""
    if not reader.table:
        return None
    value = reader.get("rules", str, required=True)
    reader.finish()
    name = Path(value).name
    if not _NAME.match(name):
        raise reader.error("rules", f"'{value}': udev reads only files named *.rules "
                           "(letters, digits, '_', '.', '+', '-')")
    if not read:
        return UdevRules(name)
    path = scenario_path.parent / value
    try:
        data = path.read_bytes()
    except OSError as e:
        raise reader.error("rules", f"{value}: cannot read: {e.strerror}") from None
    if len(data) > MAX_BYTES:
        raise reader.error("rules", f"{value}: {len(data)} bytes, more than {MAX_BYTES}")
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        raise reader.error("rules", f"{value}: not UTF-8 text") from None
    return UdevRules(name, data)


def parse_guest_record(text: str) -> dict[str, Any]:
    """The guest's udev.txt: scheduler_before=, scheduler_after=, then after
    `--- udevadm test` the lines udev printed about the file; `matched`
    are the rules that applied to the device ("<dev>: <file>:<line> ..."),
    `problems` the lines about the file itself."""
    head, _, rest = text.partition("--- udevadm test\n")
    out: dict[str, Any] = {}
    for line in head.splitlines():
        k, sep, v = line.partition("=")
        if sep:
            out[k] = v.strip()
    lines = [line for line in rest.splitlines() if line.strip()]
    out["matched"] = [line for line in lines if not line.startswith("/")]
    out["problems"] = [line for line in lines if line.startswith("/")]
    return out
