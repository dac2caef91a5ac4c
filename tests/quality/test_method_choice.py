"""Tests for crowdqa.quality.method_choice: the shrinkage against a numerical posterior, its limiting cases and
properties, and the candidate names."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import integrate, stats

from crowdqa.aggregation.registry import DATA_KINDS
from crowdqa.quality.method_choice import candidate_name, parse_candidate, prior_for, shrunk_scores


def _posterior_mean(d: float, s2: float, mu: float, tau: float) -> float:
    """E[delta | d] for delta ~ N(mu, tau^2), d ~ N(delta, s2), by quadrature of the unnormalised posterior."""
    lo, hi = mu - 12 * tau, mu + 12 * tau

    def post(x):
        return stats.norm.pdf(x, mu, tau) * stats.norm.pdf(d, x, np.sqrt(s2))

    z = integrate.quad(post, lo, hi, points=[d, mu], limit=200)[0]
    return integrate.quad(lambda x: x * post(x), lo, hi, points=[d, mu], limit=200)[0] / z


def test_the_expected_scores_are_the_normal_posterior_means():
    """Oracle: the posterior mean of the normal-normal model by numerical integration (scipy.integrate.quad), with
    the measurement variance the sample variance of the paired resample differences (numpy, ddof=1); rtol 1e-6."""
    rng = np.random.default_rng(0)
    boot = rng.normal([0.80, 0.82, 0.75, 0.81], [0.02, 0.03, 0.01, 0.05], size=(400, 4))
    point = np.array([0.80, 0.83, 0.74, 0.85])
    expected, weight = shrunk_scores(point, boot, anchor=0, shortfall=0.02, spread=0.015)
    assert expected[0] == point[0] and weight[0] == 1.0
    for m in (1, 2, 3):
        s2 = np.var(boot[:, m] - boot[:, 0], ddof=1)
        oracle = point[0] + _posterior_mean(point[m] - point[0], s2, -0.02, 0.015)
        assert expected[m] == pytest.approx(oracle, rel=1e-6)
        assert weight[m] == pytest.approx(0.015**2 / (0.015**2 + s2))


def test_the_limits_of_the_prior():
    """No spread: every candidate but the anchor is expected at the prior's shortfall; an infinite spread (no
    prior): the measured scores; a candidate with the anchor's labels on every document: measured exactly."""
    rng = np.random.default_rng(1)
    boot = rng.normal(0.8, 0.02, size=(300, 3))
    boot[:, 2] = boot[:, 0]
    point = np.array([0.8, 0.9, 0.8])
    exp0, w0 = shrunk_scores(point, boot, anchor=0, shortfall=0.03, spread=0.0)
    np.testing.assert_allclose(exp0[:2], [0.8, 0.77])
    assert w0[1] == 0.0 and w0[2] == 1.0 and exp0[2] == pytest.approx(0.8)
    exp_inf, w_inf = shrunk_scores(point, boot, anchor=0, shortfall=0.03, spread=1e9)
    np.testing.assert_allclose(exp_inf, point)
    np.testing.assert_allclose(w_inf, 1.0)


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**32 - 1), st.floats(0.0, 0.1), st.floats(0.001, 0.2))
def test_shrinkage_properties(seed, shortfall, spread):
    """Between the measurement and the prior mean (convex combination), the weight in [0, 1], monotone in the
    measured score, and unchanged by adding a constant to every score (only differences to the anchor count)."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 6))
    boot = rng.normal(0.8, rng.uniform(0.005, 0.05, n), size=(100, n))
    point = rng.uniform(0.6, 0.95, n)
    anchor = int(rng.integers(n))
    expected, weight = shrunk_scores(point, boot, anchor=anchor, shortfall=shortfall, spread=spread)
    prior = point[anchor] - shortfall
    others = np.arange(n) != anchor
    lo, hi = np.minimum(point, prior)[others], np.maximum(point, prior)[others]
    assert np.all((lo - 1e-12 <= expected[others]) & (expected[others] <= hi + 1e-12))
    assert np.all((weight >= 0) & (weight <= 1))
    higher = point.copy()
    higher[others] += 0.01
    assert np.all(shrunk_scores(higher, boot, anchor=anchor, shortfall=shortfall, spread=spread)[0][others]
                  >= expected[others])
    shifted, _ = shrunk_scores(point + 0.05, boot + 0.05, anchor=anchor, shortfall=shortfall, spread=spread)
    np.testing.assert_allclose(shifted, expected + 0.05)


def test_undefined_scores_and_bad_input():
    boot = np.array([[0.8, np.nan, 0.7], [0.7, np.nan, 0.75], [0.9, np.nan, 0.6]])
    expected, weight = shrunk_scores(np.array([0.8, np.nan, 0.7]), boot, anchor=0, shortfall=0.02, spread=0.02)
    assert np.isnan(expected[1]) and weight[1] == 0.0 and np.isfinite(expected[2])
    with pytest.raises(ValueError, match="shortfall and spread must be >= 0"):
        shrunk_scores(np.zeros(2), np.zeros((3, 2)), anchor=0, shortfall=-1, spread=0.1)
    with pytest.raises(ValueError, match="boot must have shape"):
        shrunk_scores(np.zeros(2), np.zeros((3, 3)), anchor=0, shortfall=0, spread=0.1)
    with pytest.raises(ValueError, match="anchor"):
        shrunk_scores(np.array([np.nan, 0.5]), np.zeros((3, 2)), anchor=0, shortfall=0, spread=0.1)


def test_candidate_names_round_trip_and_every_kind_has_a_prior():
    assert candidate_name("ds", True) == "ds+experts" and candidate_name("ds", False) == "ds"
    assert parse_candidate("gold-mv+experts") == ("gold-mv", True) and parse_candidate("mv") == ("mv", False)
    priors = [prior_for(kind) for kind in DATA_KINDS]
    assert all(p.shortfall >= 0 and p.spread > 0 for p in priors)
    assert [p.anchor for p in priors] == ["hmm-crowd+experts", "bsc-seq", "ibcc", "bsc-seq"]
