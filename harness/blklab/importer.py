"""blklab import: a customer's capture (tools/blklab-capture.sh) turned into a
scenario skeleton.

What is mapped: the device (kind from its name and driver, size, the
profile closest to its model), the [queue] attributes blklab can set that
differ from what a fresh guest would choose for itself, the active
scheduler's [iosched] values, and the guest kernel flavour. Everything else
the capture holds is listed as not mapped, with the reason, so a support
engineer knows what the skeleton leaves out.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from blklab.errors import BlklabError
from blklab.scenario import SCHEDULERS

FORMAT = "blklab-capture 1"
# Queue attributes a scenario's [queue] sets; the rest are the hardware's
# or the driver's (logical_block_size, max_hw_sectors_kb, ...) or describe
# rather than tune (stable_writes, dax, zoned).
SETTABLE_QUEUE = ("nr_requests", "read_ahead_kb", "rq_affinity", "wbt_lat_usec",
                  "max_sectors_kb", "nomerges", "add_random", "iostats")
# The Debian kernel series blklab's archive serves (docs: DESIGN.md, Guest).
KERNEL_SERIES = ((5, 10), (6, 1), (6, 12))
IMAGE_SERIES = (6, 1)  # what guest-images/ builds today
# Profiles by what the capture says about the drive: (kind, model pattern).
PROFILE_RULES = (
    ("nvme", re.compile(r"Elastic Block Store", re.I), "aws-gp3-100g",
     "an EBS volume: gp3 at its included 3000 IOPS assumed (the capture cannot tell gp2 from "
     "gp3 or the provisioned IOPS; aws-gp2-100g and aws-gp2-100g-exhausted are the others)"),
    ("nvme", re.compile(r"970 EVO Plus", re.I), "samsung-970evoplus-1t", ""),
    ("nvme", re.compile(r"P5800X|Optane", re.I), "optane-p5800x-800g", ""),
)


class CaptureError(BlklabError):
    """A capture file blklab cannot read: names the file, the line and why."""

    exit_code = 2


@dataclass
class Capture:
    path: str
    meta: dict[str, str] = field(default_factory=dict)
    kernel: dict[str, str] = field(default_factory=dict)
    devices: dict[str, dict[str, str]] = field(default_factory=dict)
    diskstats: list[tuple[float, dict[str, list[int]]]] = field(default_factory=list)
    other: dict[str, list[str]] = field(default_factory=dict)  # lsblk, iostat, cgroup ...


def parse(path: Path) -> Capture:
    try:
        text = path.read_bytes().decode("utf-8", errors="replace")
    except OSError as e:
        raise CaptureError(f"{path}: cannot be read: {e.strerror}") from None
    if not text.strip():
        raise CaptureError(f"{path}: is empty (expected the output of tools/blklab-capture.sh)")
    cap = Capture(str(path))
    section: tuple[str, str] | None = None
    for n, line in enumerate(text.splitlines(), start=1):
        if line.startswith("== "):
            parts = line[3:].split(" ", 1)
            section = (parts[0], parts[1] if len(parts) > 1 else "")
            if section[0] == "device":
                if not section[1]:
                    raise CaptureError(f"{path}: line {n}: '== device' without a device name")
                cap.devices[section[1]] = {}
            elif section[0] == "diskstats":
                try:
                    at = float(section[1])
                except ValueError:
                    raise CaptureError(f"{path}: line {n}: '== diskstats' needs the sample "
                                       f"time in seconds, not '{section[1]}'") from None
                cap.diskstats.append((at, {}))
            continue
        if section is None:
            if line.strip():
                raise CaptureError(f"{path}: line {n}: text before the first '== ' section; "
                                   "is this a blklab-capture.sh output file?")
            continue
        kind, name = section
        if kind in ("meta", "kernel", "device"):
            if "=" not in line:
                raise CaptureError(f"{path}: line {n}: [{kind}] expects key=value, "
                                   f"got {line[:60]!r}")
            k, v = line.split("=", 1)
            target = (cap.meta if kind == "meta" else cap.kernel if kind == "kernel"
                      else cap.devices[name])
            target[k] = v
        elif kind == "diskstats":
            f = line.split()
            if len(f) >= 14 and all(x.isdigit() for x in f[3:14]):
                cap.diskstats[-1][1][f[2]] = [int(x) for x in f[3:14]]
        else:
            cap.other.setdefault(f"{kind} {name}".strip(), []).append(line)
    if cap.meta.get("format") != FORMAT:
        raise CaptureError(f"{path}: meta.format: is {cap.meta.get('format', 'missing')!r}, "
                           f"expected {FORMAT!r} (made by tools/blklab-capture.sh)")
    if not cap.devices:
        raise CaptureError(f"{path}: no '== device' section: the capture saw no block device")
    for name, attrs in cap.devices.items():
        if "size_sectors" not in attrs or not attrs["size_sectors"].isdigit():
            raise CaptureError(f"{path}: device {name}: size_sectors missing or not a number")
    return cap


def busiest(cap: Capture) -> str:
    """The device with the most sectors moved between the diskstats samples
    (or, without two samples, the first)."""
    names = list(cap.devices)
    if len(cap.diskstats) < 2:
        return names[0]
    (_, a), (_, b) = cap.diskstats[0], cap.diskstats[-1]

    def moved(n: str) -> int:
        if n not in a or n not in b:
            return -1
        return (b[n][2] - a[n][2]) + (b[n][6] - a[n][6])  # sectors read + written

    return max(names, key=moved)


def closest_series(release: str) -> tuple[int, int] | None:
    m = re.match(r"(\d+)\.(\d+)", release)
    if not m:
        return None
    major, minor = int(m.group(1)), int(m.group(2))
    return min(KERNEL_SERIES, key=lambda s: (abs((s[0] - major) * 100 + s[1] - minor), s))


def _profile_capacity(profile: str | None) -> int | None:
    """The profile's capacity in bytes, from the device model library."""
    if profile is None:
        return None
    from blklab.scenario import PROFILE_DIR, profile_info

    info = profile_info(PROFILE_DIR / f"{profile}.toml")
    return int(info["capacity_bytes"]) if "capacity_bytes" in info else None


def _active_scheduler(value: str) -> str | None:
    m = re.search(r"\[([^\]]+)\]", value)
    return m.group(1) if m else None


def _toml_str(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _toml_value(v: str) -> str:
    return v if re.fullmatch(r"-?\d+", v) else _toml_str(v)


@dataclass
class ImportResult:
    toml: str
    unmapped: list[str]


def import_capture(path: Path, device: str | None = None) -> ImportResult:
    cap = parse(path)
    if device is not None and device not in cap.devices:
        raise CaptureError(f"{path}: --device {device}: not captured; captured: "
                           + ", ".join(cap.devices))
    name = device or busiest(cap)
    attrs = cap.devices[name]
    unmapped: list[str] = []
    model = attrs.get("device/model", "")
    driver = attrs.get("device/driver", "")
    rotational = attrs.get("queue/rotational") == "1"
    size_bytes = int(attrs["size_sectors"]) * 512

    # Kind: what the guest would see.
    if name.startswith("nvme"):
        kind = "nvme"
    elif name.startswith("vd") or driver == "virtio_blk":
        kind = "virtio-blk"
    elif name.startswith(("sd", "hd")):
        kind = "ahci-hd"
    elif name.startswith("xvd"):
        kind = "nvme"
        unmapped.append(f"device {name} is a Xen block device; modelled as nvme")
    else:
        raise CaptureError(f"{path}: device {name}: no blklab device kind for this name "
                           "(nvme*, vd*, sd*, hd*, xvd*); pick another with --device")

    profile = None
    for k, pattern, prof, why in PROFILE_RULES:
        if k == kind and pattern.search(model):
            profile = prof
            if why:
                unmapped.append(f"profile {prof}: {why}")
            break
    if profile is None:
        profile = "hdd-7200-desktop-1t" if rotational and kind == "ahci-hd" else (
            "samsung-970evoplus-1t" if kind == "nvme" else None)
        unmapped.append(f"model {model or '(none reported)'!r} matches no blklab profile; "
                        f"{profile or 'stock QEMU timing'} stands in for it: write a profile "
                        "from the drive's datasheet for figures that mean something")
    if rotational and kind == "nvme":
        unmapped.append(f"queue/rotational=1 on {name}: virtual disks often claim to rotate; "
                        "a blklab nvme device does not")

    lines = [
        f"# Imported by 'blklab import' from {Path(cap.path).name}",
        f"# (captured {cap.meta.get('date', '?')} on {cap.meta.get('host', '?')}, "
        f"kernel {cap.kernel.get('release', '?')}, device {name}"
        + (f", model {model}" if model else "") + ").",
        "# A skeleton: add the customer's jobs (fio_file = ... or [[job]] options).",
        "",
        "[scenario]",
        f"description = {_toml_str(f'Imported from a capture of {name}')}",
        f"schedulers = [{', '.join(_toml_str(s) for s in SCHEDULERS)}]",
        'mode = "deterministic"',
        "",
    ]

    release = cap.kernel.get("release", "")
    series = closest_series(release)
    flavour = "cloud-amd64" if re.search(r"aws|azure|gcp|cloud", release) else "amd64"
    lines += ["[guest]", f"kernel = {_toml_str(flavour)}", ""]
    if series is None:
        unmapped.append(f"kernel release {release!r}: no version number found")
    elif series != IMAGE_SERIES:
        unmapped.append(f"kernel {release}: the closest series blklab knows is "
                        f"{series[0]}.{series[1]}, but its guest images run "
                        f"{IMAGE_SERIES[0]}.{IMAGE_SERIES[1]}; defaults and schedulers may "
                        "differ (DESIGN.md, Guest)")

    lines += ["[[device]]", f"name = {_toml_str(re.sub(r'[^A-Za-z0-9_.-]', '_', name))}",
              f"kind = {_toml_str(kind)}", 'backing = "null"']
    if profile:
        lines.append(f"profile = {_toml_str(profile)}")
    size_bytes -= size_bytes % 4096
    capacity = _profile_capacity(profile)
    if capacity is not None and size_bytes > capacity:
        unmapped.append(f"size: {name} holds {size_bytes} bytes, more than profile {profile} "
                        f"({capacity} bytes); the profile's capacity is used")
    elif size_bytes > 0:
        lines.append(f"size_gib = {size_bytes / (1 << 30)!r}  # {size_bytes} bytes, as captured")
    if kind == "ahci-hd" and rotational:
        rate = attrs.get("device/rotation_rate")
        if rate and rate.isdigit():
            lines.append(f"rotation_rate = {rate}")
    lines.append("")

    queue = {}
    for k, v in attrs.items():
        if not k.startswith("queue/") or k.startswith("queue/iosched/"):
            continue
        attr = k[len("queue/"):]
        if attr in SETTABLE_QUEUE:
            queue[attr] = v
    if queue:
        lines.append("# The customer's values in effect; nr_requests only holds under a "
                     "scheduler (none caps it at the hardware depth).")
        lines.append("[queue]")
        lines += [f"{k} = {_toml_value(v)}" for k, v in queue.items()]
        lines.append("")

    sched = _active_scheduler(attrs.get("queue/scheduler", ""))
    if sched is None:
        unmapped.append(f"queue/scheduler of {name} not captured or not in brackets")
    elif sched not in SCHEDULERS:
        unmapped.append(f"scheduler {sched!r} does not exist in blklab's guest kernel "
                        f"(cfq was removed in Linux 5.0; bfq succeeds it); "
                        f"its values are not mapped")
    else:
        iosched = {k[len("queue/iosched/"):]: v for k, v in attrs.items()
                   if k.startswith("queue/iosched/")}
        if iosched and sched != "none":
            lines.append(f"# {name}'s scheduler was {sched}: its tunables as captured.")
            lines.append(f"[iosched.{sched}]")
            lines += [f"{k} = {_toml_value(v)}" for k, v in iosched.items()]
            lines.append("")
        lines.insert(8, f"# The customer ran {sched}.")

    cgroups = [k for k in cap.other if k.startswith("cgroup ")]
    for c in cgroups:
        unmapped.append(f"{c}: {'; '.join(cap.other[c])}: cgroup settings go into jobs "
                        "(cgroup=, cgroup_io_max=, cgroup_io_weight=) by hand")
    others = [n for n in cap.devices if n != name]
    if others:
        unmapped.append(f"other devices captured but not modelled: {', '.join(others)} "
                        "(one device per scenario cell; choose with --device)")

    lines += ["[[job]]", 'name = "replace-me"',
              "# fio_file = \"incident.fio\"   # the customer's job file, unchanged", ""]
    return ImportResult("\n".join(lines) + "\n", unmapped)
