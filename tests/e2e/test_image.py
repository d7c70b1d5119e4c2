"""The guest image is reproducible: the same inputs give the same bytes."""

import hashlib
import json
import os
import subprocess

from conftest import REPO


def sha256(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_rebuild_gives_identical_bytes(built, tmp_path):
    cached = REPO / "build/images/amd64"
    image = json.loads((cached / "image.json").read_text())
    env = dict(os.environ, BLKLAB_CACHE=str(tmp_path / "cache"),
               BLKLAB_BUILD=str(tmp_path / "build"),
               # Share the downloaded kernel package; everything else is rebuilt.
               BLKLAB_DEBS=os.environ.get("BLKLAB_DEBS", os.path.join(
                   os.environ.get("BLKLAB_CACHE", os.path.expanduser("~/.cache/blklab")),
                   "debs")))
    blkgen = REPO / "build/cmake/workload/blkgen"
    subprocess.run([str(REPO / "guest-images/build-image.sh"), "--flavour", "amd64",
                    "--blkgen", str(blkgen)], env=env, check=True, capture_output=True)
    fresh = tmp_path / "build/images/amd64"
    assert fresh.resolve().name == cached.resolve().name  # same input hash
    assert sha256(fresh / "initramfs.cpio") == sha256(cached / "initramfs.cpio")
    assert sha256(fresh / "initramfs.cpio") == image["initramfs_sha256"]
    assert sha256(fresh / "vmlinuz") == image["vmlinuz_sha256"]


def test_image_records_kernel_package(built):
    image = json.loads((REPO / "build/images/amd64/image.json").read_text())
    assert image["kernel_package"].startswith("linux-image-6.1.")
    assert image["kernel_package_version"].startswith("6.1.")
    listing = subprocess.run(["cpio", "-t", "--quiet"],
                             stdin=open(REPO / "build/images/amd64/initramfs.cpio", "rb"),
                             capture_output=True, text=True, check=True).stdout.split()
    for needed in ("init", "bin/busybox", "usr/bin/blkgen", "usr/bin/fio", "usr/sbin/blktrace",
                   "usr/bin/blkparse", "usr/bin/btt", "lib64/ld-linux-x86-64.so.2"):
        assert needed in listing, needed
    mods = [p for p in listing if p.endswith(".ko")]
    for m in ("nvme.ko", "ata_piix.ko", "ahci.ko", "libata.ko", "sd_mod.ko",
              "kyber-iosched.ko", "bfq.ko", "virtio_console.ko"):
        assert any(p.endswith("/" + m) for p in mods), m
    assert listing == sorted(listing)
