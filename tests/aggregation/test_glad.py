"""GLAD (Whitehill et al. 2009).

Oracles: the E-step against a per-item, per-class Python loop of the model's formula;
the M-step gradient against finite differences (``scipy.optimize.check_grad``); two EM
iterations with ``m_step="cg"`` against crowd-kit 1.4.2's ``GLAD`` on Bluebirds (same
objective, same conjugate-gradient M-step, same start: abilities and log-difficulties to
1e-6); the Newton M-step's sweeps against scipy's L-BFGS maximum of the same objective, and
the whole fit against the conjugate-gradient one at a tight tolerance (same fixed point);
monotone objective (generalised EM) and M-step (no sweep lowers Q).
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import check_grad, minimize

from crowdqa.aggregation import ConvergenceWarning
from crowdqa.aggregation.glad import GLAD, _e_step, _m_objective, _newton_sweep
from tests.aggregation.crowdkit_reference import crowdkit, frame, load_set, quiet
from tests.aggregation.test_dawid_skene import random_corpus


def _loop_posterior(corpus, alpha, log_beta, prior):
    k = prior.size
    out = np.zeros((corpus.n_tokens, k))
    for i in range(corpus.n_tokens):
        for t in range(k):
            p = prior[t]
            for w, o in zip(corpus.worker[corpus.token == i].tolist(), corpus.label[corpus.token == i].tolist(),
                            strict=True):
                x = alpha[w] * math.exp(log_beta[i])
                p *= 1.0 / (1.0 + math.exp(-x)) if o == t else 1.0 / (1.0 + math.exp(x)) / (k - 1)
            out[i, t] = p
    return out / out.sum(axis=1, keepdims=True)


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 2**31 - 1))
def test_e_step_matches_the_formula(seed):
    rng = np.random.default_rng(seed)
    corpus, _ = random_corpus(rng, n_items=8, n_workers=4, n_classes=3)
    alpha, log_beta = rng.normal(1, 1.5, corpus.n_workers), rng.normal(0, 1, corpus.n_tokens)
    prior = rng.dirichlet(np.ones(3))
    post, _ = _e_step(alpha, log_beta, np.log(prior), token=corpus.token, worker=corpus.worker, label=corpus.label)
    np.testing.assert_allclose(post, _loop_posterior(corpus, alpha, log_beta, prior), rtol=1e-9, atol=1e-15)


def test_m_step_gradient_matches_finite_differences(seed):
    rng = np.random.default_rng(seed)
    corpus, _ = random_corpus(rng, n_items=20, n_workers=5, n_classes=3)
    right = rng.random(corpus.n_obs)
    args = {"token": corpus.token, "worker": corpus.worker, "n_workers": 5, "n_classes": 3, "alpha_mean": 1.0,
            "log_beta_mean": 1.0}
    x0 = rng.normal(0.5, 1.0, 5 + corpus.n_tokens)
    err = check_grad(lambda x: _m_objective(x, right, **args)[0], lambda x: _m_objective(x, right, **args)[1], x0)
    assert err < 1e-5 * max(1.0, np.linalg.norm(_m_objective(x0, right, **args)[1]))


@pytest.mark.parametrize("m_step", ["newton", "cg"])
@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 2**31 - 1))
def test_objective_never_decreases(m_step, seed):
    corpus, _ = random_corpus(np.random.default_rng(seed), n_items=30, n_workers=5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model = GLAD(max_iter=15, m_step=m_step).fit(corpus)
    steps = np.diff(model.log_likelihood_)
    assert np.all(steps >= -1e-8 * np.abs(model.log_likelihood_[1:]))


def _m_problem(seed, n_items=25, n_workers=6):
    """A small corpus, random answer posteriors r, a random start, and the M-step objective's arguments."""
    rng = np.random.default_rng(seed)
    corpus, _ = random_corpus(rng, n_items=n_items, n_workers=n_workers, n_classes=3)
    right = rng.random(corpus.n_obs)
    args = {"token": corpus.token, "worker": corpus.worker, "n_workers": n_workers, "n_classes": 3,
            "alpha_mean": 1.0, "log_beta_mean": 1.0}
    start = np.concatenate([rng.normal(1.0, 2.0, n_workers), rng.normal(1.0, 1.5, corpus.n_tokens)])
    return corpus, right, args, start


def _sweep(corpus, right, params, n_workers):
    alpha, log_beta = params[:n_workers], params[n_workers:]
    x = alpha[corpus.worker] * np.exp(log_beta)[corpus.token]
    alpha, log_beta, x_new, log_sigma, max_grad = _newton_sweep(alpha, log_beta, x, right, token=corpus.token,
                                                         worker=corpus.worker_index, alpha_mean=1.0,
                                                         log_beta_mean=1.0)
    return np.concatenate([alpha, log_beta]), x_new, log_sigma, max_grad


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**31 - 1))
def test_newton_sweep_never_lowers_q(seed):
    """Each sweep raises Q (the guards: a curvature bound for the abilities, halving for the difficulties)."""
    corpus, right, args, params = _m_problem(seed)
    value = _m_objective(params, right, **args)[0]
    for _ in range(5):
        params, x, log_sigma, _ = _sweep(corpus, right, params, 6)
        new_value = _m_objective(params, right, **args)[0]
        assert new_value <= value + 1e-9 * abs(value)
        value = new_value
    # the returned x and log sigma(x) are those of the returned point
    x_direct = params[corpus.worker] * np.exp(params[6:])[corpus.token]
    np.testing.assert_allclose(x, x_direct, rtol=1e-12)
    np.testing.assert_allclose(log_sigma, -np.logaddexp(0.0, -x_direct), rtol=1e-12, atol=1e-300)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_newton_sweeps_reach_scipys_maximum_of_q(seed):
    """Oracle: scipy's L-BFGS on the same objective (the M-step's exact solution), to a tight tolerance."""
    corpus, right, args, start = _m_problem(seed)
    best = minimize(lambda p: _m_objective(p, right, **args), start, jac=True, method="L-BFGS-B",
                    options={"gtol": 1e-10, "ftol": 0, "maxiter": 10_000})
    params, max_grad, sweeps = start, np.inf, 0
    while max_grad > 1e-9 and sweeps < 3000:
        params, _, _, max_grad = _sweep(corpus, right, params, 6)
        sweeps += 1
    assert _m_objective(params, right, **args)[0] <= best.fun + 1e-8 * abs(best.fun)
    np.testing.assert_allclose(params, best.x, atol=1e-4)


@pytest.mark.parametrize("seed", [0, 1])
def test_newton_and_cg_fits_reach_the_same_fixed_point(seed):
    """Both M-steps climb the same objective: run to a tight tolerance, they agree."""
    corpus, _ = random_corpus(np.random.default_rng(seed), n_items=40, n_workers=6, per_item=4)
    fits = [GLAD(m_step=m, tol=1e-10, max_iter=3000, m_step_max_iter=50, m_step_tol=1e-8).fit(corpus)
            for m in ("newton", "cg")]
    np.testing.assert_array_equal(fits[0].labels_, fits[1].labels_)
    np.testing.assert_allclose(fits[0].alpha_, fits[1].alpha_, atol=1e-4)
    np.testing.assert_allclose(fits[0].log_likelihood_[-1], fits[1].log_likelihood_[-1], rtol=1e-8)


def test_known_items_teach_the_abilities(seed):
    """Items clamped to the truth raise the ability of the workers who agree with it.

    A statistical property (on one small crowd the free fit can already rank the workers better by
    chance: seed 1540511260 did), so it is asserted on the mean over five crowds."""
    free_corr, taught_corr = [], []
    for rng in map(np.random.default_rng, np.random.SeedSequence(seed).spawn(5)):
        corpus, truth = random_corpus(rng, n_items=60, n_workers=6, per_item=3, accuracy=(0.3, 0.9))
        known = np.where(rng.random(60) < 0.5, truth, -1)
        free, taught = GLAD().fit(corpus), GLAD().fit(corpus, true_labels=known)
        right = np.bincount(corpus.worker, weights=corpus.label == truth[corpus.token], minlength=6)
        acc = right / np.bincount(corpus.worker, minlength=6)
        free_corr.append(np.corrcoef(free.alpha_, acc)[0, 1])
        taught_corr.append(np.corrcoef(taught.alpha_, acc)[0, 1])
        np.testing.assert_array_equal(taught.labels_[known >= 0], known[known >= 0])
    assert np.mean(taught_corr) >= np.mean(free_corr) - 0.02


@pytest.mark.shared_data
def test_two_iterations_match_crowdkit(tmp_path):
    ck = crowdkit()
    crowd, _ = load_set("bluebirds", tmp_path)
    df, classes, workers = frame(crowd)
    assert list(classes) == [0, 1] or list(classes) == [1, 0]
    with quiet():
        theirs = ck.GLAD(n_iter=2, tol=-np.inf).fit(df)
    ours = GLAD(max_iter=2, tol=None, m_step="cg").fit(crowd)
    alphas = theirs.alphas_.sort_index()
    np.testing.assert_allclose(ours.alpha_[workers[alphas.index.to_numpy()]], alphas.to_numpy(), rtol=1e-6)
    betas = theirs.betas_.sort_index()
    np.testing.assert_allclose(np.log(ours.beta_[betas.index.to_numpy()]), betas.to_numpy(), rtol=1e-6, atol=1e-9)
