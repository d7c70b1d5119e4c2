"""Where blklab finds its builds: the repository's build/ links into the
cache (see Makefile), overridable with BLKLAB_BUILD and BLKLAB_CACHE."""

from __future__ import annotations

import os
from pathlib import Path

from blklab.errors import BuildMissingError

REPO = Path(__file__).resolve().parents[2]


def build_dir() -> Path:
    return Path(os.environ.get("BLKLAB_BUILD", REPO / "build"))


def cache_dir() -> Path:
    return Path(os.environ.get("BLKLAB_CACHE", Path.home() / ".cache" / "blklab"))


def devmodel_state_dir() -> Path:
    """Where device models keep a steady-preconditioned SSD's built state
    between QEMU starts (libdevmodel's state files, devmodel/src/state_cache.h)."""
    return cache_dir() / "devmodel-state"


def cmake_tool(relative: str, why: str) -> Path:
    """A tool of the CMake build (build/cmake, or BLKLAB_CMAKE_BUILD), e.g.
    "workload/blkgen"; `why` says what blklab reads from it."""
    cmake = Path(os.environ.get("BLKLAB_CMAKE_BUILD", build_dir() / "cmake"))
    tool = cmake / relative
    if not tool.exists():
        raise BuildMissingError(f"no {tool}: run 'make cmake' ({why})")
    return tool


def qemu_dir() -> Path:
    d = build_dir() / "qemu"
    if not (d / "bin" / "qemu-system-x86_64").exists():
        raise BuildMissingError(f"no QEMU build at {d}: run 'make qemu'")
    return d.resolve()


def qemu_binary() -> Path:
    return qemu_dir() / "bin" / "qemu-system-x86_64"


def image_dir(kernel: str) -> Path:
    """The image of a guest kernel, "<series>-<flavour>" (blklab.kernels)."""
    d = build_dir() / "images" / kernel
    if not (d / "image.json").exists():
        raise BuildMissingError(
            f"no guest image for kernel '{kernel}' at {d}: "
            f"run 'make image KERNEL={kernel}'")
    return d.resolve()


def apps_dir() -> Path:
    """The applications' root image (guest-images/build-apps.sh)."""
    d = build_dir() / "apps"
    if not (d / "apps.json").exists():
        raise BuildMissingError(f"no applications' root at {d}: run 'make apps'")
    return d.resolve()


def devmodel_info() -> Path:
    tool = build_dir() / "cmake" / "devmodel" / "devmodel-info"
    if not tool.exists():
        raise BuildMissingError(f"no {tool}: run 'make cmake'")
    return tool
