"""Each crowd worker's strict spans against the experts (the report's ``span_vs_expert``).

Oracles: a hand-worked corpus, and a brute force kept here: each worker's spans decoded document by document
with a Python loop (the conlleval rule), as Python sets of (document, start, end) against the expert
reference's, on the expert documents the worker labelled; Clopper-Pearson bounds from ``scipy.stats.beta``.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import beta

from crowdqa.aggregation.corpus import MISSING, Corpus, entity_type
from crowdqa.quality.references import reference_labels
from crowdqa.quality.report import format_report
from tests.quality.test_report import build_report, random_corpus

BIO = ["O", "B-X", "I-X", "B-Y", "I-Y"]
IO = ["O", "X", "Y"]


def _python_spans(names: list[str]) -> list[tuple[int, int]]:
    """(first, last) token ranges of one document's labels: conlleval's rule, one token at a time."""
    spans, start, kind = [], None, None
    for i, name in enumerate([*names, "O"]):
        t = None if name == "O" else entity_type(name)
        if start is not None and (t != kind or name.startswith("B-")):
            spans.append((start, i))
            start = None
        if t is not None and start is None:
            start, kind = i, t
    return spans


def _brute_force(corpus: Corpus, reference: str) -> list[tuple[int, int, int, int] | None]:
    """Each annotator's (tp, fp, fn, documents) of strict spans against the reference; None for experts and
    for a worker with no expert document."""
    ref = reference_labels(corpus, rule=reference)
    names = corpus.class_names
    labels: dict[tuple[int, int], int] = {}
    for t, w, lab in zip(corpus.token.tolist(), corpus.worker.tolist(), corpus.label.tolist(), strict=True):
        labels[w, t] = lab
    out = []
    for w in range(corpus.n_workers):
        docs = sorted({int(corpus.token_doc[t]) for (v, t) in labels if v == w and ref[t] != MISSING})
        if corpus.worker_roles[w] != "crowd" or not docs:
            out.append(None)
            continue
        mine, gold = set(), set()
        for d in docs:
            toks = list(range(int(corpus.doc_start[d]), int(corpus.doc_start[d + 1])))
            for side, labs in ((mine, [labels[w, t] for t in toks]), (gold, [int(ref[t]) for t in toks])):
                for a, b in _python_spans([names[x] for x in labs]):
                    side.add((d, int(corpus.token_start[toks[a]]), int(corpus.token_end[toks[b - 1]])))
        out.append((len(mine & gold), len(mine - gold), len(gold - mine), len(docs)))
    return out


def _clopper_pearson(k: int, n: int) -> list[float] | None:
    if n == 0:
        return None
    return [0.0 if k == 0 else float(beta.ppf(0.025, k, n - k + 1)),
            1.0 if k == n else float(beta.ppf(0.975, k + 1, n - k))]


def _check(corpus: Corpus, *, reference: str = "union", n_boot: int = 20, min_boot_docs: int = 2) -> dict:
    agg = np.random.default_rng(0).integers(0, corpus.n_classes, corpus.n_tokens)
    rep = build_report(corpus, agg, method="mv", experts_used_in_fit=False, reference=reference, n_boot=n_boot,
                       min_boot_docs=min_boot_docs)
    for row, want in zip(rep["workers"], _brute_force(corpus, reference), strict=True):
        got = row["span_vs_expert"]
        if want is None:
            assert got is None, row["annotator"]
            continue
        tp, fp, fn, docs = want
        assert (got["tp"], got["fp"], got["fn"], got["documents"]) == want, row["annotator"]
        p = tp / (tp + fp) if tp + fp else None
        r = tp / (tp + fn) if tp + fn else None
        f = 2 * tp / (2 * tp + fp + fn) if tp + fp + fn else None
        assert got["precision"] == pytest.approx(p) and got["recall"] == pytest.approx(r)
        assert got["f1"] == pytest.approx(f)
        for ci, want_ci in ((got["precision_ci"], _clopper_pearson(tp, tp + fp)),
                            (got["recall_ci"], _clopper_pearson(tp, tp + fn))):
            assert (ci is None) == (want_ci is None) and (ci is None or ci == pytest.approx(want_ci, abs=1e-9))
        assert got["tokens"] is None and got["accuracy"] is None
        if docs < min_boot_docs or n_boot == 0:
            assert got["f1_ci"] is None
        elif got["f1_ci"] is not None:
            assert 0.0 <= got["f1_ci"][0] <= got["f1_ci"][1] <= 1.0
        # vs_expert (tokens) is on the same documents
        assert row["vs_expert"]["documents"] == docs
    return rep


def _corpus(label_rows: dict[str, dict[int, list[int]]], lengths: list[int], *, classes: list[str] = BIO,
            experts: tuple[str, ...] = ("e",)) -> Corpus:
    """A corpus from {annotator: {document: labels}}; tokens of 1-2 characters one space apart."""
    tok_len = [1 + (i % 2) for i in range(sum(lengths))]
    starts, ends, texts, at = [], [], [], 0
    for n in lengths:
        pos, parts = 0, []
        for k in range(at, at + n):
            starts.append(pos)
            ends.append(pos + tok_len[k])
            parts.append("x" * tok_len[k])
            pos += tok_len[k] + 1
        texts.append(" ".join(parts))
        at += n
    doc_start = np.concatenate([[0], np.cumsum(lengths)])
    ids = sorted(label_rows)
    rows = sorted((int(doc_start[d]) + i, ids.index(a), lab)
                  for a in ids for d, labs in label_rows[a].items() for i, lab in enumerate(labs))
    token, worker, label = (np.array([r[i] for r in rows], dtype=np.int64) for i in range(3))
    return Corpus.from_arrays(token=token, worker=worker, label=label, doc_lengths=lengths, token_start=starts,
                              token_end=ends, doc_ids=[f"d{i}" for i in range(len(lengths))], texts=texts,
                              worker_ids=ids, worker_roles=["expert" if a in experts else "crowd" for a in ids],
                              class_names=classes)


def test_hand_worked_worker_spans():
    """Hand-worked: worker a has 2 of 4 spans right on d0, d1 (P 0.5, R 2/3); b labels no expert document."""
    c = _corpus({
        "e": {0: [1, 2, 0, 1], 1: [0, 1, 2]},
        "a": {0: [1, 2, 0, 2], 1: [0, 1, 1], 2: [1, 1]},  # d0: I after O starts a span; d1: two B- spans
        "b": {2: [0, 3]},
    }, [4, 3, 2])
    rep = _check(c)
    a, b, e = (next(w for w in rep["workers"] if w["annotator"] == x) for x in "abe")
    s = a["span_vs_expert"]
    assert (s["tp"], s["fp"], s["fn"], s["documents"]) == (2, 2, 1, 2)
    assert (s["precision"], s["recall"], s["f1"]) == pytest.approx((0.5, 2 / 3, 4 / 7))
    assert b["span_vs_expert"] is None and b["vs_expert"] is None
    assert e["span_vs_expert"] is None


def test_strict_spans_ignore_the_type():
    """Strict: the same start and length, of any type (the aggregate's span_location); a longer span is wrong."""
    c = _corpus({"e": {0: [1, 2, 0, 3]}, "a": {0: [3, 4, 0, 3]}, "b": {0: [1, 0, 0, 3]}}, [4])
    rep = _check(c)
    got = {w["annotator"]: w["span_vs_expert"] for w in rep["workers"]}
    assert (got["a"]["tp"], got["a"]["fp"], got["a"]["fn"]) == (2, 0, 0)
    assert (got["b"]["tp"], got["b"]["fp"], got["b"]["fn"]) == (1, 1, 1)


@pytest.mark.parametrize("reference", ["union", "majority", "e1"])
@pytest.mark.parametrize("bio", [False, True])
def test_worker_spans_brute_force(seed, reference, bio):
    """Oracle: the brute force on the report tests' random corpora (experts on half the documents)."""
    c = random_corpus(seed, n_docs=16, n_crowd=6, n_experts=2, bio=bio)
    _check(c, reference=reference)


def test_categorical_and_expertless_reports_have_no_worker_spans():
    """No outside class, or no expert: every span_vs_expert is null."""
    c = _corpus({"a": {0: [1, 0], 1: [2]}, "b": {0: [1, 1]}}, [2, 1], experts=())
    rep = _check(c)
    assert [w["span_vs_expert"] for w in rep["workers"]] == [None, None]
    cat = Corpus.from_arrays(token=[0, 0, 0, 1, 1], worker=[0, 1, 2, 0, 2], label=[0, 1, 1, 2, 2],
                             doc_lengths=[1, 1], token_start=[0, 0], token_end=[1, 1], doc_ids=["i0", "i1"],
                             texts=["x", "y"], worker_ids=["a", "b", "e"], worker_roles=["crowd", "crowd", "expert"],
                             class_names=["cat", "dog", "eel"])
    rep = build_report(cat, np.array([1, 2]), method="mv", experts_used_in_fit=False, n_boot=0)
    assert rep["kind"] == "categorical" and [w["span_vs_expert"] for w in rep["workers"]] == [None] * 3


@st.composite
def _small_corpora(draw):
    classes = draw(st.sampled_from([BIO, IO, ["O", "P"]]))
    n_docs = draw(st.integers(1, 5))
    lengths = draw(st.lists(st.integers(0, 6), min_size=n_docs, max_size=n_docs))  # 0: a document without tokens
    n_crowd = draw(st.integers(1, 4))
    n_experts = draw(st.integers(0, 2))
    names = [f"c{i}" for i in range(n_crowd)] + [f"e{i}" for i in range(n_experts)]
    rows: dict[str, dict[int, list[int]]] = {a: {} for a in names}
    for d, n in enumerate(lengths):
        on = draw(st.lists(st.sampled_from(names), min_size=1, unique=True))
        for a in on:
            rows[a][d] = draw(st.lists(st.integers(0, len(classes) - 1), min_size=n, max_size=n))
    rows = {a: r for a, r in rows.items() if r}
    return _corpus(rows, lengths, classes=classes, experts=tuple(a for a in rows if a.startswith("e")))


@settings(max_examples=60, deadline=None)
@given(c=_small_corpora(), reference=st.sampled_from(["union", "majority"]))
def test_worker_spans_brute_force_on_random_small_corpora(c, reference):
    """Oracle: the brute force, on any small corpus (workers with and without expert documents, documents
    without tokens)."""
    _check(c, reference=reference, min_boot_docs=2)


def test_table_sorts_workers_by_span_f1():
    """The terminal table's span_f1 key orders by span_vs_expert's F1, worst first, workers without one last;
    a categorical report refuses it."""
    c = _corpus({
        "e": {0: [1, 2, 0, 1], 1: [0, 1, 2]},
        "a": {0: [1, 2, 0, 2], 1: [0, 1, 1]},
        "b": {0: [1, 2, 0, 1], 1: [0, 1, 2]},
        "c": {0: [0, 0, 0, 0], 1: [0, 1, 2]},
        "d": {2: [1, 1]},
    }, [4, 3, 2])
    rep = build_report(c, np.zeros(c.n_tokens, dtype=np.int64), method="mv", experts_used_in_fit=False, n_boot=0)
    f1 = {w["annotator"]: (w["span_vs_expert"] or {}).get("f1") for w in rep["workers"]}
    assert f1 == pytest.approx({"a": 4 / 7, "b": 1.0, "c": 0.5, "d": None, "e": None})
    table = format_report(rep, sort="span_f1").splitlines()
    head = next(i for i, line in enumerate(table) if "spanF1(exp)" in line)
    assert [line.split()[0] for line in table[head + 1:head + 6]] == ["c", "a", "b", "d", "e"]
    assert "0.571" in table[head + 2]
    cat = Corpus.from_arrays(token=[0, 0], worker=[0, 1], label=[0, 1], doc_lengths=[1], token_start=[0],
                             token_end=[1], doc_ids=["i"], texts=["x"], worker_ids=["a", "e"],
                             worker_roles=["crowd", "expert"], class_names=["cat", "dog"])
    cat_rep = build_report(cat, np.array([1]), method="mv", experts_used_in_fit=False, n_boot=0)
    with pytest.raises(ValueError, match="sort must be one of f1, precision"):
        format_report(rep, sort="span")
    with pytest.raises(ValueError, match="for categorical answers, found 'span_f1'"):
        format_report(cat_rep, sort="span_f1")
