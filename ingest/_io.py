"""File access shared by the readers: text decoding, safe zip and tar archives, folders as trees.

Decoding rule (every reader): UTF-8, with or without a byte-order mark; UTF-16 with
a byte-order mark is accepted too (Excel's "Unicode text"). Anything else is an
:class:`~crowdqa.ingest.errors.IngestError` naming the file and the line of the first bad byte.
Line endings are kept as they are, so character offsets count ``\\r`` like the tool
that wrote them did.

Zip rule: members are read into memory, never extracted; absolute names, ``..``
components, symbolic links and encrypted members are refused; what an archive may inflate to is
bounded per member and in total, by size and by ratio, by :mod:`crowdqa.ingest._inflate` (the one
place every upload is decompressed: zip, tar, npz and docs zips), on the sizes claimed before
anything is read and on the bytes actually read after. A member that claims less than it holds is
cut at its claim by :mod:`zipfile` and fails its CRC check.

Tar rule (``.tar``, ``.tar.gz``, ``.tgz``, ``.tar.bz2``, ``.tar.xz``, as corpora such as EBM-NLP are
distributed): the same name rules and bounds (by ratio in total only: a tar member has no compressed
size of its own); only regular files and folders are accepted (links and devices are refused); members
are unpacked once, in archive order, into a private temporary folder that :meth:`Tree.close` removes.
Bytes are counted as they are written, so a compressed bomb costs at most the total bound on disk.
"""

from __future__ import annotations

import codecs
import os
import shutil
import stat
import tarfile
import tempfile
import zipfile
from collections.abc import Iterator, Sequence
from pathlib import Path, PurePosixPath

from crowdqa.aggregation.corpus import Corpus
from crowdqa.ingest._inflate import (
    MAX_ZIP_BYTES,
    MAX_ZIP_MEMBERS,
    MAX_ZIP_RATIO,
    ZIP_RATIO_FLOOR,
    BoundedZip,
    Inflation,
    read_npz_arrays,
)
from crowdqa.ingest.errors import IngestError, ProblemLog
from crowdqa.ingest.formats import NO_SUCH_PATH

__all__ = ["decode_text", "read_text", "read_corpus_npz", "Tree", "open_tree", "is_archive", "MAX_ZIP_BYTES",
           "MAX_ZIP_MEMBERS", "MAX_ZIP_RATIO", "ZIP_RATIO_FLOOR"]

def decode_text(data: bytes, *, source: str) -> str:
    """Decode file bytes by the decoding rule above; ``source`` names the file in errors."""
    if data.startswith(codecs.BOM_UTF8):
        data = data[len(codecs.BOM_UTF8) :]
    elif data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        try:
            return data.decode("utf-16")
        except UnicodeDecodeError as exc:
            raise IngestError(f"not valid UTF-16 text (bad bytes at offset {exc.start})", source=source) from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise IngestError(
            f"not UTF-8 text: byte 0x{data[exc.start]:02x} cannot be decoded; save the file as UTF-8",
            source=source,
            line=line,
        ) from None


def read_text(path: str | os.PathLike) -> str:
    """Read one text file by the decoding rule."""
    with open(path, "rb") as fh:
        data = fh.read()
    if not data.startswith((codecs.BOM_UTF8, codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        try:
            return data.decode("utf-8")  # the common case, without building a Path to name the file
        except UnicodeDecodeError:
            pass
    return decode_text(data, source=str(Path(path)))


def read_corpus_npz(path: Path, *, role: str, problems: ProblemLog) -> Corpus:
    """The ``corpus`` format: a corpus ``.npz`` written by crowdqa, with the roles it stores (``role`` and
    ``problems`` are the readers' common keywords; the file has no rows to skip)."""
    try:
        if not zipfile.is_zipfile(path):
            raise ValueError("not a zip")
        arrays = read_npz_arrays(path)  # bounded: a deflated bomb is refused before it is inflated
        corpus = Corpus.from_saved(arrays, source=str(path))
        problems.limits.check_lengths(corpus.doc_lengths, corpus.doc_ids, source=str(path))
        return corpus
    except IngestError:
        raise
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        # numpy's own message would suggest loading the file "unsafely" with allow_pickle: never do that.
        raise IngestError("not a corpus file written by crowdqa (crowdqa ingest --save writes one: an .npz)",
                          source=str(path)) from None


class Tree:
    """A folder, a zip or a tar archive seen as ``relative posix path -> bytes``.

    Parameters
    ----------
    root : str or PathLike
        A directory, a ``.zip`` file or a tar file (compressed or not).
    """

    def __init__(self, root: str | os.PathLike) -> None:
        self.root = Path(root)
        self._zip: BoundedZip | None = None
        self._unpacked: Path | None = None  # a tar archive's private copy
        self._is_dir = self.root.is_dir()
        if self._is_dir:
            self._names = sorted("/".join(parts) for parts in folder_files(self.root))
        elif self.root.is_file() and zipfile.is_zipfile(self.root):
            self._zip = BoundedZip(self.root)
            try:
                self._names = self._check_zip(self._zip.infos)
            except BaseException:
                self.close()
                raise
        elif self.root.is_file() and _is_tar(self.root):
            self._unpacked = Path(tempfile.mkdtemp(prefix="crowdqa-tar-"))
            try:
                self._names = self._unpack_tar()
            except BaseException:
                self.close()
                raise
        elif self.root.exists():
            raise IngestError("expected a folder, a .zip or a .tar(.gz) archive, found a file that is none of them",
                              source=str(root))
        else:
            raise IngestError(NO_SUCH_PATH, source=str(root))
        names = [n for n in self._names if not _hidden(n.split("/"))]
        self._real = {n: n for n in names}

    def _check_zip(self, infos: list[zipfile.ZipInfo]) -> list[str]:
        """The member names, after the name rules (sizes are checked by :class:`BoundedZip`)."""
        names = []
        for info in infos:
            name = info.filename
            parts = _member_parts(name, "zip", str(self.root))
            if stat.S_ISLNK(info.external_attr >> 16):
                raise IngestError(f"symbolic link {name!r} in zip archive", source=str(self.root))
            if info.flag_bits & 0x1:
                raise IngestError(f"encrypted member {name!r} in zip archive", source=str(self.root))
            if not info.is_dir():
                names.append("/".join(parts))
        return sorted(names)

    def _unpack_tar(self) -> list[str]:
        assert self._unpacked is not None
        where = str(self.root)
        names: set[str] = set()
        inflation = Inflation(self.root, source=where, kind="tar")
        try:
            with tarfile.open(self.root, "r:*") as tf:
                for count, info in enumerate(tf, 1):
                    if count > MAX_ZIP_MEMBERS:
                        raise IngestError(f"tar archive has more than {MAX_ZIP_MEMBERS} members", source=where)
                    name = info.name
                    parts = tuple(q for q in _member_parts(name, "tar", where) if q != ".")
                    if info.isdir() or not parts:
                        continue
                    if not info.isreg():
                        raise IngestError(f"{name!r} in tar archive is not a regular file (a link or device)",
                                          source=where)
                    rel = "/".join(parts)
                    if rel in names:
                        raise IngestError(f"tar archive holds {name!r} twice", source=where)
                    inflation.check_claims([(name, info.size, None)])
                    names.add(rel)
                    if _hidden(parts):  # checked like the others, but never read: not unpacked
                        continue
                    dest = self._unpacked.joinpath(*parts)
                    dest.parent.mkdir(parents=True, exist_ok=True)
                    src = tf.extractfile(info)
                    with open(dest, "xb") as out:
                        inflation.copy(src, out, name=name)  # counted: the header's size is a claim
        except IngestError:
            raise
        except (tarfile.TarError, EOFError, OSError, ValueError) as exc:
            raise IngestError(f"unreadable tar archive: {exc}", source=where) from None
        return sorted(names)

    def __enter__(self) -> Tree:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self._zip is not None:
            self._zip.close()
        if self._unpacked is not None:
            shutil.rmtree(self._unpacked, ignore_errors=True)
            self._unpacked = None

    @property
    def folder(self) -> Path | None:
        """The folder holding the files on disk (a folder tree's root, a tar's private copy); None for a zip."""
        if self._unpacked is not None:
            return self._unpacked
        return self.root if self._zip is None else None

    @property
    def names(self) -> list[str]:
        """Relative posix paths of every file, sorted."""
        return sorted(self._real)

    def source(self, name: str) -> str:
        """How errors name a member: ``archive.zip/member`` or the file path."""
        real = self._real.get(name, name)
        if not self._is_dir:
            return f"{self.root}/{real}"
        root = str(self.root)  # (what str(self.root / real) gives, without making a path)
        return real if root == "." else os.path.join(root, real)

    def read_bytes(self, name: str) -> bytes:
        """The bytes of one member (counted against the archive's bounds)."""
        name = self._real[name]
        if self._zip is None:  # (string paths: a pathlib object per member costs more than reading a small one)
            with open(os.path.join(self.folder, name), "rb") as fh:
                return fh.read()
        return self._zip.read(self._zip.zip.getinfo(name))

    def read_text(self, name: str) -> str:
        """One member decoded by the decoding rule."""
        return decode_text(self.read_bytes(name), source=self.source(name))

    def strip_common_root(self) -> None:
        """Drop top-level folders that hold everything (``export/alice/a.ann`` -> ``alice/a.ann``)."""
        while self._real and all("/" in n for n in self._real):
            heads = {n.split("/", 1)[0] for n in self._real}
            if len(heads) != 1:
                return
            self._real = {n.split("/", 1)[1]: real for n, real in self._real.items()}

    def iter_files(self, suffix: str) -> Iterator[str]:
        """Names ending in ``suffix`` (case-insensitive), sorted."""
        return (n for n in self.names if n.lower().endswith(suffix))


def folder_files(root: str | os.PathLike) -> list[tuple[str, ...]]:
    """The path parts, below ``root``, of its files (regular files and links to them), in folders that are
    not links (as ``Path.rglob`` walks them), unsorted; by ``os.scandir``, a stat only for links."""
    out: list[tuple[str, ...]] = []
    stack: list[tuple[tuple[str, ...], str]] = [((), os.fspath(root))]
    while stack:
        parts, folder = stack.pop()
        with os.scandir(folder) as entries:
            for entry in entries:
                if entry.is_dir(follow_symlinks=False):
                    stack.append(((*parts, entry.name), entry.path))
                elif entry.is_file():
                    out.append((*parts, entry.name))
    return out


def _hidden(parts: Sequence[str]) -> bool:
    """Hidden files and macOS resource forks, which are never annotations."""
    return any(p.startswith(".") or p == "__MACOSX" for p in parts)


def _member_parts(name: str, kind: str, source: str) -> tuple[str, ...]:
    """The path parts of an archive member; absolute names, ``..`` and drive letters are refused."""
    parts = PurePosixPath(name.replace("\\", "/")).parts
    if name.startswith(("/", "\\")) or ".." in parts or (parts and ":" in parts[0]):
        raise IngestError(f"unsafe path {name!r} in {kind} archive", source=source)
    return parts


def _is_tar(path: Path) -> bool:
    """True for a (possibly compressed) tar archive; never raises."""
    try:
        return tarfile.is_tarfile(path)
    except (OSError, EOFError, tarfile.TarError, ValueError):
        return False


def is_archive(path: str | os.PathLike) -> bool:
    """True for a zip or tar file that :class:`Tree` opens."""
    p = Path(path)
    return p.is_file() and (zipfile.is_zipfile(p) or _is_tar(p))


def open_tree(root: str | os.PathLike, *, strip_root: bool = True) -> Tree:
    """Open a folder, a zip or a tar archive as a :class:`Tree`."""
    tree = Tree(root)
    if strip_root:
        tree.strip_common_root()
    return tree
