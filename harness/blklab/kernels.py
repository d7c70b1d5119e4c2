"""Guest kernels: which ones blklab builds images of, and what a scenario
may ask of the one it names.

The kernels are the lines of guest-images/kernels.lock (series, flavour,
pinned Debian package), written by guest-images/pin.sh from
guest-images/kernel-series; `[guest] kernel` names one as
"<series>-<flavour>", or a bare flavour for the default series.

What a kernel has is read from its image (build/images/<kernel>/): the
record build-image.sh writes (image.json: drivers and device kinds) and the
package's own config (config). A scenario that asks for a device kind, a
scheduler or a cgroup control the kernel lacks is an error naming the key
and the config line; with no image built there is nothing to check against,
and a run asks for the image.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from blklab.errors import BuildMissingError, ScenarioError

GUEST_IMAGES = Path(__file__).resolve().parents[2] / "guest-images"
KERNELS_LOCK = GUEST_IMAGES / "kernels.lock"
KERNEL_SERIES = GUEST_IMAGES / "kernel-series"

# The config symbol that builds each scheduler (block/Kconfig.iosched).
SCHEDULER_CONFIG = {"mq-deadline": "MQ_IOSCHED_DEADLINE", "kyber": "MQ_IOSCHED_KYBER",
                    "bfq": "IOSCHED_BFQ"}
# blkgen's cgroup v2 job options, the cgroup file each writes and the config
# symbol that creates the file (block/Kconfig, block/Kconfig.iosched).
CGROUP_OPTION_CONFIG = {"cgroup_io_max": ("io.max", "BLK_DEV_THROTTLING"),
                        "cgroup_io_weight": ("io.weight", "BLK_CGROUP_IOCOST"),
                        "cgroup_bfq_weight": ("io.bfq.weight", "BFQ_GROUP_IOSCHED")}

# What each scheduler lists under queue/iosched/, per kernel series: the
# attribute arrays deadline_attrs (block/mq-deadline.c), kyber_sched_attrs
# (block/kyber-iosched.c) and bfq_attrs (block/bfq-iosched.c).
# mq-deadline gained async_depth in 5.14 (07757588e507, "block/mq-deadline:
# Reserve 25% of scheduler tags for synchronous requests") and
# prio_aging_expire in 5.16 (322cff70d46c, "block/mq-deadline: Prioritize
# high-priority requests"). tests/e2e/test_kernels.py and test_scenarios.py
# list the directory in every pinned series' guest and compare.
_BFQ_ATTRIBUTES = ("back_seek_max", "back_seek_penalty", "fifo_expire_async",
                   "fifo_expire_sync", "low_latency", "max_budget", "slice_idle",
                   "slice_idle_us", "strict_guarantees", "timeout_sync")
_KYBER_ATTRIBUTES = ("read_lat_nsec", "write_lat_nsec")
_DEADLINE_5_10 = ("fifo_batch", "front_merges", "read_expire", "write_expire", "writes_starved")
_DEADLINE_5_16 = tuple(sorted(_DEADLINE_5_10 + ("async_depth", "prio_aging_expire")))
IOSCHED_ATTRIBUTES: dict[str, dict[str, tuple[str, ...]]] = {
    "5.10": {"mq-deadline": _DEADLINE_5_10, "kyber": _KYBER_ATTRIBUTES, "bfq": _BFQ_ATTRIBUTES},
    "6.1": {"mq-deadline": _DEADLINE_5_16, "kyber": _KYBER_ATTRIBUTES, "bfq": _BFQ_ATTRIBUTES},
    "6.12": {"mq-deadline": _DEADLINE_5_16, "kyber": _KYBER_ATTRIBUTES, "bfq": _BFQ_ATTRIBUTES},
}


# What each series lists under queue/, from queue_attrs[] (and, in 6.12,
# blk_mq_queue_attrs[]) in block/blk-sysfs.c: QUEUE_RW_ENTRY attributes
# (mode 0644) can be written, QUEUE_RO_ENTRY ones and hw_sector_size (0444)
# only read; read from the pinned Debian sources (5.10.262 has the stable
# backport of zone_write_granularity). Against 5.10, 6.1 lists dma_alignment
# and virt_boundary_mask; 6.12 adds the atomic_write_* limits and has no
# throttle_sample_time (CONFIG_BLK_DEV_THROTTLING_LOW is gone from its
# block/Kconfig).
_QUEUE_RW_5_10 = ("add_random", "discard_max_bytes", "io_poll", "io_poll_delay", "io_timeout",
                  "iostats", "max_sectors_kb", "nomerges", "nr_requests", "read_ahead_kb",
                  "rotational", "rq_affinity", "scheduler", "stable_writes",
                  "throttle_sample_time", "wbt_lat_usec", "write_cache")
_QUEUE_RO_5_10 = ("chunk_sectors", "dax", "discard_granularity", "discard_max_hw_bytes",
                  "discard_zeroes_data", "fua", "hw_sector_size", "logical_block_size",
                  "max_active_zones", "max_discard_segments", "max_hw_sectors_kb",
                  "max_integrity_segments", "max_open_zones", "max_segment_size",
                  "max_segments", "minimum_io_size", "nr_zones", "optimal_io_size",
                  "physical_block_size", "write_same_max_bytes", "write_zeroes_max_bytes",
                  "zone_append_max_bytes", "zone_write_granularity", "zoned")
_QUEUE_RO_6_1 = _QUEUE_RO_5_10 + ("dma_alignment", "virt_boundary_mask")
QUEUE_ATTRIBUTES: dict[str, dict[str, bool]] = {  # name -> writable
    "5.10": {**dict.fromkeys(_QUEUE_RO_5_10, False), **dict.fromkeys(_QUEUE_RW_5_10, True)},
    "6.1": {**dict.fromkeys(_QUEUE_RO_6_1, False), **dict.fromkeys(_QUEUE_RW_5_10, True)},
    "6.12": {**dict.fromkeys(_QUEUE_RO_6_1 + ("atomic_write_boundary_bytes",
                                              "atomic_write_max_bytes",
                                              "atomic_write_unit_max_bytes",
                                              "atomic_write_unit_min_bytes"), False),
             **dict.fromkeys(set(_QUEUE_RW_5_10) - {"throttle_sample_time"}, True)},
}
# Attributes present only with a config symbol: throttle_sample_time under
# #ifdef CONFIG_BLK_DEV_THROTTLING_LOW; wbt_lat_usec under #ifdef
# CONFIG_BLK_WBT from 6.12 (before, always listed).
QUEUE_ATTRIBUTE_CONFIG: dict[str, dict[str, str]] = {
    "5.10": {"throttle_sample_time": "BLK_DEV_THROTTLING_LOW"},
    "6.1": {"throttle_sample_time": "BLK_DEV_THROTTLING_LOW"},
    "6.12": {"wbt_lat_usec": "BLK_WBT"},
}
# Attributes queue_attr_visible() hides on some queues, for every series:
# max_open_zones and max_active_zones unless the device is zoned (no blklab
# device is); io_timeout unless the driver's blk_mq_ops has a timeout
# handler, and virtio-blk's virtio_mq_ops has none (drivers/block/
# virtio_blk.c; NVMe's nvme_mq_ops and SCSI's scsi_mq_ops, under ide-hd and
# ahci-hd, have one).
QUEUE_HIDDEN_ON_KIND = {"max_open_zones": ("nvme", "ide-hd", "ahci-hd", "virtio-blk"),
                        "max_active_zones": ("nvme", "ide-hd", "ahci-hd", "virtio-blk"),
                        "io_timeout": ("virtio-blk",)}


def queue_attributes(series: str, kind: str, config: dict[str, str] | None) -> dict[str, bool]:
    """What a `kind` device's queue/ lists in a guest of `series` (name ->
    writable), for the kernel config given (None: as if every symbol is set)."""
    conditional = QUEUE_ATTRIBUTE_CONFIG.get(series, {})
    return {name: rw for name, rw in QUEUE_ATTRIBUTES[series].items()
            if kind not in QUEUE_HIDDEN_ON_KIND.get(name, ())
            and (config is None or name not in conditional
                 or enabled(config, conditional[name]))}


@dataclass(frozen=True)
class Kernel:
    """One pinned guest kernel."""

    series: str  # "6.1"
    flavour: str  # "amd64"
    package: str  # "linux-image-6.1.0-57-amd64"
    version: str  # Debian package version, "6.1.192-3"

    @property
    def id(self) -> str:
        return f"{self.series}-{self.flavour}"


def _lines(path: Path) -> list[list[str]]:
    try:
        text = path.read_text()
    except OSError as e:
        raise BuildMissingError(f"{path}: unreadable: {e.strerror}") from None
    return [line.split("#", 1)[0].split() for line in text.splitlines()
            if line.split("#", 1)[0].strip()]


def pinned() -> list[Kernel]:
    """Every kernel of kernels.lock, in its order."""
    return [Kernel(w[0], w[1], w[2], w[3]) for w in _lines(KERNELS_LOCK) if len(w) >= 4]


def default_series() -> str:
    for w in _lines(KERNEL_SERIES):
        if w[0] == "default" and len(w) == 2:
            return w[1]
    raise BuildMissingError(f"{KERNEL_SERIES}: no 'default <series>' line")


def allowed_text() -> str:
    kernels = pinned()
    flavours = sorted({k.flavour for k in kernels if k.series == default_series()})
    return (", ".join(k.id for k in kernels)
            + f"; or a flavour alone for series {default_series()} ({', '.join(flavours)})")


def resolve(name: str) -> Kernel | None:
    """The kernel `name` ("6.12-cloud-amd64", or "amd64" for the default
    series) names, or None."""
    full = name if name[:1].isdigit() else f"{default_series()}-{name}"
    for k in pinned():
        if k.id == full:
            return k
    return None


def read_config(path: Path) -> dict[str, str]:
    """A kernel config file as {"CONFIG_X": "y" | "m" | value | "is not set"}."""
    out = {}
    for line in path.read_text().splitlines():
        if line.startswith("CONFIG_") and "=" in line:
            k, v = line.split("=", 1)
            out[k] = v
        elif line.startswith("# CONFIG_") and line.endswith(" is not set"):
            out[line[2:-len(" is not set")]] = "is not set"
    return out


def config_line(config: dict[str, str], symbol: str) -> str:
    """The line of the config for CONFIG_<symbol>, as the kernel package has it."""
    v = config.get(f"CONFIG_{symbol}")
    if v is None:
        return f"CONFIG_{symbol} absent from the config"
    return f"CONFIG_{symbol} is not set" if v == "is not set" else f"CONFIG_{symbol}={v}"


def enabled(config: dict[str, str], symbol: str) -> bool:
    return config.get(f"CONFIG_{symbol}") in ("y", "m")


def _image(kernel_id: str) -> tuple[dict[str, Any], dict[str, str] | None] | None:
    from blklab import paths

    try:
        d = paths.image_dir(kernel_id)
    except BuildMissingError:
        return None
    image = json.loads((d / "image.json").read_text())
    config = read_config(d / "config") if (d / "config").exists() else None
    return image, config


def check_iosched(path: str, written: str, kernel_id: str,
                  iosched: dict[str, dict[str, list[str]]]) -> None:
    """Raise ScenarioError for an [iosched.<scheduler>] key that the
    scheduler of the named kernel's series does not list under
    queue/iosched/ (IOSCHED_ATTRIBUTES)."""
    kernel = resolve(kernel_id)
    table = IOSCHED_ATTRIBUTES.get(kernel.series) if kernel else None
    if table is None:
        return
    for sched, keys in iosched.items():
        have = table.get(sched)
        if have is None:
            continue
        for key in keys:
            if key not in have:
                raise ScenarioError(
                    path, f"iosched.{sched}.{key}",
                    f"{sched} in Linux {kernel.series} (guest.kernel = \"{written}\") has no "
                    f"attribute '{key}' under queue/iosched/; it has: {', '.join(have)}")


def check_queue(path: str, written: str, kernel_id: str, devices: list,
                queue_axes: dict[str, list[str]]) -> None:
    """Raise ScenarioError for a [queue] or [device.queue] key that the named
    kernel does not list under a device's queue/, or lists read-only
    (QUEUE_ATTRIBUTES; with the image's config when it is built)."""
    kernel = resolve(kernel_id)
    if kernel is None or kernel.series not in QUEUE_ATTRIBUTES:
        return
    found = _image(kernel_id)
    config = found[1] if found else None
    series = kernel.series
    on = f"Linux {series} (guest.kernel = \"{written}\")"
    for i, d in enumerate(devices):
        have = queue_attributes(series, d.kind, config)
        writable = ", ".join(sorted(n for n, rw in have.items() if rw and n != "scheduler"))
        own = dict(d.queue_axes)
        for name in list(own) + [k for k in queue_axes if k not in own]:
            key = f"device[{i}].queue.{name}" if name in own else f"queue.{name}"
            if name in have:
                if not have[name]:
                    raise ScenarioError(path, key, f"queue/{name} is read-only in {on} "
                                        f"(mode 0444, block/blk-sysfs.c); writable: {writable}")
                continue
            if name in QUEUE_ATTRIBUTES[series] and d.kind in QUEUE_HIDDEN_ON_KIND.get(name, ()):
                why = (f"device '{d.name}' is kind '{d.kind}', whose queue/ hides it "
                       "(queue_attr_visible, block/blk-sysfs.c)")
            elif name in QUEUE_ATTRIBUTES[series]:
                why = (f"{on} lists it only with "
                       f"CONFIG_{QUEUE_ATTRIBUTE_CONFIG[series][name]}, and its config has "
                       f"{config_line(config or {}, QUEUE_ATTRIBUTE_CONFIG[series][name])}")
            else:
                why = f"{on} has no attribute '{name}' under queue/"
            raise ScenarioError(path, key, f"{why}; writable: {writable}")


def check_scenario(path: str, written: str, kernel_id: str, devices: list,
                   schedulers: list[str], jobs: list) -> None:
    """Raise ScenarioError for the first thing the scenario asks of the
    kernel that the kernel's image says it lacks: a device kind without a
    driver, a scheduler or a cgroup control its config leaves out."""
    found = _image(kernel_id)
    if found is None:
        return
    image, config = found
    named = f"guest.kernel = \"{written}\": {image['kernel_package']} " \
            f"{image['kernel_package_version']}"
    kinds = image.get("device_kinds", {})
    runnable = [k for k in kinds if not kinds[k]["missing"]]
    for i, d in enumerate(devices):
        missing = kinds.get(d.kind, {}).get("missing", [])
        if not missing:
            continue
        why = ", ".join(f"no driver {m} ({image['drivers'][m]['config']})" for m in missing)
        raise ScenarioError(
            path, f"device[{i}].kind",
            f"device '{d.name}' is kind '{d.kind}', which cannot run on {named} has {why}. "
            f"Allowed with this kernel: {', '.join(runnable)}; or choose another guest.kernel")
    if config is None:
        return
    for sched in schedulers:
        symbol = SCHEDULER_CONFIG.get(sched)
        if symbol is not None and not enabled(config, symbol):
            have = [s for s in ("none", *SCHEDULER_CONFIG)
                    if s == "none" or enabled(config, SCHEDULER_CONFIG[s])]
            raise ScenarioError(
                path, "scenario.schedulers",
                f"'{sched}' is not in {named}: {config_line(config, symbol)}. "
                f"Allowed with this kernel: {', '.join(have)}")
    for i, job in enumerate(jobs):
        for option, _ in job.options:
            if option not in CGROUP_OPTION_CONFIG:
                continue
            cgroup_file, symbol = CGROUP_OPTION_CONFIG[option]
            if not enabled(config, symbol):
                raise ScenarioError(
                    path, f"job[{i}].{option}",
                    f"{option} writes the cgroup file {cgroup_file}, which {named} does not "
                    f"have: {config_line(config, symbol)}; or choose another guest.kernel")
