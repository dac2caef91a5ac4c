"""Span and token probabilities of a posterior chain against brute-force enumeration of all K^T label paths."""

from __future__ import annotations

import dataclasses
import itertools

import numpy as np
import pytest

from crowdqa.aggregation.confidence import (
    ChainMarginals,
    PosteriorChain,
    chain_marginals,
    fit_temperatures,
    independent_chain,
    labels_probability,
    path_probability,
    sequence_starts,
    span_probability,
    tempered_marginals,
    tempered_scores,
    token_probability,
)
from crowdqa.aggregation.corpus import Corpus
from crowdqa.aggregation.spans import decode_spans, span_bounds

BIO = ("O", "B-X", "I-X", "B-Y", "I-Y")
IO = ("O", "X", "Y")


def _corpus(class_names, doc_lengths):
    n = int(sum(doc_lengths))
    return Corpus.from_arrays(
        token=[], worker=[], label=[], doc_lengths=doc_lengths, token_start=[2 * i for i in range(n)],
        token_end=[2 * i + 1 for i in range(n)], doc_ids=[f"d{i}" for i in range(len(doc_lengths))],
        texts=["x " * n] * len(doc_lengths), worker_ids=[], worker_roles=[], class_names=class_names)


def _random_chain(rng, corpus, *, seq_first, clamp=False):
    n, k = corpus.n_tokens, corpus.n_classes
    log_rest = rng.normal(size=(n, k))
    if clamp:  # one token's state fixed, as a clamped expert label is
        log_rest[1] = -np.inf
        log_rest[1, 1] = 0.0
    return PosteriorChain(log_crowd=rng.normal(scale=2.0, size=(n, k)), log_rest=log_rest,
                          log_start=rng.normal(size=k), log_trans=rng.normal(size=(k, k)), seq_first=seq_first)


def _paths(chain, temperature):
    """Every label path of the whole corpus (K^T of them) with its normalised posterior weight."""
    n, k = chain.log_crowd.shape
    frame = chain.log_frame(temperature)
    paths = np.array(list(itertools.product(range(k), repeat=n)))
    logw = np.zeros(len(paths))
    for t in range(n):
        logw += frame[t, paths[:, t]]
        logw += chain.log_start[paths[:, t]] if chain.seq_first[t] else chain.log_trans[paths[:, t - 1], paths[:, t]]
    w = np.exp(logw - logw.max())
    return paths, w / w.sum()


def _brute_span_probability(chain, corpus, spans, temperature):
    paths, w = _paths(chain, temperature)
    doc_first = sequence_starts(corpus)
    key = set(zip(spans.first.tolist(), spans.last.tolist(), spans.type.tolist(), strict=True))
    out = dict.fromkeys(key, 0.0)
    for path, weight in zip(paths, w, strict=True):
        first, last, etype = span_bounds(path, doc_first, corpus=corpus)
        for s in zip(first.tolist(), last.tolist(), etype.tolist(), strict=True):
            if s in out:
                out[s] += weight
    return np.array([out[s] for s in zip(spans.first.tolist(), spans.last.tolist(), spans.type.tolist(),
                                          strict=True)])


def _all_spans(corpus):
    """Every span a label path of ``corpus`` can hold, as the decoder's arrays."""
    doc = corpus.token_doc
    rows = [(a, b, x) for a in range(corpus.n_tokens) for b in range(a + 1, corpus.n_tokens + 1)
            if doc[a] == doc[b - 1] for x in range(1, len(corpus.entity_types) + 1)]
    first, last, etype = (np.array(c, dtype=np.int64) for c in zip(*rows, strict=True))
    return first, last, etype


@pytest.mark.parametrize("names", [BIO, IO])
@pytest.mark.parametrize("temperature", [1.0, 2.5])
@pytest.mark.parametrize("sentences", [False, True])
def test_span_probability_matches_path_enumeration(names, temperature, sentences, seed):
    """Oracle: the posterior mass of the paths whose decoded spans (decode_spans' rule) include the span, by
    enumerating all K^T paths of two documents of 3 and 2 tokens (and, with ``sentences``, a sequence start
    inside the first document); tolerance 1e-10."""
    rng = np.random.default_rng(seed)
    corpus = _corpus(names, [3, 2])
    seq_first = sequence_starts(corpus)
    if sentences:
        seq_first[2] = True  # the chain restarts inside document 0; a span may still cross it
    chain = _random_chain(rng, corpus, seq_first=seq_first, clamp=not sentences)
    first, last, etype = _all_spans(corpus)
    got = span_probability(chain_marginals(chain.tempered(temperature, scope="crowd")), first=first, last=last,
                           span_type=etype, corpus=corpus)

    class Spans:
        pass

    spans = Spans()
    spans.first, spans.last, spans.type = first, last, etype
    want = _brute_span_probability(chain, corpus, spans, temperature)
    np.testing.assert_allclose(got, want, atol=1e-10)


def test_token_probability_matches_path_enumeration(seed):
    """Oracle: each token's marginal of its label from all K^T paths; tolerance 1e-10."""
    rng = np.random.default_rng(seed)
    corpus = _corpus(BIO, [4])
    chain = _random_chain(rng, corpus, seq_first=sequence_starts(corpus))
    paths, w = _paths(chain, 1.7)
    labels = rng.integers(0, 5, size=4)
    want = [(w * (paths[:, t] == labels[t])).sum() for t in range(4)]
    got = token_probability(chain_marginals(chain.tempered(1.7, scope="crowd")), labels)
    np.testing.assert_allclose(got, want, atol=1e-10)


def test_independent_chain_span_is_product_of_its_pair_rules():
    """Oracle, by hand: with independent tokens the span ``B-X I-X`` of ``[B-X I-X O]`` is right when token 0 is
    ``B-X``, or ``I-X`` (conlleval starts a span there), token 1 is ``I-X`` and token 2 does not continue the span
    (``O``, ``B-*`` or ``I-Y``): (.5 + .2) * .6 * (1 - .3)."""
    corpus = _corpus(BIO, [3])
    proba = np.array([[.2, .5, .2, .1, 0], [.1, .2, .6, .1, 0], [.4, .1, .3, .1, .1]])
    chain = independent_chain(proba, seq_first=sequence_starts(corpus))
    spans = decode_spans(np.array([1, 2, 0]), corpus)
    got = span_probability(chain_marginals(chain), first=spans.first, last=spans.last, span_type=spans.type,
                           corpus=corpus)
    assert got == pytest.approx([(.5 + .2) * .6 * (1 - .3)], abs=1e-12)


def test_temperature_must_be_positive():
    corpus = _corpus(IO, [2])
    chain = independent_chain(np.full((2, 3), 1 / 3), seq_first=sequence_starts(corpus))
    with pytest.raises(ValueError, match="temperature must be > 0, found 0"):
        chain.log_frame(0.0)


@pytest.mark.parametrize("true_temperature", [0.6, 2.5])
def test_fit_temperature_recovers_a_known_temperature(true_temperature, seed):
    """Oracle: outcomes drawn from the scores of a chain tempered by a known temperature (8,000 tokens of
    independent 3-class posteriors, each outcome Bernoulli of the tempered token score); the maximum-likelihood
    temperature is within 10% of it (the log loss is a proper score, so the true temperature minimises its
    expectation)."""
    rng = np.random.default_rng(seed)
    n = 8000
    proba = rng.dirichlet(np.full(3, 0.4), size=n)
    chain = independent_chain(proba, seq_first=np.ones(n, dtype=bool))
    labels = proba.argmax(axis=1)

    def score(temps):
        return token_probability(tempered_marginals(chain, temps), labels).reshape(len(temps), n)

    outcome = rng.random(n) < score(np.array([true_temperature]))[0]
    assert fit_temperatures(score, outcome)[0] == pytest.approx(true_temperature, rel=0.1)


def test_fit_temperatures_finds_the_minimum_of_the_log_loss(seed):
    """Oracle: the minimum of each subset's log loss by brute force, over 1,001 points of log T in the bounds, then
    1,001 points (spacing 1.4e-5) between the neighbours of the best of them, on span scores of a random chain with
    transitions (15 documents); the search's temperatures are within 2e-4 of log T of it, for the whole set and
    each of three folds fitted at once, and a fold whose items are all right keeps 1.0."""
    rng = np.random.default_rng(seed)
    corpus = _corpus(BIO, rng.integers(2, 6, size=15).tolist())
    chain = _random_chain(rng, corpus, seq_first=sequence_starts(corpus))
    first, last, etype = _all_spans(corpus)
    keep = rng.random(first.size) < 0.5
    first, last, etype = first[keep], last[keep], etype[keep]

    def score(temps):
        return tempered_scores(chain, temps, scope="chain", score=lambda mg: span_probability(
            mg, first=first, last=last, span_type=etype, corpus=corpus).reshape(mg.copies, -1))

    outcome = rng.random(first.size) < score(np.array([2.0]))[0]
    fold = rng.integers(0, 3, size=first.size)
    subsets = np.array([np.ones(first.size, bool), fold != 0, fold != 1, fold != 2, outcome & (fold == 0)])
    got = fit_temperatures(score, outcome, subsets=subsets)
    def brute_force(log_t):  # the best of log_t for each subset
        p = np.clip(score(np.exp(log_t)), 1e-300, 1 - 1e-16)
        loss = -(subsets[:4].astype(float) @ np.where(outcome, np.log(p), np.log1p(-p)).T)
        return log_t[np.argmin(loss, axis=1)]

    coarse = np.linspace(np.log(0.05), np.log(50.0), 1001)
    step = coarse[1] - coarse[0]
    want = [brute_force(np.linspace(c - step, c + step, 1001))[i] for i, c in enumerate(brute_force(coarse))]
    np.testing.assert_allclose(np.log(got[:4]), want, atol=2e-4)
    assert got[4] == 1.0


def test_fit_temperatures_without_both_outcomes_keeps_one():
    """No right (or no wrong) item identifies no temperature: 1.0, by the documented convention."""
    assert fit_temperatures(lambda t: np.full((len(t), 3), 0.5), np.ones(3, dtype=bool)).tolist() == [1.0]
    assert fit_temperatures(lambda t: np.full((len(t), 0), 0.5), np.zeros(0, dtype=bool)).tolist() == [1.0]


@pytest.mark.parametrize("scope", ["chain", "crowd"])
def test_tempered_marginals_are_each_temperatures_chain(scope, seed):
    """Oracle: the copies of one pass at several temperatures equal one chain's pass at each temperature (itself
    checked against path enumeration above): forward and backward variables, normalisers, and the token and span
    probabilities, on 30 documents with a sentence start inside one and a clamped state, for a chain with
    transitions and an independent one; tolerance 1e-12."""
    rng = np.random.default_rng(seed)
    corpus = _corpus(BIO, rng.integers(1, 9, size=30).tolist())
    seq_first = sequence_starts(corpus)
    seq_first[np.flatnonzero(~seq_first)[3]] = True
    labels = rng.integers(0, 5, size=corpus.n_tokens)
    spans = decode_spans(labels, corpus)
    temps = np.array([0.3, 1.0, 2.5, 7.0])
    for chain in (_random_chain(rng, corpus, seq_first=seq_first, clamp=True),
                  independent_chain(rng.dirichlet(np.ones(5), size=corpus.n_tokens), seq_first=seq_first)):
        stacked = tempered_marginals(chain, temps, scope=scope)
        n = corpus.n_tokens
        spans_at = span_probability(stacked, first=spans.first, last=spans.last, span_type=spans.type, corpus=corpus)
        tokens_at = token_probability(stacked, labels)
        for g, t in enumerate(temps):
            one = chain_marginals(chain.tempered(t, scope=scope))
            rows = slice(g * n, (g + 1) * n)
            for name in ("alpha", "beta", "scale", "log_offset"):
                np.testing.assert_allclose(getattr(stacked, name)[rows], getattr(one, name), atol=1e-12)
            np.testing.assert_allclose(spans_at[g], span_probability(one, first=spans.first, last=spans.last,
                                                                     span_type=spans.type, corpus=corpus), atol=1e-12)
            np.testing.assert_allclose(tokens_at[g], token_probability(one, labels), atol=1e-12)


def test_tempered_chain_keeps_the_ranking_of_paths_and_flattens_them():
    """Temperature scaling changes scores, never the order of the labels: the tempered token posteriors keep the
    argmax of each token, and T > 1 moves them towards uniform (oracle: ``p ** (1 / T)`` renormalised, by hand)."""
    corpus = _corpus(IO, [3])
    proba = np.array([[.7, .2, .1], [.1, .3, .6], [.5, .25, .25]])
    chain = independent_chain(proba, seq_first=sequence_starts(corpus))
    post = chain_marginals(chain.tempered(2.0)).posterior
    want = np.sqrt(proba) / np.sqrt(proba).sum(axis=1, keepdims=True)
    np.testing.assert_allclose(post, want, atol=1e-12)
    np.testing.assert_array_equal(post.argmax(axis=1), proba.argmax(axis=1))


def test_path_probability_matches_path_enumeration(seed):
    """Oracle: the weight of the one labelled path among all K^T paths of each document; tolerance 1e-10."""
    rng = np.random.default_rng(seed)
    corpus = _corpus(BIO, [3, 2])
    seq_first = sequence_starts(corpus)
    chain = _random_chain(rng, corpus, seq_first=seq_first)
    labels = rng.integers(0, 5, size=5)
    paths, w = _paths(chain, 1.0)
    got = path_probability(chain_marginals(chain), labels, group=corpus.token_doc.astype(np.int64), n_groups=2)
    # The documents are independent: P(doc 0's labels) = the mass of paths matching on its tokens.
    want = [w[(paths[:, :3] == labels[:3]).all(axis=1)].sum(), w[(paths[:, 3:] == labels[3:]).all(axis=1)].sum()]
    np.testing.assert_allclose(got, want, atol=1e-10)


def test_labels_probability_matches_path_enumeration(seed):
    """Oracle: the mass of the paths that agree with the labels on the chosen tokens (the others free), per
    document, among all K^T paths; with every token chosen it is the path's own probability. Tolerance 1e-10."""
    rng = np.random.default_rng(seed)
    corpus = _corpus(BIO, [3, 2])
    chain = _random_chain(rng, corpus, seq_first=sequence_starts(corpus)).tempered(1.5)
    labels = rng.integers(0, 5, size=5)
    where = np.array([True, False, True, False, True])
    paths, w = _paths(chain, 1.0)
    got = labels_probability(chain, labels, where=where, group=corpus.token_doc.astype(np.int64), n_groups=2)
    agree = paths == labels
    want = [w[agree[:, :3][:, where[:3]].all(axis=1)].sum(), w[agree[:, 3:][:, where[3:]].all(axis=1)].sum()]
    np.testing.assert_allclose(got, want, atol=1e-10)
    every = labels_probability(chain, labels, where=np.ones(5, bool), group=corpus.token_doc.astype(np.int64),
                               n_groups=2)
    np.testing.assert_allclose(every, path_probability(chain_marginals(chain), labels,
                                                       group=corpus.token_doc.astype(np.int64), n_groups=2),
                               atol=1e-10)


def test_labels_probability_of_a_forbidden_labelling_is_zero():
    """A clamp the chain forbids (a transition of weight 0) has probability 0, not the normaliser's guard value."""
    corpus = _corpus(IO, [2])
    chain = PosteriorChain(log_crowd=np.zeros((2, 3)), log_rest=np.zeros((2, 3)), log_start=np.zeros(3),
                           log_trans=np.where(np.eye(3, dtype=bool), 0.0, -np.inf), seq_first=sequence_starts(corpus))
    got = labels_probability(chain, np.array([1, 2]), where=np.ones(2, bool), group=np.zeros(2, np.int64),
                             n_groups=1)
    assert got.tolist() == [0.0]


def _forward_backward_reference(chain):
    """The forward-backward pass every chain went through before independent chains had their closed form, kept
    as the reference: Rabiner's scaled recursions, one sequence at a time."""
    log_frame = chain.log_frame()
    offset = log_frame.max(axis=1)
    offset = np.where(np.isfinite(offset), offset, 0.0)
    frame = np.exp(log_frame - offset[:, None])
    start, trans = np.exp(chain.log_start), np.exp(chain.log_trans)
    n, k = frame.shape
    alpha, beta, scale = np.zeros((n, k)), np.ones((n, k)), np.ones(n)
    bounds = np.append(np.flatnonzero(chain.seq_first), n)
    for a, b in itertools.pairwise(bounds):
        for t in range(a, b):
            v = (start if t == a else alpha[t - 1] @ trans) * frame[t]
            scale[t] = v.sum() if v.sum() > 0 else 1.0
            alpha[t] = v / scale[t]
        for t in range(b - 2, a - 1, -1):
            beta[t] = trans @ (frame[t + 1] * beta[t + 1]) / scale[t + 1]
    return ChainMarginals(alpha=alpha, beta=beta, scale=scale, frame=frame, start=start, trans=trans,
                          seq_first=chain.seq_first, log_offset=offset)


@pytest.mark.parametrize("temperature", [0.4, 1.0, 3.0])
def test_independent_chain_needs_no_pass(temperature, seed):
    """The closed form of an independent chain (the tempered softmax of the log posteriors) against the
    forward-backward pass the chain went through before (reference kept above): forward and backward variables,
    normalisers and log offsets, and so the token, span and document probabilities, of 40 random documents of
    1-9 tokens (with a forbidden state and a zero posterior); tolerance 1e-12."""
    rng = np.random.default_rng(seed)
    lengths = rng.integers(1, 10, size=40)
    corpus = _corpus(BIO, lengths.tolist())
    proba = rng.dirichlet(np.full(5, 0.3), size=corpus.n_tokens)
    proba[3, 2] = 0.0
    proba[3] /= proba[3].sum()
    chain = independent_chain(proba, seq_first=sequence_starts(corpus)).tempered(temperature)
    forbidden = (np.arange(corpus.n_tokens) == 7)[:, None] & (np.arange(5) == 4)  # state 4 at token 7
    chain = dataclasses.replace(chain, log_rest=np.where(forbidden, -np.inf, 0.0))
    assert chain.independent
    got, want = chain_marginals(chain), _forward_backward_reference(chain)
    for name in ("alpha", "beta", "scale", "frame", "log_offset"):
        np.testing.assert_allclose(getattr(got, name), getattr(want, name), atol=1e-12, err_msg=name)
    labels = rng.integers(0, 5, size=corpus.n_tokens)
    spans = decode_spans(labels, corpus)
    for mg in (got, want):
        mg_span = span_probability(mg, first=spans.first, last=spans.last, span_type=spans.type, corpus=corpus)
        np.testing.assert_allclose(mg_span, span_probability(want, first=spans.first, last=spans.last,
                                                             span_type=spans.type, corpus=corpus), atol=1e-12)
    np.testing.assert_allclose(token_probability(got, labels), token_probability(want, labels), atol=1e-12)


def test_independent_chain_documents_match_path_enumeration(seed):
    """Oracle: with independent tokens, the mass of all K^T paths agreeing with the labels on the chosen tokens
    equals the closed form's document probability (the product of the tempered marginals), with and without the
    chain's marginals passed in, and 0 where a chosen label is forbidden; tolerance 1e-12."""
    rng = np.random.default_rng(seed)
    corpus = _corpus(IO, [3, 2, 2])
    proba = rng.dirichlet(np.ones(3), size=7)
    chain = independent_chain(proba, seq_first=sequence_starts(corpus)).tempered(2.5)
    chain = dataclasses.replace(chain, log_rest=np.where((np.arange(7) == 5)[:, None] & (np.arange(3) == 1), -np.inf,
                                                         0.0))
    labels = np.array([0, 2, 1, 1, 0, 1, 2])
    where = np.array([True, True, False, True, True, True, False])
    group = corpus.token_doc.astype(np.int64)
    paths, w = _paths(chain, 1.0)
    agree = (paths == labels) | ~where
    want = [w[agree[:, s].all(axis=1)].sum() for s in (slice(0, 3), slice(3, 5), slice(5, 7))]
    assert want[2] == 0.0
    got = labels_probability(chain, labels, where=where, group=group, n_groups=3)
    np.testing.assert_allclose(got, want, atol=1e-12)
    shared = labels_probability(chain, labels, where=where, group=group, n_groups=3, marginals=chain_marginals(chain))
    np.testing.assert_allclose(shared, want, atol=1e-12)


def test_a_chain_with_transitions_is_not_independent():
    """Flat start weights and transitions make a chain independent; one transition different does not."""
    corpus = _corpus(IO, [2])
    chain = independent_chain(np.full((2, 3), 1 / 3), seq_first=sequence_starts(corpus))
    assert chain.independent and chain.tempered(3.0).independent
    trans = np.zeros((3, 3))
    trans[0, 1] = -1.0
    assert not dataclasses.replace(chain, log_trans=trans).independent
    assert not dataclasses.replace(chain, log_trans=np.full((3, 3), -np.inf)).independent


@pytest.mark.parametrize("hard", [False, True])
def test_fit_temperatures_agrees_with_brent(hard, seed):
    """Oracle: scipy's bounded Brent search on log T (``minimize_scalar``, xatol 1e-6: the search the fit made
    before), on token scores of 3,000 independent 9-class posteriors. With ``hard`` posteriors (majority-vote-like:
    most classes exactly 0, a fifth of the sure tokens wrong) the log loss falls again towards the upper bound, where
    the floored zeros regain mass; both searches keep the minimum downhill of Brent's start. Within 1e-3 of log T."""
    from scipy.optimize import minimize_scalar

    rng = np.random.default_rng(seed)
    n = 3000
    proba = rng.dirichlet(np.full(9, 0.3), size=n)
    if hard:
        votes = rng.multinomial(5, rng.dirichlet(np.full(9, 0.2), size=n))
        proba = votes / votes.sum(axis=1, keepdims=True)
    chain = independent_chain(proba, seq_first=np.ones(n, dtype=bool))
    labels = proba.argmax(axis=1)

    def score(temps):
        return token_probability(tempered_marginals(chain, temps), labels).reshape(len(temps), n)

    outcome = rng.random(n) < np.where(proba.max(axis=1) == 1.0, 0.8, score(np.array([1.5]))[0])
    tiny, top = np.finfo(np.float64).tiny, 1.0 - np.finfo(np.float64).epsneg

    def log_loss(log_t):
        p = np.clip(score(np.array([np.exp(log_t)]))[0], tiny, top)
        return -(np.log(p[outcome]).sum() + np.log1p(-p[~outcome]).sum())

    brent = minimize_scalar(log_loss, bounds=(np.log(0.05), np.log(50.0)), method="bounded",
                            options={"xatol": 1e-6}).x
    assert np.log(fit_temperatures(score, outcome)[0]) == pytest.approx(brent, abs=1e-3)
