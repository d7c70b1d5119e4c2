"""Observers beside the workload: a scenario's [[observe]] tables.

Users look at an incident with tools beside the workload: `iostat -x 1`,
libbpf-tools' biolatency or biosnoop, a BPF program of their own. Each
[[observe]] runs its `command` (a shell script) in the applications' root
([guest] apps) with the command job's environment (BLKLAB_DEVICE, ...),
started before the workload, in order, each once its output holds its
`ready` text, or `ready_after_ms` of virtual time after it started (a
libbpf tool's "Tracing ..." line reaches a file only when it exits: its
stdout is fully buffered), or, with neither, once it has printed anything;
after the workload it gets SIGINT, as Ctrl-C. Its output
is kept as cells/<cell>/observe-<name>.txt and its exit status in the cell
JSON (guest.observe). One that ends before it is ready (a BPF program that
does not load) fails the cell with its last lines (guest-images/init,
start_observers).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
FILE_PREFIX = "observe-"
MAX_READY_AFTER_MS = 60_000


@dataclass(frozen=True)
class Observer:
    name: str
    command: str
    ready: str = ""
    ready_after_ms: int | None = None

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "command": self.command, "ready": self.ready,
                "ready_after_ms": self.ready_after_ms}


def parse(path: str, data: dict[str, Any], reader_of) -> tuple[Observer, ...]:
    """[[observe]]; reader_of(table, prefix) gives the scenario's typed reader."""
    from blklab.errors import ScenarioError

    tables = data.get("observe", [])
    if not isinstance(tables, list) or not all(isinstance(t, dict) for t in tables):
        raise ScenarioError(path, "observe", "must be an array of tables ([[observe]])")
    out: list[Observer] = []
    for i, table in enumerate(tables):
        r = reader_of(table, f"observe[{i}]")
        name = r.get("name", str, required=True)
        if not _NAME.match(name):
            raise r.error("name", f"'{name}': letters, digits, '_', '.', '-', up to 64, "
                          "starting with a letter or digit (it names the output file)")
        if any(o.name == name for o in out):
            raise r.error("name", f"'{name}' is the name of an earlier [[observe]]")
        command = r.get("command", str, required=True)
        if not command.strip():
            raise r.error("command", "is empty")
        ready = r.get("ready", str, "")
        if "\n" in ready:
            raise r.error("ready", "must be one line: the text the output must hold")
        after = r.integer("ready_after_ms", None, 0, MAX_READY_AFTER_MS)
        if ready and after is not None:
            raise r.error("ready_after_ms", "and ready both say when the observer is ready: "
                          "give one")
        r.finish()
        out.append(Observer(name, command, ready, after))
    return tuple(out)


def bundle_files(observers: tuple[Observer, ...]) -> dict[str, bytes]:
    """The job bundle's files for the guest (paths under the archive)."""
    files = {}
    for n, o in enumerate(observers):
        files[f"job/observe/{n}/name"] = o.name.encode()
        files[f"job/observe/{n}/ready"] = o.ready.encode()
        files[f"job/observe/{n}/ready_after_ms"] = (
            b"" if o.ready_after_ms is None else str(o.ready_after_ms).encode())
        files[f"job/observe/{n}/command.sh"] = o.command.encode()
    return files


def parse_guest_record(text: str) -> list[dict[str, Any]]:
    """The guest's observe.txt: "<name> <exit status> exited|interrupted|terminated|killed"."""
    out = []
    for line in text.splitlines():
        f = line.split()
        if len(f) == 3 and f[1].isdigit():
            out.append({"name": f[0], "exit_status": int(f[1]), "stopped": f[2],
                        "file": f"{FILE_PREFIX}{f[0]}.txt"})
    return out
