"""A filesystem on the device under test, and the page cache's writeback
settings: a scenario's [filesystem] and [vm] tables.

The guest makes the filesystem itself, with the mkfs of the applications'
root ([guest] apps), right before the workload, so its bytes come from the
pinned e2fsprogs or xfsprogs and the guest kernel, never from the host's.
It is mounted at /data; blkgen and fio then run in /data with the files
their jobs name (fio's default: <job>.<clone>.0), and a command job finds
it at /data in its root. The guest records the mount as /proc/mounts shows
it and what mkfs printed (cell JSON: `filesystem`).

[vm] sets the page cache's writeback (/proc/sys/vm/dirty_*) before the
workload; the guest reads every dirty_* value back (cell JSON: `vm`). The
bounds are the kernel's own (mm/page-writeback.c, vm_page_writeback_sysctls,
the same in 5.10, 6.1 and 6.12): a ratio is 0-100, dirty_bytes at least two
pages, dirty_background_bytes at least 1. Writing a *_bytes value sets its
*_ratio to 0 and the other way round (dirty_bytes_handler and friends), so a
scenario gives one of each pair.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

TYPES = ("ext4", "xfs")
MOUNT_POINT = "/data"
PAGE_SIZE = 4096  # x86-64
INT_MAX = 2**31 - 1
ULONG_MAX = 2**64 - 1
# name -> (lowest, highest), as vm_page_writeback_sysctls bounds them.
VM_KEYS = {
    "dirty_ratio": (0, 100),
    "dirty_background_ratio": (0, 100),
    "dirty_bytes": (2 * PAGE_SIZE, ULONG_MAX),
    "dirty_background_bytes": (1, ULONG_MAX),
    "dirty_expire_centisecs": (0, INT_MAX),
    "dirty_writeback_centisecs": (0, INT_MAX),
}
_PAIRS = (("dirty_ratio", "dirty_bytes"), ("dirty_background_ratio", "dirty_background_bytes"))


@dataclass(frozen=True)
class Filesystem:
    type: str  # one of TYPES
    mkfs_options: tuple[str, ...] = ()  # arguments before the device
    mount_options: str = ""  # mount -o; "" = the filesystem's defaults

    def to_json(self) -> dict[str, Any]:
        return {"type": self.type, "mkfs_options": list(self.mkfs_options),
                "mount_options": self.mount_options, "mount_point": MOUNT_POINT}


def parse_filesystem(reader) -> Filesystem | None:
    """[filesystem], read through the scenario's typed reader, or None
    when the table is absent or empty."""
    if not reader.table:
        return None
    fs_type = reader.choice("type", TYPES, required=True)
    options = reader.get("mkfs_options", list, [])
    for i, o in enumerate(options):
        if not isinstance(o, str) or not o or "\n" in o:
            raise reader.error("mkfs_options", f"item {i} must be a non-empty one-line string, "
                               f"got {o!r}")
        if o == "-U" or "uuid" in o.lower():
            raise reader.error("mkfs_options", f"'{o}': blklab sets the filesystem's UUID "
                               "itself, from the cell's seed")
    mount = reader.get("mount_options", str, "")
    if "\n" in mount or " " in mount:
        raise reader.error("mount_options", f"must be one word of comma-separated options "
                           f"(mount -o), got {mount!r}")
    reader.finish()
    return Filesystem(fs_type, tuple(options), mount)


def parse_vm(reader) -> tuple[tuple[str, int], ...]:
    """[vm]: (name under /proc/sys/vm, value), in VM_KEYS order."""
    out = []
    for name, (lo, hi) in VM_KEYS.items():
        value = reader.integer(name, None, lo, hi)
        if value is not None:
            out.append((name, value))
    reader.finish()
    given = dict(out)
    for ratio, size in _PAIRS:
        if ratio in given and size in given:
            raise reader.error(size, f"sets the limit {reader.key(ratio)} sets too: writing "
                               "one makes the kernel set the other to 0 "
                               "(mm/page-writeback.c); give one of them")
    return tuple(out)


def uuid_of(seed: int) -> str:
    """A filesystem UUID (version 4 layout) from the cell's seed: the cells
    of one seed get the same filesystem whatever their scheduler."""
    h = bytearray(hashlib.sha256(f"blklab-filesystem:{seed}".encode()).digest()[:16])
    h[6] = (h[6] & 0x0F) | 0x40
    h[8] = (h[8] & 0x3F) | 0x80
    x = h.hex()
    return f"{x[:8]}-{x[8:12]}-{x[12:16]}-{x[16:20]}-{x[20:]}"


def mkfs_args(fs: Filesystem, uuid: str) -> list[str]:
    """mkfs.<type>'s arguments before the device: forced (the device may
    hold an earlier filesystem's signature), quiet, the UUID, then the
    scenario's."""
    if fs.type == "ext4":
        return ["-F", "-q", "-U", uuid, *fs.mkfs_options]
    return ["-f", "-q", "-m", f"uuid={uuid}", *fs.mkfs_options]


def parse_guest_record(text: str) -> dict[str, Any]:
    """The guest's filesystem.txt (guest-images/init, make_filesystem):
    `mount=<its /proc/mounts line>`, then what mkfs printed after a line
    `--- mkfs`, and the filesystem's description after `--- info`."""
    head, _, rest = text.partition("--- mkfs\n")
    mkfs, _, info = rest.partition("--- info\n")
    out: dict[str, Any] = {}
    for line in head.splitlines():
        k, sep, v = line.partition("=")
        if sep:
            out[k] = v
    fields = out.get("mount", "").split()
    if len(fields) >= 4:
        out["mounted"] = {"device": fields[0], "mount_point": fields[1], "type": fields[2],
                          "options": fields[3].split(",")}
    out["mkfs_output"] = mkfs
    out["info"] = info
    return out
