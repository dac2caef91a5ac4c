"""Tests for crowdqa.ingest.aggregate_input (an aggregate read back onto a corpus' tokens) and the one
span-to-token alignment rule it shares with the upload readers (crowdqa.ingest.build.span_token_ranges)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from crowdqa.aggregation.corpus import Corpus
from crowdqa.aggregation.spans import decode_spans
from crowdqa.ingest.aggregate_input import labels_from_corpus, labels_from_spans, read_aggregate
from crowdqa.ingest.build import span_token_ranges
from crowdqa.ingest.categorical import read_categorical
from crowdqa.ingest.writers import write_labels
from tests.quality.test_report import random_corpus


@pytest.mark.parametrize("bio", [False, True])
def test_aggregate_roundtrip_through_writers(tmp_path, bio):
    """Oracle: crowdqa.ingest.writers' output read back gives the labels written (decoded spans for BIO)."""
    c = random_corpus(5, bio=bio)
    rng = np.random.default_rng(0)
    lab = rng.integers(0, c.n_classes, c.n_tokens)
    # Writers keep spans, not tags: compare after a canonical decode -> re-encode.
    canon = labels_from_spans(c, **_span_kwargs(c, lab))
    for fmt, name in (("spans-jsonl", "a.jsonl"), ("conll", "a.conll"), ("ebm-nlp", "ebm")):
        write_labels(canon, c, tmp_path / name, format=fmt)
        back = read_aggregate(tmp_path / name, c, format=fmt)
        if fmt == "ebm-nlp":
            # One type number per token: adjacent spans of one type cannot be told apart, so compare types.
            back, want = c.class_entity[back], c.class_entity[canon]
        else:
            want = canon
        assert np.array_equal(back, want), fmt


def _span_kwargs(c: Corpus, lab: np.ndarray) -> dict:
    s = decode_spans(lab, c)
    return {"doc": s.doc, "start": s.start, "end": s.end, "type_index": s.type}


def test_labels_from_spans_overlap_rule():
    """Hand-worked: a token is inside a span if the character ranges overlap (ends exclusive)."""
    c = random_corpus(6, n_docs=1)  # tokens at 0, 2, 4, ... of width 1
    out = labels_from_spans(c, doc=np.array([0]), start=np.array([1]), end=np.array([3]), type_index=np.array([1]))
    assert out[:3].tolist() == [0, 1, 0]  # [1, 3) overlaps only token [2, 3)
    out = labels_from_spans(c, doc=np.array([0]), start=np.array([0]), end=np.array([3]), type_index=np.array([1]))
    assert out[:3].tolist() == [1, 1, 0]


def test_labels_from_corpus_and_errors(tmp_path):
    c = random_corpus(7)
    one = c.select_workers([0])
    lab = labels_from_corpus(one, c)
    assert np.array_equal(lab, c.labels_of(0))
    with pytest.raises(ValueError, match="has 8 annotators"):
        labels_from_corpus(c, c)
    (tmp_path / "bad.jsonl").write_text('{"doc_id": "nope", "start": 0, "end": 1, "label": "P"}\n')
    with pytest.raises(ValueError, match="bad.jsonl:1: document 'nope' is not in the corpus"):
        read_aggregate(tmp_path / "bad.jsonl", c, format="spans-jsonl")
    with pytest.raises(ValueError, match="aggregate format must be one of"):
        read_aggregate(tmp_path / "bad.jsonl", c, format="xml")
    doc, label = c.doc_ids[0], next(n for n in c.class_names if n != "O").split("-")[-1]
    (tmp_path / "bad.jsonl").write_text(f'{{"doc_id": "{doc}", "start": 3, "end": 1, "label": "{label}"}}\n')
    with pytest.raises(ValueError, match=r"bad.jsonl:1: span \[3, 1\) is empty: its end must be after its start"):
        read_aggregate(tmp_path / "bad.jsonl", c, format="spans-jsonl")
    # an extra field holding a raw U+2028 (valid JSON) keeps its line whole: the bad row is line 2
    rows = [{"note": "a\u2028b", "doc_id": doc, "start": 0, "end": 1, "label": label},
            {"doc_id": "nope", "start": 0, "end": 1, "label": "P"}]
    (tmp_path / "bad.jsonl").write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows),
                                        encoding="utf-8")
    with pytest.raises(ValueError, match="bad.jsonl:2: document 'nope' is not in the corpus"):
        read_aggregate(tmp_path / "bad.jsonl", c, format="spans-jsonl")


def test_categorical_csv_written_with_formula_like_ids_reads_back(tmp_path):
    """Regression (issue 8): ids starting with = + - @ are escaped on write; the reader undoes it.

    Oracle: the labels given to crowdqa.ingest.writers.write_labels."""
    p = tmp_path / "c.csv"
    p.write_text("item,annotator,label\n=cmd|x,u,@yes\n'q,u,-no\n+1,u,@yes\n")
    c = read_categorical(p)
    labels = c.labels_of(0)
    write_labels(labels, c, tmp_path / "out.csv", format="categorical-csv")
    assert "'=cmd|x" in (tmp_path / "out.csv").read_text()
    assert read_aggregate(tmp_path / "out.csv", c, format="categorical-csv").tolist() == labels.tolist()


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_span_token_ranges_is_the_overlap_rule(data):
    """Oracle: enumeration of every (span, token) pair of a document: a token is inside a span iff
    token_start < span_end and span_start < token_end; the covered tokens are one run [first, last)."""
    n_docs = data.draw(st.integers(1, 3))
    texts, starts, ends = [], [], []
    for _ in range(n_docs):
        words = data.draw(st.lists(st.integers(1, 4), max_size=5))
        gaps = data.draw(st.lists(st.integers(1, 3), min_size=len(words) + 1, max_size=len(words) + 1))
        pos, s, e = gaps[0], [], []
        for w, g in zip(words, gaps[1:], strict=True):
            s.append(pos)
            e.append(pos + w)
            pos += w + g
        texts.append("x" * pos)
        starts.append(s)
        ends.append(e)
    lengths = np.array([len(s) for s in starts], dtype=np.int64)
    doc = data.draw(st.lists(st.integers(0, n_docs - 1), min_size=1, max_size=6))
    spans = []
    for d in doc:
        a = data.draw(st.integers(0, len(texts[d]) - 1))
        spans.append((d, a, data.draw(st.integers(a + 1, len(texts[d])))))
    first, last = span_token_ranges(
        texts=texts, doc_lengths=lengths, token_start=np.array(sum(starts, []), dtype=np.int64),
        token_end=np.array(sum(ends, []), dtype=np.int64), span_doc=np.array([d for d, _, _ in spans]),
        span_start=np.array([a for _, a, _ in spans]), span_end=np.array([b for _, _, b in spans]))
    base = np.concatenate([[0], np.cumsum(lengths)])
    for k, (d, a, b) in enumerate(spans):
        inside = [base[d] + t for t in range(lengths[d]) if starts[d][t] < b and a < ends[d][t]]
        if inside:
            assert (first[k], last[k]) == (inside[0], inside[-1] + 1)
        else:
            assert first[k] >= last[k]
