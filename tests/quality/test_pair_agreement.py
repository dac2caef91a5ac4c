"""Tests for the pair-code helpers of crowdqa.quality.pair_agreement (the brute-force oracles of
pair_confusions itself are in test_agreement.py).

Oracles: ``np.unique`` with counts and a Python dict lookup; the dense ``labels_of`` loop for a
corpus whose pair codes do not fit int32 (more than 46,340 annotator ids).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from crowdqa.aggregation.corpus import Corpus
from crowdqa.quality.pair_agreement import _code_numbers, _frequent_codes, pair_confusions


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 30), max_size=60), st.integers(1, 4), st.booleans())
def test_frequent_codes_match_unique(values, min_count, int32):
    """Oracle: np.unique(return_counts=True), filtered by the count."""
    code = np.array(values, dtype=np.int32 if int32 else np.int64)
    uniq, n = np.unique(code, return_counts=True)
    got_uniq, got_n = _frequent_codes(code, min_count)
    assert got_uniq.tolist() == uniq[n >= min_count].tolist()
    assert got_n.tolist() == n[n >= min_count].tolist()


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(-1, 40), max_size=60), st.lists(st.integers(0, 40), max_size=10),
       st.sampled_from([41, 5 * 10**7, 10**12]))
def test_code_numbers_match_a_dict(values, kept, n_codes):
    """Oracle: a dict from kept code to position; the position table (41 codes), the bit table (5e7
    codes) and the binary search (a code space too large for a table) find exactly the rows whose code
    is kept (not negative or absent ones), in row order, with their positions."""
    code = np.array(values, dtype=np.int64)
    uniq = np.unique(np.array(kept, dtype=np.int64))
    where = {c: i for i, c in enumerate(uniq.tolist())}
    rows, numbers = _code_numbers(code, uniq, n_codes)
    got = np.full(code.shape[0], -1)
    got[rows] = numbers
    assert got.tolist() == [where.get(c, -1) if c >= 0 else -1 for c in values]
    assert rows.tolist() == sorted(rows.tolist())


@pytest.mark.parametrize("min_documents", [1, 2])
@pytest.mark.parametrize("max_length", [3, 1], ids=["documents", "one-token"])
def test_int64_codes_beyond_46340_annotators(seed, min_documents, max_length):
    """Oracle: dense labels_of counts for every pair, with 50,000 annotator ids (pair codes past int32, so
    the int64 codes and the searched lookup run). One-token documents with so many ids (a table of every
    pair's cells far larger than the rows) take the sorted codes' path with each row's joint label."""
    rng = np.random.default_rng(seed)
    n_ids, used = 50_000, np.sort(rng.choice(50_000, 8, replace=False))
    lengths = rng.integers(1, max_length + 1, 30)
    token, worker, label = [], [], []
    start = np.concatenate([[0], np.cumsum(lengths)])
    for d in range(30):
        who = np.sort(rng.choice(used, 3, replace=False))
        for t in range(start[d], start[d + 1]):
            token += [t] * 3
            worker += who.tolist()
            label += rng.integers(0, 3, 3).tolist()
    n_tokens = int(start[-1])
    c = Corpus.from_arrays(
        token=token, worker=worker, label=label, doc_lengths=lengths, token_start=np.zeros(n_tokens, int),
        token_end=np.ones(n_tokens, int), doc_ids=[f"d{d}" for d in range(30)], texts=["x" * int(n) for n in lengths],
        worker_ids=[f"w{i}" for i in range(n_ids)], worker_roles=["crowd"] * n_ids, class_names=["O", "A", "B"])
    got = _as_dict(pair_confusions(c, min_documents=min_documents))
    assert got == _by_loop(c, used, min_documents)
    assert list(got) == sorted(got)  # pairs in (a, b) order


def _as_dict(pc) -> dict:
    return {(int(a), int(b)): (cf.tolist(), int(d)) for a, b, cf, d in zip(pc.a, pc.b, pc.confusion, pc.documents,
                                                                           strict=True)}


def _by_loop(c: Corpus, annotators: np.ndarray, min_documents: int) -> dict:
    """The oracle: each pair of ``annotators`` from dense ``labels_of`` arrays, counted with ``np.add.at``."""
    want = {}
    for i, a in enumerate(annotators.tolist()):
        for b in annotators[i + 1:].tolist():
            la, lb = c.labels_of(a), c.labels_of(b)
            both = (la >= 0) & (lb >= 0)
            docs = len(set(c.token_doc[both].tolist()))
            if docs >= min_documents and docs:
                cm = np.zeros((c.n_classes, c.n_classes), dtype=int)
                np.add.at(cm, (la[both], lb[both]), 1)
                want[(a, b)] = (cm.tolist(), docs)
    return want


@pytest.mark.parametrize("min_documents", [1, 2, 3])
@pytest.mark.parametrize("crowd_only", [False, True])
def test_one_token_documents_match_brute_force(seed, min_documents, crowd_only):
    """Oracle: dense labels_of counts for every pair of a categorical corpus (one-token items, where the joint
    labels are taken with the pair codes), with and without an annotator subset."""
    from tests.quality.test_report import categorical_corpus

    c = categorical_corpus(seed, n_items=90, n_crowd=8)
    chosen = c.workers_with_role("crowd") if crowd_only else np.arange(c.n_workers)
    got = _as_dict(pair_confusions(c, annotators=chosen if crowd_only else None, min_documents=min_documents))
    want = _by_loop(c, chosen, min_documents)
    assert want and got == want
    assert list(got) == sorted(got)  # pairs in (a, b) order


def corpus_with_empty_documents(seed: int, lengths: list[int], *, n_workers: int = 4, n_classes: int = 3) -> Corpus:
    """Documents of the given token counts (0: a document without tokens, e.g. a whitespace-only text), each
    labelled on all its tokens by a random subset of at least two of ``n_workers`` annotators."""
    rng = np.random.default_rng(seed)
    starts = np.concatenate([[0], np.cumsum(lengths)])
    token, worker = [], []
    for d in range(len(lengths)):
        who = np.sort(rng.choice(n_workers, size=int(rng.integers(2, n_workers + 1)), replace=False))
        for t in range(int(starts[d]), int(starts[d + 1])):
            token += [t] * who.size
            worker += who.tolist()
    n_tokens = int(starts[-1])
    return Corpus.from_arrays(
        token=token, worker=worker, label=rng.integers(0, n_classes, len(token)), doc_lengths=lengths,
        token_start=np.zeros(n_tokens, int), token_end=np.ones(n_tokens, int),
        doc_ids=[f"d{d}" for d in range(len(lengths))], texts=["x" * max(n, 1) for n in lengths],
        worker_ids=[f"w{i}" for i in range(n_workers)], worker_roles=["crowd"] * n_workers,
        class_names=[f"c{k}" for k in range(n_classes)])


@pytest.mark.parametrize("lengths", [[0, 1, 2], [1, 2, 0], [2, 0, 1, 0], [0, 1, 1, 1], [3, 0, 0, 2, 1]],
                         ids=["first", "last", "middle-and-last", "one-token-and-empty", "many"])
@pytest.mark.parametrize("min_documents", [1, 2])
def test_documents_without_tokens(seed, lengths, min_documents):
    """Oracle: dense labels_of counts. A document without tokens (a whitespace-only text) has no annotators:
    it is no shared document, takes no other document's annotations (last: no index past the tokens), and
    does not make the other documents one-token ones (as many documents as tokens)."""
    c = corpus_with_empty_documents(seed, lengths)
    got = _as_dict(pair_confusions(c, min_documents=min_documents))
    assert got == _by_loop(c, np.arange(c.n_workers), min_documents)


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("per_item, max_cells", [(1, 1), (4, 1), (4, 50), (4, 600)])
def test_pair_kappas_in_class_blocks_equal_sklearn(seed, per_item, max_cells):
    """Issue 30 item 5: the report's pair kappas took every pair's K x K table at once (9.1 GiB for 1,225 pairs and
    1,000 classes); pair_kappas takes the classes in blocks. Oracle: sklearn's cohen_kappa_score on each pair's
    shared tokens (documents of several tokens, so the per-document blocks are exercised; one-token items too)."""
    from sklearn.metrics import cohen_kappa_score

    from crowdqa.quality.pair_agreement import pair_kappas

    rng = np.random.default_rng(seed)
    n_docs, n_workers, k = 40, 6, 9
    lengths = rng.integers(1, 5, size=n_docs) if per_item > 1 else np.ones(n_docs, dtype=np.int64)
    rows = []
    for d in range(n_docs):
        first = int(lengths[:d].sum())
        for w in sorted(rng.choice(n_workers, size=3, replace=False).tolist()):
            rows += [(first + t, w, int(rng.integers(0, k)) if rng.random() < 0.6 else 0) for t in range(lengths[d])]
    rows.sort()
    token, worker, label = (np.array(x) for x in zip(*rows, strict=True))
    n_tok = int(lengths.sum())
    corpus = Corpus.from_arrays(token=token, worker=worker, label=label, doc_lengths=lengths,
                                token_start=np.zeros(n_tok), token_end=np.ones(n_tok),
                                doc_ids=[f"d{d}" for d in range(n_docs)], texts=["x " * 4] * n_docs,
                                worker_ids=[f"w{w}" for w in range(n_workers)], worker_roles=["crowd"] * n_workers,
                                class_names=["O", *[f"c{i}" for i in range(1, k)]])
    got = pair_kappas(corpus, min_documents=2, max_cells=max_cells)
    assert got.a.size > 0
    for a, b, kappa, tokens in zip(got.a, got.b, got.kappa, got.tokens, strict=True):
        la, lb = corpus.labels_of(int(a)), corpus.labels_of(int(b))
        both = (la >= 0) & (lb >= 0)
        assert tokens == both.sum()
        want = cohen_kappa_score(la[both], lb[both])
        assert kappa == pytest.approx(want, abs=1e-12) or (np.isnan(kappa) and np.isnan(want))


def test_memory_estimate_counts_the_cells_pair_kappas_counts():
    from crowdqa.aggregation.memory import KAPPA_CELLS as ESTIMATED
    from crowdqa.quality.pair_agreement import KAPPA_CELLS

    assert ESTIMATED == KAPPA_CELLS
