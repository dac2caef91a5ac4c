"""Content-addressed artifacts: hashes, atomic writes, limits, and no user path on disk."""

from __future__ import annotations

import hashlib
import io

import numpy as np
import pytest

from crowdqa.store.artifacts import ArtifactStore, safe_suffix
from crowdqa.store.errors import ArtifactMissingError, UploadTooLargeError
from tests.utils.factories import synthetic_corpus


def _files(root):
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())


def test_bytes_are_named_by_their_sha256(tmp_path):
    """Oracle: hashlib.sha256 of the bytes names the file; equal content is stored once."""
    store = ArtifactStore(tmp_path)
    data = b"doc_id,annotator\n" * 1000
    art = store.put_stream(io.BytesIO(data), kind="uploads", suffix=".csv")
    assert art.sha256 == hashlib.sha256(data).hexdigest() and art.size == len(data)
    assert store.path(art).read_bytes() == data
    again = store.put_bytes(data, kind="uploads", suffix=".csv")
    assert again == art
    assert _files(tmp_path) == [art.path]  # no temp file left behind


def test_limit_keeps_nothing(tmp_path):
    """An upload over the limit raises and leaves no file at all."""
    store = ArtifactStore(tmp_path)
    with pytest.raises(UploadTooLargeError, match="limit of 10 bytes"):
        store.put_stream([b"x" * 6, b"y" * 6], kind="uploads", limit=10)
    assert _files(tmp_path) == []


def test_corpus_and_arrays_round_trip(tmp_path):
    """A corpus and result arrays come back equal; a damaged array file is refused."""
    store = ArtifactStore(tmp_path)
    corpus = synthetic_corpus(seed=3)
    art = store.put_corpus(corpus)
    assert store.load_corpus(art.sha256).equals(corpus)
    labels = np.arange(7, dtype=np.int64)
    arr = store.put_arrays(labels=labels)
    assert np.array_equal(store.load_arrays(arr.as_dict())["labels"], labels)
    store.path(arr).write_bytes(b"garbage")
    with pytest.raises(ArtifactMissingError, match="does not match its sha256"):
        store.load_arrays(arr)
    with pytest.raises(ArtifactMissingError, match="missing"):
        store.load_corpus("0" * 64)


def test_no_user_path_reaches_the_filesystem(tmp_path):
    """Suffixes are whitelisted and relative paths cannot leave the root."""
    assert safe_suffix("../../etc/passwd") == ""
    assert safe_suffix("crowd.JSONL") == ".jsonl"
    assert safe_suffix("a.tar/../../x") == ""
    assert safe_suffix("evil.c$v") == ""
    store = ArtifactStore(tmp_path / "root")
    with pytest.raises(ArtifactMissingError, match="outside the data directory"):
        store.path("../outside.npz")
    with pytest.raises(ArtifactMissingError, match="not a sha256"):
        store.find("../../x", kind="corpora")


def test_stale_part_files_are_removed_and_fresh_ones_kept(tmp_path):
    """Regression (issue 8): a SIGKILL during an upload leaves a .part file; start-up removes old ones only."""
    import os
    import time

    from crowdqa.store.artifacts import ArtifactStore

    store = ArtifactStore(tmp_path)
    folder = tmp_path / "uploads" / "tmp"
    folder.mkdir(parents=True)
    old, fresh = folder / ".part-old", folder / ".part-fresh"
    old.write_bytes(b"x")
    fresh.write_bytes(b"y")
    past = time.time() - 7 * 3600
    os.utime(old, (past, past))
    assert store.remove_stale_parts() == 1
    assert not old.exists() and fresh.exists()


def test_remove_unreferenced_keeps_named_young_and_temporary_files(tmp_path):
    """Only old files that no row names go; a file in flight (young) and tmp/ parts are left alone."""
    import os
    import time

    store = ArtifactStore(tmp_path)
    named = store.put_bytes(b"named", kind="uploads", suffix=".csv")
    orphan = store.put_bytes(b"orphan", kind="results", suffix=".npz")
    young = store.put_bytes(b"young", kind="corpora", suffix=".npz")
    part = tmp_path / "uploads" / "tmp" / ".part-x"
    part.write_bytes(b"p")
    past = time.time() - 3600
    for a in (named, orphan):
        os.utime(tmp_path / a.path, (past, past))
    os.utime(part, (past, past))
    assert store.remove_unreferenced({named.path}, older_than=60) == 1
    assert _files(tmp_path) == sorted([named.path, young.path, "uploads/tmp/.part-x"])
    assert store.remove_unreferenced(set(), older_than=0) == 2  # no grace: every unnamed stored file
    assert _files(tmp_path) == ["uploads/tmp/.part-x"]
