#!/usr/bin/python3
"""Writes the kernel ELF inside a Debian vmlinuz (an x86 bzImage), so that
QEMU can boot it through its PVH entry instead of the bzImage's own
decompressor.

Why: under TCG the decompressor is the slowest part of a guest's boot (the
XZ payload of a 6.1 kernel takes about 4 s of host time, a third of a short
cell), and it decompresses the same bytes in every cell. The ELF it would
produce is the payload's content, so booting it directly runs the same
kernel; `-kernel` boots an ELF through its XEN_ELFNOTE_PHYS32_ENTRY note,
which every kernel with CONFIG_PVH=y carries.

The bzImage layout (Documentation/arch/x86/boot.rst, protocol 2.08 and
later): the setup header's payload_offset (0x248) and payload_length
(0x24c) locate the compressed kernel after the (setup_sects + 1) * 512
bytes of real-mode setup; the payload ends with its decompressed size as a
little-endian 32-bit word (scripts/Makefile.lib, size_append). Debian's
kernels use XZ (amd64 and rt-amd64 of 6.1 and 5.10), zstd (6.12) or LZ4's
legacy frame (cloud-amd64 of 6.1 and 5.10).

Runs inside the pinned build root (its python3, liblzma, libzstd, liblz4):
    vmlinux-from-bzimage.py VMLINUZ VMLINUX
"""

import ctypes
import ctypes.util
import lzma
import struct
import sys
import zlib

XEN_ELFNOTE_PHYS32_ENTRY = 18
PT_NOTE = 4


def fail(path, what):
    sys.exit(f"vmlinux-from-bzimage.py: {path}: {what}")


def payload(path, data):
    if len(data) < 0x250 or data[0x202:0x206] != b"HdrS":
        fail(path, "not an x86 bzImage (no 'HdrS' setup header at 0x202)")
    version = struct.unpack_from("<H", data, 0x206)[0]
    if version < 0x208:
        fail(path, f"boot protocol {version >> 8}.{version & 0xff} has no payload fields "
                   "(2.08 or later needed)")
    setup_sects = data[0x1f1] or 4
    offset, length = struct.unpack_from("<II", data, 0x248)
    start = (setup_sects + 1) * 512 + offset
    if length < 4 or start + length > len(data):
        fail(path, f"payload [{start}, {start + length}) lies outside the file's {len(data)} bytes")
    return data[start:start + length]


def _library(path, name, soname, fmt):
    try:
        return ctypes.CDLL(ctypes.util.find_library(name) or soname)
    except OSError as e:
        fail(path, f"{fmt} payload, but {soname} cannot be loaded ({e})")


def zstd_decompress(path, compressed, size):
    lib = _library(path, "zstd", "libzstd.so.1", "zstd")
    lib.ZSTD_decompress.restype = ctypes.c_size_t
    lib.ZSTD_decompress.argtypes = (ctypes.c_void_p, ctypes.c_size_t,
                                    ctypes.c_char_p, ctypes.c_size_t)
    lib.ZSTD_isError.restype = ctypes.c_uint
    lib.ZSTD_isError.argtypes = (ctypes.c_size_t,)
    lib.ZSTD_getErrorName.restype = ctypes.c_char_p
    lib.ZSTD_getErrorName.argtypes = (ctypes.c_size_t,)
    out = ctypes.create_string_buffer(size)
    n = lib.ZSTD_decompress(out, size, compressed, len(compressed))
    if lib.ZSTD_isError(n):
        fail(path, f"zstd payload: {lib.ZSTD_getErrorName(n).decode()}")
    return out.raw[:n]


LZ4_LEGACY_MAGIC = 0x184C2102
LZ4_LEGACY_BLOCK = 8 << 20  # each block decompresses to at most 8 MiB


def lz4_legacy_decompress(path, compressed, size):
    """LZ4's legacy frame (`lz4 -l`, lib/decompress_unlz4.c): the magic, then
    blocks, each a little-endian 32-bit compressed length and an LZ4 block."""
    lib = _library(path, "lz4", "liblz4.so.1", "LZ4")
    lib.LZ4_decompress_safe.restype = ctypes.c_int
    lib.LZ4_decompress_safe.argtypes = (ctypes.c_char_p, ctypes.c_char_p,
                                        ctypes.c_int, ctypes.c_int)
    out = bytearray()
    block = ctypes.create_string_buffer(LZ4_LEGACY_BLOCK)
    pos = 4
    while pos + 4 <= len(compressed):
        n, = struct.unpack_from("<I", compressed, pos)
        pos += 4
        if n == LZ4_LEGACY_MAGIC:  # a second frame follows
            continue
        if pos + n > len(compressed):
            fail(path, f"LZ4 payload: a block of {n} bytes runs past the payload's end")
        got = lib.LZ4_decompress_safe(compressed[pos:pos + n], block, n, LZ4_LEGACY_BLOCK)
        if got < 0:
            fail(path, f"LZ4 payload: the block at byte {pos} does not decompress")
        out += block.raw[:got]
        pos += n
    return bytes(out)


def decompress(path, blob):
    compressed, size = blob[:-4], struct.unpack("<I", blob[-4:])[0]
    if compressed.startswith(b"\xfd7zXZ\x00"):
        kernel = lzma.decompress(compressed, format=lzma.FORMAT_XZ)
    elif compressed.startswith(b"\x28\xb5\x2f\xfd"):
        kernel = zstd_decompress(path, compressed, size)
    elif compressed.startswith(struct.pack("<I", LZ4_LEGACY_MAGIC)):
        kernel = lz4_legacy_decompress(path, compressed, size)
    elif compressed.startswith(b"\x1f\x8b"):
        kernel = zlib.decompress(compressed, 16 + zlib.MAX_WBITS)
    else:
        fail(path, f"payload compressed with a format this script does not read "
                   f"(magic {compressed[:6].hex()}; XZ, zstd, LZ4 legacy and gzip are read)")
    if len(kernel) != size:
        fail(path, f"payload decompressed to {len(kernel)} bytes, its trailer says {size}")
    return kernel


def has_pvh_note(kernel):
    if kernel[:4] != b"\x7fELF" or kernel[4] != 2:
        return False
    phoff, = struct.unpack_from("<Q", kernel, 0x20)
    phentsize, phnum = struct.unpack_from("<HH", kernel, 0x36)
    for i in range(phnum):
        p_type, _, p_offset, _, _, p_filesz = struct.unpack_from(
            "<IIQQQQ", kernel, phoff + i * phentsize)
        if p_type != PT_NOTE:
            continue
        pos, end = p_offset, p_offset + p_filesz
        while pos + 12 <= end:
            namesz, descsz, ntype = struct.unpack_from("<III", kernel, pos)
            name = kernel[pos + 12:pos + 12 + namesz].rstrip(b"\0")
            if name == b"Xen" and ntype == XEN_ELFNOTE_PHYS32_ENTRY:
                return True
            pos += 12 + (namesz + 3) // 4 * 4 + (descsz + 3) // 4 * 4
    return False


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: vmlinux-from-bzimage.py VMLINUZ VMLINUX")
    src, dst = sys.argv[1], sys.argv[2]
    with open(src, "rb") as f:
        data = f.read()
    kernel = decompress(src, payload(src, data))
    if not has_pvh_note(kernel):
        fail(src, "the kernel inside is not a 64-bit ELF with a PVH entry note "
                  "(XEN_ELFNOTE_PHYS32_ENTRY, CONFIG_PVH=y): QEMU could not boot it directly")
    with open(dst, "wb") as f:
        f.write(kernel)


if __name__ == "__main__":
    main()
