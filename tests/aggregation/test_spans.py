"""Tests for crowdqa.aggregation.spans.decode_spans."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from crowdqa.aggregation.corpus import MISSING, Corpus, entity_type
from crowdqa.aggregation.spans import SpanArray, decode_spans


def _corpus(doc_lengths: list[int], class_names: list[str]) -> Corpus:
    """Documents of single-letter tokens separated by one space."""
    starts, ends, texts = [], [], []
    for n in doc_lengths:
        starts.extend(range(0, 2 * n, 2))
        ends.extend(range(1, 2 * n, 2))
        texts.append(" ".join("x" * n))
    return Corpus.from_arrays(
        token=[], worker=[], label=[], doc_lengths=doc_lengths, token_start=starts, token_end=ends,
        doc_ids=[f"d{i}" for i in range(len(doc_lengths))], texts=texts, worker_ids=[], worker_roles=[],
        class_names=class_names,
    )


def _conlleval_spans(labels, corpus: Corpus) -> list[tuple[int, int, int]]:
    """Naive per-token decoder written from conlleval's start/end-of-chunk rules (the oracle)."""
    names = corpus.class_names
    types = {t: i + 1 for i, t in enumerate(corpus.entity_types)}
    out = []
    for d in range(corpus.n_docs):
        s, e = int(corpus.doc_start[d]), int(corpus.doc_start[d + 1])
        cur = None  # (first, type)
        prev_type = None
        for i in range(s, e):
            lab = int(labels[i])
            name = "O" if lab == MISSING else names[lab]
            t = None if name == "O" else entity_type(name)
            begins = t is not None and (name.startswith("B-") or t != prev_type)
            if cur is not None and (t != cur[1] or begins):
                out.append((cur[0], i, types[cur[1]]))
                cur = None
            if begins:
                cur = (i, t)
            prev_type = t
        if cur is not None:
            out.append((cur[0], e, types[cur[1]]))
    return out


def test_bio_rules_by_hand():
    """Hand-worked oracle: B-X I-X | I-X after O | I-Y after I-X | B-X B-X."""
    c = _corpus([9], ["O", "B-X", "I-X", "B-Y", "I-Y"])
    lab = np.array([1, 2, 0, 2, 4, 1, 1, -1, 2])
    s = decode_spans(lab, c)
    assert list(zip(s.first.tolist(), s.last.tolist(), s.type.tolist(), strict=True)) == [
        (0, 2, 1), (3, 4, 1), (4, 5, 2), (5, 6, 1), (6, 7, 1), (8, 9, 1)
    ]
    assert s.start.tolist() == [0, 6, 8, 10, 12, 16]
    assert s.end.tolist() == [3, 7, 9, 11, 13, 17]
    assert np.all(s.doc == 0)


def test_io_runs_and_document_boundary():
    """Hand-worked oracle: IO runs split at a type change and at a document boundary."""
    c = _corpus([3, 2], ["O", "A", "B"])
    s = decode_spans(np.array([1, 1, 2, 2, 2]), c)
    assert s.first.tolist() == [0, 2, 3]
    assert s.last.tolist() == [2, 3, 5]
    assert s.doc.tolist() == [0, 0, 1]
    assert s.type.tolist() == [1, 2, 2]


def test_empty_and_errors():
    c = _corpus([3], ["O", "A"])
    assert len(decode_spans(np.zeros(3, dtype=np.int64), c)) == 0
    with pytest.raises(ValueError, match=r"shape \(3,\), found \(2,\)"):
        decode_spans(np.zeros(2, dtype=np.int64), c)
    with pytest.raises(ValueError, match=r"in \[-1, 2\), found 5 at token 1"):
        decode_spans(np.array([0, 5, 0]), c)
    with pytest.raises(ValueError, match="int64 array"):
        SpanArray(doc=np.zeros(1), first=np.zeros(1, np.int64), last=np.zeros(1, np.int64),
                  type=np.zeros(1, np.int64), start=np.zeros(1, np.int64), end=np.zeros(1, np.int64))


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.integers(0, 6), min_size=1, max_size=5),
    st.sampled_from([["O", "A"], ["O", "A", "B"], ["O", "B-X", "I-X", "B-Y", "I-Y"]]),
    st.data(),
)
def test_matches_naive_decoder(doc_lengths, class_names, data):
    """Oracle: the naive per-token conlleval-rule decoder above, on random labels (with MISSING)."""
    c = _corpus(doc_lengths, class_names)
    lab = np.array(
        data.draw(st.lists(st.integers(-1, len(class_names) - 1), min_size=c.n_tokens, max_size=c.n_tokens)),
        dtype=np.int64,
    )
    s = decode_spans(lab, c)
    got = list(zip(s.first.tolist(), s.last.tolist(), s.type.tolist(), strict=True))
    assert got == _conlleval_spans(lab, c)
    assert np.array_equal(s.doc, c.token_doc[s.first])
    assert np.array_equal(s.start, c.token_start[s.first])
    assert np.array_equal(s.end, c.token_end[s.last - 1])
