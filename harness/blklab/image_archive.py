"""`blklab image export` / `import`: one file that carries a guest image and
the QEMU build's inputs from one machine to another.

When a version pinned in guest-images/*.lock has left the Debian archive, a
machine that still has the image (or the same commit's image) exports it;
the other imports it and builds nothing: guest-images/build-image.sh finds
an image by its key (the pins and the project's sources) before it needs
the archive. The file also carries what build-qemu.sh downloads (Debian's
qemu source package and the firmware packages of the QEMU build's
manifest), so the same QEMU builds without the archive too.

The file is a tar archive:
  blklab-export.json             what is inside (schema_version 1)
  image/<kernel>-<key>/...       each image directory, as in the cache
  qemu/downloads/...             the QEMU build's downloads, as in the cache
"""

from __future__ import annotations

import hashlib
import io
import json
import shutil
import subprocess
import tarfile
from pathlib import Path
from typing import Any

from blklab import paths
from blklab.errors import BlklabError

EXPORT_SCHEMA_VERSION = 1
INDEX = "blklab-export.json"
BUILD_IMAGE = paths.REPO / "guest-images" / "build-image.sh"
IMAGE_FILES = ("vmlinuz", "vmlinux", "initramfs.cpio", "fio.cpio", "image.json", "inputs.txt", "config")


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _qemu_downloads(downloads: Path, manifest: dict[str, Any]) -> list[Path]:
    """The files build-qemu.sh downloaded for the build `manifest`
    describes: the source package's .dsc and the files it lists, and each
    firmware package's .deb."""
    version = manifest.get("qemu_source", {}).get("version", "")
    dsc = downloads / f"qemu_{version.split(':', 1)[-1]}.dsc"
    if not dsc.exists():
        raise BlklabError(f"{dsc}: missing; the QEMU build's source is not in this cache "
                          "(build-qemu.sh downloads it: make qemu)")
    files = [dsc]
    listed = False
    for line in dsc.read_text(errors="replace").splitlines():
        if line.startswith("Files:"):
            listed = True
            continue
        if listed:
            if not line.startswith(" "):
                break
            files.append(downloads / line.split()[2])
    for pkg, ver in sorted(manifest.get("firmware_packages", {}).items()):
        debs = sorted((downloads / pkg / ver).glob("*.deb"))
        if not debs:
            raise BlklabError(f"{downloads / pkg / ver}: no .deb of {pkg} {ver} in this cache")
        files += debs
    for f in files:
        if not f.exists():
            raise BlklabError(f"{f}: missing; {dsc.name} lists it")
    return files


def export(out: Path, kernels: list[str]) -> dict[str, Any]:
    """Write `out`: the images of `kernels` (as linked in build/images) and
    the current QEMU build's downloads. Returns the index written."""
    cache = paths.cache_dir()
    qemu_manifest = json.loads((paths.qemu_dir() / "manifest.json").read_text())
    downloads = cache / "qemu" / "downloads"
    qemu_files = _qemu_downloads(downloads, qemu_manifest)
    images = []
    for k in kernels:
        d = paths.image_dir(k)
        image = json.loads((d / "image.json").read_text())
        images.append({"kernel": k, "dir": d.name, "hash": image.get("hash"),
                       "kernel_package": image.get("kernel_package"),
                       "kernel_package_version": image.get("kernel_package_version"),
                       "files": {f: _sha256(d / f) for f in IMAGE_FILES if (d / f).exists()}})
    index = {"schema_version": EXPORT_SCHEMA_VERSION, "images": images,
             "qemu": {"cache_key": qemu_manifest.get("cache_key"),
                      "qemu_source": qemu_manifest.get("qemu_source"),
                      "firmware_packages": qemu_manifest.get("firmware_packages"),
                      "files": {str(f.relative_to(downloads)): _sha256(f) for f in qemu_files}}}
    tmp = out.with_name(out.name + ".tmp")
    with tarfile.open(tmp, "w") as tar:
        blob = (json.dumps(index, indent=2, sort_keys=True) + "\n").encode()
        info = tarfile.TarInfo(INDEX)
        info.size = len(blob)
        tar.addfile(info, io.BytesIO(blob))
        for img in images:
            d = paths.image_dir(img["kernel"])
            for f in img["files"]:
                tar.add(d / f, arcname=f"image/{img['dir']}/{f}")
        for rel in index["qemu"]["files"]:
            tar.add(downloads / rel, arcname=f"qemu/downloads/{rel}")
    tmp.replace(out)
    return index


def _checkout_key(kernel: str) -> str:
    """The image directory name this checkout's inputs give `kernel`."""
    proc = subprocess.run([str(BUILD_IMAGE), "--key", "--kernel", kernel],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        raise BlklabError(f"{BUILD_IMAGE} --key --kernel {kernel}: {proc.stderr.strip()}")
    return proc.stdout.strip()


def _safe_member(name: str) -> bool:
    p = Path(name)
    return not p.is_absolute() and ".." not in p.parts


def import_(src: Path) -> list[str]:
    """Unpack `src` into the cache, checking every file against the index,
    and link build/images/<kernel> to each image whose key this checkout's
    inputs give. Returns one line per thing done, for the user."""
    cache = paths.cache_dir()
    try:
        tar = tarfile.open(src, "r")
    except OSError as e:
        raise BlklabError(f"{src}: cannot read: {e.strerror}") from None
    except tarfile.TarError:
        raise BlklabError(f"{src}: not a blklab image export (not a tar archive)") from None
    lines = []
    with tar:
        try:
            index = json.load(tar.extractfile(INDEX))
        except (KeyError, ValueError, TypeError):
            raise BlklabError(f"{src}: not a blklab image export (no readable {INDEX})") from None
        if index.get("schema_version") != EXPORT_SCHEMA_VERSION:
            raise BlklabError(f"{src}: export schema version {index.get('schema_version')} "
                              f"is not {EXPORT_SCHEMA_VERSION}")
        members = {m.name: m for m in tar.getmembers()}

        def unpack(arcname: str, dest: Path, sha256: str) -> None:
            m = members.get(arcname)
            if m is None or not m.isfile() or not _safe_member(arcname):
                raise BlklabError(f"{src}: {arcname}: missing or not a plain file")
            data = tar.extractfile(m).read()
            if hashlib.sha256(data).hexdigest() != sha256:
                raise BlklabError(f"{src}: {arcname}: SHA-256 differs from the index")
            dest.parent.mkdir(parents=True, exist_ok=True)
            tmp = dest.with_name(dest.name + ".tmp")
            tmp.write_bytes(data)
            tmp.replace(dest)

        for rel, sha in sorted(index["qemu"]["files"].items()):
            if not _safe_member(rel):
                raise BlklabError(f"{src}: unsafe path {rel}")
            dest = cache / "qemu" / "downloads" / rel
            if not dest.exists():
                unpack(f"qemu/downloads/{rel}", dest, sha)
        src_version = (index["qemu"].get("qemu_source") or {}).get("version")
        lines.append(f"QEMU inputs: qemu {src_version} source and firmware in "
                     f"{cache / 'qemu' / 'downloads'}")
        for img in index["images"]:
            name = img["dir"]
            if not _safe_member(name) or "/" in name:
                raise BlklabError(f"{src}: unsafe image name {name}")
            dest = cache / "image" / name
            if not (dest / "image.json").exists():
                staging = cache / "image" / f".import-{name}"
                shutil.rmtree(staging, ignore_errors=True)
                try:
                    for f, sha in img["files"].items():
                        unpack(f"image/{name}/{f}", staging / f, sha)
                except BlklabError:
                    shutil.rmtree(staging, ignore_errors=True)
                    raise
                staging.replace(dest)
            wanted = _checkout_key(img["kernel"])
            if wanted == name:
                link = paths.build_dir() / "images" / img["kernel"]
                link.parent.mkdir(parents=True, exist_ok=True)
                tmp = link.with_name(f".{link.name}.import")
                tmp.unlink(missing_ok=True)
                tmp.symlink_to(dest)
                tmp.replace(link)
                lines.append(f"image {name}: {link} -> {dest}")
            else:
                lines.append(f"image {name}: in {dest}, not linked: this checkout's inputs "
                             f"give {wanted} (another commit or other pins)")
    return lines
