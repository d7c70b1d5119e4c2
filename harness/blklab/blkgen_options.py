"""blkgen's job option table, read from blkgen itself (`blkgen
--option-table-json`), so that the harness checks option names against the
one table that defines them (workload/options.cc) rather than a copy."""

from __future__ import annotations

import functools
import json
import subprocess
from dataclasses import dataclass
from pathlib import Path

from blklab import paths
from blklab.errors import BuildMissingError


@dataclass(frozen=True)
class OptionTable:
    options: dict[str, dict]  # name -> {"default", "help", "value_optional", "fio"}
    not_supported_yet: tuple[str, ...]

    def blkgen_only(self) -> tuple[str, ...]:
        return tuple(n for n, o in self.options.items() if not o["fio"])


def blkgen_binary() -> Path:
    return paths.cmake_tool("workload/blkgen", "blklab reads blkgen's option table from it")


@functools.lru_cache(maxsize=4)
def _load(tool: str, mtime_ns: int) -> OptionTable:
    proc = subprocess.run([tool, "--option-table-json"], capture_output=True, text=True,
                          timeout=30)
    if proc.returncode != 0:
        raise BuildMissingError(f"{tool} --option-table-json exited {proc.returncode}: "
                                f"{proc.stderr.strip()}; rebuild it with 'make cmake'")
    data = json.loads(proc.stdout)
    return OptionTable({o["name"]: o for o in data["options"]},
                       tuple(data["not_supported_yet"]))


def table() -> OptionTable:
    tool = blkgen_binary()
    return _load(str(tool), tool.stat().st_mtime_ns)


def table_if_built() -> OptionTable | None:
    """The table, or None when blkgen is not built: the checks are then left
    to the run (blkgen and fio refuse unknown options themselves), as the
    kernel driver check is when no image is built."""
    try:
        return table()
    except BuildMissingError:
        return None
