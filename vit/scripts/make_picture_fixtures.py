#!/usr/bin/env python3
"""Writes the reference files of the picture reader's tests (tests/data/pictures/) with
Python's own zlib, independently of patchgrad's DEFLATE code:

  stored.zlib, fixed.zlib, dynamic.zlib   zlib_fixture_data() compressed by zlib as stored
                                          blocks (level 0), fixed Huffman codes (Z_FIXED)
                                          and dynamic Huffman codes (level 9)
  <kind>.png                              a 7x5 picture of every colour type and bit depth
                                          PNG allows, rows filtered None, Sub, Up, Average,
                                          Paeth in turn; sample_value() gives its samples

The C++ tests (tests/vit/pictures/test_inflate.cpp, test_image_file.cpp) compute the same
data and samples. Run from the repository root: python3 vit/scripts/make_picture_fixtures.py
"""
import os
import struct
import zlib

OUT = os.path.join("tests", "data", "pictures")
WIDTH, HEIGHT = 7, 5


def zlib_fixture_data():
    """Text with repeats (matches), then 1,000 letters a-p without (literals) whose small
    alphabet makes dynamic codes pay: 3,000 bytes."""
    return b"patchgrad " * 200 + bytes(97 + i * i % 251 % 16 for i in range(1000))


def sample_value(x, y, c, bits):
    """Sample c of pixel (x, y) in a picture of `bits`-bit samples."""
    return (x * 37 + y * 91 + c * 53 + x * y * 11) % (1 << bits)


def chunk(kind, data):
    body = kind + data
    return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body) & 0xFFFFFFFF)


def pack_row(samples, bits):
    if bits == 16:
        return b"".join(struct.pack(">H", v) for v in samples)
    if bits == 8:
        return bytes(samples)
    out, acc, n = bytearray(), 0, 0
    for v in samples:
        acc, n = acc << bits | v, n + bits
        if n == 8:
            out.append(acc)
            acc, n = 0, 0
    if n:
        out.append(acc << (8 - n))
    return bytes(out)


def paeth(a, b, c):
    p = a + b - c
    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
    return a if pa <= pb and pa <= pc else (b if pb <= pc else c)


def filtered(rows, bpp):
    """Row y gets filter y % 5: every filter is used."""
    out, prev = bytearray(), bytes(len(rows[0]))
    for y, row in enumerate(rows):
        f = y % 5
        out.append(f)
        for i, v in enumerate(row):
            a = row[i - bpp] if i >= bpp else 0
            b = prev[i]
            c = prev[i - bpp] if i >= bpp else 0
            pred = [0, a, b, (a + b) // 2, paeth(a, b, c)][f]
            out.append((v - pred) & 0xFF)
        prev = row
    return bytes(out)


def png(colour_type, bits, channels, extra=b""):
    rows = [pack_row([sample_value(x, y, c, bits) for x in range(WIDTH) for c in range(channels)], bits)
            for y in range(HEIGHT)]
    ihdr = struct.pack(">IIBBBBB", WIDTH, HEIGHT, bits, colour_type, 0, 0, 0)
    bpp = max(1, channels * bits // 8)
    idat = zlib.compress(filtered(rows, bpp), 9)
    # The stream in two IDAT chunks, as encoders split long ones; an ancillary chunk first.
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"tEXt", b"Comment\0fixture") + extra +
            chunk(b"IDAT", idat[:10]) + chunk(b"IDAT", idat[10:]) + chunk(b"IEND", b""))


def main():
    os.makedirs(OUT, exist_ok=True)
    data = zlib_fixture_data()
    streams = {"stored": zlib.compress(data, 0)}
    fixed = zlib.compressobj(9, zlib.DEFLATED, 15, 9, zlib.Z_FIXED)
    streams["fixed"] = fixed.compress(data) + fixed.flush()
    streams["dynamic"] = zlib.compress(data, 9)
    for name, z in streams.items():
        assert zlib.decompress(z) == data
        with open(os.path.join(OUT, name + ".zlib"), "wb") as f:
            f.write(z)

    # The palette: entry i is (i * 5, 255 - i, i * 3 % 256); tRNS gives entries 0-9 alpha i * 25.
    palette = bytes(v for i in range(256) for v in (i * 5 % 256, 255 - i, i * 3 % 256))
    pictures = {f"gray{b}": (0, b, 1, b"") for b in (1, 2, 4, 8, 16)}
    pictures.update({"rgb8": (2, 8, 3, b""), "rgb16": (2, 16, 3, b""), "gray_alpha8": (4, 8, 2, b""),
                     "gray_alpha16": (4, 16, 2, b""), "rgba8": (6, 8, 4, b""), "rgba16": (6, 16, 4, b"")})
    for b in (1, 2, 4, 8):
        pictures[f"palette{b}"] = (3, b, 1, chunk(b"PLTE", palette[:3 * (1 << b)]))
    pictures["palette8_trns"] = (3, 8, 1, chunk(b"PLTE", palette) + chunk(b"tRNS", bytes(i * 25 for i in range(10))))
    for name, args in pictures.items():
        with open(os.path.join(OUT, name + ".png"), "wb") as f:
            f.write(png(*args))


if __name__ == "__main__":
    main()
