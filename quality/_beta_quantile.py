"""Quantiles of the beta distribution with numpy only, for the Clopper-Pearson intervals of every report.

:func:`beta_lower_quantile` is ``scipy.special.betaincinv(a, b, y)`` for shape parameters >= 1 (whole
counts), to about 1e-13 relative (``tests/quality/test_beta_quantile.py`` holds it to scipy). It stays
because measured (issue 32, 2 cores under load, this machine, numpy 2.4.6, scipy 1.17.1):

* ``import scipy.special`` costs 0.22-0.27 s of CPU (``/usr/bin/time``, 5 runs: ``import
  crowdqa.quality.report`` 0.15-0.19 s user, with ``scipy.special`` 0.37-0.45 s; 0.85-1.2 s wall with the
  machine's load at 11-13). ``crowdqa aggregate`` with majority vote or Dawid-Skene never imports it
  otherwise: the whole majority-vote process on the bundled sample takes 0.28-0.30 s user, so scipy would about
  double it. (HMM-Crowd, BSC-seq, GLAD and MACE import it anyway.)
* scipy's quantiles differ from these in the last bits (on 20,000 random counts, 95% of the lower bounds
  and 94% of the upper ones are not the same doubles, at most 8.5e-14 relative), so every stored and
  reference report would change in its last digits.

The inverse is Halley's iteration on the regularized incomplete beta function, evaluated by its continued
fraction (Press et al., Numerical Recipes, 3rd ed., section 6.4), from Majumder & Bhattacharjee's start.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray

__all__ = ["beta_lower_quantile"]

#: Lentz's floor for a vanishing denominator, and the continued fraction's relative tolerance.
_TINY, _CF_TOL = 1e-300, 1e-15


def _lgamma(x: NDArray) -> NDArray[np.float64]:
    return np.frompyfunc(math.lgamma, 1, 1)(x).astype(np.float64)


def _stirling_tail(x: NDArray) -> NDArray[np.float64]:
    """``lgamma(x) - ((x - 1/2) ln x - x + ln(2 pi) / 2)`` by its asymptotic series (error < 1e-16 for x >= 30)."""
    r = 1.0 / (x * x)
    return (1.0 / 12 - r * (1.0 / 360 - r * (1.0 / 1260 - r / 1680))) / x


def _log_beta(a: NDArray, b: NDArray) -> NDArray[np.float64]:
    """``ln B(a, b)``; with a large argument ``hi`` (and the other ``lo``), ``lgamma(hi + lo) - lgamma(hi)`` is
    written without cancellation, so that ``B(2, 10**7)`` keeps its digits."""
    out = _lgamma(a) + _lgamma(b) - _lgamma(a + b)
    lo, hi = np.minimum(a, b), np.maximum(a, b)
    big = hi >= 30.0
    lo, hi = lo[big], hi[big]
    rise = (hi - 0.5) * np.log1p(lo / hi) + lo * np.log(hi + lo) - lo + _stirling_tail(hi + lo) - _stirling_tail(hi)
    out[big] = _lgamma(lo) - rise
    return out


def _betacf(a: NDArray, b: NDArray, x: NDArray) -> NDArray[np.float64]:
    """The continued fraction of the regularized incomplete beta function by the modified Lentz method
    (Press et al., Numerical Recipes, 3rd ed., section 6.4, ``betacf``), elementwise; each element stops
    at its own convergence. Converges fast for ``x < (a + 1) / (a + b + 2)``."""
    out = np.empty_like(x)
    idx = np.arange(x.shape[0])
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c = np.ones_like(x)
    d = 1.0 - qab * x / qap
    d = 1.0 / np.where(np.abs(d) < _TINY, _TINY, d)
    h = d.copy()
    m = 0
    while idx.size:
        m += 1
        for aa in (m * (b - m) * x / ((qam + 2 * m) * (a + 2 * m)),
                   -(a + m) * (qab + m) * x / ((a + 2 * m) * (qap + 2 * m))):
            d = 1.0 + aa * d
            d = 1.0 / np.where(np.abs(d) < _TINY, _TINY, d)
            c = 1.0 + aa / c
            c = np.where(np.abs(c) < _TINY, _TINY, c)
            h *= d * c
        done = np.abs(d * c - 1.0) <= _CF_TOL
        n_done = np.count_nonzero(done)
        if n_done:
            out[idx[done]] = h[done]
        if 4 * n_done >= idx.size:  # drop the converged (later terms would leave them as they are)
            keep = ~done
            idx, a, b, x, c, d, h, qab, qap, qam = (v[keep] for v in (idx, a, b, x, c, d, h, qab, qap, qam))
    return out


def _log_betainc(a: NDArray, b: NDArray, x: NDArray, log_beta: NDArray) -> NDArray[np.float64]:
    """``ln I_x(a, b)`` for ``0 < x < 1``, by the continued fraction on the side where it converges fast."""
    flip = x > (a + 1.0) / (a + b + 2.0)  # I_x(a, b) = 1 - I_{1-x}(b, a)
    aa, bb, xx = np.where(flip, b, a), np.where(flip, a, b), np.where(flip, 1.0 - x, x)
    log_i = aa * np.log(xx) + bb * np.log1p(-xx) - log_beta - np.log(aa) + np.log(_betacf(aa, bb, xx))
    return np.where(flip, np.log1p(-np.exp(log_i)), log_i)


def _quantile_start(a: NDArray, b: NDArray, y: float) -> NDArray[np.float64]:
    """A start for the ``y``-quantile of Beta(a, b), ``a, b > 1``: Majumder & Bhattacharjee's approximation
    (Algorithm AS 64 [3]_, as Cran, Martin & Thomas's AS 109 [4]_ starts), from the normal quantile of
    Abramowitz & Stegun 26.2.22. For ``y > 1/2`` it works on the other tail (``1 - x`` of Beta(b, a)).

    References
    ----------
    .. [3] K. L. Majumder, G. P. Bhattacharjee (1973). Algorithm AS 64: Inverse of the incomplete beta
       function ratio. JRSS C 22(3), 411-414. doi:10.2307/2346798
    .. [4] G. W. Cran, K. J. Martin, G. E. Thomas (1977). Remark AS R19 and Algorithm AS 109. JRSS C
       26(1), 111-114. doi:10.2307/2346887
    """
    upper = y > 0.5
    p, q, tail = (b, a, 1.0 - y) if upper else (a, b, y)
    r = math.sqrt(-2.0 * math.log(tail))
    z = r - (2.30753 + 0.27061 * r) / (1.0 + (0.99229 + 0.04481 * r) * r)  # the upper tail's normal quantile
    r = (z * z - 3.0) / 6.0
    s, t = 1.0 / (2.0 * p - 1.0), 1.0 / (2.0 * q - 1.0)
    h = 2.0 / (s + t)
    w = z * np.sqrt(h + r) / h - (t - s) * (r + 5.0 / 6.0 - 2.0 / (3.0 * h))
    with np.errstate(over="ignore"):  # exp(2 w) overflows only where the quantile is 0 to double precision
        x = p / (p + q * np.exp(w + w))
    return 1.0 - x if upper else x


def beta_lower_quantile(a: NDArray, b: NDArray, y: float, *, max_iter: int = 100) -> NDArray[np.float64]:
    """The ``y``-quantile ``x`` of Beta(a, b) (``I_x(a, b) = y``), elementwise, for shape parameters >= 1.

    ``a == 1`` and ``b == 1`` have closed forms; otherwise Halley's iteration on ``(I_x - y) / I_x``
    from the start of :func:`_quantile_start` (two or three steps; the normal approximation of
    Beta(a, b), used before, took up to eight when ``a`` or ``b`` is 2). ``ln I_x`` is concave in ``x``
    for shapes >= 1 (the CDF of a log-concave density), so the iteration cannot run away; steps outside
    (0, 1) are pulled back. Each element stops after a step below 1e-5 standard deviations of Beta(a, b) (the next would
    be ~1e-15 of one: Halley's error is cubic), below 1e-13 of ``x``, or below 1e-9 of ``x`` and no
    longer shrinking (the rounding noise of ``I_x`` when ``a`` and ``b`` are ~1e8).
    """
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    x = np.empty(a.shape)
    one_a, one_b = a == 1.0, (b == 1.0) & (a != 1.0)
    x[one_a] = -np.expm1(np.log1p(-y) / b[one_a])  # I_x(1, b) = 1 - (1 - x)^b
    x[one_b] = y ** (1.0 / a[one_b])  # I_x(a, 1) = x^a
    idx = np.flatnonzero(~(one_a | one_b))
    a, b = a[idx], b[idx]
    log_beta, log_y = _log_beta(a, b), math.log(y)
    mean, sd = a / (a + b), np.sqrt(a * b / ((a + b) ** 2 * (a + b + 1.0)))
    t = _quantile_start(a, b, y)
    t = np.where((t <= 0.0) | (t >= 1.0) | ~np.isfinite(t), mean * 1e-3, t)
    last = np.full(idx.shape[0], np.inf)
    for _ in range(max_iter):
        if not idx.size:
            break
        log_i = _log_betainc(a, b, t, log_beta)
        f = -np.expm1(log_y - log_i)  # (I - y) / I
        slope = np.exp((a - 1.0) * np.log(t) + (b - 1.0) * np.log1p(-t) - log_beta - log_i)  # pdf / I
        step = f / slope
        step = step / (1.0 - 0.5 * step * ((a - 1.0) / t - (b - 1.0) / (1.0 - t)))  # Halley: pdf'/pdf
        new = t - step
        new = np.where(new <= 0.0, t / 16.0, np.where(new >= 1.0, (t + 1.0) / 2.0, new))
        size = np.abs(new - t)
        # Halley's error is cubic: a step of 1e-5 standard deviations leaves ~1e-15 of one.
        done = (size <= 1e-13 * new) | (size <= 1e-5 * sd) | ((size <= 1e-9 * new) & (size >= 0.5 * last))
        t, last = new, size
        x[idx[done]] = t[done]
        keep = ~done
        idx, a, b, t, log_beta, last, sd = idx[keep], a[keep], b[keep], t[keep], log_beta[keep], last[keep], sd[keep]
    x[idx] = t  # (max_iter reached: the last iterate)
    return x
