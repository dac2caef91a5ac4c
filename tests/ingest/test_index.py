"""Upload indexes (ingest/index.py): the merge checks, summary and annotator counts a dataset gets from its
uploads' indexes, against merging the corpora themselves."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from crowdqa.ingest.build import Span, corpus_from_spans
from crowdqa.ingest.errors import IngestError
from crowdqa.ingest.index import (
    HASHING,
    CorpusIndex,
    _mix,
    _segment_hashes,
    _text_hashes,
    annotator_counts,
    check_mergeable,
    index_corpus,
    summarize_indexes,
)
from crowdqa.ingest.merge import merge_corpora
from crowdqa.ingest.summary import summarize

TEXTS = {"d1": "a b c", "d2": "bb ccc", "d3": "x y", "d4": "é (n=4)", "d5": ""}


def _upload(docs: list[str], annotators: list[str], role: str, seed: int):
    """One upload: every annotator labels every document of ``docs`` (a seeded span or none)."""
    rng = np.random.default_rng(seed)
    spans = [Span(d, a, 0, 1, "P") for d in docs for a in annotators if TEXTS[d] and rng.random() < 0.6]
    return corpus_from_spans(documents={d: TEXTS[d] for d in docs}, assignments=[(d, a) for d in docs
                                                                                 for a in annotators],
                             spans=spans, roles=dict.fromkeys(annotators, role))


def _mix_int(x: int) -> int:
    """Oracle: splitmix64's finaliser on a Python int, as published (Steele, Lea & Flood 2014)."""
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9 % 2**64
    x = (x ^ (x >> 27)) * 0x94D049BB133111EB % 2**64
    return x ^ (x >> 31)


def _reference_hashes(keys: list[list[int]]) -> list[str]:
    """Oracle: the documented rule of ``_segment_hashes`` as a loop over segments, in Python ints."""
    return [_mix_int((sum(_mix_int(k) for k in seg) % 2**64) ^ _mix_int(len(seg) + 2**63)) for seg in keys]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(st.integers(0, 2**64 - 1), max_size=5), max_size=6))
def test_segment_hashes_match_a_loop(segments):
    """Oracle: a per-segment loop of the same rule on Python ints modulo 2**64 (splitmix64 written out)."""
    keys = np.array([v for s in segments for v in s], dtype=np.uint64)
    lengths = np.array([len(s) for s in segments], dtype=np.int64)
    assert _mix(keys).tolist() == [_mix_int(k) for k in keys.tolist()]
    assert _segment_hashes(keys, lengths).tolist() == _reference_hashes(segments)


def test_text_hashes_see_position_and_length():
    """A swapped pair of characters, an added space and an empty text all change the hash."""
    h = _text_hashes(("ab", "ba", "ab ", "", "ab", "\x01")).tolist()
    assert len(set(h[:4])) == 4 and h[4] == h[0]
    assert h[5] != h[3]  # one character of code point 1 (key 1) against the empty text (hypothesis found it)


@settings(max_examples=80, deadline=None)
@given(st.lists(st.text(max_size=8), max_size=8), st.integers(1, 20))
def test_text_hashes_depend_on_the_text_only(texts, chunk):
    """Equal texts hash equal wherever they stand and however the corpus is cut into chunks; different
    texts (here: all distinct ones) hash differently."""
    whole = _text_hashes(tuple(texts))
    assert _text_hashes(tuple(texts), chunk_chars=chunk).tolist() == whole.tolist()
    by_text = dict(zip(texts, whole.tolist(), strict=True))
    assert len(set(by_text.values())) == len(by_text)
    assert [by_text[t] for t in texts] == whole.tolist()


def test_index_pairs_and_counts():
    """The unique (document, annotator) pairs and label counts, against the corpus' own rows."""
    corpus = merge_corpora([_upload(["d1", "d2", "d3"], ["w1", "w2"], "crowd", 0),
                            _upload(["d2", "d4"], ["e1"], "expert", 1)])
    ix = index_corpus(corpus)
    pairs = sorted({(int(d), int(w)) for d, w in zip(corpus.obs_doc, corpus.worker, strict=True)})
    assert list(zip(ix.pair_doc.tolist(), ix.pair_worker.tolist(), strict=True)) == pairs
    assert ix.label_counts.tolist() == np.bincount(corpus.label, minlength=corpus.n_classes).tolist()
    assert ix.hashing == HASHING and ix.current


UPLOADS = [(["d1", "d2"], ["w1", "w2"], "crowd"), (["d2", "d3"], ["w3"], "crowd"),
           (["d1", "d3", "d4"], ["e1"], "expert"), (["d5", "d4"], ["w1"], "crowd"), (["d4"], ["e2"], "expert")]


@pytest.mark.parametrize("order", [(0,), (0, 1), (2, 0, 1), (0, 1, 2, 3, 4), (4, 3, 2, 1, 0)])
def test_summary_and_annotators_equal_the_merged_corpus(order, tmp_path):
    """Oracle: ``summarize`` and a per-annotator count on ``merge_corpora`` of the corpora themselves."""
    corpora = [_upload(*UPLOADS[i], seed=i) for i in order]
    merged = merge_corpora(corpora)
    indexes = []
    for k, c in enumerate(corpora):  # as the service keeps them: saved and loaded
        index_corpus(c).save(tmp_path / f"{k}.npz")
        indexes.append(CorpusIndex.load(tmp_path / f"{k}.npz"))
    for k in range(1, len(indexes)):
        check_mergeable(indexes[:k], indexes[k])
    assert summarize_indexes(indexes) == summarize(merged)
    expected = []
    for w, (wid, role) in enumerate(zip(merged.worker_ids, merged.worker_roles, strict=True)):
        docs = np.unique(merged.obs_doc[merged.worker == w])
        expected.append((wid, role, int(docs.size), int(merged.doc_lengths[docs].sum())))
    assert annotator_counts(indexes) == expected


def test_check_mergeable_refuses_what_the_merge_refuses():
    """Each conflict merge_corpora refuses is refused from the indexes, naming the document or annotator."""
    base = corpus_from_spans(documents={"d1": "a b c", "d2": "x y"}, assignments=[("d1", "w1"), ("d2", "w1")],
                             spans=[], roles={"w1": "crowd"})
    cases = [
        (corpus_from_spans(documents={"d2": "x y", "d1": "a b d"}, assignments=[("d1", "e1")], spans=[],
                           roles={"e1": "expert"}), "document 'd1' has a different text"),
        (corpus_from_spans(documents={"d1": "a b c", "d2": "x y"}, assignments=[("d1", "w1")], spans=[],
                           roles={"w1": "expert"}), "annotator 'w1' is 'crowd' in one upload and 'expert'"),
        (corpus_from_spans(documents={"d3": "q", "d2": "x y"}, assignments=[("d3", "w1"), ("d2", "w1")], spans=[],
                           roles={"w1": "crowd"}), "annotator 'w1' labelled document 'd2' in two uploads"),
    ]
    for other, message in cases:
        with pytest.raises(IngestError):
            merge_corpora([base, other])
        with pytest.raises(IngestError, match=message):
            check_mergeable([index_corpus(base)], index_corpus(other))


def test_check_mergeable_refuses_another_tokenization():
    """Same id and text, other token offsets: the token hash differs (merge_corpora refuses it too)."""
    ix = index_corpus(_upload(["d1"], ["w1"], "crowd", 0))
    shifted = corpus_from_spans(documents={"d1": "a  b c"}, assignments=[("d1", "w1")], spans=[],
                                roles={"w1": "crowd"})  # one more space: the same three tokens, moved
    moved = CorpusIndex(**{**ix.__dict__, "worker_ids": np.array(["e1"]),
                           "token_hash": index_corpus(shifted).token_hash})
    with pytest.raises(IngestError, match="document 'd1' is tokenized differently"):
        check_mergeable([ix], moved)


def test_an_index_saved_before_hashing_changed_reads_as_stale(tmp_path):
    """An index file without ``hashing`` (SHA-1 per document, before) loads as not current, so the service
    makes it again from its corpus instead of comparing unlike hashes."""
    ix = index_corpus(_upload(["d1", "d2"], ["w1"], "crowd", 0))
    arrays = {k: v for k, v in ix.__dict__.items() if isinstance(v, np.ndarray)}
    np.savez(tmp_path / "old.npz", **arrays, scheme=np.array(ix.scheme), has_outside=np.array(ix.has_outside),
             n_obs=np.array(ix.n_obs))
    old = CorpusIndex.load(tmp_path / "old.npz")
    assert old.hashing == "sha1" and not old.current
