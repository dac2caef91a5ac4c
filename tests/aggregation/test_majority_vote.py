"""Tests for crowdqa.aggregation.majority_vote.

Oracles: a naive per-token vote written with ``collections.Counter`` (below), hand-worked
ties, and, on real data, the PICO expert labels (tie-rule measurement).
"""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from crowdqa.aggregation import MajorityVote
from crowdqa.aggregation.corpus import Corpus
from crowdqa.aggregation.spans import decode_spans
from tests.aggregation.test_dawid_skene import random_corpus
from tests.conftest import shared_path


def naive_vote(corpus: Corpus, weights=None, tie_break="entity"):
    """Per-token weighted vote with Python loops; ties by the documented rule."""
    w = np.ones(corpus.n_workers) if weights is None else np.asarray(weights, float)
    tallies = [Counter() for _ in range(corpus.n_tokens)]
    for i, wk, o in zip(corpus.token.tolist(), corpus.worker.tolist(), corpus.label.tolist(), strict=True):
        tallies[i][o] += w[wk]
    out = []
    for tally in tallies:
        if not tally:
            out.append(None)
            continue
        top = max(tally.values())
        tied = sorted(k for k, v in tally.items() if np.isclose(v, top, rtol=1e-12, atol=0))
        if tie_break == "entity" and len(tied) > 1 and tied[0] == 0:
            tied = tied[1:]
        out.append(tied[0])
    return out


def span_corpus(rows, n_tokens, n_workers, class_names=("O", "B-X", "I-X")):
    """One document of ``n_tokens`` tokens; ``rows[w]`` is annotator w's tags or None (absent)."""
    token, worker, label = [], [], []
    for w, tags in enumerate(rows):
        if tags is None:
            continue
        token += list(range(n_tokens))
        worker += [w] * n_tokens
        label += list(tags)
    return Corpus.from_arrays(
        token=token, worker=worker, label=label, doc_lengths=[n_tokens],
        token_start=np.arange(n_tokens) * 2, token_end=np.arange(n_tokens) * 2 + 1,
        doc_ids=["d"], texts=["x " * n_tokens], worker_ids=[f"w{i}" for i in range(n_workers)],
        worker_roles=["crowd"] * n_workers, class_names=list(class_names),
    )


@pytest.mark.parametrize("tie_break", ["entity", "lowest"])
@settings(max_examples=30, deadline=None)
@given(data_seed=st.integers(0, 2**31 - 1), weighted=st.booleans())
def test_matches_naive_vote(tie_break, data_seed, weighted):
    """Oracle: naive_vote (Counter per token)."""
    rng = np.random.default_rng(data_seed)
    c, _ = random_corpus(rng, n_items=30, n_workers=5, n_classes=4, per_item=4, accuracy=(0.2, 0.6))
    weights = rng.integers(0, 4, size=5).astype(float) if weighted else None
    mv = MajorityVote(weights=weights, tie_break=tie_break).fit(c)
    expected = naive_vote(c, weights, tie_break)
    for i, e in enumerate(expected):
        if e is not None and (weights is None or weights[c.worker[c.token == i]].sum() > 0):
            assert mv.labels_[i] == e, i


def test_hand_worked_ties():
    """Hand-worked: 2 annotators; token 0 O vs B-X tie, token 1 B-X vs I-X tie, token 2 unanimous I-X."""
    c = span_corpus([[0, 1, 2], [1, 2, 2]], 3, 2)
    assert MajorityVote(tie_break="entity").fit(c).labels_.tolist() == [1, 1, 2]
    assert MajorityVote(tie_break="lowest").fit(c).labels_.tolist() == [0, 1, 2]
    np.testing.assert_allclose(MajorityVote().fit(c).proba_, [[0.5, 0.5, 0], [0, 0.5, 0.5], [0, 0, 1]])


def test_tie_rule_does_not_depend_on_annotator_order():
    """Regression for crowd-kit's first-seen tie rule: swapping the two annotators changes nothing."""
    a = span_corpus([[0, 1], [1, 0]], 2, 2)
    b = span_corpus([[1, 0], [0, 1]], 2, 2)
    for rule in ("entity", "lowest"):
        np.testing.assert_array_equal(MajorityVote(tie_break=rule).fit(a).labels_,
                                      MajorityVote(tie_break=rule).fit(b).labels_)


def test_weights_dict_equals_array_and_breaks_ties():
    c = span_corpus([[0, 1], [1, 1], [0, 0]], 2, 3, class_names=("O", "X"))
    by_dict = MajorityVote(weights={"w1": 3.0}).fit(c)
    by_array = MajorityVote(weights=np.array([1.0, 3.0, 1.0])).fit(c)
    np.testing.assert_array_equal(by_dict.proba_, by_array.proba_)
    assert by_dict.labels_.tolist() == [1, 1]
    np.testing.assert_allclose(by_dict.proba_[0], [0.4, 0.6])
    # Scaling every weight changes nothing.
    np.testing.assert_allclose(MajorityVote(weights=[2.0, 6.0, 2.0]).fit(c).proba_, by_array.proba_)


def test_zero_weight_worker_is_ignored(seed):
    rng = np.random.default_rng(seed)
    c, _ = random_corpus(rng, n_items=30, n_workers=5, per_item=5)
    mv = MajorityVote(weights=[1, 1, 1, 1, 0]).fit(c)
    ref = MajorityVote().fit(c.select_workers([0, 1, 2, 3]))
    np.testing.assert_array_equal(mv.labels_, ref.labels_)
    np.testing.assert_allclose(mv.proba_, ref.proba_)


@pytest.mark.parametrize(
    ("weights", "match"),
    [
        ({"nobody": 1.0}, "unknown annotator 'nobody'"),
        (np.ones(3), r"weights must have shape \(5,\), found \(3,\)"),
        (np.array([1, 1, -1, 1, 1.0]), "finite and >= 0"),
    ],
)
def test_bad_weights_raise(weights, match, seed):
    c, _ = random_corpus(np.random.default_rng(seed), n_workers=5)
    est = MajorityVote(weights=weights)
    with pytest.raises(ValueError, match=match):
        est.fit(c)


def test_bad_tie_rule_raises(seed):
    c, _ = random_corpus(np.random.default_rng(seed))
    est = MajorityVote(tie_break="first")
    with pytest.raises(ValueError, match="tie_break must be one of"):
        est.fit(c)


def test_known_overrides_and_unlabelled_tokens_get_prior(seed):
    rng = np.random.default_rng(seed)
    c, _ = random_corpus(rng, n_items=20, n_classes=3)
    c = c._with_obs(c.token < 18)  # items 18, 19 unlabelled
    known = np.full(20, -1)
    known[[0, 19]] = [2, 1]
    mv = MajorityVote().fit(c, true_labels=known)
    assert mv.labels_[0] == 2 and mv.labels_[19] == 1
    np.testing.assert_array_equal(mv.proba_[[0, 19]], [[0, 0, 1], [0, 1, 0]])
    np.testing.assert_allclose(mv.class_prior_, mv.proba_[np.r_[0:18, 19]].mean(axis=0))
    np.testing.assert_allclose(mv.proba_[18], mv.class_prior_)
    assert mv.labels_[18] == np.argmax(mv.class_prior_)
    np.testing.assert_allclose(mv.proba_.sum(axis=1), 1.0)


def test_worker_confusion_is_empirical_against_labels(seed):
    """Oracle: counts tallied with a loop over annotations."""
    rng = np.random.default_rng(seed)
    c, _ = random_corpus(rng, n_items=50, n_workers=4, n_classes=3, per_item=3)
    mv = MajorityVote().fit(c)
    counts = np.zeros((4, 3, 3))
    for i, w, o in zip(c.token.tolist(), c.worker.tolist(), c.label.tolist(), strict=True):
        counts[w, mv.labels_[i], o] += 1
    rows = counts.sum(axis=2, keepdims=True)
    expected = np.where(rows > 0, counts / np.maximum(rows, 1), 1 / 3)
    np.testing.assert_allclose(mv.worker_confusion_, expected)


@settings(max_examples=20, deadline=None)
@given(data_seed=st.integers(0, 2**31 - 1))
def test_invariant_to_permuting_workers(data_seed):
    rng = np.random.default_rng(data_seed)
    c, _ = random_corpus(rng, n_items=25, n_workers=6, per_item=4)
    wp = rng.permutation(6)
    inv = np.argsort(wp)
    perm = Corpus.from_arrays(
        token=c.token, worker=wp[c.worker], label=c.label, doc_lengths=c.doc_lengths, token_start=c.token_start,
        token_end=c.token_end, doc_ids=c.doc_ids, texts=c.texts, worker_ids=[c.worker_ids[j] for j in inv],
        worker_roles=c.worker_roles, class_names=c.class_names,
    )
    a, b = MajorityVote().fit(c), MajorityVote().fit(perm)
    np.testing.assert_array_equal(a.labels_, b.labels_)
    np.testing.assert_array_equal(a.worker_confusion_, b.worker_confusion_[wp])


def test_unanimous_input_returns_that_label(seed):
    rng = np.random.default_rng(seed)
    c, _ = random_corpus(rng, accuracy=(1.0, 1.0), truth=np.full(40, 2))
    assert np.all(MajorityVote().fit(c).labels_ == 2)


def _strict_span_f1(truth: np.ndarray, labels: np.ndarray, corpus: Corpus) -> float:
    """Strict span F1 (same document, first and last token, type) by the conlleval rule of decode_spans."""
    def spans(x):
        s = decode_spans(x, corpus)
        return set(zip(s.doc.tolist(), s.first.tolist(), s.last.tolist(), s.type.tolist(), strict=True))

    gold, got = spans(truth), spans(labels)
    return 2 * len(gold & got) / (len(gold) + len(got))


@pytest.mark.shared_data
def test_default_tie_rule_is_the_better_one_on_conll_val_development_data():
    """The rule behind the default tie rule; oracle: the CoNLL-2003 gold labels of conll_val.

    conll_val is development data: no README table reports majority vote on it, and the PICO study's
    64 expert documents (the only PICO documents with expert labels) are not used to choose. The
    default must be the rule with the higher strict span F1 there. Regression figures of this
    checkout (not oracles): entity 0.691, lowest 0.652.
    """
    from crowdqa.ingest import read_corpus

    crowd = read_corpus(shared_path("conll_val", "answers.conll"), format="conll").corpus
    gold = read_corpus(shared_path("conll_val", "gold.conll"), format="conll", role="expert").corpus
    assert gold.class_names == crowd.class_names and gold.n_tokens == crowd.n_tokens
    truth = gold.vote_counts().argmax(axis=1)
    f1 = {rule: _strict_span_f1(truth, MajorityVote(tie_break=rule).fit(crowd).labels_, crowd)
          for rule in ("entity", "lowest")}
    print(f"conll_val MV strict span F1: {f1}")
    assert MajorityVote().tie_break == max(f1, key=f1.get) == "entity"


@pytest.mark.parametrize("block", [1, 2, 7])
@settings(max_examples=15, deadline=None)
@given(data_seed=st.integers(0, 2**31 - 1))
def test_blocks_of_any_size_give_the_same_vote_tally_and_counts(block, data_seed):
    """Oracles: naive_vote, a loop-tallied confusion, ``np.bincount`` of all workers at once; with blocks of
    ``block`` annotations (fewer than a token's annotators: blocks of one token, or none) and unlabelled tokens."""
    from crowdqa.aggregation import _confusion, _votes
    from crowdqa.aggregation import corpus as corpus_module

    rng = np.random.default_rng(data_seed)
    c, _ = random_corpus(rng, n_items=25, n_workers=5, n_classes=3, per_item=3, accuracy=(0.2, 0.6))
    c = c._with_obs((c.token > 0) & (c.token != 12) & (c.token < 23))  # unlabelled first, middle and last tokens
    weights = rng.integers(0, 4, size=5).astype(float)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(_votes, "BLOCK_OBS", block)
        mp.setattr(_confusion, "BLOCK_OBS", block)
        mp.setattr(corpus_module, "BLOCK_OBS", block)
        mv = MajorityVote(weights=weights, tie_break="lowest").fit(c)
        votes, _ = _votes.vote_counts(c, weights)
        c._cache.pop("worker_answers", None)
        answers = c.worker_answers
    for i, e in enumerate(naive_vote(c, weights, "lowest")):
        if e is not None and weights[c.worker[c.token == i]].sum() > 0:
            assert mv.labels_[i] == e, i
    np.testing.assert_allclose(votes.T, c.vote_counts(weights), rtol=1e-12)
    counts = np.zeros((5, 3, 3))
    for i, w, o in zip(c.token.tolist(), c.worker.tolist(), c.label.tolist(), strict=True):
        counts[w, mv.labels_[i], o] += 1
    rows = counts.sum(axis=2, keepdims=True)
    np.testing.assert_allclose(mv.worker_confusion_, np.where(rows > 0, counts / np.maximum(rows, 1), 1 / 3))
    np.testing.assert_array_equal(answers, np.bincount(c.worker, minlength=5))
