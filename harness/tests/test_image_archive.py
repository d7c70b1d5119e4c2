"""blklab image export / import: a guest image and the QEMU build's inputs
carried in one file to another cache, checked against its index, and linked
only where this checkout's inputs give the image's key."""

import io
import json
import subprocess
import tarfile

import pytest

from blklab import cli, image_archive, paths
from blklab.errors import BlklabError

QEMU_VERSION = "1:7.2+dfsg-7+deb12u18"


def checkout_key(kernel):
    return subprocess.run([str(image_archive.BUILD_IMAGE), "--key", "--kernel", kernel],
                          capture_output=True, text=True, check=True).stdout.strip()


def machine(root, monkeypatch, image_name=None):
    """A cache and build dir as the builds leave them: an image of the
    default kernel under its key, a QEMU build and its downloads."""
    cache, build = root / "cache", root / "build"
    monkeypatch.setenv("BLKLAB_CACHE", str(cache))
    monkeypatch.setenv("BLKLAB_BUILD", str(build))
    if image_name is None:
        return cache, build
    img = cache / "image" / image_name
    img.mkdir(parents=True)
    for f, data in (("vmlinuz", b"kernel"), ("initramfs.cpio", b"cpio" * 1000),
                    ("config", b"CONFIG_IOSCHED_BFQ=m\n"), ("inputs.txt", b"x\n")):
        (img / f).write_bytes(data)
    (img / "image.json").write_text(json.dumps({
        "hash": image_name.rsplit("-", 1)[1], "kernel_package": "linux-image-6.1.0-57-amd64",
        "kernel_package_version": "6.1.192-3"}))
    (build / "images").mkdir(parents=True)
    (build / "images" / "6.1-amd64").symlink_to(img)
    qemu = cache / "qemu" / "k1"
    (qemu / "bin").mkdir(parents=True)
    (qemu / "bin" / "qemu-system-x86_64").write_bytes(b"")
    (qemu / "manifest.json").write_text(json.dumps({
        "cache_key": "k1", "qemu_source": {"package": "qemu", "version": QEMU_VERSION},
        "firmware_packages": {"seabios": "1.16.2-1"}}))
    (build / "qemu").symlink_to(qemu)
    dl = cache / "qemu" / "downloads"
    (dl / "seabios" / "1.16.2-1").mkdir(parents=True)
    (dl / "seabios" / "1.16.2-1" / "seabios_1.16.2-1_all.deb").write_bytes(b"deb")
    (dl / "qemu_7.2+dfsg.orig.tar.xz").write_bytes(b"orig")
    (dl / "qemu_7.2+dfsg-7+deb12u18.debian.tar.xz").write_bytes(b"debian")
    (dl / "qemu_7.2+dfsg-7+deb12u18.dsc").write_text(
        "Format: 3.0 (quilt)\nSource: qemu\nFiles:\n"
        " 0 4 qemu_7.2+dfsg.orig.tar.xz\n 0 6 qemu_7.2+dfsg-7+deb12u18.debian.tar.xz\n\n")
    return cache, build


def test_export_then_import_links_the_image_this_checkout_builds(tmp_path, monkeypatch, capsys):
    name = checkout_key("6.1-amd64")
    a_cache, _ = machine(tmp_path / "a", monkeypatch, name)
    out = tmp_path / "carry.tar"
    assert cli.main(["image", "export", str(out), "--kernel", "6.1-amd64"]) == 0
    b_cache, b_build = machine(tmp_path / "b", monkeypatch)
    assert cli.main(["image", "import", str(out)]) == 0
    printed = capsys.readouterr().out
    assert f"image {name}: {b_build / 'images' / '6.1-amd64'} ->" in printed
    assert (b_build / "images" / "6.1-amd64").resolve() == (b_cache / "image" / name).resolve()
    for f in ("vmlinuz", "initramfs.cpio", "image.json", "config"):
        assert (b_cache / "image" / name / f).read_bytes() == \
            (a_cache / "image" / name / f).read_bytes()
    for rel in ("qemu_7.2+dfsg-7+deb12u18.dsc", "qemu_7.2+dfsg.orig.tar.xz",
                "qemu_7.2+dfsg-7+deb12u18.debian.tar.xz", "seabios/1.16.2-1/seabios_1.16.2-1_all.deb"):
        assert (b_cache / "qemu" / "downloads" / rel).read_bytes() == \
            (a_cache / "qemu" / "downloads" / rel).read_bytes()
    assert paths.image_dir("6.1-amd64") == (b_cache / "image" / name).resolve()


def test_an_image_of_other_inputs_is_kept_but_not_linked(tmp_path, monkeypatch):
    machine(tmp_path / "a", monkeypatch, "6.1-amd64-0000000000000000")
    out = tmp_path / "carry.tar"
    image_archive.export(out, ["6.1-amd64"])
    b_cache, b_build = machine(tmp_path / "b", monkeypatch)
    [qemu_line, line] = image_archive.import_(out)
    assert f"this checkout's inputs give {checkout_key('6.1-amd64')}" in line
    assert (b_cache / "image" / "6.1-amd64-0000000000000000" / "image.json").exists()
    assert not (b_build / "images" / "6.1-amd64").exists()


def test_a_file_that_differs_from_the_index_is_refused(tmp_path, monkeypatch):
    name = checkout_key("6.1-amd64")
    machine(tmp_path / "a", monkeypatch, name)
    good = tmp_path / "carry.tar"
    image_archive.export(good, ["6.1-amd64"])
    bad = tmp_path / "bad.tar"
    with tarfile.open(good) as src, tarfile.open(bad, "w") as dst:
        for m in src.getmembers():
            data = src.extractfile(m).read()
            if m.name.endswith("initramfs.cpio"):
                data = b"tampered" + data[8:]
            dst.addfile(m, io.BytesIO(data))
    b_cache, b_build = machine(tmp_path / "b", monkeypatch)
    with pytest.raises(BlklabError, match="initramfs.cpio: SHA-256 differs from the index"):
        image_archive.import_(bad)
    assert not (b_cache / "image" / name).exists()
    assert not (b_build / "images" / "6.1-amd64").exists()


def test_not_an_export_is_a_clear_error(tmp_path, monkeypatch, capsys):
    machine(tmp_path / "b", monkeypatch)
    junk = tmp_path / "junk"
    junk.write_bytes(b"not a tar")
    assert cli.main(["image", "import", str(junk)]) == 1
    assert f"{junk}: not a blklab image export (not a tar archive)" in capsys.readouterr().err
