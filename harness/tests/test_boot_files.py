"""What a cell boots: the image's kernel ELF and an initrd of whole pages
(blklab.vm.image_kernel, guest_initrd); the job comes later, by fw_cfg."""

import pytest

from blklab.errors import BuildMissingError
from blklab.vm import INITRD_ALIGN, guest_initrd, image_kernel


@pytest.mark.parametrize("base_size", [0, 1, 4095, 4096, 4097, 105_590])
def test_the_initrd_is_the_image_then_zeros_to_a_page(tmp_path, base_size):
    base = (bytes(range(256)) * 413)[:base_size]
    (tmp_path / "initramfs.cpio").write_bytes(base)
    out = tmp_path / "initrd.cpio"
    guest_initrd(out, tmp_path)
    data = out.read_bytes()
    assert len(data) % INITRD_ALIGN == 0
    assert len(data) - len(base) < INITRD_ALIGN
    assert data[:len(base)] == base
    assert not any(data[len(base):])


@pytest.mark.parametrize("fio", [False, True])
def test_fio_cpio_goes_in_only_for_fio(tmp_path, fio):
    (tmp_path / "initramfs.cpio").write_bytes(b"B" * 5000)
    (tmp_path / "fio.cpio").write_bytes(b"F" * 3000)
    out = tmp_path / "initrd.cpio"
    guest_initrd(out, tmp_path, fio=fio)
    data = out.read_bytes()
    want = b"B" * 5000 + (b"F" * 3000 if fio else b"")
    assert data.startswith(want)
    assert len(data) % INITRD_ALIGN == 0 and not any(data[len(want):])


def test_the_kernel_is_the_images_vmlinux(tmp_path):
    (tmp_path / "vmlinux").write_bytes(b"\x7fELF")
    assert image_kernel(tmp_path) == tmp_path / "vmlinux"


def test_an_image_without_vmlinux_says_how_to_rebuild_it(tmp_path):
    (tmp_path / "vmlinuz").write_bytes(b"bzImage")
    with pytest.raises(BuildMissingError) as e:
        image_kernel(tmp_path)
    assert str(tmp_path / "vmlinux") in str(e.value)
    assert "make images" in str(e.value)
