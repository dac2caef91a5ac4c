"""Expert routing (crowdqa.quality.routing) against an independent oracle.

The oracle re-implements the scoring rule of the module docstring from scratch: plain Python
loops over tokens and annotations, Clopper-Pearson widths from ``scipy.stats.beta`` quantiles,
and a greedy that re-evaluates the whole objective f(S + {d}) for every candidate at every step
(no incremental updates). Brute force over all subsets checks the greedy's (1 - 1/e) claim.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import beta

from crowdqa.aggregation.corpus import Corpus
from crowdqa.quality.intervals import clopper_pearson
from crowdqa.quality.routing import PARTS, check_budget, interval_width, route_documents


def tiny_corpus(rng: np.random.Generator, *, n_docs: int = 6, n_crowd: int = 3, expert_docs: int = 2,
                categorical: bool = False) -> tuple[Corpus, np.ndarray, np.ndarray]:
    """Random documents, crowd workers each labelling some documents, one expert, and a random posterior."""
    lengths = np.ones(n_docs, dtype=int) if categorical else rng.integers(2, 5, size=n_docs)
    n_classes = 3 if categorical else 2
    starts = np.concatenate([[0], np.cumsum(lengths)])
    token, worker, label = [], [], []
    for d in range(n_docs):
        who = [w for w in range(n_crowd) if rng.random() < 0.7] or [int(rng.integers(n_crowd))]
        if d < expert_docs:
            who.append(n_crowd)
        for w in who:
            for t in range(starts[d], starts[d + 1]):
                token.append(t)
                worker.append(w)
                label.append(int(rng.random() < 0.4) if not categorical else int(rng.integers(n_classes)))
    n_tokens = int(starts[-1])
    proba = rng.dirichlet(np.ones(n_classes), size=n_tokens)
    corpus = Corpus.from_arrays(
        token=token, worker=worker, label=label, doc_lengths=lengths,
        token_start=np.zeros(n_tokens, dtype=int), token_end=np.ones(n_tokens, dtype=int),
        doc_ids=[f"d{d:02d}" for d in range(n_docs)], texts=["x" * int(n) for n in lengths],
        worker_ids=[f"w{w}" for w in range(n_crowd)] + ["expert"],
        worker_roles=["crowd"] * n_crowd + ["expert"],
        class_names=["a", "b", "c"] if categorical else ["O", "P"],
    )
    return corpus, proba.argmax(axis=1), proba


# ------------------------------------------------------------------ the oracle
def cp_width(n: float, p: float, level: float = 0.95) -> float:
    if n <= 0:
        return 1.0
    k, a = n * p, (1 - level) / 2
    low = 0.0 if k <= 0 else beta.ppf(a, k, n - k + 1)
    high = 1.0 if k >= n else beta.ppf(1 - a, k + 1, n - k)
    return float(high - low)


def oracle_parts(corpus: Corpus, labels, proba, *, worker_weight=1.0, correction_weight=1.0):
    """Quantities {name: (n, p, weight, {doc: m})} and corrections {doc: value}, by loops."""
    span = corpus.has_outside
    roles = corpus.worker_roles
    rows = list(zip(corpus.token.tolist(), corpus.worker.tolist(), corpus.label.tolist(), strict=True))
    doc_of = corpus.token_doc.tolist()
    expert_docs = {doc_of[t] for t, w, _ in rows if roles[w] == "expert"}
    covered = {t for t, w, _ in rows if roles[w] == "crowd"}
    ref = {}
    for t, w, lab in rows:
        if roles[w] == "expert":
            ref[t] = max(ref.get(t, 0), int(lab > 0)) if span else lab
    pos_prob = [1 - proba[t][0] for t in range(corpus.n_tokens)]
    q: dict[str, list] = {}
    corr = {d: 0.0 for d in range(corpus.n_docs) if d not in expert_docs}

    def add(name, n, hits, model, weight, per_doc):
        p = hits / n if n > 0 else model
        q[name] = [n, p, weight, per_doc]

    cov = sorted(covered)
    if span:
        pos = [t for t in cov if labels[t] > 0]
        n_p = sum(1 for t in pos if t in ref)
        n_r = sum(1 for t in cov if ref.get(t, 0) > 0)
        hits = sum(1 for t in pos if ref.get(t, 0) > 0)
        mp = sum(pos_prob[t] for t in pos)
        add("aggregate:precision", n_p, hits, mp / len(pos) if pos else 0.5, 1.0,
            {d: sum(1 for t in pos if doc_of[t] == d) for d in corr})
        add("aggregate:recall", n_r, hits, mp / sum(pos_prob[t] for t in cov), 1.0,
            {d: sum(pos_prob[t] for t in cov if doc_of[t] == d) for d in corr})
        big_a, big_t = len(pos), sum(pos_prob[t] for t in cov)
        for t in cov:
            if doc_of[t] in corr:
                corr[doc_of[t]] += (proba[t][0] / big_a if labels[t] > 0 else pos_prob[t] / big_t) * correction_weight
    else:
        n_a = sum(1 for t in cov if t in ref)
        hits = sum(1 for t in cov if t in ref and labels[t] == ref[t])
        add("aggregate:accuracy", n_a, hits, sum(proba[t][labels[t]] for t in cov) / len(cov), 1.0,
            {d: sum(1 for t in cov if doc_of[t] == d) for d in corr})
        for t in cov:
            if doc_of[t] in corr:
                corr[doc_of[t]] += (1 - proba[t][labels[t]]) / len(cov) * correction_weight
    crowd_rows = [(t, w, lab) for t, w, lab in rows if roles[w] == "crowd"]
    for w in [w for w in range(corpus.n_workers) if roles[w] == "crowd"]:
        mine = [(t, lab) for t, ww, lab in crowd_rows if ww == w]
        weight = worker_weight * len(mine) / len(crowd_rows)
        if span:
            on = [(t, lab) for t, lab in mine if t in ref]
            hits = sum(1 for t, lab in on if lab > 0 and ref[t] > 0)
            num = sum(pos_prob[t] for t, lab in mine if lab > 0)
            n_pos = sum(1 for _, lab in mine if lab > 0)
            add(f"w{w}:precision", sum(1 for _, lab in on if lab > 0), hits, num / n_pos if n_pos else 0.5, weight,
                {d: sum(1 for t, lab in mine if lab > 0 and doc_of[t] == d) for d in corr})
            add(f"w{w}:recall", sum(1 for t, _ in on if ref[t] > 0), hits, num / sum(pos_prob[t] for t, _ in mine),
                weight, {d: sum(pos_prob[t] for t, _ in mine if doc_of[t] == d) for d in corr})
        else:
            on = [(t, lab) for t, lab in mine if t in ref]
            add(f"w{w}:accuracy", len(on), sum(1 for t, lab in on if lab == ref[t]),
                sum(proba[t][lab] for t, lab in mine) / len(mine), weight,
                {d: sum(1 for t, _ in mine if doc_of[t] == d) for d in corr})
    return q, corr


def oracle_value(q, corr, chosen, *, half_width=0.05) -> float:
    target = 2 * half_width
    total = sum(corr[d] for d in chosen)
    for n, p, weight, per_doc in q.values():
        extra = sum(per_doc[d] for d in chosen)
        total += weight * (max(cp_width(n, p) - target, 0) - max(cp_width(n + extra, p) - target, 0))
    return total


def oracle_greedy(corpus, q, corr, budget, **kw) -> list[int]:
    chosen: list[int] = []
    for _ in range(min(budget, len(corr))):
        values = {d: oracle_value(q, corr, chosen + [d], **kw) for d in corr if d not in chosen}
        best = max(values.values())
        tied = [d for d, v in values.items() if v >= best - 1e-9]
        chosen.append(min(tied, key=lambda d: corpus.doc_ids[d]))
    return chosen


# ------------------------------------------------------------------ tests
def test_interval_width_equals_clopper_pearson_at_whole_counts():
    """Oracle: the report's Clopper-Pearson interval (itself checked against statsmodels)."""
    for n, k in [(1, 0), (10, 3), (10, 10), (57, 20)]:
        iv = clopper_pearson(k, n)
        assert interval_width(n, k / n) == pytest.approx(iv.high - iv.low, rel=1e-12)
    assert interval_width(0, 0.3) == 1.0


def test_the_document_whose_reveal_narrows_most_ranks_first():
    """Hand-worked: one worker, no experts yet, only the aggregate's precision counts.

    Document "big" has 6 tokens the aggregate marks positive, "small" 1: revealing "big" adds 6
    precision trials (width 1 -> W(6)), "small" 1 (width 1 -> W(1)); W(6) < W(1), so "big" first.
    """
    lengths = [6, 1]
    n_tokens = 7
    corpus = Corpus.from_arrays(
        token=np.arange(n_tokens), worker=np.zeros(n_tokens), label=np.ones(n_tokens), doc_lengths=lengths,
        token_start=np.zeros(n_tokens), token_end=np.ones(n_tokens), doc_ids=["small", "big"][::-1],
        texts=["a" * 6, "b"], worker_ids=["w"], worker_roles=["crowd"], class_names=["O", "P"])
    proba = np.tile([0.2, 0.8], (n_tokens, 1))
    plan = route_documents(corpus, np.ones(n_tokens, dtype=int), proba, budget=2, worker_weight=0.0,
                           correction_weight=0.0)
    assert [corpus.doc_ids[d] for d in plan.order] == ["big", "small"]
    # Its gain is the precision width's fall to W(6) at the model's expected precision 0.8, plus recall's
    # fall to W(4.8) (its expected positives, 6 x 0.8) at expected recall 1 (the aggregate marks every
    # token), both still above the 0.1 target; widths from the beta quantiles.
    expected = (1 - cp_width(6, 0.8)) + (1 - cp_width(4.8, 1.0))
    assert plan.gain[0] == pytest.approx(expected, rel=1e-9)
    assert plan.parts[0, PARTS.index("workers")] == 0


@pytest.mark.parametrize("categorical", [False, True])
@pytest.mark.parametrize("case", range(6))
def test_ranking_equals_the_oracle_greedy(case, categorical):
    """Oracle: loops + scipy.stats.beta widths + full re-evaluation of f at every greedy step."""
    rng = np.random.default_rng([case, int(categorical)])
    corpus, labels, proba = tiny_corpus(rng, n_docs=7, categorical=categorical)
    ww, cw = [(1.0, 1.0), (3.0, 0.0), (0.0, 5.0)][case % 3]
    hw = [0.05, 0.2][case % 2]
    q, corr = oracle_parts(corpus, labels, proba, worker_weight=ww, correction_weight=cw)
    plan = route_documents(corpus, labels, proba, budget=4, half_width=hw, worker_weight=ww, correction_weight=cw)
    expected = oracle_greedy(corpus, q, corr, 4, half_width=hw)
    assert plan.order.tolist() == expected
    # Each document's gain is the oracle's marginal value.
    for i in range(len(expected)):
        marginal = oracle_value(q, corr, expected[:i + 1], half_width=hw) - oracle_value(q, corr, expected[:i],
                                                                                          half_width=hw)
        assert plan.gain[i] == pytest.approx(marginal, rel=1e-7, abs=1e-12)
    assert plan.parts.sum(axis=1) == pytest.approx(plan.gain)


@pytest.mark.parametrize("case", range(5))
def test_greedy_is_within_one_minus_one_over_e_of_the_best_subset(case):
    """Oracle: brute force over every subset of the budget's size (Nemhauser et al. 1978's bound)."""
    rng = np.random.default_rng(100 + case)
    corpus, labels, proba = tiny_corpus(rng, n_docs=8, expert_docs=1)
    q, corr = oracle_parts(corpus, labels, proba)
    for k in (2, 3):
        plan = route_documents(corpus, labels, proba, budget=k)
        got = oracle_value(q, corr, plan.order.tolist())
        best = max(oracle_value(q, corr, list(s)) for s in itertools.combinations(corr, k))
        assert got >= (1 - 1 / math.e) * best - 1e-12


def test_expert_documents_are_never_routed_and_the_budget_is_capped():
    rng = np.random.default_rng(7)
    corpus, labels, proba = tiny_corpus(rng, n_docs=5, expert_docs=2)
    plan = route_documents(corpus, labels, proba, budget=50)
    assert sorted(plan.order.tolist()) == [2, 3, 4]
    assert plan.candidates == 3
    only = np.zeros(5, dtype=bool)
    only[[0, 3]] = True  # document 0 has expert labels: dropped from the candidates
    assert route_documents(corpus, labels, proba, budget=5, candidates=only).order.tolist() == [3]


@pytest.mark.parametrize("bad", [0, -3, 2.5, True, "3", None])
def test_a_bad_budget_is_refused(bad):
    with pytest.raises(ValueError, match="budget must be a whole number of documents >= 1"):
        check_budget(bad)


def test_bad_settings_are_refused():
    corpus, labels, proba = tiny_corpus(np.random.default_rng(1))
    with pytest.raises(ValueError, match=r"half_width must be in \(0, 0.5\], found 0.0"):
        route_documents(corpus, labels, proba, budget=1, half_width=0.0)
    with pytest.raises(ValueError, match="worker_weight must be a finite number >= 0, found -1"):
        route_documents(corpus, labels, proba, budget=1, worker_weight=-1)
    with pytest.raises(ValueError, match=r"proba must have shape \("):
        route_documents(corpus, labels, proba[:, :1], budget=1)


def _permuted(corpus: Corpus, labels, proba, doc_perm, worker_perm):
    """The same upload with documents and annotators in another order."""
    from crowdqa.ingest.routing_export import document_tokens, select_documents

    sub = select_documents(corpus, doc_perm)
    tokens = document_tokens(corpus, doc_perm)
    inv = np.argsort(worker_perm)
    renamed = Corpus.from_arrays(
        token=sub.token, worker=inv[sub.worker], label=sub.label, doc_lengths=sub.doc_lengths,
        token_start=sub.token_start, token_end=sub.token_end, doc_ids=sub.doc_ids, texts=sub.texts,
        worker_ids=[corpus.worker_ids[w] for w in worker_perm],
        worker_roles=[corpus.worker_roles[w] for w in worker_perm],
        class_names=corpus.class_names)
    return renamed, labels[tokens], proba[tokens]


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), categorical=st.booleans(), data=st.data())
def test_permuting_the_upload_does_not_change_the_ranking(seed, categorical, data):
    """Property: the ranking is a function of the documents, not of the upload's order."""
    rng = np.random.default_rng(seed)
    corpus, labels, proba = tiny_corpus(rng, n_docs=6, categorical=categorical)
    doc_perm = np.asarray(data.draw(st.permutations(range(corpus.n_docs))))
    worker_perm = np.asarray(data.draw(st.permutations(range(corpus.n_workers))))
    other, o_labels, o_proba = _permuted(corpus, labels, proba, doc_perm, worker_perm)
    a = route_documents(corpus, labels, proba, budget=4)
    b = route_documents(other, o_labels, o_proba, budget=4)
    assert [corpus.doc_ids[d] for d in a.order] == [other.doc_ids[d] for d in b.order]
    assert b.gain == pytest.approx(a.gain, rel=1e-9, abs=1e-15)
