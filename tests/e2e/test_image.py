"""The guest image is reproducible and host-independent: the same pins and
sources give the same bytes, and nothing in it comes from the host's
installed packages (guest-images/build-image.sh)."""

import hashlib
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import DEFAULT_IMAGE, DEFAULT_KERNEL, REPO

CACHE = Path(os.environ.get("BLKLAB_CACHE", os.path.expanduser("~/.cache/blklab")))
BUILD_IMAGE = REPO / "guest-images" / "build-image.sh"


def sha256(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


def lock(name):
    """{package: version} of a guest-images lock file."""
    out = {}
    for line in (REPO / "guest-images" / name).read_text().splitlines():
        w = line.split("#", 1)[0].split()
        if w:
            out[w[-3]] = w[-2]
    return out


def listing(image_dir, archive="initramfs.cpio"):
    return subprocess.run(["cpio", "-t", "--quiet"], stdin=open(image_dir / archive, "rb"),
                          capture_output=True, text=True, check=True).stdout.split()


def non_directories(image_dir, archive):
    """The names in an archive that are not directories (`cpio -tv`: a
    mode string, then four fields, the date's three and the name)."""
    out = subprocess.run(["cpio", "-tv", "--quiet"], stdin=open(image_dir / archive, "rb"),
                         capture_output=True, text=True, check=True).stdout
    return {line.split()[8] for line in out.splitlines() if not line.startswith("d")}


def test_rebuild_gives_identical_bytes(built, tmp_path):
    """Rebuilt in a fresh cache that shares only the pinned packages, the
    build root and blkgen (hard links: making those takes minutes; NOTES
    and the commit that pinned them say how a full rebuild compared)."""
    cache = tmp_path / "cache"
    cache.mkdir()
    for d in ("debs", "guest-root", "blkgen"):
        proc = subprocess.run(["cp", "-al", str(CACHE / d), str(cache / d)],
                              capture_output=True, text=True)
        if proc.returncode != 0:
            pytest.fail(f"cannot hard-link {CACHE / d} into {cache}: {proc.stderr}")
    env = dict(os.environ, BLKLAB_CACHE=str(cache), BLKLAB_BUILD=str(tmp_path / "build"),
               BLKLAB_DEBS=str(cache / "debs"), PATH="/usr/bin:/bin:/usr/sbin:/sbin")
    try:
        subprocess.run([str(BUILD_IMAGE), "--kernel", DEFAULT_KERNEL], env=env, check=True,
                       capture_output=True)
        fresh = tmp_path / "build" / "images" / DEFAULT_KERNEL
        image = json.loads((DEFAULT_IMAGE / "image.json").read_text())
        assert fresh.resolve().name == DEFAULT_IMAGE.resolve().name  # same input hash
        assert sha256(fresh / "initramfs.cpio") == sha256(DEFAULT_IMAGE / "initramfs.cpio")
        assert sha256(fresh / "initramfs.cpio") == image["initramfs_sha256"]
        assert sha256(fresh / "fio.cpio") == sha256(DEFAULT_IMAGE / "fio.cpio")
        assert sha256(fresh / "fio.cpio") == image["fio_cpio_sha256"]
        assert sha256(fresh / "vmlinuz") == image["vmlinuz_sha256"]
        assert sha256(fresh / "vmlinux") == sha256(DEFAULT_IMAGE / "vmlinux")
        assert sha256(fresh / "vmlinux") == image["vmlinux_sha256"]
    finally:
        shutil.rmtree(cache, ignore_errors=True)


def test_image_records_its_pins(built):
    image = json.loads((DEFAULT_IMAGE / "image.json").read_text())
    userland = lock("userland.lock")
    [kline] = [line.split() for line in (REPO / "guest-images/kernels.lock").read_text()
               .splitlines() if line.startswith(DEFAULT_KERNEL.replace("-", " ", 1) + " ")]
    assert (image["kernel_package"], image["kernel_package_version"]) == (kline[2], kline[3])
    assert image["busybox_version"] == userland["busybox-static"]
    assert image["fio_version"] == userland["fio"]
    assert image["blktrace_version"] == userland["blktrace"]
    assert image["userland_lock_sha256"] == sha256(REPO / "guest-images/userland.lock")
    names = listing(DEFAULT_IMAGE)
    for needed in ("init", "bin/busybox", "usr/bin/blkgen", "usr/sbin/blktrace",
                   "usr/bin/blkparse", "usr/bin/btt", "lib64/ld-linux-x86-64.so.2"):
        assert needed in names, needed
    # fio and the libraries only it needs are in fio.cpio, and nothing twice.
    fio_names = listing(DEFAULT_IMAGE, "fio.cpio")
    assert "usr/bin/fio" in fio_names and "usr/bin/fio" not in names
    assert any(n.startswith("lib/x86_64-linux-gnu/") and ".so" in n for n in fio_names)
    assert not non_directories(DEFAULT_IMAGE, "fio.cpio") & set(names)
    assert fio_names == sorted(fio_names)
    mods = [p for p in names if p.endswith(".ko")]
    # The drivers the package ships as modules (6.12 builds virtio_pci and
    # virtio_console in; 6.1 ships them as modules), and libata beside them.
    modules = [d for d, v in image["drivers"].items() if v["state"] == "module"]
    assert {"nvme", "ata_piix", "ahci", "sd_mod", "kyber-iosched", "bfq",
            "virtio_blk"} <= set(modules), modules
    for m in modules + ["libata"]:
        assert any(p.endswith("/" + m + ".ko") for p in mods), m
    for d, v in image["drivers"].items():
        if v["state"] == "builtin":
            assert not any(p.endswith("/" + d + ".ko") for p in mods), d
    assert names == sorted(names)


def test_image_programs_are_the_pinned_packages_not_the_hosts(built, tmp_path):
    """fio in the image is the file of the pinned fio .deb, byte for byte."""
    version = lock("userland.lock")["fio"]
    [deb] = (CACHE / "debs").glob(f"fio_{version.replace(':', '%3a')}_*.deb")
    subprocess.run(["dpkg-deb", "-x", str(deb), str(tmp_path / "deb")], check=True)
    subprocess.run(["cpio", "-i", "--quiet", "-d", "usr/bin/fio"], cwd=tmp_path,
                   stdin=open(DEFAULT_IMAGE / "fio.cpio", "rb"), check=True)
    assert sha256(tmp_path / "usr/bin/fio") == sha256(tmp_path / "deb/usr/bin/fio")


def test_image_blkgen_is_the_build_without_its_debug_information(built, tmp_path):
    """The image's blkgen is the statically built one with its debug
    sections stripped (build-image.sh): the same code and symbols."""
    subprocess.run(["cpio", "-i", "--quiet", "-d", "usr/bin/blkgen"], cwd=tmp_path,
                   stdin=open(DEFAULT_IMAGE / "initramfs.cpio", "rb"), check=True)

    def sections(path):
        out = subprocess.run(["readelf", "-S", "-W", str(path)], capture_output=True, text=True,
                             check=True).stdout
        return {m.group(1): m.group(2) for m in
                re.finditer(r"\]\s+(\.\S+)\s+\S+\s+\S+\s+\S+\s+(\S+)", out)}

    image = json.loads((DEFAULT_IMAGE / "image.json").read_text())
    # Builds of other keys (a change to another program built beside it)
    # may hold the same bytes: any of them is the build.
    built = [p for p in CACHE.glob("blkgen/*/blkgen") if sha256(p) == image["blkgen_sha256"]]
    assert built, image["blkgen_sha256"]
    built_blkgen = built[0]
    ours, theirs = sections(tmp_path / "usr/bin/blkgen"), sections(built_blkgen)
    assert any(name.startswith(".debug_") for name in theirs)
    assert not any(name.startswith(".debug_") for name in ours)
    assert ".symtab" in ours
    for name in (".text", ".rodata", ".data"):
        assert ours[name] == theirs[name], name  # the same size


def test_a_pin_that_left_the_archive_stops_the_build_naming_it(built, tmp_path):
    """A kernel pin no suite has: the build stops before building anything,
    names the package, version and lock, and says the ways out."""
    repo = tmp_path / "repo"
    repo.mkdir()
    for rel in ("guest-images", "scripts", "workload", "CMakeLists.txt"):
        src = REPO / rel
        if src.is_dir():
            shutil.copytree(src, repo / rel, dirs_exist_ok=True)
        else:
            shutil.copy(src, repo / rel)
    kl = repo / "guest-images" / "kernels.lock"
    series = DEFAULT_KERNEL.split("-", 1)[0]
    lines = kl.read_text().splitlines()
    gone = "0.0.0-0blklab1"
    for i, line in enumerate(lines):
        w = line.split()
        if w[:2] == [series, "amd64"]:
            package = w[2]
            lines[i] = " ".join(w[:3] + [gone] + w[4:])
    kl.write_text("\n".join(lines) + "\n")
    cache = tmp_path / "cache"
    env = dict(os.environ, BLKLAB_CACHE=str(cache), BLKLAB_BUILD=str(tmp_path / "build"),
               BLKLAB_DEBS=str(cache / "debs"), BLKLAB_APT_REFRESH="1")
    proc = subprocess.run([str(repo / "guest-images/build-image.sh"), "--kernel", DEFAULT_KERNEL],
                          env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert f"{package}={gone}" in proc.stderr or f"{package} {gone}" in proc.stderr, proc.stderr
    assert "guest-images/kernels.lock" in proc.stderr
    assert "blklab image export" in proc.stderr and "blklab image import" in proc.stderr
    assert "guest-images/pin.sh" in proc.stderr
    assert not (tmp_path / "build" / "images").exists()
    assert not (cache / "image").exists() or not any((cache / "image").iterdir())
