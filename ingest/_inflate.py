"""Every decompression of an upload, bounded before it happens: zip (and docs zips), tar, npz.

One rule for every archive a client sends (a zip of brat or doccano files, a docs zip, a tar or
tar.gz, a corpus ``.npz``, which is a zip of ``.npy`` arrays):

* **per member, by size**: no member inflates past :data:`MAX_MEMBER_BYTES`;
* **per member, by ratio**: no zip member inflates past :data:`MAX_ZIP_RATIO` times its compressed
  bytes, once past :data:`ZIP_RATIO_FLOOR` (small files of repeated lines compress very well and
  cost nothing). Not for the arrays of an ``.npz``: a corpus's worker ids in a regular order deflate
  170 times (measured on a 1M-token corpus with 5 workers on every token, whose archive as a whole
  inflated 18 times), so an ``.npz`` is bounded by the other three rules, and each array's shape by
  its member's size before it is allocated;
* **in total, by size**: no archive inflates past :data:`MAX_ZIP_BYTES` (a caller may ask for less);
* **in total, by ratio**: no archive inflates past :data:`MAX_ZIP_RATIO` times its own file size,
  once past :data:`ARCHIVE_RATIO_FLOOR` (so many small members cannot add up to a bomb: a 1 MB zip
  of 120 members of 8 MiB each is refused at 32 MiB).

The sizes an archive claims are checked first, so an honest bomb costs nothing; then every byte is
counted as it comes out of the decompressor (:class:`BoundedStream`), so a member whose headers
under-state its size is cut at the limit, never read whole. A ``.npy`` member's own header (its
shape and dtype) is a claim too: it is checked against the member's budget before its array is
allocated. Every refusal is an :class:`~crowdqa.ingest.errors.IngestError` (HTTP 422, one CLI line)
naming the archive, the member and the limit. Deflate packs at most about 1000:1, so at the
ratio of 100 a bomb is refused after it cost at most 1/10 of what it claims, and usually nothing.
"""

from __future__ import annotations

import math
import os
import zipfile
from collections.abc import Iterable
from typing import IO

import numpy as np
from numpy.typing import NDArray

from crowdqa.ingest.errors import IngestError

__all__ = ["MAX_ZIP_BYTES", "MAX_MEMBER_BYTES", "MAX_ZIP_MEMBERS", "MAX_ZIP_RATIO", "ZIP_RATIO_FLOOR",
           "ARCHIVE_RATIO_FLOOR", "Inflation", "BoundedStream", "BoundedZip", "read_npz_arrays"]

#: Upper bound on the bytes one archive inflates to, all members together.
MAX_ZIP_BYTES = 1 << 30
#: Upper bound on the bytes one member of an archive inflates to.
MAX_MEMBER_BYTES = 512 << 20
#: Upper bound on the number of members of one archive.
MAX_ZIP_MEMBERS = 200_000
#: Largest inflation accepted, of a zip member over its compressed size and of an archive over its file size.
MAX_ZIP_RATIO = 100
#: A zip member may inflate to this many bytes whatever its ratio.
ZIP_RATIO_FLOOR = 1 << 20
#: An archive may inflate to this many bytes in total whatever its ratio.
ARCHIVE_RATIO_FLOOR = 32 << 20

_CHUNK = 1 << 20


class Inflation:
    """What one archive may still inflate to, counted over all its members.

    Parameters
    ----------
    path : str or PathLike
        The archive (its file size is the base of the total ratio).
    source : str
        How errors name the archive.
    kind : str, default="zip"
        ``"zip"``, ``"tar"`` or ``"npz"``, for messages (and ``"npz"`` has no per-member ratio).
    max_bytes : int or None
        A caller's own total bound, below :data:`MAX_ZIP_BYTES` (e.g. a docs zip's).
    """

    def __init__(self, path: str | os.PathLike, *, source: str, kind: str = "zip", max_bytes: int | None = None):
        self.source, self.kind = source, kind
        self.member_ratio = kind != "npz"  # (see the module docstring)
        self.packed = os.path.getsize(path)
        by_ratio = max(ARCHIVE_RATIO_FLOOR, MAX_ZIP_RATIO * self.packed)
        bounds = [(MAX_ZIP_BYTES, f"{MAX_ZIP_BYTES} bytes per archive"),
                  (by_ratio, f"{MAX_ZIP_RATIO} times the archive's {self.packed} bytes")]
        if max_bytes is not None:
            bounds.append((max_bytes, f"{max_bytes} bytes for this archive"))
        self.limit, self._why = min(bounds)
        self.used = 0

    def member_limit(self, compressed: int | None) -> tuple[int, str]:
        """The bytes one member may inflate to and why: by size, and by ratio when its compressed size is known."""
        bounds = [(MAX_MEMBER_BYTES, f"{MAX_MEMBER_BYTES} bytes per member")]
        if compressed is not None and self.member_ratio:
            bounds.append((max(ZIP_RATIO_FLOOR, MAX_ZIP_RATIO * compressed),
                           f"{MAX_ZIP_RATIO} times its {compressed} compressed bytes: a decompression bomb?"))
        return min(bounds)

    def too_much(self) -> IngestError:
        """The error for an archive that inflates (or claims to inflate) to more than its total limit."""
        return IngestError(f"{self.kind} archive expands to more than {self.limit} bytes (the limit is "
                           f"{self._why}); split it", source=self.source)

    def member_too_big(self, name: str, limit: tuple[int, str]) -> IngestError:
        """The error for a member that inflates (or claims to inflate) past its limit."""
        return IngestError(f"{self.kind} member {name!r} expands to more than {limit[0]} bytes (the limit is "
                           f"{limit[1]})", source=self.source)

    def check_claims(self, claims: Iterable[tuple[str, int, int | None]]) -> None:
        """Refuse, before anything is read, members ``(name, size, compressed size or None)`` whose claimed
        sizes already break a member limit or, added up, the total."""
        total = 0
        for name, size, compressed in claims:
            limit = self.member_limit(compressed)
            if size > limit[0]:
                raise self.member_too_big(name, limit)
            total += size
        if self.used + total > self.limit:
            raise self.too_much()

    def open(self, raw: IO[bytes], *, name: str, compressed: int | None = None) -> BoundedStream:
        """A stream over one member's inflated bytes that raises as soon as a limit is passed."""
        return BoundedStream(raw, inflation=self, name=name, limit=self.member_limit(compressed))

    def copy(self, raw: IO[bytes], out: IO[bytes], *, name: str, compressed: int | None = None) -> int:
        """Copy one member to ``out`` in bounded chunks; return its size."""
        src = self.open(raw, name=name, compressed=compressed)
        for chunk in iter(lambda: src.read(_CHUNK), b""):
            out.write(chunk)
        return src.count


class BoundedStream:
    """A member's inflated bytes, counted as they are read against its limit and its archive's total."""

    def __init__(self, raw: IO[bytes], *, inflation: Inflation, name: str, limit: tuple[int, str]) -> None:
        self.raw, self.inflation, self.name, self.limit = raw, inflation, name, limit
        self.count = 0

    def read(self, n: int = -1) -> bytes:
        """Up to ``n`` bytes (all that is left when ``n`` < 0), never more than one past a limit."""
        room = min(self.limit[0] - self.count, self.inflation.limit - self.inflation.used) + 1
        data = self.raw.read(room if n is None or n < 0 else min(n, room))
        self.count += len(data)
        self.inflation.used += len(data)
        if self.count > self.limit[0]:
            raise self.inflation.member_too_big(self.name, self.limit)
        if self.inflation.used > self.inflation.limit:
            raise self.inflation.too_much()
        return data

    def read_exact(self, n: int) -> bytes:
        """Exactly ``n`` bytes; IngestError when the member ends first."""
        parts, got = [], 0
        while got < n:
            part = self.read(min(n - got, _CHUNK))
            if not part:
                raise IngestError(f"{self.inflation.kind} member {self.name!r} ends early",
                                  source=self.inflation.source)
            parts.append(part)
            got += len(part)
        return b"".join(parts)


class BoundedZip:
    """A zip archive whose members are read only through :class:`BoundedStream`.

    Opening it refuses an archive with more than :data:`MAX_ZIP_MEMBERS` members or whose claimed
    sizes break a limit; ``BadZipFile`` and the like become IngestError.
    """

    def __init__(self, path: str | os.PathLike, *, source: str | None = None, kind: str = "zip",
                 max_bytes: int | None = None) -> None:
        self.source = str(path) if source is None else source
        self.inflation = Inflation(path, source=self.source, kind=kind, max_bytes=max_bytes)
        try:
            self.zip = zipfile.ZipFile(path)
        except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, EOFError, ValueError) as exc:
            raise IngestError(f"unreadable {kind} archive: {exc}", source=self.source) from None
        try:
            self.infos = self.zip.infolist()
            if len(self.infos) > MAX_ZIP_MEMBERS:
                raise IngestError(f"{kind} archive has {len(self.infos)} members, more than {MAX_ZIP_MEMBERS}",
                                  source=self.source)
            self.inflation.check_claims((i.filename, i.file_size, i.compress_size) for i in self.infos)
        except BaseException:
            self.zip.close()
            raise

    def __enter__(self) -> BoundedZip:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.zip.close()

    def read(self, info: zipfile.ZipInfo) -> bytes:
        """One member's bytes (CRC checked)."""
        try:
            with self.zip.open(info) as raw:
                return self.inflation.open(raw, name=info.filename, compressed=info.compress_size).read()
        except (zipfile.BadZipFile, zipfile.LargeZipFile, NotImplementedError, RuntimeError, EOFError,
                OSError) as exc:
            raise IngestError(f"unreadable member {info.filename!r} in {self.inflation.kind} archive: {exc}",
                              source=self.source) from None

    def extract(self, info: zipfile.ZipInfo, out: IO[bytes]) -> int:
        """Copy one member's bytes to ``out`` (CRC checked); return their number."""
        try:
            with self.zip.open(info) as raw:
                return self.inflation.copy(raw, out, name=info.filename, compressed=info.compress_size)
        except (zipfile.BadZipFile, zipfile.LargeZipFile, NotImplementedError, RuntimeError, EOFError) as exc:
            raise IngestError(f"unreadable member {info.filename!r} in {self.inflation.kind} archive: {exc}",
                              source=self.source) from None

    def read_npy(self, info: zipfile.ZipInfo) -> NDArray:
        """One ``.npy`` member as an array: its header (shape, dtype) is checked against the member's
        limit and claimed size before the array is allocated; object arrays (pickles) are refused."""
        where, name = self.source, info.filename
        with self.zip.open(info) as raw:
            src = self.inflation.open(raw, name=name, compressed=info.compress_size)
            try:
                version = np.lib.format.read_magic(src)
                if version == (1, 0):
                    shape, fortran, dtype = np.lib.format.read_array_header_1_0(src)
                elif version == (2, 0):
                    shape, fortran, dtype = np.lib.format.read_array_header_2_0(src)
                else:
                    raise ValueError(f"npy format version {version} is not supported")
            except ValueError as exc:
                raise IngestError(f"member {name!r} is not an array: {exc}", source=where) from None
            if dtype.hasobject:
                raise IngestError(f"member {name!r} holds Python objects, not numbers", source=where)
            count = math.prod(shape)
            nbytes = count * dtype.itemsize
            if nbytes > min(src.limit[0], info.file_size) - src.count:  # the header claims more than may come
                raise self.inflation.member_too_big(name, src.limit) if nbytes > src.limit[0] - src.count else \
                    IngestError(f"member {name!r} claims {nbytes} bytes of data, more than it holds", source=where)
            if nbytes + self.inflation.used > self.inflation.limit:
                raise self.inflation.too_much()
            array = np.empty(count, dtype=dtype)
            view = memoryview(array).cast("B") if nbytes else memoryview(b"")
            for start in range(0, nbytes, _CHUNK):
                piece = src.read_exact(min(_CHUNK, nbytes - start))
                view[start : start + len(piece)] = piece
            if src.read(1):  # also reaches the end of the member, where zipfile checks its CRC
                raise IngestError(f"member {name!r} holds more bytes than its array", source=where)
        return array.reshape(shape, order="F" if fortran else "C")


def read_npz_arrays(path: str | os.PathLike, *, source: str | None = None) -> dict[str, NDArray]:
    """The arrays of an ``.npz`` file (a zip of ``.npy`` members), read within the limits above.

    Raises
    ------
    IngestError
        Not a zip of arrays, a member that is not an array or holds objects, or a limit passed.
    """
    where = str(path) if source is None else source
    with BoundedZip(path, source=where, kind="npz") as z:
        out: dict[str, NDArray] = {}
        for info in z.infos:
            if info.is_dir():
                continue
            key = info.filename[:-4] if info.filename.endswith(".npy") else info.filename
            try:
                out[key] = z.read_npy(info)
            except (zipfile.BadZipFile, NotImplementedError, RuntimeError, EOFError, OSError) as exc:
                raise IngestError(f"unreadable member {info.filename!r} in npz archive: {exc}", source=where) from None
        return out
