"""Tests for crowdqa.quality.report_agreement: the report's agreement block against scikit-learn, pair by pair.

The oracle walks the annotators' labels pair by pair in Python (which documents both labelled, their tokens) and
scores them with :func:`sklearn.metrics.cohen_kappa_score` and :func:`sklearn.metrics.f1_score`; the block counts
every pair at once from joint label tables.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score, f1_score

from crowdqa.aggregation.corpus import Corpus
from crowdqa.quality.report_agreement import agreement_block, expert_pairs

N_DOCS, DOC_LEN = 12, 5


def _corpus(n_crowd: int = 5, n_expert: int = 3, seed: int = 0) -> tuple[Corpus, dict[int, dict[int, np.ndarray]]]:
    """Random labels of three classes; each annotator labels a random half of the documents (an expert at least
    the first two, so every expert pair shares one). Returns the corpus and each annotator's labels by document."""
    rng = np.random.default_rng(seed)
    n_workers = n_crowd + n_expert
    by_worker: dict[int, dict[int, np.ndarray]] = {}
    token, worker, label = [], [], []
    for w in range(n_workers):
        docs = set(rng.choice(N_DOCS, size=N_DOCS // 2, replace=False).tolist())
        if w >= n_crowd:
            docs |= {0, 1}
        by_worker[w] = {}
        for d in sorted(docs):
            labels = rng.integers(0, 3, size=DOC_LEN)
            by_worker[w][d] = labels
            token.append(np.arange(d * DOC_LEN, (d + 1) * DOC_LEN))
            worker.append(np.full(DOC_LEN, w))
            label.append(labels)
    corpus = Corpus.from_arrays(
        token=np.concatenate(token), worker=np.concatenate(worker), label=np.concatenate(label),
        doc_lengths=np.full(N_DOCS, DOC_LEN), token_start=np.tile(np.arange(DOC_LEN) * 2, N_DOCS),
        token_end=np.tile(np.arange(DOC_LEN) * 2 + 1, N_DOCS), doc_ids=[f"d{d}" for d in range(N_DOCS)],
        texts=[" ".join("w" * DOC_LEN)] * N_DOCS, worker_ids=[f"w{w}" for w in range(n_workers)],
        worker_roles=["crowd"] * n_crowd + ["expert"] * n_expert, class_names=["O", "A", "B"])
    return corpus, by_worker


def _pair(by_worker, a: int, b: int) -> tuple[int, np.ndarray, np.ndarray]:
    """Documents both labelled, and their labels on those documents' tokens."""
    shared = sorted(set(by_worker[a]) & set(by_worker[b]))
    if not shared:
        return 0, np.array([], dtype=int), np.array([], dtype=int)
    return (len(shared), np.concatenate([by_worker[a][d] for d in shared]),
            np.concatenate([by_worker[b][d] for d in shared]))


def test_expert_pairs_are_sklearns_kappa_and_f1_of_every_pair():
    corpus, by_worker = _corpus()
    got = {(p["a"], p["b"]): p for p in expert_pairs(corpus)}
    experts = [5, 6, 7]
    assert set(got) == {(f"w{a}", f"w{b}") for a, b in itertools.combinations(experts, 2)}
    for a, b in itertools.combinations(experts, 2):
        _, la, lb = _pair(by_worker, a, b)
        entry = got[f"w{a}", f"w{b}"]
        assert entry["tokens"] == la.size
        assert entry["kappa"] == pytest.approx(cohen_kappa_score(la, lb))
        assert entry["f1"] == pytest.approx(f1_score(la > 0, lb > 0))  # positive: any class but O


def test_one_expert_has_no_pairs():
    corpus, _ = _corpus(n_expert=1)
    assert expert_pairs(corpus) == []


@pytest.mark.parametrize("min_pair_docs", [1, 3, 5])
def test_crowd_kappas_are_the_pairs_sharing_enough_documents(min_pair_docs):
    corpus, by_worker = _corpus(seed=3)
    block = agreement_block(corpus, min_pair_docs=min_pair_docs)
    expected = {}
    for a, b in itertools.combinations(range(5), 2):
        docs, la, lb = _pair(by_worker, a, b)
        if docs >= min_pair_docs:
            expected[f"w{a}", f"w{b}"] = (docs, la.size, cohen_kappa_score(la, lb))
    got = {(p["a"], p["b"]): (p["documents"], p["tokens"], p["kappa"]) for p in block["crowd_kappa"]}
    assert set(got) == set(expected)
    for key, (docs, tokens, kappa) in expected.items():
        assert got[key][:2] == (docs, tokens) and got[key][2] == pytest.approx(kappa)
    summary = block["crowd_kappa_summary"]
    kappas = [k for _, _, k in expected.values()]
    assert summary["pairs"] == len(expected) and summary["min_documents"] == min_pair_docs
    if kappas:
        assert summary["median"] == pytest.approx(np.median(kappas))
        assert summary["mean"] == pytest.approx(np.mean(kappas))
    else:
        assert summary["median"] is None and summary["mean"] is None
    assert block["expert_kappa"] == expert_pairs(corpus)
