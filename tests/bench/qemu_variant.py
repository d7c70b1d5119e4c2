"""A QEMU built from blklab's base with part of the patch series, for the
benchmarks that compare one change at a time: qemu-patches/build-qemu.sh
runs on a copy of qemu-patches/ whose series keeps only the patches asked
for, and caches the build by its inputs like any other (the first build
takes about 10 minutes)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

# The stock build's patches: what a build with blklab's configure options and
# targets needs (its device set, the devmodel link option, the qtest
# programs build-qemu.sh builds, and qtest's clock_step, which only -qtest
# uses), and nothing that runs in a guest's QEMU.
STOCK_PATCHES = ("configs-add-a-blklab-device-set", "build-add-a-devmodel-option",
                 "qtest-let-clock_step-0", "tests-qtest-")
# ... and the device set's virtio-blk line, which the patch that gives
# virtio-blk its model adds (its virtio-blk qtest is built only with it).
DEVICE_SET = "configs/devices/x86_64-softmmu/blklab.mak"
VIRTIO_BLK_PATCH = "0025-hw-block-virtio-blk-complete-I-O-at-the-time-blklab-.patch"


def series_without(drop: tuple[str, ...], who: str) -> str:
    """The series without the patches whose names contain one of `drop`."""
    lines = (REPO / "qemu-patches" / "series").read_text().splitlines()
    kept = [line for line in lines if not any(p in line for p in drop)]
    if len(lines) - len(kept) != len(drop):
        sys.exit(f"{who}: the series does not list each of " + ", ".join(drop))
    return "\n".join(kept) + "\n"


def series_only(keep: tuple[str, ...], who: str) -> str:
    """The series with only the patches whose names contain one of `keep`."""
    lines = (REPO / "qemu-patches" / "series").read_text().splitlines()
    kept = [line for line in lines if any(p in line for p in keep)]
    missing = [p for p in keep if not any(p in line for line in kept)]
    if missing:
        sys.exit(f"{who}: the series lists no patch named like " + ", ".join(missing))
    return "\n".join(kept) + "\n"


def excerpt(patch: str, path: str, subject: str) -> str:
    """A patch of its own, in the series' mail format, that makes only the
    change `patch` (a file of the series) makes to `path`; its author and
    sign-off are the source patch's."""
    text = (REPO / "qemu-patches" / patch).read_text()
    start = text.find(f"diff --git a/{path} b/{path}\n")
    if start < 0:
        sys.exit(f"qemu-patches/{patch} does not change {path}")
    end = text.find("\ndiff --git ", start + 1)
    diff = text[start:] if end < 0 else text[start:end + 1]
    head = text[:text.index("\nDate: ")]  # the From line and the From: header
    signed = next(line for line in text.splitlines() if line.startswith("Signed-off-by: "))
    return (f"{head}\nSubject: [PATCH] {subject}\n\nThe change qemu-patches/{patch} makes to "
            f"{path}, alone.\n\n{signed}\n---\n{diff}")


def build(tmp: Path, name: str, series: str, log: Callable[[str], None] = print,
          extra: dict[str, str] | None = None) -> Path:
    """Builds (or takes from the cache) QEMU with `series`, and after it the
    patches in `extra` (file name -> text); returns a BLKLAB_BUILD
    directory whose QEMU is that build and whose guest images and tools are
    the repository's."""
    root = tmp / f"{name}-repo"
    patches = root / "qemu-patches"
    patches.mkdir(parents=True)
    for entry in REPO.iterdir():  # build-qemu.sh reads devmodel/ relative to its repository
        if entry.name not in ("qemu-patches", "build", ".git"):
            (root / entry.name).symlink_to(entry)
    for f in (REPO / "qemu-patches").iterdir():
        if f.name != "series":
            shutil.copy2(f, patches / f.name)
    for patch_name, text in (extra or {}).items():
        (patches / patch_name).write_text(text)
        series += patch_name + "\n"
    (patches / "series").write_text(series)
    out = tmp / f"{name}-build"
    log(f"building QEMU '{name}' ({len(series.splitlines())} patches of the series)")
    env = dict(os.environ, BLKLAB_BUILD=str(out))
    subprocess.run([str(patches / "build-qemu.sh")], env=env, check=True)
    for entry in ("images", "cmake"):
        (out / entry).symlink_to(blklab_build() / entry)
    return out


def blklab_build() -> Path:
    """blklab's own build directory: BLKLAB_BUILD, as the harness reads it
    (blklab.paths), or the repository's build/."""
    return Path(os.environ.get("BLKLAB_BUILD", REPO / "build"))


def stock(tmp: Path, who: str, log: Callable[[str], None] = print) -> Path:
    """Builds (or takes from the cache) stock QEMU: blklab's base with only
    the patches its build needs (STOCK_PATCHES and the device set's
    virtio-blk line); returns its BLKLAB_BUILD directory, as build() does."""
    return build(tmp, "stock", series_only(STOCK_PATCHES, who), log,
                 {"stock-device-set.patch": excerpt(
                     VIRTIO_BLK_PATCH, DEVICE_SET, "configs: virtio-blk in the blklab device set")})
