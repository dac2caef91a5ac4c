"""Issue 35, items 1-2: every decompression of an upload is bounded per member and in total, by size and by
ratio, before it happens (crowdqa.ingest._inflate), for npz, zip, tar.gz and docs zips alike."""

from __future__ import annotations

import re
import tracemalloc
import zipfile

import numpy as np
import pytest

from crowdqa.aggregation.corpus import Corpus
from crowdqa.ingest import read_corpus
from crowdqa.ingest._inflate import ARCHIVE_RATIO_FLOOR, MAX_ZIP_RATIO, ZIP_RATIO_FLOOR, read_npz_arrays
from crowdqa.ingest.errors import IngestError
from crowdqa.jobs.uploads import extract_docs
from tests.utils.bombs import many_members_tgz, many_members_zip, npz_bomb
from tests.utils.factories import synthetic_corpus

BOUND = 64 << 20  # bytes traced (numpy's buffers included) while refusing a bomb


def _refused(fn) -> tuple[IngestError, int]:
    tracemalloc.start()
    try:
        with pytest.raises(IngestError) as info:
            fn()
        return info.value, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("claim", ["honest", "zip-lies", "both-lie"])
def test_npz_bomb_is_refused_before_it_inflates(claim, tmp_path):
    """A 2 MB corpus .npz whose deflated token array is 2 GiB: refused whatever the zip and npy headers claim."""
    path = tmp_path / "bomb.npz"
    path.write_bytes(npz_bomb(claim=claim))
    assert path.stat().st_size < 3 << 20
    err, peak = _refused(lambda: read_corpus(path, format="corpus"))
    assert peak < BOUND, f"{peak / 2**20:.0f} MiB traced"
    assert "bomb.npz" in str(err)
    expected = {"honest": r"npz member 'token.npy' expands to more than 536870912 bytes \(the limit is 53687",
                "zip-lies": "more than it holds|CRC",
                "both-lie": "holds more bytes than its array|CRC"}[claim]
    assert re.search(expected, str(err)), str(err)


def test_a_real_corpus_npz_still_loads(tmp_path):
    corpus = synthetic_corpus()
    path = tmp_path / "c.npz"
    corpus.save(path)
    back = read_corpus(path, format="corpus").corpus
    assert np.array_equal(back.label, corpus.label) and back.worker_ids == corpus.worker_ids
    assert set(read_npz_arrays(path)) == {"token", "worker", "label", "doc_lengths", "token_start", "token_end",
                                          "meta"}


def test_a_regular_corpus_npz_is_not_taken_for_a_bomb(tmp_path):
    """Five workers on every token: the worker array deflates ~170 times (a zip member at that ratio would be
    refused), the archive ~18 times; an .npz is bounded in total, so it loads."""
    n_tok, n_workers, length = 200_000, 5, 200
    pos = np.arange(n_tok) % length
    corpus = Corpus.from_arrays(
        token=np.repeat(np.arange(n_tok), n_workers), worker=np.tile(np.arange(n_workers), n_tok),
        label=(np.random.default_rng(0).random(n_tok * n_workers) < 0.02).astype(np.int16),
        doc_lengths=np.full(n_tok // length, length), token_start=pos * 2, token_end=pos * 2 + 1,
        doc_ids=[f"d{i}" for i in range(n_tok // length)], texts=["a " * length] * (n_tok // length),
        worker_ids=[f"w{i}" for i in range(n_workers)], worker_roles=["crowd"] * n_workers, class_names=["O", "X"])
    path = tmp_path / "regular.npz"
    corpus.save(path)
    with zipfile.ZipFile(path) as z:
        info = z.getinfo("worker.npy")
        assert info.file_size > max(ZIP_RATIO_FLOOR, MAX_ZIP_RATIO * info.compress_size)
    assert read_corpus(path, format="corpus").corpus.n_obs == n_tok * n_workers


def test_many_small_members_are_refused_in_total(tmp_path):
    """Issue 35's 1 MB brat zip of 120 x 8 MiB members (accepted before at 11 GB): refused, each member by ratio."""
    path = tmp_path / "many.zip"
    path.write_bytes(many_members_zip())
    err, peak = _refused(lambda: read_corpus(path, format="brat"))
    assert peak < BOUND
    assert "expands to more than 1048576 bytes (the limit is 100 times its" in str(err)
    # Members under the per-member floor, 40 x 1 MiB in ~40 kB: the archive's total ratio refuses them.
    path.write_bytes(many_members_zip(members=40, size=1 << 20))
    err, peak = _refused(lambda: read_corpus(path, format="brat"))
    assert peak < BOUND
    assert f"zip archive expands to more than {ARCHIVE_RATIO_FLOOR} bytes" in str(err)


def test_lying_zip_headers_are_cut_at_the_bytes_read(tmp_path):
    """Members whose headers claim 1000 bytes each: zipfile stops at the claim and the CRC check refuses them."""
    raw = bytearray(many_members_zip(members=2, size=8 << 20, layout="docs"))
    for sig, at in ((b"PK\x03\x04", 22), (b"PK\x01\x02", 24)):
        start = 0
        while (start := raw.find(sig, start)) >= 0:
            raw[start + at : start + at + 4] = (1000).to_bytes(4, "little")
            start += 4
    path = tmp_path / "lying.zip"
    path.write_bytes(bytes(raw))
    err, peak = _refused(lambda: extract_docs(path, tmp_path, max_bytes=1 << 30))
    assert peak < BOUND and "Bad CRC-32 for file" in str(err)


def test_tar_gz_bomb_is_refused_by_its_ratio(tmp_path):
    """The tar variant: 120 x 8 MiB in a 1 MB .tar.gz; unpacking stops at 100 times the archive's size."""
    path = tmp_path / "many.tgz"
    path.write_bytes(many_members_tgz())
    size = path.stat().st_size
    err, peak = _refused(lambda: read_corpus(path, format="brat"))
    assert peak < BOUND
    assert f"tar archive expands to more than {MAX_ZIP_RATIO * size} bytes (the limit is 100 times the " \
           f"archive's {size} bytes)" in str(err)


def test_docs_zip_bomb_is_refused_under_the_upload_bound(tmp_path):
    """A docs zip of 120 x 8 MiB texts, within the 4 x 200 MB the docs zip was allowed before: refused."""
    path = tmp_path / "docs.zip"
    path.write_bytes(many_members_zip(layout="docs"))
    out = tmp_path / "out"
    out.mkdir()
    err, peak = _refused(lambda: extract_docs(path, out, max_bytes=4 * 200 * 1024 * 1024))
    assert peak < BOUND and str(err).startswith("docs: zip member 'd0.txt' expands to more than")
    with zipfile.ZipFile(path) as z:  # (the zip itself is fine: its CRCs are right)
        assert len(z.read("d0.txt")) == 8 << 20


def test_a_model_file_bomb_is_refused_too(tmp_path):
    """``crowdqa aggregate --from-model`` reads its .npz through the same bounds."""
    from crowdqa.jobs.batches import load_model_file

    path = tmp_path / "model.npz"
    path.write_bytes(npz_bomb())
    tracemalloc.start()
    try:
        with pytest.raises(ValueError, match="not a crowdqa model file.*expands to more than"):
            load_model_file(path, method="ds", frozen=False)
        assert tracemalloc.get_traced_memory()[1] < BOUND
    finally:
        tracemalloc.stop()
