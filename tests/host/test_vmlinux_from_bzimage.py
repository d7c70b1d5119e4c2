"""guest-images/vmlinux-from-bzimage.py on bzImages made here: a payload in
each of the formats Debian's kernels use, around a small ELF with or without
a PVH note. (The real kernels go through it in every image build;
tests/e2e/test_image.py checks its output is reproducible.)"""

import ctypes
import ctypes.util
import gzip
import lzma
import struct
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "guest-images" / "vmlinux-from-bzimage.py"


def elf(pvh=True):
    """A 64-bit ELF with one PT_NOTE: a Xen note of type 18
    (XEN_ELFNOTE_PHYS32_ENTRY) if pvh, else a GNU build-id note."""
    name, ntype = (b"Xen\0", 18) if pvh else (b"GNU\0", 3)
    note = struct.pack("<III", len(name), 4, ntype) + name + struct.pack("<I", 0x1000000)
    ehdr = bytearray(64)
    ehdr[:5] = b"\x7fELF\x02"
    struct.pack_into("<Q", ehdr, 0x20, 64)  # e_phoff
    struct.pack_into("<HH", ehdr, 0x36, 56, 1)  # e_phentsize, e_phnum
    phdr = struct.pack("<IIQQQQQQ", 4, 0, 64 + 56, 0, 0, len(note), len(note), 4)
    return bytes(ehdr) + phdr + note + bytes(range(256)) * 64


def _lib(name):
    path = ctypes.util.find_library(name)
    if path is None:
        pytest.skip(f"lib{name} is not installed on this host")
    return ctypes.CDLL(path)


def zstd(data):
    lib = _lib("zstd")
    lib.ZSTD_compressBound.restype = ctypes.c_size_t
    lib.ZSTD_compress.restype = ctypes.c_size_t
    lib.ZSTD_compress.argtypes = (ctypes.c_char_p, ctypes.c_size_t, ctypes.c_char_p,
                                  ctypes.c_size_t, ctypes.c_int)
    cap = lib.ZSTD_compressBound(ctypes.c_size_t(len(data)))
    out = ctypes.create_string_buffer(cap)
    n = lib.ZSTD_compress(out, cap, data, len(data), 19)
    return out.raw[:n]


def lz4_legacy(data, block=4096):
    """LZ4's legacy frame, cut into small blocks so that several are read."""
    lib = _lib("lz4")
    lib.LZ4_compress_default.argtypes = (ctypes.c_char_p, ctypes.c_char_p, ctypes.c_int,
                                         ctypes.c_int)
    out = struct.pack("<I", 0x184C2102)
    for i in range(0, len(data), block):
        chunk = data[i:i + block]
        buf = ctypes.create_string_buffer(2 * block + 64)
        n = lib.LZ4_compress_default(chunk, buf, len(chunk), len(buf))
        out += struct.pack("<I", n) + buf.raw[:n]
    return out


def bzimage(compressed, size, setup_sects=3, version=0x20F):
    setup = bytearray((setup_sects + 1) * 512)
    setup[0x1F1] = setup_sects
    setup[0x202:0x206] = b"HdrS"
    struct.pack_into("<H", setup, 0x206, version)
    payload = compressed + struct.pack("<I", size)
    offset = 0x120  # the decompressor's own code comes first
    struct.pack_into("<II", setup, 0x248, offset, len(payload))
    return bytes(setup) + bytes(offset) + payload + bytes(100)


def run(tmp_path, image):
    src, dst = tmp_path / "vmlinuz", tmp_path / "vmlinux"
    src.write_bytes(image)
    proc = subprocess.run([sys.executable, str(SCRIPT), str(src), str(dst)],
                          capture_output=True, text=True)
    return proc, dst


@pytest.mark.parametrize("fmt", ["xz", "zstd", "lz4", "gzip"])
def test_each_payload_format_gives_the_elf_inside(tmp_path, fmt):
    kernel = elf()
    compress = {"xz": lambda d: lzma.compress(d, format=lzma.FORMAT_XZ,
                                              check=lzma.CHECK_CRC32),
                "zstd": zstd, "lz4": lz4_legacy, "gzip": gzip.compress}[fmt]
    proc, out = run(tmp_path, bzimage(compress(kernel), len(kernel)))
    assert proc.returncode == 0, proc.stderr
    assert out.read_bytes() == kernel


def test_a_kernel_without_a_pvh_note_is_refused(tmp_path):
    kernel = elf(pvh=False)
    proc, out = run(tmp_path, bzimage(lzma.compress(kernel, format=lzma.FORMAT_XZ), len(kernel)))
    assert proc.returncode != 0
    assert "vmlinuz: the kernel inside is not a 64-bit ELF with a PVH entry note" in proc.stderr
    assert "CONFIG_PVH=y" in proc.stderr
    assert not out.exists()


def test_a_wrong_size_trailer_is_refused(tmp_path):
    kernel = elf()
    proc, out = run(tmp_path, bzimage(gzip.compress(kernel), len(kernel) + 1))
    assert proc.returncode != 0
    assert f"decompressed to {len(kernel)} bytes, its trailer says {len(kernel) + 1}" in proc.stderr
    assert not out.exists()


@pytest.mark.parametrize("image, message", [
    (b"\x7fELF" + bytes(2000), "not an x86 bzImage (no 'HdrS' setup header at 0x202)"),
    (bzimage(b"\x00" * 64, 10, version=0x207), "boot protocol 2.7 has no payload fields"),
    (bzimage(b"BZh91AY&SY" + bytes(40), 10), "payload compressed with a format this script "
                                            "does not read (magic 425a68393141"),
])
def test_what_it_cannot_read_is_named(tmp_path, image, message):
    proc, out = run(tmp_path, image)
    assert proc.returncode != 0
    assert message in proc.stderr
    assert str(tmp_path / "vmlinuz") in proc.stderr
    assert not out.exists()
