"""Decompression bombs of issue 35, built in about a second without inflating them.

Deflate's output for a block of zeros that follows a full flush does not depend on what came before,
so a stream of N such blocks is one compressed block repeated N times: a 2 GiB member costs 2 MB and
no 2 GiB buffer. The zip and gzip containers are written by hand, so headers can claim any size; the
CRCs are right (a bomb with a bad CRC would fail at its end anyway, which is not the point).
"""

from __future__ import annotations

import functools
import io
import struct
import tarfile
import zlib

import numpy as np

__all__ = ["zip_of", "npz_bomb", "many_members_zip", "many_members_tgz"]

_BLOCK = 1 << 20


def _raw(prefix: bytes, zeros: int, fill: bytes = b"\0") -> bytes:
    """Raw deflate of ``prefix`` followed by ``zeros`` bytes of ``fill``."""
    c = zlib.compressobj(9, zlib.DEFLATED, -15)
    head = c.compress(prefix) + c.flush(zlib.Z_FULL_FLUSH)
    tail = zlib.compressobj(9, zlib.DEFLATED, -15)
    return head + _sync_zeros(zeros, fill) + tail.compress(fill * (zeros % _BLOCK)) + tail.flush()


def _crc_zeros(n: int, crc: int = 0, fill: bytes = b"\0") -> int:
    block = fill * _BLOCK
    for _ in range(n // _BLOCK):
        crc = zlib.crc32(block, crc)
    return zlib.crc32(fill * (n % _BLOCK), crc)


def zip_of(members: list[tuple[str, bytes, int, int]]) -> bytes:
    """A zip of ``(name, raw deflate data, claimed uncompressed size, crc32)`` members (sizes below 4 GiB)."""
    out, central = io.BytesIO(), io.BytesIO()
    for name, data, size, crc in members:
        offset, raw_name = out.tell(), name.encode()
        out.write(struct.pack("<IHHHHHIIIHH", 0x04034B50, 20, 0, 8, 0, 0x21, crc, len(data), size, len(raw_name), 0))
        out.write(raw_name + data)
        central.write(struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, 20, 20, 0, 8, 0, 0x21, crc, len(data), size,
                                  len(raw_name), 0, 0, 0, 0, 0o100644 << 16, offset) + raw_name)
    start, cd = out.tell(), central.getvalue()
    out.write(cd + struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, len(members), len(members), len(cd), start, 0))
    return out.getvalue()


def _npy_header(shape: tuple[int, ...], dtype: str) -> bytes:
    buf = io.BytesIO()
    np.lib.format.write_array_header_1_0(buf, {"descr": dtype, "fortran_order": False, "shape": shape})
    return buf.getvalue()


@functools.lru_cache(maxsize=8)  # (the CRC of 2 GiB takes ~2 s: made once per claim)
def npz_bomb(*, array_bytes: int = 2 << 30, claim: str = "honest") -> bytes:
    """A corpus ``.npz`` (crowdqa's member names) whose ``token`` array inflates to ``array_bytes`` of zeros.

    ``claim``: ``"honest"`` (the zip header states the size), ``"zip-lies"`` (the zip header claims the size
    of an 8-element array, the npy header the truth), ``"both-lie"`` (both claim 8 elements).
    """
    n = array_bytes // 8
    small = 8
    header = _npy_header((small if claim == "both-lie" else n,), "<i8")
    data = _raw(header, array_bytes)
    claimed = len(header) + (8 * small if claim != "honest" else array_bytes)
    meta = np.frombuffer(b'{"version": 1}', dtype=np.uint8)
    buf = io.BytesIO()
    np.lib.format.write_array(buf, meta)
    meta_raw = buf.getvalue()
    c = zlib.compressobj(9, zlib.DEFLATED, -15)
    return zip_of([("meta.npy", c.compress(meta_raw) + c.flush(), len(meta_raw), zlib.crc32(meta_raw)),
                   ("token.npy", data, claimed, _crc_zeros(array_bytes, zlib.crc32(header)))])


def many_members_zip(*, members: int = 120, size: int = 8 << 20, layout: str = "brat") -> bytes:
    """Issue 35's zip: ``members`` texts of ``size`` spaces each, valid brat (``u/d<i>.txt`` beside an empty
    ``u/d<i>.ann``) or a docs zip (``d<i>.txt``)."""
    data, crc = _raw(b"", size, b" "), _crc_zeros(size, fill=b" ")
    texts = [(f"u/d{i}.txt" if layout == "brat" else f"d{i}.txt", data, size, crc) for i in range(members)]
    empty = zlib.compressobj(9, zlib.DEFLATED, -15).flush()
    anns = [(f"u/d{i}.ann", empty, 0, 0) for i in range(members)] if layout == "brat" else []
    return zip_of(texts + anns)


@functools.lru_cache(maxsize=4)
def many_members_tgz(*, members: int = 120, size: int = 8 << 20) -> bytes:
    """The tar variant: a ``.tar.gz`` of ``members`` brat texts of ``size`` spaces, each with an empty ``.ann``."""
    c = zlib.compressobj(9, zlib.DEFLATED, -15)
    spaces = _sync_zeros(size, b" ")
    parts, crc, total = [b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x02\xff"], 0, 0  # gzip header
    for i in range(members):
        ann = tarfile.TarInfo(f"u/d{i}.ann").tobuf(format=tarfile.USTAR_FORMAT)
        info = tarfile.TarInfo(f"u/d{i}.txt")
        info.size = size
        header = ann + info.tobuf(format=tarfile.USTAR_FORMAT)
        parts.append(c.compress(header) + c.flush(zlib.Z_FULL_FLUSH))
        parts.append(spaces)  # (size is a multiple of 512: no padding)
        crc, total = _crc_zeros(size, zlib.crc32(header, crc), b" "), total + len(header) + size
    parts.append(c.compress(bytes(1024)) + c.flush())
    crc, total = zlib.crc32(bytes(1024), crc), total + 1024
    parts.append(struct.pack("<II", crc, total & 0xFFFFFFFF))
    return b"".join(parts)


def _sync_zeros(size: int, fill: bytes = b"\0") -> bytes:
    """Raw deflate blocks of ``size // 1 MiB`` MiB of ``fill`` ending in a full flush (not final)."""
    block = zlib.compressobj(9, zlib.DEFLATED, -15)
    one = block.compress(fill * _BLOCK) + block.flush(zlib.Z_FULL_FLUSH)
    return one * (size // _BLOCK)
