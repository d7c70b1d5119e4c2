"""The guest and QEMU inputs a run was measured with, and how two sets
differ. Two runs compare like for like only when these match: a different
kernel package, guest userland (guest-images/userland.lock), blkgen, QEMU
source, patch series or device-model library changes the figures by itself
(two hosts whose guests differed only in the userland copied from them
gave an HDD p50 of 353.4 ms and 238.6 ms for the same scenario).

The inputs are read from a run's manifest.json ("image": the image's
image.json, "qemu": the QEMU build's manifest.json) or from one cell's
result ("image" only: a cell does not carry the QEMU build).
"""

from __future__ import annotations

from typing import Any

# (section, key in that section's record, what it names)
GUEST_KEYS = (
    ("kernel", "guest kernel"),
    ("kernel_package", "kernel package"),
    ("kernel_package_version", "kernel package version"),
    ("userland_lock_sha256", "guest userland pins (guest-images/userland.lock)"),
    ("blkgen_sha256", "blkgen binary"),
    ("initramfs_sha256", "initramfs"),
    ("fio_cpio_sha256", "fio archive (fio.cpio)"),
    ("vmlinuz_sha256", "vmlinuz"),
    ("vmlinux_sha256", "vmlinux (the kernel ELF that cells boot through its PVH entry)"),
)
QEMU_KEYS = (
    ("qemu_source", "QEMU source package"),
    ("series_sha256", "QEMU patch series"),
    ("devmodel_sha256", "device-model library sources"),
    ("firmware_packages", "firmware packages"),
    ("configure_flags", "QEMU configure flags"),
    ("variant", "QEMU build variant"),
)


def _flags_without_prefix(flags: Any) -> Any:
    # --prefix and --devmodel name the build's own directories.
    if not isinstance(flags, list):
        return flags
    return [f for f in flags if not str(f).startswith(("--prefix=", "--devmodel="))]


def of_manifest(manifest: dict[str, Any]) -> dict[str, dict[str, Any]]:
    image = manifest.get("image") or {}
    qemu = manifest.get("qemu") or {}
    out = {"guest": {k: image.get(k) for k, _ in GUEST_KEYS},
           "qemu": {k: qemu.get(k) for k, _ in QEMU_KEYS}}
    out["qemu"]["configure_flags"] = _flags_without_prefix(out["qemu"]["configure_flags"])
    return out


def of_cell(cell: dict[str, Any]) -> dict[str, dict[str, Any]]:
    image = cell.get("image") or {}
    return {"guest": {k: image.get(k) for k, _ in GUEST_KEYS}}


def _show(v: Any) -> str:
    if v is None:
        return "not recorded"
    if isinstance(v, dict):
        return ", ".join(f"{k} {_show(x)}" for k, x in sorted(v.items()))
    if isinstance(v, list):
        return " ".join(str(x) for x in v)
    return str(v)


def differences(a: dict[str, dict[str, Any]], b: dict[str, dict[str, Any]],
                a_name: str, b_name: str) -> list[str]:
    """One line per input that differs between a and b, naming it and both
    values; sections only one side has are not compared."""
    lines = []
    for section, keys in (("guest", GUEST_KEYS), ("qemu", QEMU_KEYS)):
        if section not in a or section not in b:
            continue
        for key, what in keys:
            va, vb = a[section].get(key), b[section].get(key)
            if va != vb:
                lines.append(f"{section} input differs: {what} ({key}): "
                             f"{_show(va)} in {a_name}, {_show(vb)} in {b_name}")
    return lines


def within_run(manifest: dict[str, Any], cells: list[dict[str, Any]]) -> list[str]:
    """Cells measured with another guest than the run's manifest names (a
    run resumed into the same --out after the image changed)."""
    run = of_manifest(manifest)
    out = []
    for c in cells:
        for line in differences(run, of_cell(c), "the run's manifest", f"cell {c['cell_id']}"):
            out.append(line)
    return out
