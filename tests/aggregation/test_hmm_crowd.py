"""HMMCrowd (Nguyen et al., ACL 2017): oracles, reductions and properties."""

from __future__ import annotations

import itertools
import warnings
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from crowdqa.aggregation._base import ConvergenceWarning
from crowdqa.aggregation._bio import repair_bio
from crowdqa.aggregation._sequences import SHAPE_FEATURES, sentence_starts, text_features
from crowdqa.aggregation.corpus import Corpus
from crowdqa.aggregation.hmm_crowd import (
    HMMCrowd,
    _build_design,
    _confusion,
    _decode_labels,
    _e_step,
    _initial_params,
    _log_prior_minus_kl,
    _m_step,
    _objective,
    _Params,
    _token_log_lik,
)

WORDS = ("Patients", "with", "12", "IL", "mg", "adults", "(", "Trial", ".")
BIO = ("O", "B-A", "I-A", "B-B", "I-B")


def random_corpus(rng: np.random.Generator, *, n_docs: int = 4, max_len: int = 5, n_workers: int = 3,
                  class_names: tuple[str, ...] = ("O", "P"), p_label: float = 0.7, accuracy: float = 0.8,
                  empty_doc: bool = False) -> Corpus:
    """Small corpus: random words, random truth, each annotator labels a document with prob p_label."""
    k = len(class_names)
    lengths = rng.integers(1, max_len + 1, size=n_docs)
    if empty_doc:
        lengths[-1] = 2
    texts, starts, ends = [], [], []
    for n in lengths:
        ws = [WORDS[i] for i in rng.integers(0, len(WORDS), n)]
        pos = np.cumsum([0] + [len(w) + 1 for w in ws[:-1]])
        texts.append(" ".join(ws))
        starts.append(pos)
        ends.append(pos + np.array([len(w) for w in ws]))
    truth = rng.integers(0, k, lengths.sum())
    doc_start = np.concatenate([[0], np.cumsum(lengths)])
    tok, wrk, lab = [], [], []
    for d in range(n_docs - (1 if empty_doc else 0)):
        who = [w for w in range(n_workers) if rng.random() < p_label] or [int(rng.integers(n_workers))]
        for w in who:
            t = np.arange(doc_start[d], doc_start[d + 1])
            noisy = np.where(rng.random(t.size) < accuracy, truth[t], rng.integers(0, k, t.size))
            tok += t.tolist()
            wrk += [w] * t.size
            lab += noisy.tolist()
    return Corpus.from_arrays(token=tok, worker=wrk, label=lab, doc_lengths=lengths,
                              token_start=np.concatenate(starts), token_end=np.concatenate(ends),
                              doc_ids=[f"d{i}" for i in range(n_docs)], texts=texts,
                              worker_ids=[f"w{i}" for i in range(n_workers)], worker_roles=["crowd"] * n_workers,
                              class_names=class_names)


def random_params(rng: np.random.Generator, design, *, n_workers: int) -> _Params:
    """Random parameters from random counts through the model's own M-step (sub-normalised VB rows)."""
    k = design.n_classes
    stats = {"start": rng.uniform(0, 3, k), "trans": rng.uniform(0, 3, (k, k)),
             "shape": rng.uniform(0, 3, (design.shape.shape[1], k, 2)),
             "worker": rng.uniform(0, 3, (n_workers, k, k))}
    if design.vocab is not None:
        stats["word"] = rng.uniform(0, 3, (k, design.vocab.shape[1]))
    return _m_step(stats, pseudo_count=0.1, worker_smoothing=0.01, worker_model="full")


def naive_sentence_starts(corpus: Corpus) -> np.ndarray:
    """The documented rule, token by token: a document start, or after a token that is exactly . ? or !
    before an upper-case or digit token."""
    first = np.zeros(corpus.n_tokens, dtype=bool)
    for d in range(corpus.n_docs):
        toks = corpus.doc_tokens(d)
        for t, w in enumerate(toks):
            s = int(corpus.doc_start[d]) + t
            first[s] = t == 0 or (toks[t - 1] in (".", "?", "!") and (w[0].isupper() or w[0].isdigit()))
    return first


def test_sentence_starts_rule():
    """Hand-worked example: ``e . g . the`` stays in one sentence; ``. Trial`` and ``? 12`` start one."""
    toks = ["Patients", "e", ".", "g", ".", "the", ".", "Trial", "mg", "?", "12", "x", "!", "IL"]
    doc_first = np.zeros(len(toks), dtype=bool)
    doc_first[[0, 11]] = True
    got = sentence_starts(toks, doc_first=doc_first)
    assert np.flatnonzero(got).tolist() == [0, 7, 10, 11, 13]


def test_sentence_starts_never_cut_a_pretokenized_abbreviation():
    """Pre-tokenized text keeps an abbreviation's period on its token: ``U.S. Treasury`` and ``Jan. 5``
    stay in one sentence; only the standalone ``.`` ends one (regression, issue 12)."""
    toks = ["The", "U.S.", "Treasury", "said", "on", "Jan.", "5", ".", "It", "rose"]
    got = sentence_starts(toks, doc_first=np.eye(1, len(toks), dtype=bool)[0])
    assert np.flatnonzero(got).tolist() == [0, 8]


def conll_corpus(sentences: list[list[tuple[str, str]]], *, n_workers: int = 3) -> Corpus:
    """Pre-tokenized sentences (one document each, as the CoNLL reader makes them), every annotator
    giving the listed tags."""
    names = ("O", "B-ORG", "I-ORG", "B-PER", "I-PER")
    texts, starts, ends, lengths, tok, wrk, lab = [], [], [], [], [], [], []
    n = 0
    for sent in sentences:
        words = [w for w, _ in sent]
        pos = np.cumsum([0] + [len(w) + 1 for w in words[:-1]])
        texts.append(" ".join(words))
        starts.append(pos)
        ends.append(pos + np.array([len(w) for w in words]))
        lengths.append(len(sent))
        for w in range(n_workers):
            tok += range(n, n + len(sent))
            wrk += [w] * len(sent)
            lab += [names.index(t) for _, t in sent]
        n += len(sent)
    return Corpus.from_arrays(token=tok, worker=wrk, label=lab, doc_lengths=lengths,
                              token_start=np.concatenate(starts), token_end=np.concatenate(ends),
                              doc_ids=[f"s{i}" for i in range(len(sentences))], texts=texts,
                              worker_ids=[f"w{i}" for i in range(n_workers)], worker_roles=["crowd"] * n_workers,
                              class_names=names)


@pytest.mark.parametrize("sequences", ["document", "sentence"])
def test_an_entity_across_an_abbreviation_stays_whole(sequences):
    """``U.S. Treasury`` tagged B-ORG I-ORG by every annotator comes out B-ORG I-ORG with the defaults and
    with sentence sequences (the old rule cut after ``U.S.`` and forced ``Treasury`` to start a span)."""
    sent = [("The", "O"), ("U.S.", "B-ORG"), ("Treasury", "I-ORG"), ("said", "O"), ("Smith", "B-PER"),
            ("Jr.", "I-PER"), ("Lee", "I-PER"), (".", "O")]
    corpus = conll_corpus([sent, sent[::-1][:1] + sent[:4]])
    kw = {} if sequences == "document" else {"sequences": "sentence"}
    model = HMMCrowd(**kw).fit(corpus)
    names = np.array(corpus.class_names)
    assert names[model.labels_[:len(sent)]].tolist() == [t for _, t in sent]


@pytest.mark.parametrize("shape_emission", ["bernoulli", "shared"])
def test_sentences_are_independent_sequences_by_enumeration(seed, shape_emission):
    """Oracle: enumerate all K^T paths of each *sentence* (T <= 4) separately, each with the start
    probabilities, and multiply: a document cut into sentences is the product of independent sequences.

    The token emission is written out by hand for both shape models: ``"bernoulli"`` multiplies
    P(feature value | state) per feature; ``"shared"`` multiplies the word's entry and the entry of each
    present feature of one per-state multinomial (the authors' ``pr_obs``). Checks posteriors, log
    evidence, expected start and transition counts (1e-9).
    """
    rng = np.random.default_rng(seed)
    corpus = random_corpus(rng, n_docs=4, max_len=9, class_names=("O", "P", "Q"), p_label=0.6)
    design = _build_design(corpus, known=None, features=("word", "capitalised", "digit"), lowercase=False,
                           sequences="sentence", shape_emission=shape_emission)
    params = random_params(rng, design, n_workers=corpus.n_workers)
    stats, post, log_evidence = _e_step(params, design)

    first = naive_sentence_starts(corpus)
    np.testing.assert_array_equal(design.seq_first, first)
    k = corpus.n_classes
    start, trans, conf = np.exp(params.log_start), np.exp(params.log_trans), params.confusion
    emit = np.exp(params.log_word)
    tokens = [w for d in range(corpus.n_docs) for w in corpus.doc_tokens(d)]
    vocab: dict[str, int] = {}
    ids = [vocab.setdefault(w, len(vocab)) for w in tokens]

    def token_factor(i: int, h: int) -> float:
        flags = [tokens[i][0].isupper(), tokens[i][0].isdigit()]
        if shape_emission == "bernoulli":
            p = emit[h, ids[i]] * np.prod([np.exp(params.log_shape)[f, h, int(v)] for f, v in enumerate(flags)])
        else:
            p = emit[h, ids[i]] * np.prod([emit[h, len(vocab) + f] for f, v in enumerate(flags) if v])
        for j in np.flatnonzero(corpus.token == i):
            p *= conf[corpus.worker[j], h, corpus.label[j]]
        return p

    bounds = np.append(np.flatnonzero(first), corpus.n_tokens)
    total, expected, xi, start_counts = 0.0, np.zeros_like(post), np.zeros((k, k)), np.zeros(k)
    for a, b in itertools.pairwise(bounds):
        assert b - a <= 9
        paths = list(itertools.product(range(k), repeat=int(b - a)))
        w = np.array([start[p[0]] * np.prod([trans[p[t - 1], h] if t else 1.0 for t, h in enumerate(p)])
                      * np.prod([token_factor(a + t, h) for t, h in enumerate(p)]) for p in paths])
        total += np.log(w.sum())
        for path, q in zip(paths, w / w.sum(), strict=True):
            start_counts[path[0]] += q
            for t, h in enumerate(path):
                expected[a + t, h] += q
                if t:
                    xi[path[t - 1], h] += q
    np.testing.assert_allclose(post, expected, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(log_evidence, total, rtol=1e-9)
    np.testing.assert_allclose(stats["trans"], xi, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(stats["start"], start_counts, rtol=1e-9, atol=1e-12)


def test_wrong_mass_each_weighs_every_wrong_class_one_minus_accuracy(seed):
    """Hand formula of the authors' ``get_prob`` (cv2): factor a if the answer equals the state, else 1 - a.

    ``"split"`` gives (1 - a) / (K - 1) instead; worker_confusion_ rows sum to 1 either way (1e-12).
    """
    rng = np.random.default_rng(seed)
    corpus = random_corpus(rng, n_docs=3, max_len=4, class_names=BIO)
    design = _build_design(corpus, known=None, features=(), lowercase=False)
    counts = {"start": np.ones(5), "trans": np.ones((5, 5)), "shape": np.zeros((0, 5, 2)),
              "worker": rng.uniform(0, 3, (corpus.n_workers, 5, 5))}
    for mass, scale in (("each", 1.0), ("split", 1 / 4)):
        params = _m_step(counts, pseudo_count=0.1, worker_smoothing=0.01, worker_model="two-param", wrong_mass=mass)
        np.testing.assert_allclose(params.confusion.sum(axis=2), 1.0, rtol=1e-12)
        acc = np.diagonal(params.confusion, axis1=1, axis2=2)  # (n_workers, K): a0, a1, a1, ...
        expected = np.zeros((corpus.n_tokens, 5))
        for t, w, lab in zip(corpus.token, corpus.worker, corpus.label, strict=True):
            for h in range(5):
                expected[t, h] += np.log(acc[w, h] if h == lab else (1 - acc[w, h]) * scale)
        np.testing.assert_allclose(_token_log_lik(params, design), expected, rtol=1e-12)


def test_authors_start_and_initial_estimates_are_smoothed_frequencies():
    """Hand-worked: counts (3, 1) with s = 0.001 give start (3.001, 1.001) / 4.002, and the initial
    transition and word rows are (count + s) / sum(count + s), as the authors' ``HMM.learn``."""
    stats = {"start": np.array([3.0, 1.0]), "trans": np.array([[2.0, 0.0], [1.0, 1.0]]),
             "word": np.array([[1.0, 0.0, 3.0], [0.0, 2.0, 0.0]]), "shape": np.zeros((0, 2, 2)),
             "worker": np.ones((1, 2, 2))}
    opts = dict(pseudo_count=0.1, worker_smoothing=0.001, worker_model="two-param")
    m = _m_step(stats, **opts, start_smoothing=0.001)
    np.testing.assert_allclose(np.exp(m.log_start), [3.001 / 4.002, 1.001 / 4.002], rtol=1e-12)
    init = _initial_params(stats, smoothing=0.001, **opts, start_smoothing=0.001)
    np.testing.assert_allclose(np.exp(init.log_trans), [[2.001 / 2.002, 0.001 / 2.002], [0.5, 0.5]], rtol=1e-12)
    np.testing.assert_allclose(np.exp(init.log_word[0]), np.array([1.001, 0.001, 3.001]) / 4.003, rtol=1e-12)


def test_e_step_equals_enumeration(seed):
    """Oracle: enumerate all K^T label paths of each document (T <= 5) with the model written out by hand.

    p(path) = start * transitions * word * shape features * each present annotator's confusion entry.
    Checks posterior marginals, log evidence and the expected transition and confusion counts (1e-9).
    """
    rng = np.random.default_rng(seed)
    corpus = random_corpus(rng, n_docs=4, max_len=5, class_names=("O", "P", "Q"), p_label=0.6)
    design = _build_design(corpus, known=None, features=("word", "capitalised", "digit"), lowercase=False)
    params = random_params(rng, design, n_workers=corpus.n_workers)
    stats, post, log_evidence = _e_step(params, design)

    k = corpus.n_classes
    start, trans = np.exp(params.log_start), np.exp(params.log_trans)
    word_p, shape_p, conf = np.exp(params.log_word), np.exp(params.log_shape), params.confusion
    vocab: dict[str, int] = {}
    total, expected_post = 0.0, np.zeros_like(post)
    xi, worker = np.zeros((k, k)), np.zeros_like(conf)
    for d in range(corpus.n_docs):
        toks = corpus.doc_tokens(d)
        s = int(corpus.doc_start[d])
        ids = [vocab.setdefault(w, len(vocab)) for w in toks]
        paths = list(itertools.product(range(k), repeat=len(toks)))
        weights = []
        for path in paths:
            p = start[path[0]]
            for t, h in enumerate(path):
                p *= trans[path[t - 1], h] if t else 1.0
                p *= word_p[h, ids[t]] * shape_p[0, h, int(toks[t][0].isupper())]
                p *= shape_p[1, h, int(toks[t][0].isdigit())]
                for i in np.flatnonzero(corpus.token == s + t):
                    p *= conf[corpus.worker[i], h, corpus.label[i]]
            weights.append(p)
        weights = np.array(weights)
        z = weights.sum()
        total += np.log(z)
        for path, w in zip(paths, weights / z, strict=True):
            for t, h in enumerate(path):
                expected_post[s + t, h] += w
                if t:
                    xi[path[t - 1], h] += w
                for i in np.flatnonzero(corpus.token == s + t):
                    worker[corpus.worker[i], h, corpus.label[i]] += w
    np.testing.assert_allclose(post, expected_post, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(log_evidence, total, rtol=1e-9)
    np.testing.assert_allclose(stats["trans"], xi, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(stats["worker"], worker, rtol=1e-9, atol=1e-12)


def test_reduces_to_token_wise_dawid_skene(seed):
    """Reduction oracle: uniform start and transitions and no word features give token-wise Dawid-Skene.

    Compared with a naive Dawid-Skene written here (uniform class prior, full confusion
    matrices, additive smoothing 0.01), over 5 EM rounds from the same confusion matrices.
    """
    rng = np.random.default_rng(seed)
    corpus = random_corpus(rng, n_docs=6, max_len=6, n_workers=4, class_names=("O", "P", "Q"))
    design = _build_design(corpus, known=None, features=(), lowercase=False)
    k = corpus.n_classes
    conf = rng.dirichlet(np.ones(k) * 3, size=(corpus.n_workers, k))
    params = _Params(log_start=np.full(k, -np.log(k)), log_trans=np.full((k, k), -np.log(k)), log_word=None,
                     log_shape=np.zeros((0, k, 2)), confusion=conf, dirichlets=())
    naive_conf = conf.copy()
    for _ in range(5):
        stats, post, _ = _e_step(params, design)
        params = replace(params, confusion=_confusion(stats["worker"], smoothing=0.01, model="full"))
        naive_post = np.ones((corpus.n_tokens, k))
        for t, w, lab in zip(corpus.token, corpus.worker, corpus.label, strict=True):
            naive_post[t] *= naive_conf[w, :, lab]
        naive_post /= naive_post.sum(axis=1, keepdims=True)
        counts = np.full_like(naive_conf, 0.01)
        for t, w, lab in zip(corpus.token, corpus.worker, corpus.label, strict=True):
            counts[w, :, lab] += naive_post[t]
        naive_conf = counts / counts.sum(axis=2, keepdims=True)
        np.testing.assert_allclose(post, naive_post, rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(params.confusion, naive_conf, rtol=1e-9)


#: Seeds of the monotonicity property: a fixed, wide set (the same every run), with 278 and 315,
#: where the objective reported before issue 12 dropped (IO labels).
OBJECTIVE_SEEDS = (*range(25), 278, 315)


@pytest.mark.parametrize("bio", [False, True])
@pytest.mark.parametrize("model", ["two-param", "full"])
@pytest.mark.parametrize("authors", [False, True])
def test_objective_never_decreases(bio, model, authors):
    """Property: the variational EM objective is non-decreasing (relative slack 1e-9) from the first
    iteration on, with the defaults and with every authors' option (shared shape multinomial,
    unnormalised wrong answers), over a fixed set of seeds (regression, issue 12)."""
    kw = {"shape_emission": "shared", "wrong_mass": "each"} if authors else {}
    for seed in OBJECTIVE_SEEDS:
        rng = np.random.default_rng(seed)
        corpus = random_corpus(rng, n_docs=5, max_len=6, class_names=BIO if bio else ("O", "P"), accuracy=0.6)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            ll = np.array(HMMCrowd(max_iter=8, tol=0, worker_model=model, **kw).fit(corpus).log_likelihood_)
        assert ll.size == 8
        assert np.all(np.diff(ll) >= -1e-9 * np.abs(ll[1:])), (seed, ll)


@pytest.mark.parametrize("wrong_mass", ["split", "each"])
def test_objective_is_the_bound_by_enumeration(seed, wrong_mass):
    """Oracle: after an E-step under random parameters and the M-step, the reported objective is
    ``sum_paths q(path) (log f(path; new) - log q(path)) + log p(C, pi) - KL``, with ``q`` the posterior
    enumerated over all K^T paths (T <= 5) and ``f`` the model written out by hand (1e-9); and it is at
    most what the next E-step reaches, ``log Z(new) + log p - KL`` (coordinate ascent)."""
    rng = np.random.default_rng(seed)
    corpus = random_corpus(rng, n_docs=3, max_len=5, class_names=BIO[:3], p_label=0.8)
    design = _build_design(corpus, known=None, features=("word", "capitalised", "digit"), lowercase=False)
    opts = dict(pseudo_count=0.1, worker_smoothing=0.01, worker_model="two-param", wrong_mass=wrong_mass,
                start_smoothing=0.001)
    old = replace(random_params(rng, design, n_workers=corpus.n_workers),
                  wrong_boost=np.log(2.0) if wrong_mass == "each" else 0.0)
    stats, _, log_evidence = _e_step(old, design)
    new = _m_step(stats, **opts)
    got = _objective(log_evidence, stats, old=old, new=new, **opts)

    tokens = [w for d in range(corpus.n_docs) for w in corpus.doc_tokens(d)]
    vocab: dict[str, int] = {}
    ids = [vocab.setdefault(w, len(vocab)) for w in tokens]

    def log_f(params: _Params, a: int, path: tuple[int, ...]) -> float:
        crowd = np.log(params.confusion) + np.where(np.eye(3, dtype=bool), 0.0, params.wrong_boost)
        total = params.log_start[path[0]]
        for t, h in enumerate(path):
            i = a + t
            total += params.log_trans[path[t - 1], h] if t else 0.0
            total += params.log_word[h, ids[i]]
            flags = (tokens[i][0].isupper(), tokens[i][0].isdigit())
            total += sum(params.log_shape[f, h, int(v)] for f, v in enumerate(flags))
            for j in np.flatnonzero(corpus.token == i):
                total += crowd[corpus.worker[j], h, corpus.label[j]]
        return total

    bound = 0.0
    for d in range(corpus.n_docs):
        a, n = int(corpus.doc_start[d]), int(corpus.doc_lengths[d])
        paths = list(itertools.product(range(3), repeat=n))
        lo = np.array([log_f(old, a, p) for p in paths])
        q = np.exp(lo - lo.max()) / np.exp(lo - lo.max()).sum()
        ln = np.array([log_f(new, a, p) for p in paths])
        bound += float(np.sum(q * (ln - np.log(q))))
    rest = _log_prior_minus_kl(new, **opts)
    np.testing.assert_allclose(got, bound + rest, rtol=1e-9)
    _, _, next_evidence = _e_step(new, design)
    assert got <= next_evidence + rest + 1e-9 * abs(got)


@pytest.mark.parametrize("class_names", [("O", "P"), BIO, ("O", "B-A", "I-A", "I-B")])
def test_one_identity_annotator_is_returned(seed, class_names):
    """Oracle: one annotator whose confusion matrix is exactly the identity (log 0 = -inf entries).

    Posterior marginals are that annotator's labels (one-hot) and so is the Viterbi path,
    with the BIO constraints in place, whatever the transitions and word emissions. The constraints
    are the shared ``_bio.bio_rules``: an ``I-B`` whose ``B-B`` the schema lacks is unconstrained (as in
    Dawid-Skene's and IBCC's decoding), not unreachable.
    """
    rng = np.random.default_rng(seed)
    corpus = random_corpus(rng, n_docs=6, max_len=6, n_workers=1, class_names=class_names, p_label=1.0,
                           accuracy=1.0)
    given_labels = corpus.labels_of(0)
    if class_names != ("O", "P"):
        first = np.zeros(corpus.n_tokens, dtype=bool)
        first[corpus.doc_start[:-1]] = True
        given_labels = repair_bio(given_labels, first=first, class_names=class_names)
        corpus = Corpus.from_arrays(token=corpus.token, worker=corpus.worker, label=given_labels[corpus.token],
                                    **{f: getattr(corpus, f) for f in ("doc_lengths", "token_start", "token_end",
                                       "doc_ids", "texts", "worker_ids", "worker_roles", "class_names")})
    design = _build_design(corpus, known=None, features=("word", "capitalised"), lowercase=False)
    params = replace(random_params(rng, design, n_workers=1), confusion=np.eye(corpus.n_classes)[None])
    with np.errstate(divide="ignore"):
        _, post, _ = _e_step(params, design)
        labels = _decode_labels(corpus, design, params, post, decode="viterbi", fill=0)
    np.testing.assert_array_equal(post, np.eye(corpus.n_classes)[given_labels])
    np.testing.assert_array_equal(labels, given_labels)


def test_unanimous_reliable_crowd_is_returned(seed):
    """Five annotators who all give the same labels: the fitted HMMCrowd returns those labels."""
    rng = np.random.default_rng(seed)
    base = random_corpus(rng, n_docs=6, max_len=6, n_workers=1, p_label=1.0, accuracy=1.0)
    n = 5
    corpus = Corpus.from_arrays(
        token=np.repeat(base.token, n), worker=np.tile(np.arange(n), base.n_obs), label=np.repeat(base.label, n),
        **{f: getattr(base, f) for f in ("doc_lengths", "token_start", "token_end", "doc_ids", "texts",
                                         "class_names")},
        worker_ids=[f"w{i}" for i in range(n)], worker_roles=["crowd"] * n)
    for decode in ("viterbi", "marginal"):
        np.testing.assert_array_equal(_fit(corpus, decode=decode).labels_, base.labels_of(0))


def _fit(corpus: Corpus, *, known=None, **kw) -> HMMCrowd:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return HMMCrowd(**kw).fit(corpus, true_labels=known)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**31 - 1))
def test_document_and_annotator_order_do_not_matter(seed):
    """Property: permuting documents and annotator ids permutes the output and nothing else (1e-8)."""
    rng = np.random.default_rng(seed)
    corpus = random_corpus(rng, n_docs=5, max_len=5, n_workers=4, class_names=BIO)
    doc_perm = rng.permutation(corpus.n_docs)
    worker_perm = rng.permutation(corpus.n_workers)  # new index of each old worker
    new_start = np.concatenate([[0], np.cumsum(corpus.doc_lengths[doc_perm])])
    new_pos = np.empty(corpus.n_docs, dtype=np.int64)
    new_pos[doc_perm] = np.arange(corpus.n_docs)
    token_map = new_start[new_pos[corpus.token_doc]] + (np.arange(corpus.n_tokens) - corpus.doc_start[corpus.token_doc])
    inv_tokens = np.argsort(token_map)
    permuted = Corpus.from_arrays(
        token=token_map[corpus.token], worker=worker_perm[corpus.worker], label=corpus.label,
        doc_lengths=corpus.doc_lengths[doc_perm], token_start=corpus.token_start[inv_tokens],
        token_end=corpus.token_end[inv_tokens], doc_ids=[corpus.doc_ids[d] for d in doc_perm],
        texts=[corpus.texts[d] for d in doc_perm], worker_ids=[corpus.worker_ids[w] for w in np.argsort(worker_perm)],
        worker_roles=corpus.worker_roles, class_names=corpus.class_names)
    for kw in ({"max_iter": 2}, {"decode": "marginal"}):
        a, b = _fit(corpus, **kw), _fit(permuted, **kw)
        np.testing.assert_allclose(b.proba_[token_map], a.proba_, rtol=1e-8, atol=1e-10)
        np.testing.assert_allclose(b.worker_confusion_[worker_perm], a.worker_confusion_, rtol=1e-8, atol=1e-12)
        clear = np.sort(a.proba_, axis=1)[:, -1] - np.sort(a.proba_, axis=1)[:, -2] > 1e-6
        if kw.get("decode") == "marginal":
            np.testing.assert_array_equal(b.labels_[token_map][clear], a.labels_[clear])


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**31 - 1), decode=st.sampled_from(["viterbi", "marginal"]),
       sequences=st.sampled_from(["document", "sentence"]))
def test_bio_output_is_always_valid(seed, decode, sequences):
    """Property: no I-X after O, after another type, or at a sequence start (a document's first token, and
    with sequences="sentence" a sentence's), whatever the input."""
    rng = np.random.default_rng(seed)
    corpus = random_corpus(rng, n_docs=5, max_len=8, class_names=BIO, accuracy=0.3)
    labels = _fit(corpus, decode=decode, max_iter=2, sequences=sequences).labels_
    names = np.array(BIO)
    first = naive_sentence_starts(corpus)
    if sequences == "document":
        first = np.isin(np.arange(corpus.n_tokens), corpus.doc_start[:-1])
    for i, cur in enumerate(names[labels]):
        if cur.startswith("I-"):
            assert not first[i], (i, cur)
            assert names[labels[i - 1]] in ("B-" + cur[2:], cur), (names[labels[i - 1]], cur)


def test_known_tokens_are_clamped_and_unlabelled_documents_get_the_prior(seed):
    """Clamped tokens keep their class with posterior 1; a document nobody labelled gets class_prior_.

    The clamped tokens are the first tokens of the two first (labelled) documents: clamping a token of
    the unlabelled document gives it evidence, which the next test covers (regression, issue 12: with
    documents of lengths 1, 1, 1, 2 the old token 3 lay in the unlabelled document).
    """
    rng = np.random.default_rng(seed)
    corpus = random_corpus(rng, n_docs=4, max_len=5, empty_doc=True)
    clamped = corpus.doc_start[:2]
    known = np.full(corpus.n_tokens, -1)
    known[clamped] = [1, 0]
    model = _fit(corpus, known=known)
    np.testing.assert_array_equal(model.labels_[clamped], [1, 0])
    np.testing.assert_allclose(model.proba_[clamped], [[0, 1], [1, 0]])
    last = slice(corpus.doc_start[-2], corpus.doc_start[-1])
    np.testing.assert_allclose(model.proba_[last], np.broadcast_to(model.class_prior_, (2, 2)))
    np.testing.assert_allclose(model.proba_.sum(axis=1), 1.0)
    assert model.labels_[last].tolist() == [int(np.argmax(model.class_prior_))] * 2
    assert model.transition_.shape == (2, 2) and model.start_.shape == (2,)
    np.testing.assert_allclose(model.transition_.sum(axis=1), 1.0)


def test_a_clamped_token_makes_an_unlabelled_document_part_of_the_fit(seed):
    """A known token is evidence: the document that holds it is decoded by the HMM, not given the prior.

    Oracle: the clamped token is one-hot, and its neighbour's posterior is the HMM's two-token
    posterior written out by hand from the fitted start, transition and emission factors (1e-9).
    """
    rng = np.random.default_rng(seed)
    corpus = random_corpus(rng, n_docs=4, max_len=5, empty_doc=True)
    first = int(corpus.doc_start[-2])
    known = np.full(corpus.n_tokens, -1)
    known[first] = 1
    model = _fit(corpus, known=known, features=(), sequences="document")
    np.testing.assert_allclose(model.proba_[first], [0, 1])
    # No crowd label and no word feature on the second token, and one sequence per document (a
    # sentence cut between the two would give the start probabilities): p(h2 | h1 = 1) is the
    # transition row.
    np.testing.assert_allclose(model.proba_[first + 1], model.transition_[1], rtol=1e-9)


def test_callback_gets_each_iteration_and_max_iter_warns(seed):
    """The callback sees (iteration, objective) once per EM iteration; stopping at max_iter warns."""
    corpus = random_corpus(np.random.default_rng(seed), n_docs=4)
    seen: list[tuple[int, float]] = []
    with pytest.warns(ConvergenceWarning, match="max_iter=3"):
        model = HMMCrowd(max_iter=3, tol=0).fit(corpus, callback=lambda i, ll: seen.append((i, ll)))
    assert [i for i, _ in seen] == [1, 2, 3]
    assert [ll for _, ll in seen] == model.log_likelihood_
    assert model.n_iter_ == 3 and model.converged_ is False


@pytest.mark.parametrize(("param", "value", "match"), [
    ("decode", "beam", "decode must be one of"),
    ("worker_model", "one-coin", "worker_model must be one of"),
    ("max_iter", 0, "max_iter must be an integer in"),
    ("pseudo_count", 0.0, "pseudo_count must be > 0"),
    ("features", ("word", "suffix"), "features must be a tuple of 'word' and names in"),
    ("sequences", "paragraph", "sequences must be one of"),
    ("shape_emission", "gaussian", "shape_emission must be one of"),
    ("wrong_mass", "half", "wrong_mass must be one of"),
    ("init_smoothing", 0.0, "init_smoothing must be > 0 or None"),
])
def test_bad_parameters_raise(param, value, match):
    corpus = random_corpus(np.random.default_rng(0))
    model = HMMCrowd(**{param: value})
    with pytest.raises(ValueError, match=match):
        model.fit(corpus)


def test_default_fixed_schedule_runs_max_iter_steps_without_warning(seed):
    """tol=None (the default): exactly max_iter EM steps, five by default on two classes as the
    authors' PICO run (yinfeiy/PICO-data src/seqcrowd/run.py, niter = 5), and no ConvergenceWarning."""
    corpus = random_corpus(np.random.default_rng(seed), n_docs=4)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        default = HMMCrowd().fit(corpus)
        three = HMMCrowd(max_iter=3).fit(corpus)
    assert (default.n_iter_, three.n_iter_) == (5, 3) and not default.converged_
    assert len(default.log_likelihood_) == 5
    with pytest.raises(ValueError, match="tol must be >= 0 or None"):
        HMMCrowd(tol=-1.0).fit(corpus)


def test_default_wrong_answer_weighs_one_minus_accuracy_as_the_authors_get_prob(seed):
    """Oracle, three classes, one-token documents, no word features: with the default options the
    posterior of a token is start_[k] * prod_w f_w(k, l_w), where f_w(k, l) = a_wk if l == k and
    1 - a_wk for *every* wrong l (the authors' ``WorkerModel.get_prob`` for ``cv2``), a_wk the
    diagonal of the fitted two-parameter confusion matrix (1e-9)."""
    rng = np.random.default_rng(seed)
    corpus = random_corpus(rng, n_docs=12, max_len=1, n_workers=4, class_names=("O", "P", "Q"), p_label=0.8,
                           accuracy=0.6)
    model = HMMCrowd(features=()).fit(corpus)
    acc = np.diagonal(model.worker_confusion_, axis1=1, axis2=2)  # (n_workers, K)
    for t in range(corpus.n_tokens):
        rows = corpus.token == t
        f = np.log(model.start_).copy()
        for w, lab in zip(corpus.worker[rows], corpus.label[rows], strict=True):
            f += np.where(np.arange(3) == lab, np.log(acc[w]), np.log1p(-acc[w]))
        np.testing.assert_allclose(model.proba_[t], np.exp(f - f.max()) / np.exp(f - f.max()).sum(), rtol=1e-9)


@pytest.mark.parametrize(("options", "class_names", "steps"), [
    ({}, ("O", "P"), 5),                                          # the authors' PICO run
    ({}, ("O", "B-P", "I-P"), 1),                                 # their NER command line (cv2, -e 1)
    ({"wrong_mass": "split"}, ("O", "B-P", "I-P"), 5),            # a proper model: the PICO schedule
    ({"worker_model": "full"}, ("O", "B-P", "I-P"), 5),
    ({"max_iter": 3}, ("O", "B-P", "I-P"), 3),                    # an explicit number is kept
])
def test_auto_max_iter_follows_the_authors_schedules(options, class_names, steps):
    """max_iter="auto": one EM step only for the improper model the authors ran for one step
    (two-parameter workers, unnormalised wrong answers, more than two classes), five otherwise."""
    corpus = random_corpus(np.random.default_rng(0), n_docs=4, class_names=class_names)
    model = HMMCrowd(**options).fit(corpus)
    assert model.n_iter_ == len(model.log_likelihood_) == steps == model.resolved_max_iter(corpus.n_classes)


@settings(max_examples=60, deadline=None)
@given(tokens=st.lists(st.sampled_from(["The", "the", "THE", "2x", "a", "A.", ",", "É", "é", "", "Ab", "aB", "ǅ"]),
                       max_size=40),
       features=st.lists(st.sampled_from(["word", *SHAPE_FEATURES]), unique=True), lowercase=st.booleans())
def test_text_features_equal_a_loop_over_the_tokens(tokens, features, lowercase):
    """Oracle: every token's features computed from its own string, word ids numbered by a dict in token order."""
    word, vocab, shape, words = text_features(tokens, n_tokens=len(tokens), features=tuple(features),
                                              lowercase=lowercase)
    names = [f for f in features if f != "word"]
    expected = np.zeros((len(tokens), len(names)), dtype=bool)
    for i, t in enumerate(tokens):
        expected[i] = [SHAPE_FEATURES[f](t) for f in names]
    np.testing.assert_array_equal(shape, expected)
    if "word" not in features:
        assert word is None and vocab is None and words == ()
        return
    index: dict[str, int] = {}
    ids = [index.setdefault(t.lower() if lowercase else t, len(index)) for t in tokens]
    assert word.tolist() == ids
    assert words == tuple(index)
    assert vocab.shape == (len(tokens), max(len(index), 1))
    np.testing.assert_array_equal(vocab.toarray(), np.eye(max(len(index), 1))[np.array(ids, dtype=np.int64)])
