"""Named guest CPUs: the presets in cpus/*.toml.

A preset gives deterministic mode's CPU model for one real CPU: the
instruction rate (-icount rate=), the time of a PAUSE (pause=) and the time
a core spends besides its instructions on each hardware interrupt (irq=),
system call (syscall=) and wake-up from halt (wake=), each with its source.
`[guest] cpu = "NAME"` picks one; the individual [guest] keys override its
values (docs/cpus.md).
"""

from __future__ import annotations

import functools
import tomllib
from dataclasses import dataclass
from pathlib import Path

from blklab.errors import BlklabError

CPU_DIR = Path(__file__).resolve().parents[2] / "cpus"

# The model's values, the [guest] keys that override them and QEMU's -icount
# options that take them.
VALUE_KEYS = ("cpu_rate", "pause_ns", "irq_ns", "syscall_ns", "wake_ns")
EVENT_KEYS = ("irq_ns", "syscall_ns", "wake_ns")
# QEMU's limits (accel/tcg/icount-common.c)
EVENT_MAX_NS = 1_000_000
PAUSE_MAX_NS = 10_000
CPU_RATE_MIN = 0.25
# Above what any current core sustains (6-wide at 5 GHz is 30), and below
# QEMU's -icount rate= limit (1024).
CPU_RATE_MAX = 32.0
CPU_RATE_DIGITS = 6  # after the point: what QEMU's -icount rate= takes

# The preset a scenario without [guest] cpu gets: the one whose error is
# smallest on the interrupt-driven path users run (`make bench-cpu-paths`,
# docs/cpus.md, "Error per path").
DEFAULT_CPU = "xeon-silver-4210r"


@dataclass(frozen=True)
class Cpu:
    name: str  # the file's stem, as scenarios name it
    title: str  # [cpu] name: the part, its clock and settings
    clock_ghz: float
    cpu_rate: float
    pause_ns: int
    irq_ns: int
    syscall_ns: int
    wake_ns: int
    sources: tuple[tuple[str, str], ...]  # (value key, where it comes from)

    def values(self) -> dict[str, float | int]:
        return {k: getattr(self, k) for k in VALUE_KEYS}


def rate_text(rate: float) -> str:
    """A rate as a decimal with at most CPU_RATE_DIGITS digits after the
    point and no trailing zeros: 1 -> "1", 2.5 -> "2.5"."""
    return f"{rate:.{CPU_RATE_DIGITS}f}".rstrip("0").rstrip(".")


def value_error(key: str, value: object) -> str | None:
    """What is wrong with `value` for the model's `key`, or None."""
    if key == "cpu_rate":
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return f"must be a number, got {value!r}"
        if not CPU_RATE_MIN <= value <= CPU_RATE_MAX:
            return (f"must be between {rate_text(CPU_RATE_MIN)} and {rate_text(CPU_RATE_MAX)} "
                    f"instructions per ns per vCPU, got {value}")
        if float(rate_text(value)) != value:
            return f"{value} has more than {CPU_RATE_DIGITS} digits after the point"
        return None
    hi = PAUSE_MAX_NS if key == "pause_ns" else EVENT_MAX_NS
    if isinstance(value, bool) or not isinstance(value, int):
        return f"must be a whole number of ns between 0 and {hi}, got {value!r}"
    if not 0 <= value <= hi:
        return f"must be between 0 and {hi}, got {value}"
    return None


def _load(path: Path) -> Cpu:
    def bad(what: str) -> BlklabError:
        return BlklabError(f"{path}: {what}")

    try:
        data = tomllib.loads(path.read_text())
    except (OSError, tomllib.TOMLDecodeError) as e:
        raise bad(f"not a readable TOML file: {e}") from None
    cpu, sources = data.get("cpu"), data.get("sources")
    if not isinstance(cpu, dict) or not isinstance(sources, dict):
        raise bad("needs a [cpu] table and a [sources] table")
    extra = sorted(set(data) - {"cpu", "sources"})
    if extra:
        raise bad(f"unknown table '{extra[0]}' (allowed: cpu, sources)")
    allowed = ("name", "clock_ghz") + VALUE_KEYS
    for key in cpu:
        if key not in allowed:
            raise bad(f"unknown key 'cpu.{key}' (allowed: {', '.join(allowed)})")
    for key in allowed:
        if key not in cpu:
            raise bad(f"cpu.{key} is missing")
        if key in VALUE_KEYS and (why := value_error(key, cpu[key])):
            raise bad(f"cpu.{key} {why}")
        if key in VALUE_KEYS and not isinstance(sources.get(key), str):
            raise bad(f"sources.{key} is missing: every value names where it comes from")
    if not isinstance(cpu["name"], str) or not cpu["name"]:
        raise bad("cpu.name must be a non-empty string")
    clock = cpu["clock_ghz"]
    if isinstance(clock, bool) or not isinstance(clock, (int, float)) or not 0.1 <= clock <= 10:
        raise bad(f"cpu.clock_ghz must be a number of GHz from 0.1 to 10, got {clock!r}")
    return Cpu(name=path.stem, title=cpu["name"], clock_ghz=float(clock),
               cpu_rate=float(cpu["cpu_rate"]), pause_ns=cpu["pause_ns"], irq_ns=cpu["irq_ns"],
               syscall_ns=cpu["syscall_ns"], wake_ns=cpu["wake_ns"],
               sources=tuple((k, sources[k]) for k in VALUE_KEYS))


@functools.cache
def presets() -> dict[str, Cpu]:
    """Every preset in cpus/, by name."""
    return {p.stem: _load(p) for p in sorted(CPU_DIR.glob("*.toml"))}


def names() -> tuple[str, ...]:
    return tuple(presets())
