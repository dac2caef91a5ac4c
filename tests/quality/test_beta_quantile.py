"""Tests for crowdqa.quality._beta_quantile: the beta quantiles of the Clopper-Pearson bounds, numpy only,
against scipy.special.betaincinv (the oracle; the bounds' own test is in tests/quality/test_agreement.py)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import betaincinv

from crowdqa.quality._beta_quantile import beta_lower_quantile


@pytest.mark.parametrize("y", [0.5, 0.6, 0.9, 0.999])
def test_upper_half_against_scipy(y):
    """Quantiles above the median (the start works on the other tail)."""
    a = np.array([2.0, 3.0, 1.5, 40.0, 700.0, 2.0, 1e6])
    b = np.array([2.0, 50.0, 9.0, 3.0, 60.0, 800.0, 2e5])
    np.testing.assert_allclose(beta_lower_quantile(a, b, y), betaincinv(a, b, y), rtol=1e-10, atol=0)


@pytest.mark.parametrize("y", [0.005, 0.025, 0.05, 0.25])
def test_whole_counts_against_scipy(y):
    """The shapes of a report's bounds: whole counts from 1 (the closed forms of a = 1 and b = 1) to 1e8."""
    rng = np.random.default_rng(5)
    n = np.concatenate([[1, 1, 2, 3, 30], rng.integers(1, 10**4, 300), [10**6, 10**8]]).astype(float)
    k = np.concatenate([[1, 1, 1, 2, 15], rng.integers(1, 10**4, 300), [3, 10**8 - 40]]).astype(float)
    k = np.minimum(k, n)
    a, b = k, n - k + 1
    np.testing.assert_allclose(beta_lower_quantile(a, b, y), betaincinv(a, b, y), rtol=1e-10, atol=0)
