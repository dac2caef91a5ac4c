"""Tests for crowdqa.aggregation.dawid_skene.

Oracles: brute-force enumeration of the likelihood and naive loops for the M-step
(kept below), crowd-kit 1.4.2's ``DawidSkene`` (a reference implementation), and the
majority-vote reduction of STYLE.md.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from crowdqa.aggregation import ConvergenceWarning, DawidSkene
from crowdqa.aggregation._confusion import e_step, obs_key
from crowdqa.aggregation.corpus import Corpus
from crowdqa.aggregation.dawid_skene import _log_param_prior, _m_step, _safe_log


def random_corpus(
    rng: np.random.Generator,
    *,
    n_items: int = 40,
    n_workers: int = 6,
    n_classes: int = 3,
    per_item: int = 3,
    accuracy: tuple[float, float] = (0.55, 0.95),
    truth: np.ndarray | None = None,
) -> tuple[Corpus, np.ndarray]:
    """Categorical corpus (one-token documents): ``per_item`` distinct workers per item, noisy labels."""
    if truth is None:
        truth = rng.integers(0, n_classes, size=n_items)
    acc = rng.uniform(*accuracy, size=n_workers)
    workers = np.argsort(rng.random((n_items, n_workers)), axis=1)[:, :per_item]
    token = np.repeat(np.arange(n_items), per_item)
    worker = workers.ravel()
    right = rng.random(token.size) < acc[worker]
    wrong = (truth[token] + rng.integers(1, max(n_classes, 2), size=token.size)) % n_classes
    label = np.where(right, truth[token], wrong)
    corpus = Corpus.from_arrays(
        token=token, worker=worker, label=label, doc_lengths=np.ones(n_items),
        token_start=np.zeros(n_items), token_end=np.ones(n_items),
        doc_ids=[f"i{i}" for i in range(n_items)], texts=["x"] * n_items,
        worker_ids=[f"w{w}" for w in range(n_workers)], worker_roles=["crowd"] * n_workers,
        class_names=["O", *[f"c{k}" for k in range(1, n_classes)]],
    )
    return corpus, truth


def brute_log_likelihood(corpus: Corpus, prior: np.ndarray, conf: np.ndarray) -> float:
    """log p(all labels) by enumerating every token's true class with plain Python loops."""
    by_token: dict[int, list[tuple[int, int]]] = {}
    for i, w, o in zip(corpus.token.tolist(), corpus.worker.tolist(), corpus.label.tolist(), strict=True):
        by_token.setdefault(i, []).append((w, o))
    total = 0.0
    for obs in by_token.values():
        p = 0.0
        for t in range(len(prior)):
            term = prior[t]
            for w, o in obs:
                term *= conf[w, t, o]
            p += term
        total += math.log(p)
    return total


def naive_m_step(corpus: Corpus, post: np.ndarray, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """Closed-form M-step with explicit loops over annotations."""
    n_workers, n_classes = corpus.n_workers, corpus.n_classes
    counts = np.zeros((n_workers, n_classes, n_classes))
    for i, w, o in zip(corpus.token.tolist(), corpus.worker.tolist(), corpus.label.tolist(), strict=True):
        for t in range(n_classes):
            counts[w, t, o] += post[i, t]
    conf = (counts + alpha) / (counts + alpha).sum(axis=2, keepdims=True)
    prior = (post.sum(axis=0) + alpha) / (post.sum() + n_classes * alpha)
    return prior, conf


def _fit(est, corpus, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return est.fit(corpus, **kw)


# ---------------------------------------------------------------- pure functions vs brute force
def test_e_step_log_likelihood_and_posterior_match_enumeration(seed):
    """Oracle: brute-force enumeration over classes (tiny input), tolerance 1e-10."""
    rng = np.random.default_rng(seed)
    c, _ = random_corpus(rng, n_items=8, n_workers=4, n_classes=3, per_item=3)
    prior = rng.dirichlet(np.ones(3))
    conf = rng.dirichlet(np.ones(3), size=(4, 3))
    post, ll = e_step(np.log(prior), np.log(conf), token=c.token, key=obs_key(c), n_tokens=c.n_tokens)
    assert ll == pytest.approx(brute_log_likelihood(c, prior, conf), rel=1e-10)
    for i in range(c.n_tokens):
        m = c.token == i
        joint = prior * np.prod(conf[c.worker[m], :, c.label[m]], axis=0)
        np.testing.assert_allclose(post[i], joint / joint.sum(), rtol=1e-10)


def test_m_step_equals_closed_form(seed):
    """Oracle: naive_m_step (explicit loops), tolerance 1e-12."""
    rng = np.random.default_rng(seed)
    c, _ = random_corpus(rng, n_items=12, n_workers=5, n_classes=4, per_item=2)
    post = rng.dirichlet(np.ones(4), size=c.n_tokens)
    prior, conf = _m_step(post, token=c.token, key=obs_key(c), n_workers=5, alpha=0.3)
    exp_prior, exp_conf = naive_m_step(c, post, 0.3)
    np.testing.assert_allclose(prior, exp_prior, rtol=1e-12)
    np.testing.assert_allclose(conf, exp_conf, rtol=1e-12)


def test_one_coin_m_step_closed_form(seed):
    """Oracle: the accuracy (agreeing mass + alpha) / (all mass + 2 alpha), computed with loops."""
    rng = np.random.default_rng(seed)
    c, _ = random_corpus(rng, n_items=15, n_workers=4, n_classes=3, per_item=2)
    post = rng.dirichlet(np.ones(3), size=c.n_tokens)
    _, conf = _m_step(post, token=c.token, key=obs_key(c), n_workers=4, alpha=0.5, model="one-coin")
    for w in range(4):
        m = c.worker == w
        agree = sum(post[i, o] for i, o in zip(c.token[m], c.label[m], strict=True))
        acc = (agree + 0.5) / (m.sum() + 1.0)
        assert conf[w, 1, 1] == pytest.approx(acc, rel=1e-12)
        assert conf[w, 0, 2] == pytest.approx((1 - acc) / 2, rel=1e-12)
    np.testing.assert_allclose(conf.sum(axis=2), 1.0, rtol=1e-12)


@pytest.mark.parametrize("model", ["full", "one-coin"])
@settings(max_examples=25, deadline=None)
@given(data_seed=st.integers(0, 2**31 - 1), alpha=st.sampled_from([0.0, 0.01, 1.0]))
def test_em_never_decreases_objective(model, data_seed, alpha):
    """Oracle: the objective recomputed by brute_log_likelihood plus the log smoothing prior.

    Property (Dempster et al. 1977): MAP-EM never decreases log p(y | params) + log p(params).
    """
    rng = np.random.default_rng(data_seed)
    c, _ = random_corpus(rng, n_items=10, n_workers=4, n_classes=3, per_item=3)
    ds = _fit(DawidSkene(max_iter=8, tol=0, alpha=alpha, model=model), c)
    hist = np.array(ds.log_likelihood_)
    assert np.all(np.diff(hist) >= -1e-9 * np.abs(hist[1:]).clip(1))
    # The last recorded objective is that of the parameters entering the last iteration;
    # the final parameters have an objective at least as high.
    final = brute_log_likelihood(c, ds.class_prior_, ds.worker_confusion_) + _log_param_prior(
        ds.class_prior_, ds.worker_confusion_, alpha=alpha, model=model
    )
    assert final >= hist[-1] - 1e-9 * abs(hist[-1])


def test_no_underflow_with_hundreds_of_labels_per_item(seed):
    """Oracle: with 1000 labels per item, the E-step equals the enumeration done in log space
    (math.fsum of logs, then a max-shift), where the linear-space product underflows to 0 for
    every class; fitting stays finite and recovers the planted truth.

    The truth is fixed and balanced (10 items of each class): with a full confusion matrix per
    worker, items that all share one class (as 4 random items often did) can be split into classes
    at no cost, so a random truth on a few items is not identifiable (regression, issue 12)."""
    rng = np.random.default_rng(seed)
    n_items = 30
    c, truth = random_corpus(rng, n_items=n_items, n_workers=1000, n_classes=3, per_item=1000,
                             accuracy=(0.4, 0.6), truth=np.arange(n_items) % 3)
    ds = _fit(DawidSkene(max_iter=20), c)
    assert np.all(np.isfinite(ds.proba_)) and np.allclose(ds.proba_.sum(axis=1), 1.0)
    assert np.all(np.isfinite(ds.log_likelihood_))
    np.testing.assert_array_equal(ds.labels_, truth)

    conf = np.full((1000, 3, 3), 0.25)
    conf[:, np.arange(3), np.arange(3)] = 0.5
    prior = np.array([0.2, 0.3, 0.5])
    post, ll = e_step(np.log(prior), np.log(conf), token=c.token, key=obs_key(c), n_tokens=n_items)
    expected_ll = 0.0
    for i in range(n_items):
        m = c.token == i
        logj = np.array([math.fsum(np.log(conf[c.worker[m], t, c.label[m]])) + math.log(prior[t])
                         for t in range(3)])
        assert np.all(np.exp(logj) == 0.0)  # the naive linear-space product underflows
        top = logj.max()
        expected_ll += top + math.log(np.exp(logj - top).sum())
        np.testing.assert_allclose(post[i], np.exp(logj - top) / np.exp(logj - top).sum(), rtol=1e-9, atol=1e-300)
    assert ll == pytest.approx(expected_ll, rel=1e-12)


# ---------------------------------------------------------------- reference library
@pytest.mark.parametrize("n_iter", [1, 5, 20])
@pytest.mark.filterwarnings("ignore:The (inplace|copy) keyword")
def test_agrees_with_crowdkit_dawid_skene(seed, n_iter):
    """Oracle: crowd-kit 1.4.2 DawidSkene, same init (vote fractions) and iterations; tolerance 1e-6.

    crowd-kit has no smoothing but clips confusion cells and priors at 1e-10; with
    ``alpha=0`` ours differs only by that clip, i.e. by ~1e-10 relative. Its loop is
    (E, M) after an initial M-step and it keeps the E-step before the last M-step, so
    our ``worker_confusion_`` after ``max_iter=n`` matches its ``errors_`` after
    ``n_iter=n`` and our final E-step (``proba_``) matches its ``probas_`` after ``n + 1``.
    """
    pd = pytest.importorskip("pandas")
    ck = pytest.importorskip("crowdkit.aggregation")
    rng = np.random.default_rng(seed)
    c, _ = random_corpus(rng, n_items=60, n_workers=8, n_classes=3, per_item=4, accuracy=(0.5, 0.9))
    df = pd.DataFrame({
        "task": [f"t{i}" for i in c.token.tolist()],
        "worker": [c.worker_ids[w] for w in c.worker.tolist()],
        "label": c.label.astype(int),
    })
    ours = _fit(DawidSkene(max_iter=n_iter, tol=0, alpha=0.0), c)

    theirs = ck.DawidSkene(n_iter=n_iter + 1, tol=-np.inf).fit(df)
    assert len(theirs.loss_history_) == n_iter + 1
    proba = theirs.probas_.loc[[f"t{i}" for i in range(c.n_tokens)], [0, 1, 2]].to_numpy()
    np.testing.assert_allclose(ours.proba_, proba, atol=1e-6)

    theirs = ck.DawidSkene(n_iter=n_iter, tol=-np.inf).fit(df)
    errors = theirs.errors_  # index (worker, observed label), columns true label
    for w, wid in enumerate(c.worker_ids):
        sub = errors.loc[wid]
        for o in sub.index:
            np.testing.assert_allclose(ours.worker_confusion_[w, :, o], sub.loc[o, [0, 1, 2]].to_numpy(), atol=1e-6)


# ---------------------------------------------------------------- properties
@settings(max_examples=20, deadline=None)
@given(data_seed=st.integers(0, 2**31 - 1), model=st.sampled_from(["full", "one-coin"]))
def test_invariant_to_permuting_workers_and_items(data_seed, model):
    """Property: relabelling annotators and reordering items permutes the outputs and nothing else."""
    rng = np.random.default_rng(data_seed)
    c, _ = random_corpus(rng, n_items=25, n_workers=5, n_classes=3, per_item=3)
    wp = rng.permutation(c.n_workers)  # old worker w -> new index wp[w]
    ip = rng.permutation(c.n_tokens)  # old item i -> new index ip[i]
    inv_w = np.argsort(wp)
    inv_i = np.argsort(ip)
    perm = Corpus.from_arrays(
        token=ip[c.token], worker=wp[c.worker], label=c.label, doc_lengths=c.doc_lengths,
        token_start=c.token_start, token_end=c.token_end,
        doc_ids=[c.doc_ids[j] for j in inv_i], texts=[c.texts[j] for j in inv_i],
        worker_ids=[c.worker_ids[j] for j in inv_w], worker_roles=c.worker_roles, class_names=c.class_names,
    )
    a = _fit(DawidSkene(max_iter=15, model=model), c)
    b = _fit(DawidSkene(max_iter=15, model=model), perm)
    np.testing.assert_allclose(b.proba_[ip], a.proba_, atol=1e-9)
    np.testing.assert_allclose(b.worker_confusion_[wp], a.worker_confusion_, atol=1e-9)
    np.testing.assert_allclose(b.class_prior_, a.class_prior_, atol=1e-9)


@pytest.mark.parametrize("model", ["full", "one-coin"])
@pytest.mark.parametrize("k", [0, 2])
def test_unanimous_input_returns_that_label(model, k, seed):
    rng = np.random.default_rng(seed)
    c, _ = random_corpus(rng, n_items=20, n_workers=5, n_classes=3, per_item=3, accuracy=(1.0, 1.0),
                         truth=np.full(20, k))
    ds = _fit(DawidSkene(model=model), c)
    assert np.all(ds.labels_ == k)
    assert np.all(ds.proba_[:, k] > 0.99)


@settings(max_examples=30, deadline=None)
@given(data_seed=st.integers(0, 2**31 - 1), p=st.floats(0.4, 0.99), n_classes=st.integers(2, 5))
def test_e_step_with_shared_symmetric_confusion_ranks_like_majority_vote(data_seed, p, n_classes):
    """Oracle (STYLE.md reduction): with a uniform prior and one shared symmetric confusion
    (accuracy p > 1/K, errors spread evenly), the E-step orders classes exactly as the vote counts."""
    if p <= 1.0 / n_classes + 1e-3:
        p = 1.0 / n_classes + 0.05
    rng = np.random.default_rng(data_seed)
    c, _ = random_corpus(rng, n_items=30, n_workers=7, n_classes=n_classes, per_item=5, accuracy=(0.3, 0.9))
    conf = np.full((n_classes, n_classes), (1 - p) / (n_classes - 1))
    np.fill_diagonal(conf, p)
    conf = np.broadcast_to(conf, (c.n_workers, n_classes, n_classes))
    post, _ = e_step(np.full(n_classes, -np.log(n_classes)), np.log(conf), token=c.token, key=obs_key(c),
                      n_tokens=c.n_tokens)
    votes = c.vote_counts()
    dv = np.sign(votes[:, :, None] - votes[:, None, :])
    dq = post[:, :, None] - post[:, None, :]
    dq = np.where(np.abs(dq) < 1e-12, 0, np.sign(dq))
    np.testing.assert_array_equal(dq, dv)


# ---------------------------------------------------------------- semi-supervised
def test_known_clamps_posteriors_and_rescues_adversarial_workers(seed):
    """Planted case: 3 of 4 annotators always give the *other* answer (binary). Unsupervised EM
    follows the (wrong) majority; with 15% of items known, EM learns the flip and the held-out
    items come out right. Oracle: the planted truth."""
    rng = np.random.default_rng(seed)
    n = 200
    truth = rng.integers(0, 2, size=n)
    token = np.repeat(np.arange(n), 4)
    worker = np.tile(np.arange(4), n)
    label = np.where(worker == 0, truth[token], 1 - truth[token])
    c = Corpus.from_arrays(
        token=token, worker=worker, label=label, doc_lengths=np.ones(n), token_start=np.zeros(n),
        token_end=np.ones(n), doc_ids=[str(i) for i in range(n)], texts=["x"] * n,
        worker_ids=["honest", "a1", "a2", "a3"], worker_roles=["crowd"] * 4, class_names=["O", "yes"],
    )
    known = np.full(n, -1)
    idx = rng.choice(n, size=30, replace=False)
    known[idx] = truth[idx]
    held = known < 0
    known_before = known.copy()

    plain = _fit(DawidSkene(), c)
    semi = _fit(DawidSkene(), c, true_labels=known)
    np.testing.assert_array_equal(known, known_before)  # input not mutated
    np.testing.assert_array_equal(semi.proba_[idx], np.eye(2)[truth[idx]])
    assert (plain.labels_[held] == truth[held]).mean() < 0.05
    assert (semi.labels_[held] == truth[held]).mean() == 1.0
    assert semi.worker_confusion_[1, 0, 1] > 0.95  # a1 learned as a flipper


def test_known_objective_matches_brute_force(seed):
    """Oracle: brute force with known tokens' sums restricted to the known class."""
    rng = np.random.default_rng(seed)
    c, truth = random_corpus(rng, n_items=10, n_workers=3, n_classes=2, per_item=3)
    prior = rng.dirichlet(np.ones(2))
    conf = rng.dirichlet(np.ones(2), size=(3, 2))
    known = np.where(np.arange(10) < 4, truth, -1)
    _, ll = e_step(np.log(prior), np.log(conf), token=c.token, key=obs_key(c), n_tokens=10, known=known)
    expected = 0.0
    for i in range(10):
        m = c.token == i
        joint = prior * np.prod(conf[c.worker[m], :, c.label[m]], axis=0)
        expected += math.log(joint[known[i]] if known[i] >= 0 else joint.sum())
    assert ll == pytest.approx(expected, rel=1e-12)


# ---------------------------------------------------------------- other contract points
def test_any_number_of_classes_and_unlabelled_tokens_get_prior(seed):
    rng = np.random.default_rng(seed)
    c, truth = random_corpus(rng, n_items=80, n_workers=6, n_classes=7, per_item=5, accuracy=(0.7, 0.95))
    keep = c.token < 70  # items 70..79 lose all their labels
    c2 = c._with_obs(keep)
    ds = _fit(DawidSkene(), c2)
    assert ds.proba_.shape == (80, 7) and ds.worker_confusion_.shape == (6, 7, 7)
    np.testing.assert_allclose(ds.proba_[70:], np.broadcast_to(ds.class_prior_, (10, 7)), rtol=1e-12)
    assert np.all(ds.labels_[70:] == np.argmax(ds.class_prior_))
    assert (ds.labels_[:70] == truth[:70]).mean() > 0.9


def test_callback_called_once_per_iteration(seed):
    rng = np.random.default_rng(seed)
    c, _ = random_corpus(rng)
    calls = []
    ds = _fit(DawidSkene(max_iter=7, tol=0), c, callback=lambda i, ll: calls.append((i, ll)))
    assert [i for i, _ in calls] == list(range(1, 8))
    assert [ll for _, ll in calls] == ds.log_likelihood_ and ds.n_iter_ == 7 and not ds.converged_


def test_converges_and_stops_before_max_iter(seed):
    rng = np.random.default_rng(seed)
    c, _ = random_corpus(rng, n_items=200, n_workers=6, accuracy=(0.8, 0.95))
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        ds = DawidSkene(max_iter=500, tol=1e-8).fit(c)
    assert ds.converged_ and ds.n_iter_ < 500


def test_random_init_is_reproducible(seed):
    rng = np.random.default_rng(seed)
    c, _ = random_corpus(rng)
    a = _fit(DawidSkene(init="random", random_state=3, max_iter=3), c)
    b = _fit(DawidSkene(init="random", random_state=3, max_iter=3), c)
    np.testing.assert_array_equal(a.proba_, b.proba_)


@pytest.mark.parametrize(
    ("params", "match"),
    [
        ({"model": "two-coin"}, "model must be one of"),
        ({"init": "mv"}, "init must be one of"),
        ({"alpha": -1.0}, "alpha must be >= 0, found -1.0"),
        ({"max_iter": 0}, r"max_iter must be an integer in \[1, 10000\], found 0"),
        ({"tol": -1e-3}, "tol must be >= 0"),
    ],
)
def test_bad_parameters_raise_at_fit(params, match, seed):
    c, _ = random_corpus(np.random.default_rng(seed))
    est = DawidSkene(**params)
    assert est.get_params()[next(iter(params))] == params[next(iter(params))]  # stored as given
    with pytest.raises(ValueError, match=match):
        est.fit(c)


def test_safe_log_floors_zero():
    out = _safe_log(np.array([0.0, 1.0]))
    assert out[1] == 0.0 and np.isfinite(out[0]) and out[0] == np.log(np.finfo(np.float64).tiny)


def test_tol_none_runs_exactly_max_iter_without_warning(seed):
    """A fixed schedule: every one of max_iter iterations runs, even after the objective settles."""
    corpus, _ = random_corpus(np.random.default_rng(seed), n_items=30)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        est = DawidSkene(tol=None, max_iter=300).fit(corpus)
    assert est.n_iter_ == 300 and not est.converged_
    assert DawidSkene(max_iter=300).fit(corpus).n_iter_ < 300  # the default tol stops it early
