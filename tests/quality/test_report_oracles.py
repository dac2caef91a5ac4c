"""The report's per-expert and per-pair computations against the code they replaced (issue 14).

Oracles, kept here: the leave-one-out loop that copied the corpus without each expert
(``select_workers`` + ``reference_labels`` + dense ``labels_of``), the dense ``cohen_kappa`` /
``pairwise_f1`` loop over expert pairs, and the per-annotation document gather of ``obs_pairs``.
Identical numbers (the bootstrap streams are the same), kappa within 1e-12.
"""

from __future__ import annotations

import numpy as np
import pytest

from crowdqa.aggregation.corpus import MISSING
from crowdqa.quality.agreement import cohen_kappa, pairwise_f1
from crowdqa.quality.references import leave_one_out_references, reference_labels
from crowdqa.quality.score_blocks import accuracy_block, id_rank, score_block, token_doc_counts
from crowdqa.quality.worker_counts import obs_pairs
from tests.quality.test_report import build_report, random_corpus


def _old_obs_pairs(corpus):
    obs_doc = corpus.obs_doc
    at_first = corpus.token == corpus.doc_start[obs_doc]
    pair_worker = corpus.worker[at_first].astype(np.int64)
    n_in_doc = np.bincount(obs_doc[at_first], minlength=corpus.n_docs)
    pair_base = np.concatenate([[0], np.cumsum(n_in_doc)[:-1]])
    obs_base = np.searchsorted(corpus.token, corpus.doc_start[:-1])
    i = np.arange(corpus.n_obs, dtype=np.int64)
    return pair_base[obs_doc] + (i - obs_base[obs_doc]) % np.maximum(n_in_doc, 1)[obs_doc], pair_worker


def _old_expert_block(corpus, w, *, reference, seed, n_boot):
    others = np.setdiff1d(np.arange(corpus.n_workers), [w])
    ref_w = reference_labels(corpus.select_workers(others), rule=reference)
    lab_w = corpus.labels_of(w)
    ok = (ref_w != MISSING) & (lab_w != MISSING)
    if not np.any(ok):
        return None
    c_w, n_tok = token_doc_counts(lab_w, ref_w, ok, corpus)
    block = score_block(c_w, n_boot=n_boot, rng=np.random.default_rng([seed, 4, int(id_rank(corpus.worker_ids)[w])]),
                        tokens=n_tok)
    block["accuracy"] = accuracy_block(int(np.count_nonzero(lab_w[ok] == ref_w[ok])), n_tok)
    return block


@pytest.mark.parametrize("rule", ["union", "majority"])
def test_leave_one_out_references_match_a_corpus_copy(seed, rule):
    """Oracle: reference_labels of the corpus without the expert, on the tokens both cover."""
    rng = np.random.default_rng(seed)
    c = random_corpus(seed, n_docs=16, n_crowd=4, n_experts=int(rng.integers(1, 5)), bio=True)
    loo = leave_one_out_references(c, rule=rule)
    for w in c.workers_with_role("expert").tolist():
        ref_w = reference_labels(c.select_workers(np.setdiff1d(np.arange(c.n_workers), [w])), rule=rule)
        lab_w = c.labels_of(w)
        ok = np.flatnonzero((ref_w != MISSING) & (lab_w != MISSING))
        if not ok.size:
            assert w not in loo
            continue
        tok, lab, ref = loo[w]
        assert tok.tolist() == ok.tolist() and lab.tolist() == lab_w[ok].tolist() and ref.tolist() == ref_w[ok].tolist()


@pytest.mark.parametrize("rule", ["union", "majority"])
def test_expert_blocks_and_pairs_match_the_old_loops(seed, rule):
    """Oracle: each expert's block by the old corpus-copy loop (same bootstrap stream: identical), and the
    expert pairs by dense cohen_kappa and pairwise_f1."""
    c = random_corpus(seed, n_docs=14, n_crowd=5, n_experts=3, bio=True)
    agg = np.random.default_rng(seed).integers(0, c.n_classes, c.n_tokens)
    rep = build_report(c, agg, method="mv", experts_used_in_fit=False, reference=rule, n_boot=100, seed=seed % 97)
    experts = c.workers_with_role("expert").tolist()
    for w in experts:
        assert rep["workers"][w]["vs_expert"] == _old_expert_block(c, w, reference=rule, seed=seed % 97, n_boot=100)
    want = []
    for i, a in enumerate(experts):
        for b in experts[i + 1:]:
            la, lb = c.labels_of(a), c.labels_of(b)
            shared = int(np.count_nonzero((la != MISSING) & (lb != MISSING)))
            if shared:
                want.append((c.worker_ids[a], c.worker_ids[b], shared, cohen_kappa(la, lb, n_classes=c.n_classes),
                             pairwise_f1(la, lb).f1))
    got = rep["agreement"]["expert_kappa"]
    assert [(p["a"], p["b"], p["tokens"]) for p in got] == [x[:3] for x in want]
    for p, (*_, kappa, f1) in zip(got, want, strict=True):
        assert p["kappa"] == pytest.approx(kappa, rel=1e-12, abs=1e-12)
        assert p["f1"] == (None if np.isnan(f1) else f1)


def test_obs_pairs_match_the_document_gather(seed):
    """Oracle: the (document, annotator) pairs by the per-annotation document gather used before."""
    c = random_corpus(seed, n_docs=20, n_crowd=6, n_experts=2)
    got, want = obs_pairs(c), _old_obs_pairs(c)
    assert got[0].tolist() == want[0].tolist() and got[1].tolist() == want[1].tolist()


@pytest.mark.parametrize("lengths", [[0, 2, 1], [1, 2, 0], [0, 1, 1, 1], [3, 0, 0, 2, 1, 0]])
def test_obs_pairs_of_documents_without_tokens(seed, lengths):
    """Oracle: the document gather, which gives a document without tokens no pair (it has no annotations); the
    other documents' pairs are not those of one-token documents though there are as many documents as tokens."""
    from tests.quality.test_pair_agreement import corpus_with_empty_documents

    c = corpus_with_empty_documents(seed, lengths)
    got, want = obs_pairs(c), _old_obs_pairs(c)
    assert got[0].tolist() == want[0].tolist() and got[1].tolist() == want[1].tolist()
