"""Tests of the canonical corpus: validation, views and exact save/load round trip."""

from __future__ import annotations

import dataclasses
import io
import zipfile

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from crowdqa.aggregation.corpus import MISSING, Corpus, npz_bytes, run_indices, sort_rows
from tests.utils.factories import synthetic_corpus


def tiny(**over) -> dict:
    kw = dict(
        token=[0, 1, 2, 0, 1, 2, 3, 4],
        worker=[0, 0, 0, 1, 1, 1, 1, 1],
        label=[1, 0, 0, 1, 1, 0, 0, 0],
        doc_lengths=[3, 2],
        token_start=[0, 2, 5, 0, 3],
        token_end=[1, 4, 6, 2, 5],
        doc_ids=["a", "b"],
        texts=["x yy z", "uv wx"],
        worker_ids=["mturk:A", "upwork:md1"],
        worker_roles=["crowd", "expert"],
        class_names=["O", "P"],
    )
    kw.update(over)
    return kw


def test_from_arrays_sorts_and_views():
    c = Corpus.from_arrays(**tiny())
    assert np.all(np.diff(c.token * 2 + c.worker) > 0)
    assert c.n_docs == 2 and c.n_tokens == 5 and c.n_workers == 2 and c.n_obs == 8
    assert c.doc_start.tolist() == [0, 3, 5]
    assert c.token_doc.tolist() == [0, 0, 0, 1, 1]
    assert c.labels_of(0).tolist() == [1, 0, 0, MISSING, MISSING]
    assert c.vote_counts()[0].tolist() == [0.0, 2.0]
    assert c.doc_tokens(1) == ["uv", "wx"]
    assert c.select_role("expert").n_obs == 5


def test_save_load_round_trip_is_exact(tmp_path):
    c = Corpus.from_arrays(**tiny(texts=["é y· z", "ü\u2028 w"], token_end=[1, 4, 6, 2, 4]))
    c.save(tmp_path / "c.npz")
    back = Corpus.load(tmp_path / "c.npz")
    assert back.equals(c)
    assert back.label.dtype == np.int16 and back.worker.dtype == np.int32


@pytest.mark.parametrize(
    ("over", "match"),
    [
        (dict(label=[1, 0, 0, 1, 1, 0, 0, 5]), r"label index must be in \[0, 2\), found 5 at row"),
        (dict(token=[0, 1, 2, 0, 1, 2, 3, 3]), r"duplicate \(token, worker\)"),
        (dict(token=[0, 1, 3, 0, 1, 2, 3, 4]), r"labels 2 of the 3 tokens of document 'a'"),
        (dict(token=[0, 1, 2, 0, 1, 2, 4, 3], worker=[0, 0, 0, 1, 1, 1, 0, 1], label=[0] * 8),
         r"'mturk:A' labels 1 of the 2 tokens of document 'b'"),
        (dict(class_names=["O", "O"]), r"class_names must be unique"),
        (dict(worker_roles=["crowd", "boss"]), r"'crowd' or 'expert', found 'boss'"),
        (dict(token_end=[1, 4, 60, 2, 5]), r"past the end of document 'a'"),
    ],
)
def test_invalid_corpus_names_expected_and_found(over, match):
    with pytest.raises(ValueError, match=match):
        Corpus.from_arrays(**tiny(**over))


@given(
    st.lists(st.tuples(st.integers(0, 6), st.integers(0, 4), st.integers(0, 2)), max_size=40),
    st.sampled_from([1, 2, 3, 1 << 20]),
    st.booleans(),
)
@settings(max_examples=200, deadline=None)
def test_sort_rows_equals_lexsort_at_any_chunk_size(rows, chunk, tokens_first):
    """Both paths (chunks of whole tokens, and the global argsort) give lexsort's stable order."""
    import crowdqa.aggregation.corpus as corpus_module

    if tokens_first:  # the chunked path: tokens non-decreasing, annotators shuffled within a token
        rows = sorted(rows, key=lambda r: r[0])
    token = np.array([r[0] for r in rows], dtype=np.int64)
    worker = np.array([r[1] for r in rows], dtype=np.int32)
    label = np.array([r[2] for r in rows], dtype=np.int16)
    order = np.lexsort((worker, token))
    saved = corpus_module._CHUNK
    corpus_module._CHUNK = chunk
    try:
        t, w, lab = sort_rows(token.copy(), worker.copy(), label.copy(), 5, inplace=True)
        kept = (token.copy(), worker.copy(), label.copy())
        t2, w2, l2 = sort_rows(*kept, 5)
    finally:
        corpus_module._CHUNK = saved
    for got in ((t, w, lab), (t2, w2, l2)):
        np.testing.assert_array_equal(got[0], token[order])
        np.testing.assert_array_equal(got[1], worker[order])
        np.testing.assert_array_equal(got[2], label[order])
    np.testing.assert_array_equal(kept[1], worker)  # inplace=False leaves the inputs alone
    np.testing.assert_array_equal(kept[2], label)


@pytest.mark.parametrize("compresslevel", [None, 1, 9])
def test_npz_bytes_is_what_numpy_load_reads(compresslevel):
    """Oracle: numpy.load (no pickle) gives back every array, dtype and shape; stored archives are not deflated."""
    rng = np.random.default_rng(0)
    arrays = {"codes": rng.integers(0, 5, size=1000), "proba": rng.random((10, 3)), "empty": np.zeros(0, np.int8),
              "text": np.frombuffer("é".encode(), dtype=np.uint8)}
    data = npz_bytes(arrays, compresslevel=compresslevel)
    with np.load(io.BytesIO(data), allow_pickle=False) as loaded:
        assert sorted(loaded.files) == sorted(arrays)
        for name, array in arrays.items():
            assert loaded[name].dtype == array.dtype and np.array_equal(loaded[name], array)
    methods = {i.compress_type for i in zipfile.ZipFile(io.BytesIO(data)).infolist()}
    assert methods == {zipfile.ZIP_STORED if compresslevel is None else zipfile.ZIP_DEFLATED}



@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**16), pick=st.lists(st.integers(0, 6), max_size=7))
def test_select_workers_equals_the_checked_subset(seed, pick):
    """select_workers skips the second validation; oracle: the same rows through the checked constructor,
    which raises on any broken invariant, give an equal corpus; the subset's caches are its own."""
    c = synthetic_corpus(n_docs=15, doc_len=5, n_crowd=5, n_expert=2, seed=seed)
    parent_answers = c.worker_answers.tolist()  # fills the parent's cache first
    keep = np.isin(c.worker, pick)
    sub = c.select_workers(pick)
    fields = {f.name: getattr(c, f.name) for f in dataclasses.fields(Corpus) if f.init}
    checked = Corpus(**{**fields, "token": c.token[keep], "worker": c.worker[keep], "label": c.label[keep]})
    assert sub.equals(checked)
    assert not (sub.token.flags.writeable or sub.worker.flags.writeable or sub.label.flags.writeable)
    assert sub.worker_answers.tolist() == checked.worker_answers.tolist()
    assert c.worker_answers.tolist() == parent_answers
    # token_obs_start: counted by the check of `checked`, on first use by the unchecked subset; oracle: a loop
    for corpus in (sub, checked):
        runs = corpus.token_obs_start
        assert runs.dtype == np.int64 and runs.shape == (corpus.n_tokens + 1,) and runs[-1] == corpus.n_obs
        for t in range(corpus.n_tokens):
            assert np.flatnonzero(corpus.token == t).tolist() == list(range(runs[t], runs[t + 1]))


@given(runs=st.lists(st.tuples(st.integers(0, 50), st.integers(0, 6)), max_size=12))
def test_run_indices_lays_the_runs_end_to_end(runs):
    """Oracle: the ranges concatenated by a Python loop (empty runs included)."""
    start = np.array([a for a, _ in runs], dtype=np.int64)
    length = np.array([n for _, n in runs], dtype=np.int64)
    expected = [i for a, n in runs for i in range(a, a + n)]
    got = run_indices(start, length)
    assert got.dtype == np.int64 and got.tolist() == expected
