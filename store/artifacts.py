"""Content-addressed files beside the database: raw uploads, corpora and result arrays.

Every file is written to a temporary name in its final folder, fsynced and renamed, so a
reader sees either nothing or the whole file; its name is its sha256, so a row that keeps
the sha256 both finds the file and can check it. No user-controlled string ever becomes a
path: names are hashes and suffixes come from a fixed whitelist.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import tempfile
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

import numpy as np
from numpy.typing import NDArray

from crowdqa.aggregation.corpus import Corpus, npz_bytes
from crowdqa.store.errors import ArtifactMissingError, UploadTooLargeError
from crowdqa.store.private import make_private_dir

__all__ = ["Artifact", "ArtifactStore", "artifact_path", "safe_suffix"]

_CHUNK = 1 << 20
#: The folders of stored files, one per kind (each has ``<sha[:2]>/<sha><suffix>`` and ``tmp/``).
_KINDS = ("uploads", "docs", "corpora", "results", "index", "snapshots")
_SUFFIX = re.compile(r"\.[a-z0-9]{1,10}")


def safe_suffix(filename: str | None) -> str:
    """The lowercase extension of ``filename`` if it is plain (``.csv``, ``.zip``), else ``""``."""
    if not filename:
        return ""
    suffix = Path(filename.replace("\\", "/")).suffix.lower()
    return suffix if _SUFFIX.fullmatch(suffix) else ""


def artifact_path(kind: str, sha: str, suffix: str = "") -> str:
    """Where the store keeps a file, relative to its root: ``<kind>/<sha[:2]>/<sha><suffix>``."""
    return f"{kind}/{sha[:2]}/{sha}{suffix}"


@dataclass(frozen=True)
class Artifact:
    """A stored file: its path relative to the store root, sha256 and size in bytes; ``new`` when the write that
    returned it made the file (no file of these bytes was kept before), so a refused request removes only those."""

    path: str
    sha256: str
    size: int
    new: bool = field(default=False, compare=False)

    def as_dict(self) -> dict:
        return {"path": self.path, "sha256": self.sha256, "size": self.size}


class ArtifactStore:
    """Files under ``root`` (the data directory), named by their sha256."""

    def __init__(self, root: str | os.PathLike) -> None:
        self.root = Path(root)

    # ------------------------------------------------------------ writing
    def _final(self, kind: str, sha: str, suffix: str) -> Path:
        return self.root / artifact_path(kind, sha, suffix)

    def _commit(self, tmp: Path, *, kind: str, sha: str, size: int, suffix: str) -> Artifact:
        final = self._final(kind, sha, suffix)
        final.parent.mkdir(parents=True, exist_ok=True)
        new = not final.exists()
        os.replace(tmp, final)
        return Artifact(path=str(final.relative_to(self.root)), sha256=sha, size=size, new=new)

    def _tempfile(self, kind: str) -> tuple[int, Path]:
        folder = make_private_dir(self.root) / kind / "tmp"
        folder.mkdir(parents=True, exist_ok=True)
        fd, name = tempfile.mkstemp(dir=folder, prefix=".part-")
        return fd, Path(name)

    def remove_stale_parts(self, *, older_than: float = 6 * 3600.0) -> int:
        """Delete temporary ``.part-*`` files left by a killed process; return how many.

        Only files untouched for ``older_than`` seconds go, so a write in progress in
        another API process or worker (its file's mtime moves with every chunk) is kept.
        """
        cutoff = time.time() - older_than
        removed = 0
        for part in self.root.glob("*/tmp/.part-*"):
            try:
                if part.stat().st_mtime < cutoff:
                    part.unlink()
                    removed += 1
            except FileNotFoundError:  # finished or removed by its writer meanwhile
                continue
        return removed

    def remove_unreferenced(self, referenced: set[str], *, older_than: float) -> int:
        """Delete stored files whose path is not in ``referenced``; return how many.

        Files written in the last ``older_than`` seconds stay: an upload in flight has
        stored its bytes but not yet committed the row that names them.
        """
        cutoff = time.time() - older_than
        removed = 0
        for kind in _KINDS:
            for f in self.root.glob(f"{kind}/??/*"):
                rel = f.relative_to(self.root).as_posix()
                if rel in referenced:
                    continue
                try:
                    if f.is_file() and f.stat().st_mtime < cutoff:
                        f.unlink()
                        removed += 1
                except FileNotFoundError:  # removed by another process meanwhile
                    continue
        return removed

    def put_stream(self, chunks: Iterable[bytes] | BinaryIO, *, kind: str, suffix: str = "",
                   limit: int | None = None) -> Artifact:
        """Store a stream of bytes; raise :class:`UploadTooLargeError` past ``limit`` bytes (nothing is kept)."""
        if hasattr(chunks, "read"):
            stream = chunks
            chunks = iter(lambda: stream.read(_CHUNK), b"")
        fd, tmp = self._tempfile(kind)
        digest, size = hashlib.sha256(), 0
        try:
            with os.fdopen(fd, "wb") as fh:
                for chunk in chunks:
                    size += len(chunk)
                    if limit is not None and size > limit:
                        raise UploadTooLargeError(limit)
                    digest.update(chunk)
                    fh.write(chunk)
                fh.flush()
                os.fsync(fh.fileno())
            return self._commit(tmp, kind=kind, sha=digest.hexdigest(), size=size, suffix=suffix)
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise

    def put_bytes(self, data: bytes, *, kind: str, suffix: str = "") -> Artifact:
        """Store ``data``."""
        return self.put_stream([data], kind=kind, suffix=suffix)

    def put_arrays(self, *, kind: str = "results", **arrays: NDArray) -> Artifact:
        """Store named arrays as one uncompressed ``.npz`` (posteriors barely deflate; see :func:`npz_bytes`)."""
        return self.put_bytes(npz_bytes(arrays, compresslevel=None), kind=kind, suffix=".npz")

    def put_corpus(self, corpus: Corpus) -> Artifact:
        """Store a corpus as the file :meth:`Corpus.save` writes, hashed as it is written (not read back)."""
        return self.put_bytes(corpus.to_bytes(), kind="corpora", suffix=".npz")

    # ------------------------------------------------------------ dataset snapshots and corpus indexes
    def put_snapshot(self, parts: list[str]) -> str:
        """Store the list of corpus sha256s whose merge a dataset is; return the list's own sha256.

        A dataset (and each job, which keeps the dataset's sha256 when it is created) is the merge
        of its uploads' corpora: recording the list costs nothing in the size of the corpora, and
        the merge happens when a job loads it (``crowdqa.jobs.uploads.load_job_corpus``).
        """
        body = json.dumps({"corpora": list(parts)}).encode("utf-8")
        return self.put_bytes(body, kind="snapshots", suffix=".json").sha256

    def snapshot_parts(self, sha: str) -> list[str] | None:
        """The corpus sha256s of a snapshot, or None when ``sha`` names a corpus file (or nothing)."""
        if not re.fullmatch(r"[0-9a-f]{64}", sha or ""):
            raise ArtifactMissingError(f"not a sha256: {sha!r}")
        p = self._final("snapshots", sha, ".json")
        if not p.is_file():
            return None
        return list(json.loads(p.read_text(encoding="utf-8"))["corpora"])

    def put_index(self, corpus_sha: str, index) -> None:
        """Store the index (``crowdqa.ingest.index.CorpusIndex``) of the corpus ``corpus_sha`` beside it."""
        fd, tmp = self._tempfile("index")
        os.close(fd)
        try:
            index.save(tmp)
            final = self._final("index", corpus_sha, ".npz")
            final.parent.mkdir(parents=True, exist_ok=True)
            os.replace(tmp, final)
        finally:
            tmp.unlink(missing_ok=True)

    def index_path(self, corpus_sha: str) -> Path:
        """Where the index of the corpus ``corpus_sha`` is kept (it may not exist yet)."""
        return self._final("index", corpus_sha, ".npz")

    def expand_references(self, referenced: set[str]) -> set[str]:
        """``referenced`` plus what it implies: the corpora a referenced snapshot lists, and every
        referenced corpus' index."""
        out = set(referenced)
        for rel in list(referenced):
            if rel.startswith("snapshots/"):
                try:
                    parts = self.snapshot_parts(Path(rel).stem)
                except (ArtifactMissingError, OSError, ValueError, KeyError):
                    continue
                out.update(artifact_path("corpora", p, ".npz") for p in parts or ())
        out.update(artifact_path("index", Path(rel).stem, ".npz") for rel in list(out) if rel.startswith("corpora/"))
        return out

    # ------------------------------------------------------------ reading
    def path(self, artifact: Artifact | dict | str) -> Path:
        """The absolute path of an artifact (refusing anything outside the root)."""
        rel = artifact if isinstance(artifact, str) else (
            artifact["path"] if isinstance(artifact, dict) else artifact.path
        )
        p = (self.root / rel).resolve()
        if self.root.resolve() not in p.parents:
            raise ArtifactMissingError(f"artifact path {rel!r} is outside the data directory")
        return p

    def find(self, sha: str, *, kind: str, suffix: str = "") -> Path:
        """The file of a sha256; raise :class:`ArtifactMissingError` if it is absent."""
        if not re.fullmatch(r"[0-9a-f]{64}", sha or ""):
            raise ArtifactMissingError(f"not a sha256: {sha!r}")
        p = self._final(kind, sha, suffix)
        if not p.is_file():
            raise ArtifactMissingError(f"{kind} artifact {sha} is missing from {self.root}")
        return p

    def load_corpus(self, sha: str) -> Corpus:
        """Read a corpus stored by :meth:`put_corpus`."""
        return Corpus.load(self.find(sha, kind="corpora", suffix=".npz"))

    def load_arrays(self, artifact: Artifact | dict) -> dict[str, NDArray]:
        """Read arrays stored by :meth:`put_arrays`, checking the sha256 first."""
        p = self.path(artifact)
        if not p.is_file():
            raise ArtifactMissingError(f"artifact {p} is missing")
        expected = artifact["sha256"] if isinstance(artifact, dict) else artifact.sha256
        if _hash_file(p)[0] != expected:
            raise ArtifactMissingError(f"artifact {p} does not match its sha256 {expected}")
        with np.load(p, allow_pickle=False) as z:
            return {k: z[k] for k in z.files}


def _hash_file(path: Path) -> tuple[str, int]:
    digest, size = hashlib.sha256(), 0
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(_CHUNK), b""):
            digest.update(chunk)
            size += len(chunk)
    return digest.hexdigest(), size
