"""Tests for crowdqa.quality.span_metrics, crowdqa.quality.segmentation and crowdqa.quality.sample_size."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import beta
from sklearn.metrics import confusion_matrix

from crowdqa.aggregation.corpus import Corpus
from crowdqa.aggregation.spans import decode_spans
from crowdqa.quality.metrics import token_prf
from crowdqa.quality.sample_size import binomial_sample_size, slice_sample_size
from crowdqa.quality.segmentation import (
    b2_similarity,
    boundary_similarity,
    boundary_string_from_masses,
    boundary_string_from_sections,
)
from crowdqa.quality.span_metrics import (
    CharSpans,
    dedupe_by_start,
    entity_level_scores,
    instance_prf,
    nervaluate_scores,
    seqeval_prf,
    span_confusion,
)

BIO = ["O", "B-X", "I-X", "B-Y", "I-Y"]


def _corpus(n: int, class_names=BIO) -> Corpus:
    return Corpus.from_arrays(
        token=[], worker=[], label=[], doc_lengths=[n], token_start=range(0, 2 * n, 2), token_end=range(1, 2 * n, 2),
        doc_ids=["d"], texts=[" ".join("x" * n)], worker_ids=[], worker_roles=[], class_names=class_names,
    )


def _naive_nervaluate(true, pred):
    """Oracle: nervaluate's per-entity loop, transcribed literally (lists of (type, first, last))."""
    ev = {s: dict.fromkeys(("correct", "incorrect", "partial", "missed", "spurious"), 0)
          for s in ("strict", "exact", "partial", "ent_type")}
    overlapped = []
    for p in pred:
        if p in true:
            overlapped.append(p)
            for s in ev:
                ev[s]["correct"] += 1
            continue
        found = False
        for t in true:
            if t[1] == p[1] and t[2] == p[2]:  # same bounds, other type
                ev["strict"]["incorrect"] += 1
                ev["ent_type"]["incorrect"] += 1
                ev["partial"]["correct"] += 1
                ev["exact"]["correct"] += 1
            elif t[1] < p[2] and p[1] < t[2]:
                if t[0] == p[0]:
                    ev["strict"]["incorrect"] += 1
                    ev["ent_type"]["correct"] += 1
                    ev["partial"]["partial"] += 1
                    ev["exact"]["incorrect"] += 1
                else:
                    ev["strict"]["incorrect"] += 1
                    ev["ent_type"]["incorrect"] += 1
                    ev["partial"]["partial"] += 1
                    ev["exact"]["incorrect"] += 1
            else:
                continue
            overlapped.append(t)
            found = True
            break
        if not found:
            for s in ev:
                ev[s]["spurious"] += 1
    for t in true:
        if t not in overlapped:
            for s in ev:
                ev[s]["missed"] += 1
    return ev


tag_lists = st.integers(1, 14).flatmap(
    lambda n: st.tuples(st.lists(st.integers(0, 4), min_size=n, max_size=n),
                        st.lists(st.integers(0, 4), min_size=n, max_size=n)))


@settings(max_examples=200, deadline=None)
@given(tag_lists)
def test_nervaluate_matches_naive_loop(pair):
    """Oracle: the literal nervaluate loop above, on random BIO sequences decoded by the conlleval rule."""
    c = _corpus(len(pair[0]))
    t = decode_spans(np.array(pair[0]), c)
    p = decode_spans(np.array(pair[1]), c)
    got = nervaluate_scores(t, p)
    as_list = lambda s: list(zip(s.type.tolist(), s.first.tolist(), s.last.tolist(), strict=True))  # noqa: E731
    exp = _naive_nervaluate(as_list(t), as_list(p))
    for scheme, counts in exp.items():
        for k, v in counts.items():
            assert got[scheme][k] == v, (scheme, k)
        for k in ("precision", "recall", "f1"):
            v = got[scheme][k]
            assert np.isnan(v) or 0.0 <= v <= 1.0
    # a perfect copy scores 1 in every scheme (when there is an entity)
    if len(t):
        same = nervaluate_scores(t, t)
        assert all(same[s]["f1"] == 1.0 for s in same)


@settings(max_examples=150, deadline=None)
@given(tag_lists)
def test_seqeval_default_equals_decoded_spans(pair):
    """Oracle: seqeval's default chunking equals decode_spans (conlleval rule) on BIO tags; swap swaps P and R."""
    c = _corpus(len(pair[0]))
    true = [[BIO[i] for i in pair[0]]]
    pred = [[BIO[i] for i in pair[1]]]
    s = seqeval_prf(true, pred)
    t = decode_spans(np.array(pair[0]), c)
    p = decode_spans(np.array(pair[1]), c)
    ts = set(zip(t.first.tolist(), t.last.tolist(), t.type.tolist(), strict=True))
    ps = set(zip(p.first.tolist(), p.last.tolist(), p.type.tolist(), strict=True))
    assert (s.tp, s.fp, s.fn) == (len(ts & ps), len(ps - ts), len(ts - ps))
    r = seqeval_prf(pred, true)
    assert (r.precision, r.recall) == pytest.approx((s.recall, s.precision), nan_ok=True)
    # Strict IOB2 chunks (B-X I-X*) are default chunks too, so strict keeps a subset on each side.
    strict = seqeval_prf(true, pred, mode="strict")
    assert strict.tp <= s.tp
    assert strict.tp + strict.fp <= s.tp + s.fp and strict.tp + strict.fn <= s.tp + s.fn


def test_seqeval_errors():
    with pytest.raises(ValueError, match="same lengths"):
        seqeval_prf([["O"]], [["O", "O"]])
    with pytest.raises(ValueError, match="found 'X-PER'"):
        seqeval_prf([["X-PER"]], [["O"]])


def test_instance_scores_hand_worked():
    """Hand-worked: strict needs the same start and length; relaxed allows +-2; later duplicates replace."""
    g = CharSpans.from_lists([0, 0, 1], [0, 10, 5], [4, 20, 9], [1, 1, 2])
    p = CharSpans.from_lists([0, 0, 1, 1], [0, 10, 5, 5], [4, 23, 7, 9], [1, 1, 1, 1])
    # doc 1 has two predictions starting at 5: the later one (end 9, type 1) is kept.
    d = dedupe_by_start(p)
    assert d.end.tolist() == [4, 23, 9]
    s = instance_prf(g, p)
    assert (s.tp, s.fp, s.fn) == (2, 1, 1)
    r = instance_prf(g, p, mode="relaxed", tolerance=3)
    assert (r.tp, r.fp, r.fn) == (3, 0, 0)
    t = instance_prf(g, p, mode="type")
    assert (t.tp, t.fp, t.fn) == (1, 2, 2)
    with pytest.raises(ValueError, match="mode must be one of"):
        instance_prf(g, p, mode="loose")


@settings(max_examples=100, deadline=None)
@given(tag_lists)
def test_instance_properties(pair):
    """Properties: swapping swaps P and R; a copy scores 1; relaxed >= strict >= type in tp."""
    c = _corpus(len(pair[0]))
    t, p = decode_spans(np.array(pair[0]), c), decode_spans(np.array(pair[1]), c)
    a, b = instance_prf(t, p), instance_prf(p, t)
    assert (a.tp, a.fp, a.fn) == (b.tp, b.fn, b.fp)
    assert instance_prf(t, p, mode="relaxed").tp >= a.tp >= instance_prf(t, p, mode="type").tp
    if len(t):
        assert instance_prf(t, t).f1 == 1.0


def test_span_confusion_matches_sklearn():
    """Oracle: sklearn.metrics.confusion_matrix(actual, predicted), transposed to rows = predicted."""
    rng = np.random.default_rng(5)
    n = 60
    doc = rng.integers(0, 3, n)
    start = rng.integers(0, 30, n) * 10
    end = start + rng.integers(1, 5, n)
    key = np.unique(np.stack([doc, start, end], 1), axis=0)
    gt, pt = rng.integers(0, 4, key.shape[0]), rng.integers(0, 4, key.shape[0])  # 0 = span absent on that side
    g = CharSpans.from_lists(key[gt > 0, 0], key[gt > 0, 1], key[gt > 0, 2], gt[gt > 0])
    p = CharSpans.from_lists(key[pt > 0, 0], key[pt > 0, 1], key[pt > 0, 2], pt[pt > 0])
    m = span_confusion(g, p, n_types=3)
    both = (gt > 0) | (pt > 0)
    assert np.array_equal(m, confusion_matrix(gt[both], pt[both], labels=[0, 1, 2, 3]).T)
    e = entity_level_scores(m)
    assert e["tp"].tolist() == [int(np.sum((gt == k) & (pt == k))) for k in (1, 2, 3)]
    assert e["fp"].tolist() == [int(np.sum((pt == k) & (gt != k))) for k in (1, 2, 3)]


# ----------------------------------------------------------------------------- segmentation
@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(1, 6), min_size=1, max_size=6), st.data())
def test_boundary_similarity_properties(masses, data):
    """Properties: B of a copy is 1; B lies in [0, 1]; B is symmetric for one boundary type."""
    total = sum(masses)
    cuts = sorted(data.draw(st.sets(st.integers(1, total - 1), max_size=total - 1)) if total > 1 else set())
    other = np.diff([0, *cuts, total]).tolist()
    assert boundary_similarity(masses, masses) == 1.0
    b = boundary_similarity(masses, other)
    assert 0.0 <= b <= 1.0
    assert b == pytest.approx(boundary_similarity(other, masses))


def test_boundary_strings_and_b2_properties():
    """Boundary strings by hand; B2 of a copy is 1 and of a section-label disagreement is in [0, 1]."""
    assert boundary_string_from_masses([2, 3]).tolist() == [0, 2, 0, 0]
    s = boundary_string_from_sections(np.array([1, 1, 2, 2, 1]))
    assert s.tolist() == [2, 0, 4, 0, 2]
    assert b2_similarity(s, s) == 1.0
    other = boundary_string_from_sections(np.array([1, 1, 1, 2, 2]))
    assert 0.0 <= b2_similarity(other, s) <= 1.0
    with pytest.raises(ValueError, match="masses must be"):
        boundary_string_from_masses([0, 2])


# ----------------------------------------------------------------------------- sample size
def test_binomial_sample_size_loop_oracle():
    """Oracle: SLiCE's loop (n = 1, 2, ... with scipy beta quantiles), written plainly."""
    for p, w in [(0.8, 0.05), (0.5, 0.1), (0.97, 0.03), (0.0, 0.1)]:
        n = 0
        while True:
            n += 1
            x = round(n * p)
            lo = 0.0 if x == 0 else beta.ppf(0.025, x, n - x + 1)
            hi = 1.0 if x == n else beta.isf(0.025, x + 1, n - x)
            if hi - lo < 2 * w:
                break
        assert binomial_sample_size(p, half_width=w) == n


def test_slice_validation_and_sites():
    with pytest.raises(ValueError, match="precision must be in"):
        slice_sample_size(precision=1.0, recall=0.5, frequency=0.3, half_width=0.05)
    with pytest.raises(ValueError, match="sites must be"):
        slice_sample_size(precision=0.8, recall=0.5, frequency=0.3, half_width=0.05, sites=0)
    s = slice_sample_size(precision=0.8, recall=0.85, frequency=0.3, half_width=0.05, sites=4)
    assert s.documents == s.positives + s.negatives == s.tp + s.fp + s.tn + s.fn
    assert s.per_site["positives"] * 4 >= s.positives and s.per_site["negatives"] * 4 >= s.negatives


def test_token_prf_equals_nlpsandbox_token_score_on_full_coverage():
    """The NLP Sandbox token score (set match of tokens in spans) equals binary token P/R/F1 on covered tokens."""
    rng = np.random.default_rng(6)
    a, b = rng.integers(0, 2, 50), rng.integers(0, 2, 50)
    s = token_prf(a, b)
    ta, tb = set(np.flatnonzero(a).tolist()), set(np.flatnonzero(b).tolist())
    assert (s.tp, s.fp, s.fn) == (len(ta & tb), len(ta - tb), len(tb - ta))
