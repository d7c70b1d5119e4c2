"""Scenario files: parsing, validation and expansion into cells.

A scenario (TOML, documented in scenarios/README.md) names devices, a guest,
the schedulers to compare, tunables, jobs and repeats. Validation reports the
file, the key and what is allowed; expansion turns it into cells, one VM each:
device x scheduler x tunable combination x seed x repeat.
"""

from __future__ import annotations

import copy
import fnmatch
import functools
import hashlib
import itertools
import json
import re
import subprocess
import tempfile
import tomllib
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable

from blklab import appjobs, cpus, device_faults, kernels
from blklab import filesystem as filesystem_mod
from blklab import observe, udev
from blklab.errors import ScenarioError
from blklab.results import SUMMARY_METRICS

SCHEDULERS = ("none", "mq-deadline", "kyber", "bfq")
DEVICE_KINDS = ("nvme", "ide-hd", "ahci-hd", "virtio-blk")
BACKINGS = ("null", "file")
MODES = ("deterministic", "realtime")
DEFAULT_MODE = "deterministic"
# "command": each cell runs its [[job]]'s command, a shell script, in the
# applications' root ([guest] apps; guest-images/build-apps.sh).
WORKLOADS = ("blkgen", "fio", "command")
# Faults the guest injects on purpose once its workload runs, to test
# blklab itself: a kernel panic, or a guest that never finishes.
GUEST_FAULTS = ("none", "guest-panic", "guest-hang")

# Job options blklab sets itself for every cell (replay_redirect: a job
# that replays a trace replays it onto the device under test).
RESERVED_JOB_OPTIONS = ("filename", "output", "output-format", "eta", "replay_redirect")

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
_ATTR = re.compile(r"^[a-z0-9_]+$")
_OPTION = re.compile(r"^[a-z0-9_]+$")

MAX_VCPUS = 64
MAX_MEMORY_MIB = 64 * 1024
MAX_REPEATS = 1000
MAX_SIZE_GIB = 64 * 1024
MAX_DEVICE_SEED = 2**64 - 1
# QEMU's virtio-blk: at most VIRTIO_QUEUE_MAX (1024) virtqueues, each a
# ring of VIRTQUEUE_MAX_SIZE (1024) entries (hw/virtio/virtio.c).
VIRTIO_BLK_MAX_QUEUES = 1024
VIRTIO_BLK_RING_ENTRIES = 1024  # VIRTQUEUE_MAX_SIZE
VIRTIO_BLK_MIN_RING_ENTRIES = 4  # QEMU's virtio-blk wants queue-size > 2
PROFILE_DIR = Path(__file__).resolve().parents[2] / "devmodel" / "profiles"
# [guest] cpu: the named CPU (cpus/*.toml, blklab.cpus) whose model
# deterministic mode's vCPUs follow: cpu_rate (instructions per ns per vCPU,
# -icount rate=), pause_ns, irq_ns, syscall_ns and wake_ns (docs/cpus.md).
# Each [guest] key of those names overrides the preset's value.
DEFAULT_CPU = cpus.DEFAULT_CPU
_DEFAULT = cpus.presets()[DEFAULT_CPU]
# The default preset's rate: the Cascade Lake core's clock times the IPC of
# its block path, from a perf profile of interrupt-driven io_uring reads
# (cpus/xeon-silver-4210r.toml, docs/cpus.md).
CALIBRATED_CPU_RATE = _DEFAULT.cpu_rate
DEFAULT_CPU_RATE = CALIBRATED_CPU_RATE
CPU_RATE_MIN = cpus.CPU_RATE_MIN
CPU_RATE_MAX = cpus.CPU_RATE_MAX
CPU_RATE_DIGITS = cpus.CPU_RATE_DIGITS


# [guest] vcpu_clocks: one clock that every vCPU's instructions advance
# ("shared"), or each vCPU on its own clock ("parallel": QEMU's -icount
# parallel=on, qemu-patches/0033), with at most vcpu_quantum_ns between two
# running vCPUs' clocks (docs/determinism.md). Parallel is the default: a
# real machine's cores do not share one instruction stream; "shared" is what
# every run used before the key existed.
VCPU_CLOCKS = ("shared", "parallel")
# [guest] boot: each cell from the guest saved at its job point, or booted.
BOOTS = ("restore", "cold")
DEFAULT_VCPU_CLOCKS = "parallel"
DEFAULT_VCPU_QUANTUM_NS = 250  # docs/determinism.md: a twentieth of the fastest profile's read
VCPU_QUANTUM_MAX_NS = 1_000_000  # QEMU's limit

# [guest] pause_ns: the virtual time an x86 PAUSE takes (QEMU's -icount
# pause=NS, qemu-patches/0039) instead of one instruction's. Intel's
# optimization manual gives "as many as 140 cycles" from Skylake on (about
# 10 before): each preset gives it at its clock. A spin-wait loop (the
# kernel's APIC timer calibration, a contended spinlock) then runs as many
# iterations per ns as on that core, and costs the host no more. 0 keeps
# PAUSE one instruction, as every run before the key.
CALIBRATED_PAUSE_NS = _DEFAULT.pause_ns
DEFAULT_PAUSE_NS = CALIBRATED_PAUSE_NS
PAUSE_MAX_NS = cpus.PAUSE_MAX_NS
# [guest] irq_ns, syscall_ns, wake_ns: the time a vCPU spends besides its
# instructions on each hardware interrupt it takes, system call it makes and
# wake-up from HLT (-icount irq=, syscall=, wake=; qemu-patches/0050).
EVENT_MAX_NS = cpus.EVENT_MAX_NS


cpu_rate_text = cpus.rate_text


@dataclass(frozen=True)
class Device:
    """A device under test. One device is attached per cell."""

    name: str
    kind: str  # one of DEVICE_KINDS
    backing: str  # "null": reads zeros, writes dropped; "file": sparse raw file
    size_bytes: int
    rotation_rate: int | None = None  # rpm reported to the guest; 1 = non-rotating
    profile: Profile | None = None  # None: stock QEMU timing
    seed: int | None = None  # the device model's seed; None: the cell's seed
    mqes: int | None = None  # NVMe CAP.MQES (0's based); None: QEMU's default
    ncq_depth: int | None = None  # AHCI NCQ tags the drive accepts; None: 32
    # This device's own [queue] attributes ([device.queue]): each replaces
    # the scenario's [queue] axis of that name for this device's cells.
    queue_axes: tuple[tuple[str, tuple[str, ...]], ...] = ()
    # virtio-blk: its virtqueues (None: QEMU's default, one per vCPU), the
    # entries of each ring (queue-size; None: QEMU's default, 256; a power of
    # two from 4 to 1024) and the queue depth the guest's driver uses
    # (virtio_blk.queue_depth; None: the driver's default, the ring's size).
    num_queues: int | None = None
    queue_depth: int | None = None
    queue_size: int | None = None
    # NVMe: whether the controller offers shadow doorbells (Doorbell Buffer
    # Config, OACS bit 8). False (the default): it does not, as the drives
    # the profiles model do not (vm.VMConfig.device_properties says why).
    shadow_doorbells: bool = False


@dataclass(frozen=True)
class Profile:
    """A device profile (devmodel/profiles/*.toml) and what the library
    that QEMU links says about it."""

    name: str  # as written in the scenario
    path: str  # absolute path where it was found
    text: str = field(repr=False)  # its bytes, so a remote worker needs no copy
    sha256: str = ""
    capacity_bytes: int = 0
    logical_block_bytes: int = 512
    rotation_rate: int = 1
    # [[device]] precondition: the state the SSD starts in, in place of the
    # profile's [ssd] precondition ("" = the profile's own). text and sha256
    # are then of the profile as QEMU reads it, with that line replaced.
    precondition: str = ""


@dataclass(frozen=True)
class Guest:
    # A pinned guest kernel, "<series>-<flavour>" (blklab.kernels); the
    # image of that name is the guest.
    kernel: str = ""
    vcpus: int = 2
    memory_mib: int = 1024
    written: str = ""  # [guest] kernel as the file has it (messages)
    # Instructions per ns of virtual time for each vCPU in deterministic mode
    # (QEMU's -icount rate=R); None in realtime mode, where the host's CPU
    # sets the pace.
    cpu_rate: float | None = DEFAULT_CPU_RATE
    # "shared" or "parallel" in deterministic mode, None in realtime mode
    # (where every vCPU is a host thread); the quantum only with "parallel".
    vcpu_clocks: str | None = DEFAULT_VCPU_CLOCKS
    vcpu_quantum_ns: int | None = DEFAULT_VCPU_QUANTUM_NS
    # The time a PAUSE takes in deterministic mode (-icount pause=NS); None
    # in realtime mode.
    pause_ns: int | None = DEFAULT_PAUSE_NS
    # The named CPU (cpus/*.toml) and its event times in deterministic mode
    # (-icount irq=, syscall=, wake=), the [guest] keys applied; None in
    # realtime mode.
    cpu: str | None = DEFAULT_CPU
    irq_ns: int | None = _DEFAULT.irq_ns
    syscall_ns: int | None = _DEFAULT.syscall_ns
    wake_ns: int | None = _DEFAULT.wake_ns
    # The nvme driver's poll_queues module parameter (nvme.poll_queues on the
    # kernel command line): I/O queues without interrupts, which io_uring's
    # polled I/O (fio hipri=1) completes by polling. io_queue_count_set() in
    # drivers/nvme/host/pci.c refuses more than the possible CPUs (5.10, 6.1
    # and 6.12 alike), so at most vcpus.
    nvme_poll_queues: int = 0
    # Mount the applications' root (guest-images/build-apps.sh) from a
    # read-only, model-timed disk of its own; workload = "command" runs in it.
    apps: bool = False
    # "restore": each cell starts from the guest saved at its job point,
    # booted once per guest (deterministic mode, direct backend; blklab.snapshot);
    # "cold": each cell boots.
    boot: str = "restore"

    @property
    def cpu_rate_text(self) -> str:
        """cpu_rate as QEMU's -icount rate= takes it and cells record it."""
        return cpu_rate_text(self.cpu_rate) if self.cpu_rate is not None else ""

    @property
    def flavour(self) -> str:
        return self.kernel.split("-", 1)[1]

    @property
    def series(self) -> str:
        return self.kernel.split("-", 1)[0]


@dataclass(frozen=True)
class Job:
    """One workload job: fio option names and values, in the order given."""

    name: str
    options: tuple[tuple[str, str], ...]
    # Files the job brings into the guest (jobfiles.Attachment): the trace
    # read_iolog names (the option then holds its guest path) or the fio job
    # file; () = none.
    files: tuple = ()
    fio_file: str | None = None  # guest path of a customer's fio job file
    sections: tuple[str, ...] = ()  # the fio job file's job sections that run
    # workload = "command": the shell script the job runs in the
    # applications' root (guest-images/init says with what around it).
    command: str | None = None

    def args(self) -> list[str]:
        if self.fio_file is not None:
            return [self.fio_file]
        return [f"--name={self.name}"] + [f"--{k}={v}" for k, v in self.options]

    @property
    def replays(self) -> bool:
        return any(k.replace("-", "_") == "read_iolog" for k, _ in self.options)


@dataclass(frozen=True)
class Cell:
    """One VM run: a device, a scheduler, its tunables, a seed, a repeat."""

    id: str
    device: Device
    scheduler: str
    queue: tuple[tuple[str, str], ...]  # attributes under queue/
    iosched: tuple[tuple[str, str], ...]  # attributes under queue/iosched/
    seed: int
    repeat: int
    # Schedulers the guest switches between while the workload runs, every
    # switch_interval_ms (scenario.switch_schedulers); () = no switching.
    switch_schedulers: tuple[str, ...] = ()
    switch_interval_ms: int = 0

    def tunables(self) -> list[tuple[str, str]]:
        """(path under queue/, value) in the order the guest applies them."""
        return list(self.queue) + [(f"iosched/{k}", v) for k, v in self.iosched]


@dataclass(frozen=True)
class Selector:
    """Picks one group of cells: a scheduler, a job, tunable values; for an
    expectation's right side also a device (None: the expectation's)."""

    scheduler: str | None = None
    job: str | None = None
    tunables: tuple[tuple[str, str], ...] = ()
    device: str | None = None

    def picks(self, scheduler: str, tunables: dict[str, str]) -> bool:
        """Whether a cell run under `scheduler` with `tunables` (path under
        queue/ -> value) is one of this selector's."""
        if self.scheduler is not None and scheduler != self.scheduler:
            return False
        return all(tunables.get(k) == v for k, v in self.tunables)


@dataclass(frozen=True)
class Expectation:
    """What should be true of a run, checked after it: `left op right x
    factor`, or `ratio[0] <= left / right <= ratio[1]`, or left against an
    absolute `below` / `above` bound."""

    what: str
    metric: str
    direction: str
    device: str | None
    left: Selector
    right: Selector | None
    op: str | None
    factor: float
    ratio: tuple[float, float] | None
    below: float | None
    above: float | None
    source: str
    index: int = 0  # its place among the file's [[expect]] entries
    # Not checked in the short form: it needs the full form's virtual time.
    full_only: bool = False
    # Why it is known to fail, in a sentence; None: it is expected to hold.
    # A known failure is still evaluated wherever it runs, and a pass is
    # reported as unexpected (the mark must go).
    known_failure: str | None = None
    # "all": holds only if it holds on every seed; "median": decided on the
    # median over the seeds of each side's per-seed value.
    quorum: str = "all"


@dataclass
class Scenario:
    path: Path
    name: str
    description: str
    schedulers: list[str]
    repeats: int
    seeds: list[int]
    mode: str
    timeout_s: int
    workload: str
    guest: Guest
    devices: list[Device]
    queue_axes: dict[str, list[str]]
    iosched_axes: dict[str, dict[str, list[str]]]
    jobs: list[Job]
    sha256: str
    expectations: list[Expectation] = field(default_factory=list)
    blktrace: bool = False  # trace each cell's workload with blktrace and report btt figures
    # Run tools/blklab-capture.sh in the guest beside the workload; its
    # output is kept as cells/<cell>/capture.txt.
    capture: bool = False
    # scenario.guest_fault: a guest kernel panic or hang on purpose, to test
    # blklab itself (not a device fault; those are `faults`).
    guest_fault: str = "none"  # one of GUEST_FAULTS
    # [[fault]]: device faults on a schedule (blklab.device_faults), each
    # also in its device's profile text, as QEMU reads it.
    faults: tuple = ()
    raw: dict[str, Any] = field(repr=False, default_factory=dict)
    short: bool = False  # the short form: [short] applied (see _short_form)
    switch_schedulers: tuple[str, ...] = ()  # see Cell
    switch_interval_ms: int = 0
    # Cell id patterns (fnmatch) of the cells to run; () = every cell.
    # Set by [short] cells only.
    cell_patterns: tuple[str, ...] = ()
    # scenario.customer_fio: the customer's fio JSON (bytes), which the run
    # keeps and its report sets beside the cells' figures; None = none.
    customer_fio: bytes | None = field(default=None, repr=False)
    # [guest] keys set for this run in place of the file's (blklab run
    # --guest KEY=VALUE): (key, value as TOML), in the order given.
    guest_set: tuple[tuple[str, str], ...] = ()
    # [filesystem]: one made in the guest on the device under test and
    # mounted at /data (blklab.filesystem); None = the raw device.
    filesystem: filesystem_mod.Filesystem | None = None
    # [vm]: /proc/sys/vm writeback settings, (name, value) in order.
    vm: tuple[tuple[str, int], ...] = ()
    # [udev]: a customer's rules file applied to the device (blklab.udev).
    udev_rules: udev.UdevRules | None = None
    # [[observe]]: commands beside the workload (blklab.observe).
    observers: tuple = ()
    # workload = "command" with [[job]] app = "sysbench" / "pgbench"
    # (blklab.appjobs): the jobs the command's generated script runs.
    app_jobs: tuple = ()

    def runs(self, exp: Expectation) -> bool:
        """Whether this form of the scenario checks `exp`: the short form
        leaves out the expectations marked full_only."""
        return not (self.short and exp.full_only)

    def cells(self) -> list[Cell]:
        cells = expand_cells(self)
        if self.cell_patterns:
            cells = [c for c in cells if any(fnmatch.fnmatchcase(c.id, pat)
                                             for pat in self.cell_patterns)]
        return cells


class _Reader:
    """Typed access to a TOML table that reports file and dotted key."""

    # Set by blklab.reference while it generates the scenario-key reference:
    # called with (prefix, name, what the call accepts) for every key read, so
    # the reference's types, defaults and bounds are the ones the checks use.
    recorder: Callable[[str, str, dict[str, Any]], None] | None = None

    def __init__(self, path: str, table: dict[str, Any], prefix: str):
        self.path = path
        self.table = table
        self.prefix = prefix
        self.used: set[str] = set()

    def key(self, name: str) -> str:
        return f"{self.prefix}.{name}" if self.prefix else name

    def error(self, name: str | None, message: str) -> ScenarioError:
        return ScenarioError(self.path, self.key(name) if name else self.prefix or None, message)

    def get(self, name: str, kind: type | tuple[type, ...], default: Any = None,
            required: bool = False) -> Any:
        self.used.add(name)
        if _Reader.recorder is not None:
            _Reader.recorder(self.prefix, name, {"kinds": kind if isinstance(kind, tuple)
                                                 else (kind,), "default": default,
                                                 "required": required})
        if name not in self.table:
            if required:
                raise self.error(name, "is required")
            return default
        value = self.table[name]
        kinds = kind if isinstance(kind, tuple) else (kind,)
        # TOML booleans are not integers here.
        if isinstance(value, bool) and bool not in kinds:
            raise self.error(name, f"must be {_kind_names(kinds)}, not a boolean")
        if not isinstance(value, kinds):
            raise self.error(name, f"must be {_kind_names(kinds)}, not {_type_name(value)}")
        return value

    def integer(self, name: str, default: int | None, lo: int, hi: int,
                required: bool = False) -> int | None:
        if _Reader.recorder is not None:
            _Reader.recorder(self.prefix, name, {"lo": lo, "hi": hi})
        value = self.get(name, int, default, required)
        if value is not None and not lo <= value <= hi:
            raise self.error(name, f"must be between {lo} and {hi}, got {value}")
        return value

    def choice(self, name: str, allowed: tuple[str, ...], default: str | None = None,
               required: bool = False) -> str | None:
        if _Reader.recorder is not None:
            _Reader.recorder(self.prefix, name, {"allowed": tuple(allowed)})
        value = self.get(name, str, default, required)
        if value is not None and value not in allowed:
            raise self.error(name, f"'{value}' is not one of: {', '.join(allowed)}")
        return value

    def finish(self) -> None:
        unknown = sorted(set(self.table) - self.used)
        if unknown:
            allowed = ", ".join(sorted(self.used))
            raise self.error(unknown[0], f"unknown key (allowed here: {allowed})")


def _kind_names(kinds: tuple[type, ...]) -> str:
    return " or ".join(_TYPE_NAMES.get(k, k.__name__) for k in kinds)


_TYPE_NAMES = {int: "an integer", float: "a number", str: "a string", bool: "a boolean",
               list: "an array", dict: "a table"}


def _type_name(value: Any) -> str:
    return _TYPE_NAMES.get(type(value), type(value).__name__)


def _tunable_values(reader: _Reader, name: str) -> list[str]:
    """A tunable is a value or a list of values (a matrix axis)."""
    if not _ATTR.match(name):
        raise reader.error(name, "is not a sysfs attribute name (lowercase letters, digits, _)")
    value = reader.get(name, (int, str, list))
    values = value if isinstance(value, list) else [value]
    if not values:
        raise reader.error(name, "an empty list gives no cells; give at least one value")
    out = []
    for v in values:
        if isinstance(v, bool) or not isinstance(v, (int, str)):
            raise reader.error(name, f"values must be integers or strings, not {_type_name(v)}")
        text = str(v)
        if "\n" in text or not text.strip():
            raise reader.error(name, f"value {text!r} is empty or spans lines")
        out.append(text)
    if len(set(out)) != len(out):
        raise reader.error(name, "lists the same value twice")
    return out


def _parse_size_gib(reader: _Reader, profile: Profile | None) -> int:
    """The size the guest sees: size_gib, or else the profile's capacity
    (rounded down to 4 KiB), or else 8 GiB."""
    value = reader.get("size_gib", (int, float), None)
    if value is None:
        if profile is not None and profile.capacity_bytes:
            return profile.capacity_bytes // 4096 * 4096
        value = 8
    if not 0 < value <= MAX_SIZE_GIB:
        raise reader.error("size_gib", f"must be above 0 and at most {MAX_SIZE_GIB}, got {value}")
    size = int(value * (1 << 30))
    if size % 4096:
        raise reader.error("size_gib", "must give a size that is a multiple of 4 KiB")
    if profile is not None and profile.capacity_bytes and size > profile.capacity_bytes:
        raise reader.error("size_gib", f"{value} GiB is more than profile '{profile.name}' "
                           f"holds ({profile.capacity_bytes} bytes); leave size_gib out to use "
                           "the profile's capacity")
    return size


def profile_names() -> list[str]:
    return sorted(p.stem for p in PROFILE_DIR.glob("*.toml"))


def _parse_profile(reader: _Reader, scenario_path: str, check: bool) -> Profile | None:
    """`profile`: a name from devmodel/profiles/ or a path to a .toml file
    (relative to the scenario's directory). With check, the profile is
    loaded by devmodel-info (the library QEMU links) and its capacity,
    block size and rotation rate are read; a profile that does not load is
    an error naming the profile file and key."""
    name = reader.get("profile", str, None)
    if name is None:
        return None
    if "/" in name or name.endswith(".toml"):
        path = (Path(scenario_path).parent / name).resolve()
    else:
        if not _NAME.match(name):
            raise reader.error("profile", f"'{name}' is not a profile name or a .toml path")
        path = PROFILE_DIR / f"{name}.toml"
    if not check:
        return Profile(name, str(path), "")
    try:
        blob = path.read_bytes()
    except OSError as e:
        known = ", ".join(profile_names())
        raise reader.error("profile", f"'{name}': cannot read {path}: {e.strerror} "
                           f"(profiles in devmodel/profiles: {known})") from None
    try:
        text = blob.decode("utf-8")
    except UnicodeDecodeError as e:
        raise reader.error("profile", f"{path} is not UTF-8 text (byte {e.start})") from None
    info = profile_info(path)
    if "error" in info:
        raise reader.error("profile", f"'{name}' does not load: {info['error']}")
    return Profile(name, str(path), text, hashlib.sha256(blob).hexdigest(),
                   int(info["capacity_bytes"]),
                   int(info["logical_block_bytes"]), int(info["rotation_rate"]))


def profile_info(path: Path) -> dict[str, Any]:
    """What `devmodel-info --check` prints for a profile (validated by the
    library QEMU links, the drive's state not built), or {"error": message}.
    The answer is kept for the same profile bytes and devmodel-info."""
    from blklab import paths

    tool = paths.devmodel_info()
    try:
        blob = Path(path).read_bytes()
        built = tool.stat().st_mtime_ns
    except OSError:
        blob, built = None, None
    key = (hashlib.sha256(blob).hexdigest(), built) if blob is not None else ("", 0)
    return dict(_profile_info(str(tool), str(path), *key))


@functools.lru_cache(maxsize=64)
def _profile_info(tool: str, path: str, sha256: str, built: int) -> dict[str, Any]:
    """devmodel-info's answer; sha256 and built only key the cache."""
    proc = subprocess.run([tool, "--check", path], capture_output=True, text=True)
    if proc.returncode != 0:
        return {"error": proc.stderr.strip() or f"devmodel-info exited {proc.returncode}"}
    return json.loads(proc.stdout)


# [[device]] precondition: the device model's [ssd] precondition
# (devmodel/include/devmodel/ssd.h): "none" factory-fresh (a read of an LBA
# never written costs no NAND read), "full" every LBA written once in order,
# "steady" full and then random overwrites until garbage collection runs.
PRECONDITIONS = ("none", "full", "steady")
_TABLE_HEADER = re.compile(r"\s*\[\s*([A-Za-z0-9_.-]+)\s*\]\s*(#.*)?$")
_PRECONDITION_LINE = re.compile(r"\s*precondition\s*=")


def profile_with_precondition(text: str, value: str) -> str | None:
    """The profile's TOML text with its [ssd] table's precondition set to
    `value` (the key's line, if any, removed; the new one first in the
    table), or None when the text has no [ssd] table."""
    out, in_ssd, placed = [], False, False
    for line in text.splitlines(keepends=True):
        header = _TABLE_HEADER.match(line)
        if header:
            in_ssd = header.group(1) == "ssd"
            out.append(line if line.endswith("\n") else line + "\n")
            if in_ssd and not placed:
                out.append(f'precondition = "{value}"  # set by the scenario\'s [[device]]\n')
                placed = True
            continue
        if in_ssd and _PRECONDITION_LINE.match(line):
            continue
        out.append(line)
    return "".join(out) if placed else None


def _derived_profile_info(profile: Profile, text: str) -> dict[str, Any]:
    """profile_info() of `text`, the profile as the scenario changed it,
    with an error naming the profile's own path."""
    with tempfile.TemporaryDirectory(prefix="blklab-profile-") as tmp:
        derived = Path(tmp) / Path(profile.path).name
        derived.write_text(text)
        info = profile_info(derived)
    if "error" in info:
        info["error"] = info["error"].replace(str(derived), profile.path)
    return info


def _precondition(reader: _Reader, profile: Profile | None, check: bool) -> Profile | None:
    """`precondition`: the profile with its SSD's starting state replaced."""
    value = reader.choice("precondition", PRECONDITIONS)
    if value is None:
        return profile
    if profile is None:
        raise reader.error("precondition", "sets the state of the device model's SSD and "
                           "needs an SSD profile")
    if not check:
        return replace(profile, precondition=value)
    model = profile_info(Path(profile.path)).get("model")
    text = profile_with_precondition(profile.text, value) if model == "ssd" else None
    if text is None:
        raise reader.error("precondition", f"applies to SSD profiles only; '{profile.name}' "
                           f"has [device] model = \"{model}\"")
    info = _derived_profile_info(profile, text)
    if "error" in info:
        raise reader.error("precondition", f"'{profile.name}' with precondition = "
                           f"\"{value}\" does not load: {info['error']}")
    return replace(profile, text=text, precondition=value,
                   sha256=hashlib.sha256(text.encode()).hexdigest())


def _parse_devices(path: str, data: dict[str, Any], check_profiles: bool) -> list[Device]:
    tables = data.get("device")
    if tables is None:
        raise ScenarioError(path, "device", "at least one [[device]] is required")
    if not isinstance(tables, list) or not all(isinstance(t, dict) for t in tables):
        raise ScenarioError(path, "device", "must be an array of tables ([[device]])")
    devices = []
    for i, table in enumerate(tables):
        r = _Reader(path, table, f"device[{i}]")
        name = r.get("name", str, required=True)
        if not _NAME.match(name):
            raise r.error("name", f"'{name}' must be 1-64 of letters, digits, '_', '.', '-'")
        kind = r.choice("kind", DEVICE_KINDS, required=True)
        backing = r.choice("backing", BACKINGS, "file")
        profile = _precondition(r, _parse_profile(r, path, check_profiles), check_profiles)
        size = _parse_size_gib(r, profile)
        rotation = r.integer("rotation_rate", None, 1, 65534)
        if rotation is not None and kind not in ("ide-hd", "ahci-hd"):
            raise r.error("rotation_rate", "applies to ide-hd and ahci-hd devices only")
        seed = r.integer("seed", None, 0, MAX_DEVICE_SEED)
        if seed is not None and profile is None:
            raise r.error("seed", "seeds the device model and needs a profile")
        mqes = r.integer("mqes", None, 1, 0xFFFF)
        if mqes is not None and kind != "nvme":
            raise r.error("mqes", "applies to nvme devices only")
        shadow_doorbells = r.get("shadow_doorbells", bool, None)
        if shadow_doorbells is not None and kind != "nvme":
            raise r.error("shadow_doorbells", "applies to nvme devices only (Doorbell Buffer "
                          "Config is an NVMe admin command)")
        ncq_depth = r.integer("ncq_depth", None, 1, 32)
        if ncq_depth is not None and kind != "ahci-hd":
            raise r.error("ncq_depth", "applies to ahci-hd devices only (PIIX IDE has no NCQ)")
        num_queues = r.integer("num_queues", None, 1, VIRTIO_BLK_MAX_QUEUES)
        if num_queues is not None and kind != "virtio-blk":
            raise r.error("num_queues", "applies to virtio-blk devices only")
        queue_depth = r.integer("queue_depth", None, 1, VIRTIO_BLK_RING_ENTRIES)
        if queue_depth is not None and kind != "virtio-blk":
            raise r.error("queue_depth", "applies to virtio-blk devices only (nvme: mqes)")
        queue_size = r.integer("queue_size", None, VIRTIO_BLK_MIN_RING_ENTRIES,
                               VIRTIO_BLK_RING_ENTRIES)
        if queue_size is not None:
            if kind != "virtio-blk":
                raise r.error("queue_size", "applies to virtio-blk devices only (nvme: mqes)")
            if queue_size & (queue_size - 1):
                raise r.error("queue_size", f"{queue_size} is not a power of two: a virtio "
                              f"ring has 4, 8, 16, ... or {VIRTIO_BLK_RING_ENTRIES} entries")
        q = _Reader(path, _table(path, table, "queue", f"device[{i}].queue"),
                    f"device[{i}].queue")
        r.used.add("queue")
        queue_axes = tuple((k, tuple(_tunable_values(q, k))) for k in list(q.table))
        if any(k == "scheduler" for k, _ in queue_axes):
            raise q.error("scheduler", "choose schedulers with scenario.schedulers")
        r.finish()
        devices.append(Device(name, kind, backing, size, rotation, profile, seed, mqes,
                              ncq_depth, queue_axes, num_queues, queue_depth, queue_size,
                              shadow_doorbells=bool(shadow_doorbells)))
    names = [d.name for d in devices]
    for n in names:
        if names.count(n) > 1:
            raise ScenarioError(path, "device", f"two devices are named '{n}'")
    return devices


def _parse_cpu(g: _Reader) -> dict[str, Any]:
    """[guest] cpu and the model's keys: the preset's values, each key
    given in the table in place of the preset's."""
    preset = cpus.presets()[g.choice("cpu", cpus.names(), DEFAULT_CPU)]
    values: dict[str, Any] = {"cpu": preset.name}
    for key, default in preset.values().items():
        value = g.get(key, (int, float), default)
        if (why := cpus.value_error(key, value)) is not None:
            raise g.error(key, why)
        values[key] = float(value) if key == "cpu_rate" else value
    return values


def check_deterministic(path: str, devices: list[Device], why: str) -> None:
    """Deterministic mode needs every device on the device model: a device
    without a profile completes I/O at host time (stock QEMU timing), which
    no rerun reproduces. `why` names what asked for the mode."""
    for i, d in enumerate(devices):
        if d.profile is None:
            raise ScenarioError(
                path, f"device[{i}].profile",
                f"device '{d.name}' has no profile, and deterministic mode ({why}) needs one on "
                "every device: name a profile (zero-latency for no device delay) or set "
                'scenario.mode = "realtime"')


# The keys a [[job]] with a fio job file or command takes (the first names the form).
FIO_JOB_KEYS = {"fio_file": ("fio_file", "sections", "name"),
                "fio_command": ("fio_command", "name")}


def _parse_fio_file_job(path: str, scenario_path: Path, i: int, table: dict[str, Any],
                        workload: str) -> Job:
    """`[[job]] fio_file = "x.fio"` (optionally `sections = [...]`, `name`),
    or `[[job]] fio_command = "fio --name=..."` (optionally `name`)."""
    from blklab import blkgen_options, jobfiles

    prefix = f"job[{i}]"
    source = "fio_command" if "fio_command" in table else "fio_file"
    if "fio_command" in table and "fio_file" in table:
        raise ScenarioError(path, f"{prefix}.fio_command", "a job takes fio_file or "
                            "fio_command, not both")
    allowed = FIO_JOB_KEYS[source]
    for key in table:
        if key not in allowed:
            raise ScenarioError(path, f"{prefix}.{key}", f"a job with {source} takes its "
                                f"options from it; only {' and '.join(allowed[1:])} may stand "
                                "beside it")
    value = table[source]
    t = blkgen_options.table_if_built()
    known, not_yet = (t.options, t.not_supported_yet) if t else (None, ())
    if source == "fio_command":
        if not isinstance(value, str) or not value.strip():
            raise ScenarioError(path, f"{prefix}.fio_command", "must be a fio command line "
                                "as text, e.g. \"fio --name=r --rw=randread --bs=4k\"")
        if "\n" in value:
            raise ScenarioError(path, f"{prefix}.fio_command", "must be one line (a shell's "
                                "line continuations joined)")
        jf = jobfiles.parse_fio_command(path, f"{prefix}.fio_command", value, known, not_yet,
                                        workload, f"{i}-")
        default_name = jf.sections[0]
    else:
        if not isinstance(value, str) or not value:
            raise ScenarioError(path, f"{prefix}.fio_file", "must be a path (relative to the "
                                "scenario file) to a fio job file")
        sections = table.get("sections")
        if sections is not None and (not isinstance(sections, list) or not sections or not all(
                isinstance(x, str) and x for x in sections)):
            raise ScenarioError(path, f"{prefix}.sections", "must be a non-empty array of the "
                                "file's job section names")
        jf = jobfiles.parse_fio_file(scenario_path, path, f"{prefix}.fio_file", value,
                                     sections, known, not_yet, workload, f"{i}-")
        default_name = Path(value).stem
    name = table.get("name", default_name)
    if not isinstance(name, str) or not _NAME.match(name):
        raise ScenarioError(path, f"{prefix}.name",
                            "1-64 of letters, digits, '_', '.', '-'")
    return Job(name, (), (jf.attachment,), jf.attachment.guest_path, jf.sections)


def _parse_command_jobs(path: str, data: dict[str, Any]) -> tuple[list[Job], tuple]:
    """workload = "command": one [[job]] with a name and the shell script
    (command) it runs in the applications' root, or [[job]]s that name an
    app (blklab.appjobs), run by one script blklab writes; with the app
    jobs ((): none)."""
    tables = data.get("job")
    if isinstance(tables, list) and tables and any(appjobs.is_app_job(t) for t in tables):
        apps = appjobs.parse(path, tables, lambda t, prefix: _Reader(path, t, prefix))
        servers = appjobs.parse_servers(path, data, apps,
                                        lambda t, prefix: _Reader(path, t, prefix))
        faults = isinstance(data.get("fault"), list) and bool(data["fault"])
        return [Job("apps", (), command=appjobs.script(apps, servers, faults))], apps
    if not isinstance(tables, list) or len(tables) != 1 or not isinstance(tables[0], dict):
        raise ScenarioError(path, "job", "workload = \"command\" runs exactly one [[job]]; "
                            "put its steps into one command")
    j = _Reader(path, tables[0], "job[0]")
    name = j.get("name", str, required=True)
    if not _NAME.match(name):
        raise j.error("name", "must be 1-64 of letters, digits, '_', '.', '-'")
    command = j.get("command", str, required=True)
    if not command.strip():
        raise j.error("command", "is empty")
    j.finish()
    return [Job(name, (), command=command)], ()


def _parse_jobs(path: str, data: dict[str, Any], scenario_path: Path | None = None,
                workload: str = "blkgen") -> list[Job]:
    from blklab import jobfiles

    tables = data.get("job")
    if tables is None:
        raise ScenarioError(path, "job", "at least one [[job]] is required")
    if not isinstance(tables, list) or not all(isinstance(t, dict) for t in tables):
        raise ScenarioError(path, "job", "must be an array of tables ([[job]])")
    jobs = []
    for i, table in enumerate(tables):
        prefix = f"job[{i}]"
        if "fio_file" in table or "fio_command" in table:
            if scenario_path is not None:
                jobs.append(_parse_fio_file_job(path, scenario_path, i, table, workload))
            else:  # a run read back: the file went with it, as the guest got it
                if "fio_file" in table:
                    default = Path(str(table["fio_file"])).stem
                else:
                    default = jobfiles.fio_command_sections(str(table["fio_command"]), path,
                                                            f"{prefix}.fio_command")[0]
                name = str(table.get("name", default))
                jobs.append(Job(name, (), (), "", tuple(table.get("sections") or ())))
            continue
        name = table.get("name")
        if not isinstance(name, str) or not _NAME.match(name):
            raise ScenarioError(path, f"{prefix}.name",
                                "is required: 1-64 of letters, digits, '_', '.', '-'")
        options = []
        for key, value in table.items():
            if key == "name":
                continue
            if not _OPTION.match(key.replace("-", "_")):
                raise ScenarioError(path, f"{prefix}.{key}", "is not a fio option name")
            if key in RESERVED_JOB_OPTIONS:
                raise ScenarioError(path, f"{prefix}.{key}",
                                    "is set by blklab for every cell and cannot be given")
            if isinstance(value, bool):
                text = "1" if value else "0"
            elif isinstance(value, (int, float, str)):
                text = str(value)
            else:
                raise ScenarioError(path, f"{prefix}.{key}",
                                    f"must be a string, number or boolean, not {_type_name(value)}")
            if "\n" in text:
                raise ScenarioError(path, f"{prefix}.{key}", "must not span lines")
            options.append((key, text))
        files: tuple = ()
        if scenario_path is not None:
            options, files = _attach_trace(path, scenario_path, prefix, options, workload, i)
        jobs.append(Job(name, tuple(options), files))
    if sum(j.fio_file is not None for j in jobs) > 1:
        raise ScenarioError(path, "job", "one job may name a fio_file or fio_command (blkgen "
                            "runs one job file per run); put the sections into one file")
    return jobs


def _attach_trace(path: str, scenario_path: Path, prefix: str,
                  options: list[tuple[str, str]], workload: str,
                  i: int) -> tuple[list[tuple[str, str]], tuple]:
    """read_iolog's trace goes into the guest: the option gets its path there."""
    from blklab import jobfiles

    for n, (key, value) in enumerate(options):
        if key.replace("-", "_") != "read_iolog":
            continue
        files = jobfiles.trace_files(scenario_path, path, f"{prefix}.{key}", value, workload,
                                     f"{i}-")
        requested = f"{i}-{Path(value).name}"
        guest = next(f.guest_path for f in files if f.name == requested)
        return options[:n] + [(key, guest)] + options[n + 1:], tuple(files)
    return options, ()


def _check_blkgen_options(path: str, jobs: list[Job]) -> None:
    """blkgen would stop at an option it does not have; say so before a VM starts."""
    from blklab import blkgen_options

    table = blkgen_options.table_if_built()
    if table is None:
        return
    for i, job in enumerate(jobs):
        for key, _ in job.options:
            name = key.replace("-", "_")
            if name in table.options:
                continue
            why = ("is a fio option blkgen does not support yet; run it with workload = \"fio\""
                   if name in table.not_supported_yet else
                   "is not a blkgen option (blkgen --help lists them)")
            raise ScenarioError(path, f"job[{i}].{key}", why)


def _check_fio_options(path: str, jobs: list[Job]) -> None:
    """fio would stop at an option only blkgen has; say so before a VM starts."""
    from blklab import blkgen_options

    table = blkgen_options.table_if_built()
    if table is None:
        return
    blkgen_only = table.blkgen_only()
    for i, job in enumerate(jobs):
        for key, _ in job.options:
            if key.replace("-", "_") in blkgen_only:
                raise ScenarioError(path, f"job[{i}].{key}",
                                    "is blkgen's own option and fio has none of that name "
                                    "(scenario.workload is \"fio\"); run it with "
                                    "workload = \"blkgen\"")


# The block layer's figures of each job (results.SUMMARY_METRICS) and an
# application job's own (appjobs.APP_METRICS: workload = "command" with app jobs).
EXPECT_METRICS = SUMMARY_METRICS + tuple(appjobs.APP_METRICS)
QUORUMS = ("all", "median")
SHORT_KEY_GONE = ("is no longer a key: an expectation left out of the short form says why, "
                  "with full_only = true (it needs the full form's virtual time) or "
                  "known_failure = \"why, in a sentence\" (it is known to fail; add "
                  "full_only = true as well if the short form does not run its cells)")
EXPECT_OPS = ("<", "<=", ">", ">=")
DIRECTIONS = ("read", "write", "trim")


def _parse_selector(r: _Reader, name: str, jobs: list[Job], schedulers: list[str],
                    devices: list[Device], expect_device: str | None) -> Selector:
    table = r.get(name, dict, required=True)
    sr = _Reader(r.path, table, r.key(name))
    device = sr.get("device", str)
    if device is not None:
        if name != "right":
            raise sr.error("device", "only right names a device; the expectation's own "
                           "device key picks left's")
        if expect_device is None:
            raise sr.error("device", "compares two devices, so the expectation needs "
                           "device = \"...\" for its left side")
        if device not in [d.name for d in devices]:
            raise sr.error("device", f"no [[device]] is named '{device}' "
                           f"(devices: {', '.join(d.name for d in devices)})")
    sched = sr.get("scheduler", str)
    if sched is not None and sched not in schedulers:
        raise sr.error("scheduler", f"'{sched}' is not in scenario.schedulers "
                       f"({', '.join(schedulers)})")
    job = sr.get("job", str)
    if job is not None and job not in [j.name for j in jobs]:
        raise sr.error("job", f"no [[job]] is named '{job}' "
                       f"(jobs: {', '.join(j.name for j in jobs)})")
    tun = sr.get("tunables", dict, {})
    pairs = []
    for k, v in tun.items():
        if isinstance(v, bool) or not isinstance(v, (int, str)):
            raise ScenarioError(r.path, f"{sr.key('tunables')}.{k}",
                                "must be an integer or a string")
        pairs.append((k, str(v)))
    sr.finish()
    return Selector(sched, job, tuple(pairs), device)


def _parse_expectations(path: str, data: dict[str, Any], devices: list[Device],
                        jobs: list[Job], schedulers: list[str],
                        app_jobs: tuple = ()) -> list[Expectation]:
    """[[expect]]; an application's metric (appjobs.APP_METRICS) reads the
    app jobs' results, and its sides name those jobs."""
    tables = data.get("expect", [])
    if not isinstance(tables, list) or not all(isinstance(t, dict) for t in tables):
        raise ScenarioError(path, "expect", "must be an array of tables ([[expect]])")
    out = []
    for i, table in enumerate(tables):
        r = _Reader(path, table, f"expect[{i}]")
        what = r.get("what", str, required=True)
        metric = r.choice("metric", EXPECT_METRICS, required=True)
        named = jobs
        if metric in appjobs.APP_METRICS:
            if not app_jobs:
                raise r.error("metric", f"'{metric}' is an application job's figure, and "
                              "no [[job]] has an app (workload = \"command\")")
            if "direction" in table:
                raise r.error("direction", f"'{metric}' is an application job's figure, "
                              "which has no direction")
            named = [Job(a.name, ()) for a in app_jobs]
        direction = r.choice("direction", DIRECTIONS, "read")
        device = r.get("device", str)
        if device is not None and device not in [d.name for d in devices]:
            raise r.error("device", f"no [[device]] is named '{device}' "
                          f"(devices: {', '.join(d.name for d in devices)})")
        left = _parse_selector(r, "left", named, schedulers, devices, device)
        right = (_parse_selector(r, "right", named, schedulers, devices, device)
                 if "right" in table else None)
        op = r.choice("op", EXPECT_OPS)
        factor = r.get("factor", (int, float), 1.0)
        if factor <= 0:
            raise r.error("factor", f"must be above 0, got {factor}")
        ratio = r.get("ratio", list)
        if ratio is not None:
            if (len(ratio) != 2 or not all(isinstance(x, (int, float)) and
                                           not isinstance(x, bool) for x in ratio)
                    or not 0 <= ratio[0] <= ratio[1]):
                raise r.error("ratio", "must be [low, high] with 0 <= low <= high")
            ratio = (float(ratio[0]), float(ratio[1]))
        below = r.get("below", (int, float))
        above = r.get("above", (int, float))
        source = r.get("source", str, "")
        if "short" in table:
            raise r.error("short", SHORT_KEY_GONE)
        full_only = r.get("full_only", bool, False)
        known_failure = r.get("known_failure", str)
        if known_failure is not None and (not known_failure.strip() or "\n" in known_failure):
            raise r.error("known_failure", "must say why it fails, in a sentence on one line")
        quorum = r.choice("quorum", QUORUMS, "all")
        r.finish()
        forms = [op is not None, ratio is not None, below is not None or above is not None]
        if sum(forms) != 1:
            raise r.error(None, "give exactly one of: op (with right), ratio (with right), "
                          "below/above (without right)")
        if (op is not None or ratio is not None) and right is None:
            raise r.error("right", "is required with op or ratio")
        if forms[2] and right is not None:
            raise r.error("right", "is not used with below/above")
        out.append(Expectation(what, metric, direction, device, left, right, op,
                               float(factor), ratio, below, above, source, i, full_only,
                               known_failure, quorum))
    return out


DEFAULT_SWITCH_INTERVAL_MS = 250


def _parse_switching(s: _Reader) -> tuple[tuple[str, ...], int]:
    """scenario.switch_schedulers and switch_interval_ms: the guest writes the
    next name to queue/scheduler every interval while the workload runs."""
    names = s.get("switch_schedulers", list, None)
    interval = s.integer("switch_interval_ms", None, 10, 60000)
    if names is None:
        if interval is not None:
            raise s.error("switch_interval_ms", "needs scenario.switch_schedulers")
        return (), 0
    if len(names) < 2:
        raise s.error("switch_schedulers", "must list at least two schedulers to switch between")
    for name in names:
        if name == "cfq":
            raise s.error("switch_schedulers", "'cfq' was removed in Linux 5.0 and does not "
                          "exist in a 6.1 guest; bfq is its successor")
        if name not in SCHEDULERS:
            raise s.error("switch_schedulers", f"'{name}' is not one of: {', '.join(SCHEDULERS)}")
    return tuple(names), interval or DEFAULT_SWITCH_INTERVAL_MS


# The short form: keys of [short] and what each replaces.
SHORT_KEYS = {
    "runtime": "every job's runtime (jobs without one keep none)",
    "schedulers": "scenario.schedulers",
    "devices": "the [[device]] entries run (names)",
    "seeds": "scenario.seeds",
    "repeats": "scenario.repeats",
    "timeout_s": "scenario.timeout_s",
    "queue": "the whole [queue] table",
    "iosched": "the whole [iosched] table",
    "job": "per job name, options to set or replace ([short.job.NAME])",
    "cells": "cell id patterns (* and ? as in a shell): run only the matching cells",
}


def _short_form(path: str, data: dict[str, Any]) -> tuple[dict[str, Any], tuple[str, ...]]:
    """The scenario's data with [short] applied: fewer cells and less
    virtual time, for `blklab run --short` (make test). Expectations marked
    full_only are left out; every other one must select only cells the
    short form runs. Returns a copy (`data` is not changed) and the
    patterns of short.cells (checked against the cells in load)."""
    r = _Reader(path, _table(path, data, "short"), "short")
    patterns = r.get("cells", list, [])
    if "cells" in r.table and (not patterns or not all(isinstance(x, str) and x
                                                       for x in patterns)):
        raise r.error("cells", "must be a non-empty array of cell id patterns (strings)")
    out = copy.deepcopy(data)
    out.pop("short", None)
    scen = dict(_table(path, out, "scenario"))
    for key in ("schedulers", "seeds"):
        value = r.get(key, list)
        if value is not None:
            scen[key] = value
    for key in ("repeats", "timeout_s"):
        value = r.get(key, int)
        if value is not None:
            scen[key] = value
    out["scenario"] = scen
    device_tables = out.get("device") if isinstance(out.get("device"), list) else []
    names = [d.get("name") for d in device_tables if isinstance(d, dict)]
    keep = r.get("devices", list)
    if keep is not None:
        if not keep:
            raise r.error("devices", "must name at least one [[device]]")
        for name in keep:
            if name not in names:
                raise r.error("devices", f"'{name}' is not a [[device]] name "
                              f"(devices: {', '.join(map(str, names))})")
        out["device"] = [d for d in device_tables if d.get("name") in keep]
        names = list(keep)
    for key in ("queue", "iosched"):
        value = r.get(key, dict)
        if value is not None:
            out[key] = value
    runtime = r.get("runtime", (str, int))
    overrides = r.get("job", dict, {})
    job_tables = out.get("job") if isinstance(out.get("job"), list) else []
    job_names = [j.get("name") for j in job_tables if isinstance(j, dict)]
    for name, options in overrides.items():
        if name not in job_names:
            raise ScenarioError(path, f"short.job.{name}", "no [[job]] has this name (jobs: "
                                f"{', '.join(map(str, job_names))})")
        if not isinstance(options, dict):
            raise ScenarioError(path, f"short.job.{name}",
                                f"must be a table of job options, not {_type_name(options)}")
        if "name" in options:
            raise ScenarioError(path, f"short.job.{name}.name", "a job keeps its name")
    r.finish()
    jobs = []
    for table in job_tables:
        table = dict(table)
        if runtime is not None and "runtime" in table:
            table["runtime"] = runtime
        if runtime is not None and isinstance(table.get("fio_command"), str):
            from blklab import jobfiles
            table["fio_command"] = jobfiles.with_runtime(table["fio_command"], str(runtime))
        table.update(overrides.get(table.get("name"), {}))
        jobs.append(table)
    if "job" in out:
        out["job"] = jobs
    if isinstance(out.get("expect"), list):
        out["expect"] = [e for i, e in enumerate(out["expect"])
                         if _kept_in_short_form(path, i, e, scen, names, out)]
    return out, tuple(patterns)


def _check_short_cells(path: str, scenario: Scenario, checked: list[Expectation]) -> None:
    """short.cells: each pattern matches a cell of the short form's matrix,
    and each expectation it checks (`checked`, as the full form parsed
    them) still selects a cell on every side."""
    if not scenario.cell_patterns:
        return  # every cell runs: _kept_in_short_form checked the axes
    every = expand_cells(scenario)
    for i, pat in enumerate(scenario.cell_patterns):
        if not any(fnmatch.fnmatchcase(c.id, pat) for c in every):
            shown = ", ".join(c.id for c in every[:4]) + (", ..." if len(every) > 4 else "")
            raise ScenarioError(path, f"short.cells[{i}]", f"'{pat}' matches no cell of the "
                                f"short form (its cells: {shown})")
    kept = scenario.cells()
    hint = "; set full_only = true on this expectation or add its cells to short.cells"
    for exp in checked:
        i = exp.index
        names = [exp.device] if exp.device else [d.name for d in scenario.devices]
        for side, sel in (("left", exp.left), ("right", exp.right)):
            if sel is None:
                continue
            for name in ([sel.device] if sel.device else names):
                if not any(c.device.name == name and sel.picks(c.scheduler, dict(c.tunables()))
                           for c in kept):
                    raise ScenarioError(path, f"expect[{i}].{side}",
                                        f"selects no cell that short.cells runs "
                                        f"(device {name}){hint}")


def _kept_in_short_form(path: str, i: int, exp: Any, scen: dict[str, Any], devices: list,
                        data: dict[str, Any]) -> bool:
    """Whether expect[i] is checked in the short form; an expectation that
    would select cells the short form does not run is an error."""
    if not isinstance(exp, dict):
        return True  # the regular checks name the problem
    if "short" in exp:
        raise ScenarioError(path, f"expect[{i}].short", SHORT_KEY_GONE)
    flag = exp.get("full_only", False)
    if not isinstance(flag, bool):
        raise ScenarioError(path, f"expect[{i}].full_only", "must be a boolean")
    if flag:
        return False
    hint = "; set full_only = true on this expectation or run it in the short form"
    if exp.get("device") is not None and exp["device"] not in devices:
        raise ScenarioError(path, f"expect[{i}].device", f"'{exp['device']}' is not run by the "
                            f"short form (short.devices: {', '.join(devices)}){hint}")
    schedulers = scen.get("schedulers", list(SCHEDULERS))
    queue = data.get("queue", {}) if isinstance(data.get("queue"), dict) else {}
    iosched = data.get("iosched", {}) if isinstance(data.get("iosched"), dict) else {}
    for side in ("left", "right"):
        sel = exp.get(side)
        if not isinstance(sel, dict):
            continue
        other = sel.get("device")
        if isinstance(other, str) and other not in devices:
            raise ScenarioError(path, f"expect[{i}].{side}.device",
                                f"'{other}' is not run by the short form (short.devices: "
                                f"{', '.join(devices)}){hint}")
        sched = sel.get("scheduler")
        if isinstance(schedulers, list) and sched is not None and sched not in schedulers:
            raise ScenarioError(path, f"expect[{i}].{side}.scheduler",
                                f"'{sched}' is not run by the short form (schedulers: "
                                f"{', '.join(map(str, schedulers))}){hint}")
        tunables = sel.get("tunables", {})
        for key, value in (tunables.items() if isinstance(tunables, dict) else ()):
            if key.startswith("iosched/"):
                table = iosched.get(sched, {}) if sched else {}
                axis = table.get(key[len("iosched/"):]) if isinstance(table, dict) else None
            else:
                axis = _short_queue_axis(queue, data, sel.get("device") or exp.get("device"),
                                         key)
            values = [str(v) for v in (axis if isinstance(axis, list) else [axis])
                      if axis is not None]
            if str(value) not in values:
                raise ScenarioError(path, f"expect[{i}].{side}.tunables.{key}",
                                    f"{value} is not run by the short form (its values: "
                                    f"{', '.join(values) or 'not set'}){hint}")
    return True


def _short_queue_axis(queue: dict[str, Any], data: dict[str, Any], device: str | None,
                      key: str) -> Any:
    """The values of queue attribute `key` the short form runs: those of the
    expectation's device's [device.queue] if it sets the key, else those of
    [queue] (with no device named, every kept device's values count)."""
    values: list[Any] = []
    tables = data.get("device") if isinstance(data.get("device"), list) else []
    for table in tables:
        if not isinstance(table, dict) or (device is not None and table.get("name") != device):
            continue
        own = table.get("queue")
        axis = own.get(key) if isinstance(own, dict) and key in own else queue.get(key)
        if axis is not None:
            values += axis if isinstance(axis, list) else [axis]
    return values or queue.get(key)


# The [guest] keys `blklab run --guest KEY=VALUE` may set.
GUEST_KEYS = ("kernel", "vcpus", "memory_mib", "cpu", "cpu_rate", "vcpu_clocks", "vcpu_quantum_ns",
              "pause_ns", "irq_ns", "syscall_ns", "wake_ns", "nvme_poll_queues", "boot", "apps")
_GUEST_TEXT_KEYS = ("kernel", "vcpu_clocks", "boot", "cpu")  # kernel=6.12 is the series, not a number


def parse_guest_set(items: list[str]) -> tuple[tuple[str, str], ...]:
    """`--guest KEY=VALUE` arguments as (key, TOML value): VALUE is a TOML
    value (4, 2.5, "parallel"), or else taken as a string (parallel).
    Raises ScenarioError naming the argument."""
    out: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep or not value.strip():
            raise ScenarioError("--guest", None, f"'{item}' is not KEY=VALUE (keys: "
                                f"{', '.join(GUEST_KEYS)})")
        if key not in GUEST_KEYS:
            raise ScenarioError("--guest", None, f"'{key}' is not a [guest] key (keys: "
                                f"{', '.join(GUEST_KEYS)})")
        value = value.strip()
        try:
            tomllib.loads(f"v = {value}")
            quote = key in _GUEST_TEXT_KEYS and not value.startswith(('"', "'"))
        except tomllib.TOMLDecodeError:
            quote = True
        if quote:
            value = '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
        out[key] = value
    return tuple(out.items())


def load(path: str | Path, check_profiles: bool = True, short: bool = False,
         mode: str | None = None, guest_set: tuple[tuple[str, str], ...] = ()) -> Scenario:
    """Parse and validate a scenario file. Raises ScenarioError. Without
    check_profiles, device profiles are read but not loaded (a run read back
    for its report needs only their names). With short, the file's [short]
    table is applied first (see _short_form); either way a [short] table
    that would not give a valid scenario is an error. `mode`, if given,
    replaces scenario.mode (blklab run --mode); `guest_set` (from
    parse_guest_set) replaces [guest] keys, and an error in one says so."""
    try:
        s = _load(path, check_profiles, short, mode, guest_set)
    except ScenarioError as e:
        given = dict(guest_set)
        if e.key is not None and e.key.startswith("guest.") and e.key[6:] in given:
            raise ScenarioError(e.path, e.key, f"{e.message} (set by --guest "
                                f"{e.key[6:]}={given[e.key[6:]]})") from None
        raise
    s.guest_set = guest_set
    return s


def _load(path: str | Path, check_profiles: bool, short: bool, mode: str | None,
          guest_set: tuple[tuple[str, str], ...]) -> Scenario:
    p = Path(path)
    shown = str(path)
    try:
        blob = p.read_bytes()
    except FileNotFoundError:
        raise ScenarioError(shown, None, "no such scenario file") from None
    except IsADirectoryError:
        raise ScenarioError(shown, None, "is a directory, not a scenario file") from None
    except OSError as e:
        raise ScenarioError(shown, None, f"cannot be read: {e.strerror}") from None
    try:
        text = blob.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ScenarioError(shown, None, f"is not UTF-8 text (byte {e.start})") from None
    if not text.strip():
        raise ScenarioError(shown, None, "is empty")
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise ScenarioError(shown, None, f"is not valid TOML: {e}") from None
    if guest_set:
        guest_table = data.get("guest", {})
        if isinstance(guest_table, dict):
            data["guest"] = guest_table | {k: tomllib.loads(f"v = {v}")["v"] for k, v in guest_set}

    top = _Reader(shown, data, "")
    top.used.update({"scenario", "guest", "device", "queue", "iosched", "job", "expect",
                     "short", "fault", "filesystem", "vm", "udev", "observe",
                     *appjobs.SERVERS})
    top.finish()

    # The full form first, so that its own errors are named as such.
    scenario = _parse(shown, p, blob, data, check_profiles and not short, short=False,
                      mode_override=mode)
    if not short and "short" not in data:
        return scenario
    short_data, patterns = _short_form(shown, data)
    try:
        short_scenario = _parse(shown, p, blob, short_data, check_profiles and short,
                                short=True, mode_override=mode)
    except ScenarioError as e:
        raise ScenarioError(e.path, e.key, f"{e.message} (in the short form, with [short] "
                            "applied)") from None
    short_scenario.cell_patterns = patterns
    _check_short_cells(shown, short_scenario,
                       [e for e in scenario.expectations if not e.full_only])
    # The short form checks what it kept and reports the rest as not run:
    # every expectation of the file, as the full form parsed it.
    short_scenario.expectations = scenario.expectations
    return short_scenario if short else scenario


def _parse(shown: str, p: Path, blob: bytes, data: dict[str, Any], check_profiles: bool,
           short: bool, mode_override: str | None = None) -> Scenario:
    s = _Reader(shown, _table(shown, data, "scenario"), "scenario")
    name = s.get("name", str, p.stem)
    if not _NAME.match(name):
        raise s.error("name", f"'{name}' must be 1-64 of letters, digits, '_', '.', '-'")
    description = s.get("description", str, "")
    schedulers = s.get("schedulers", list, list(SCHEDULERS))
    if not schedulers:
        raise s.error("schedulers", f"must list at least one of: {', '.join(SCHEDULERS)}")
    for sched in schedulers:
        if sched == "cfq":
            raise s.error("schedulers", "'cfq' was removed in Linux 5.0 and does not exist in a "
                          "6.1 guest; bfq is its successor. Allowed: " + ", ".join(SCHEDULERS))
        if sched not in SCHEDULERS:
            raise s.error("schedulers", f"'{sched}' is not one of: {', '.join(SCHEDULERS)}")
    if len(set(schedulers)) != len(schedulers):
        raise s.error("schedulers", "lists a scheduler twice")
    repeats = s.integer("repeats", 1, 1, MAX_REPEATS)
    seeds = s.get("seeds", list, [1])
    if not seeds or not all(isinstance(x, int) and not isinstance(x, bool) and 0 <= x < 2**32
                            for x in seeds):
        raise s.error("seeds", "must be a non-empty array of integers in [0, 2^32)")
    mode = s.choice("mode", MODES, DEFAULT_MODE)
    timeout_s = s.integer("timeout_s", 600, 10, 7 * 24 * 3600)
    workload = s.choice("workload", WORKLOADS, "blkgen")
    blktrace = s.get("blktrace", bool, False)
    capture = s.get("capture", bool, False)
    guest_fault = s.choice("guest_fault", GUEST_FAULTS, "none")
    if "fault" in s.table:
        raise s.error("fault", "is now scenario.guest_fault (a guest kernel panic or hang, to "
                      "test blklab itself); a device's faults are [[fault]] tables")
    switch_schedulers, switch_interval_ms = _parse_switching(s)
    customer_fio = _parse_customer_fio(s, p, check_profiles)
    s.finish()

    g = _Reader(shown, _table(shown, data, "guest"), "guest")
    written = g.get("kernel", str, "amd64")
    kernel = kernels.resolve(written)
    if kernel is None:
        raise g.error("kernel", f"'{written}' is not one of: {kernels.allowed_text()} "
                      "(guest-images/kernels.lock)")
    guest = Guest(
        kernel=kernel.id,
        vcpus=g.integer("vcpus", 2, 1, MAX_VCPUS),
        memory_mib=g.integer("memory_mib", 1024, 256, MAX_MEMORY_MIB),
        written=written,
        vcpu_clocks=g.choice("vcpu_clocks", VCPU_CLOCKS, DEFAULT_VCPU_CLOCKS),
        boot=g.choice("boot", BOOTS, "restore"),
        apps=g.get("apps", bool, False),
        **_parse_cpu(g),
    )
    quantum = g.integer("vcpu_quantum_ns", None, 1, VCPU_QUANTUM_MAX_NS)
    if guest.vcpu_clocks == "parallel":
        guest = replace(guest, vcpu_quantum_ns=quantum or DEFAULT_VCPU_QUANTUM_NS)
    else:  # shared: bounds each vCPU's round-robin turn; None: unbounded
        guest = replace(guest, vcpu_quantum_ns=quantum)
    poll_queues = g.integer("nvme_poll_queues", 0, 0, MAX_VCPUS)
    if poll_queues > guest.vcpus:
        raise g.error("nvme_poll_queues", f"{poll_queues} is more than the guest's {guest.vcpus} "
                      "vCPU(s): the nvme driver refuses more poll queues than possible CPUs "
                      "(io_queue_count_set() in drivers/nvme/host/pci.c)")
    guest = replace(guest, nvme_poll_queues=poll_queues)
    g.finish()

    devices = _parse_devices(shown, data, check_profiles)
    if guest.nvme_poll_queues and not any(d.kind == "nvme" for d in devices):
        raise ScenarioError(shown, "guest.nvme_poll_queues",
                            "sets the nvme driver's poll queues, and no [[device]] has "
                            "kind = \"nvme\"")

    q = _Reader(shown, _table(shown, data, "queue"), "queue")
    queue_axes = {k: _tunable_values(q, k) for k in list(q.table)}
    if "scheduler" in queue_axes:
        raise q.error("scheduler", "choose schedulers with scenario.schedulers")

    io = _Reader(shown, _table(shown, data, "iosched"), "iosched")
    iosched_axes: dict[str, dict[str, list[str]]] = {}
    for sched in list(io.table):
        io.used.add(sched)
        if sched not in schedulers:
            raise io.error(sched, f"'{sched}' is not in scenario.schedulers "
                           f"({', '.join(schedulers)})")
        if sched == "none":
            raise io.error(sched, "the 'none' scheduler has no iosched attributes")
        sub = _Reader(shown, _table(shown, io.table, sched, f"iosched.{sched}"), f"iosched.{sched}")
        iosched_axes[sched] = {k: _tunable_values(sub, k) for k in list(sub.table)}

    kernels.check_iosched(shown, written, guest.kernel, iosched_axes)
    kernels.check_queue(shown, written, guest.kernel, devices, queue_axes)
    app_jobs: tuple = ()
    tables = data.get("job")
    first_app = next((i for i, t in enumerate(tables) if appjobs.is_app_job(t)), None) \
        if isinstance(tables, list) else None
    if first_app is not None:
        what = f"job[{first_app}].app"
        if workload != "command":
            raise ScenarioError(shown, what, "a job with an app runs in the applications' "
                                "root: set scenario.workload = \"command\"")
        if not guest.apps:
            raise ScenarioError(shown, "guest.apps", f"{what} runs its database server and "
                                "benchmark from the applications' root: set [guest] apps = true")
    if workload == "command":
        if not guest.apps:
            raise s.error("workload", "\"command\" runs its job in the applications' root: "
                          "set [guest] apps = true")
        jobs, app_jobs = _parse_command_jobs(shown, data)
    else:
        jobs = _parse_jobs(shown, data, p if check_profiles else None, workload)
    if check_profiles and workload != "command":
        kernels.check_scenario(shown, written, guest.kernel, devices, schedulers, jobs)
    if workload == "fio" and check_profiles:
        _check_fio_options(shown, jobs)
    elif check_profiles and workload == "blkgen":
        _check_blkgen_options(shown, jobs)
    expectations = _parse_expectations(shown, data, devices, jobs, schedulers, app_jobs)
    if mode_override is not None:
        mode, why = mode_override, "--mode deterministic"
    else:
        why = "scenario.mode" if "mode" in s.table else "the default mode"
    if mode == "deterministic":
        check_deterministic(shown, devices, why)
    else:
        for key, what in (("cpu_rate", "sets the instruction rate of deterministic mode "
                           "(icount); in {mode} mode the host's CPU sets the pace"),
                          ("vcpu_clocks", "chooses the vCPUs' clocks of deterministic mode "
                           "(icount); in {mode} mode each vCPU is a host thread"),
                          ("vcpu_quantum_ns", "bounds the vCPUs' turns in deterministic mode "
                           "(icount); in {mode} mode each vCPU is a host thread"),
                          ("pause_ns", "sets the time a PAUSE takes in deterministic mode "
                           "(icount); in {mode} mode the host's CPU runs it"),
                          ("cpu", "names the CPU deterministic mode's vCPUs follow (icount); "
                           "in {mode} mode the host's CPU sets the pace"),
                          ("irq_ns", "sets the time an interrupt takes in deterministic mode "
                           "(icount); in {mode} mode the host's CPU takes it"),
                          ("syscall_ns", "sets the time a system call's entry takes in "
                           "deterministic mode (icount); in {mode} mode the host's CPU runs it"),
                          ("wake_ns", "sets the time a wake-up from halt takes in deterministic "
                           "mode (icount); in {mode} mode the host's CPU wakes")):
            if key in g.table:
                raise g.error(key, what.format(mode=mode) + ": remove it or set "
                              'scenario.mode = "deterministic"')
        guest = replace(guest, cpu_rate=None, vcpu_clocks=None, vcpu_quantum_ns=None,
                        pause_ns=None, cpu=None, irq_ns=None, syscall_ns=None, wake_ns=None)
    fs = filesystem_mod.parse_filesystem(
        _Reader(shown, _table(shown, data, "filesystem"), "filesystem"))
    if not app_jobs:  # a server's settings without a job that runs against it
        appjobs.parse_servers(shown, data, (), lambda t, prefix: _Reader(shown, t, prefix))
    if fs is not None:
        _check_filesystem(shown, fs, guest, devices, jobs, workload)
    elif app_jobs:
        raise ScenarioError(shown, "filesystem", f"job '{app_jobs[0].name}' runs "
                            f"{app_jobs[0].app} against a database server whose data lives "
                            "on the device under test: add a [filesystem] (type = \"ext4\" "
                            "or \"xfs\")")
    vm = filesystem_mod.parse_vm(_Reader(shown, _table(shown, data, "vm"), "vm"))
    udev_rules = udev.parse(_Reader(shown, _table(shown, data, "udev"), "udev"), p,
                            check_profiles)
    observers = observe.parse(shown, data, lambda t, prefix: _Reader(shown, t, prefix))
    if observers and not guest.apps:
        raise ScenarioError(shown, "observe[0].command", "observers run in the applications' "
                            "root: set [guest] apps = true")
    if udev_rules is not None and not guest.apps:
        raise ScenarioError(shown, "udev.rules", "udev runs from the applications' root: "
                            "set [guest] apps = true")
    faults = device_faults.parse(shown, data, devices, jobs, mode, why)
    devices = [_with_faults(shown, i, d, faults, check_profiles) for i, d in enumerate(devices)]

    return Scenario(
        path=p, name=name, description=description, schedulers=schedulers, repeats=repeats,
        seeds=seeds, mode=mode, timeout_s=timeout_s, workload=workload, guest=guest,
        devices=devices, queue_axes=queue_axes, iosched_axes=iosched_axes, jobs=jobs,
        sha256=hashlib.sha256(blob).hexdigest(), raw=data, expectations=expectations,
        blktrace=blktrace, capture=capture, guest_fault=guest_fault, faults=faults, short=short,
        switch_schedulers=switch_schedulers,
        switch_interval_ms=switch_interval_ms, customer_fio=customer_fio, filesystem=fs, vm=vm,
        udev_rules=udev_rules, observers=observers, app_jobs=app_jobs)


def _check_filesystem(path: str, fs: "filesystem_mod.Filesystem", guest: Guest,
                      devices: list[Device], jobs: list[Job], workload: str) -> None:
    """What a [filesystem] needs of the rest of the scenario."""
    if not guest.apps:
        raise ScenarioError(path, "filesystem.type", f"mkfs.{fs.type} runs from the "
                            "applications' root: set [guest] apps = true")
    for i, d in enumerate(devices):
        if d.backing != "file":
            raise ScenarioError(path, f"device[{i}].backing", f"'{d.name}' carries the "
                                "[filesystem], which must read back what it wrote: "
                                "backing = \"file\", not \"null\"")
    if workload == "command":
        return
    for i, job in enumerate(jobs):
        if job.fio_file is not None:
            continue
        names = {k.replace("-", "_") for k, _ in job.options}
        if not names & {"size", "filesize", "filename"}:
            raise ScenarioError(path, f"job[{i}]", f"'{job.name}' runs in the [filesystem]'s "
                                f"{filesystem_mod.MOUNT_POINT} and makes its own file "
                                "(<name>.<clone>.0): give it a size")


_FAULT_HEADER = re.compile(r"^\s*\[\[\s*fault\s*\]\]", re.MULTILINE)


def _with_faults(path: str, i: int, device: Device, faults: tuple, check: bool) -> Device:
    """The device with the scenario's faults on it appended to its profile
    (text and sha256 of the profile as QEMU reads it), checked by the
    library QEMU links."""
    mine = [f for f in faults if f.device == device.name]
    if not mine or device.profile is None:
        return device
    profile = device.profile
    if not check:
        return device
    if _FAULT_HEADER.search(profile.text):
        raise ScenarioError(path, f"device[{i}].profile", f"'{profile.name}' has [[fault]] "
                            "tables of its own; give a device's faults in the scenario only")
    text = device_faults.profile_with_faults(profile.text, mine)
    info = _derived_profile_info(profile, text)
    if "error" in info:
        raise ScenarioError(path, "fault", f"device '{device.name}': '{profile.name}' with the "
                            f"scenario's faults does not load: {info['error']}")
    return replace(device, profile=replace(profile, text=text,
                                           sha256=hashlib.sha256(text.encode()).hexdigest()))


def _parse_customer_fio(s: _Reader, scenario_path: Path, read: bool) -> bytes | None:
    """scenario.customer_fio: a fio JSON (fio 3.x) relative to the scenario,
    read and checked when the scenario is validated for a run."""
    value = s.get("customer_fio", str, None)
    if value is None or not read:
        return None
    from blklab import compare_fio

    path = scenario_path.parent / value
    try:
        doc = compare_fio.load_fio_json(path)
        blob = path.read_bytes()
        if not any(compare_fio.direction_figures(value, doc, d) for d in compare_fio.DIRECTIONS):
            raise s.error("customer_fio", f"{value}: no job did any I/O")
    except compare_fio.FioJsonError as e:
        raise s.error("customer_fio", str(e).replace(str(path), value)) from None
    return blob


def _table(path: str, data: dict[str, Any], name: str, key: str | None = None) -> dict[str, Any]:
    value = data.get(name, {})
    if not isinstance(value, dict):
        raise ScenarioError(path, key or name, f"must be a table, not {_type_name(value)}")
    return value


def _combinations(axes: dict[str, list[str]]) -> list[tuple[tuple[str, str], ...]]:
    names = list(axes)
    return [tuple(zip(names, values)) for values in itertools.product(*(axes[n] for n in names))]


def _slug(pairs: tuple[tuple[str, str], ...]) -> str:
    return "".join(f".{k}={re.sub(r'[^A-Za-z0-9_.-]', '_', v)}" for k, v in pairs)


def device_queue_axes(scenario: Scenario, device: Device) -> dict[str, list[str]]:
    """The [queue] axes of one device's cells: the scenario's, with each of
    the device's own [device.queue] attributes replacing the one of that
    name in place or, if new, added after them."""
    axes = dict(scenario.queue_axes)
    for key, values in device.queue_axes:
        axes[key] = list(values)
    return axes


def expand_cells(scenario: Scenario) -> list[Cell]:
    """Every (device, scheduler, queue tunables, iosched tunables, seed,
    repeat) combination, in a stable order with stable ids."""
    cells = []
    for device in scenario.devices:
        queue_axes = device_queue_axes(scenario, device)
        for sched in scenario.schedulers:
            for queue in _combinations(queue_axes):
                for iosched in _combinations(scenario.iosched_axes.get(sched, {})):
                    for seed in scenario.seeds:
                        for repeat in range(scenario.repeats):
                            cid = f"{device.name}.{sched}{_slug(queue)}{_slug(iosched)}"
                            if len(scenario.seeds) > 1:
                                cid += f".seed={seed}"
                            cid += f".r{repeat}"
                            cells.append(Cell(cid, device, sched, queue, iosched, seed, repeat,
                                              scenario.switch_schedulers,
                                              scenario.switch_interval_ms))
    return cells
