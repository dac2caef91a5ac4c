"""The expected score of each candidate method on the items the experts did not label: empirical-Bayes shrinkage
of the measured differences toward a prior fitted across data sets.

A *candidate* is an aggregation method fitted on the crowd alone, or fitted with the expert labels clamped
(``use_experts``; its name is ``<method>+experts``, :func:`candidate_name`). The comparison measures each
candidate on the expert documents where its fit did not see the answer (:mod:`crowdqa.quality.compare`). On a
few hundred expert items the measured differences between methods are of the same size as their noise, so the
largest one is a poor guide to which method does best on the other items; :func:`shrunk_scores` pulls every
difference toward what the project's many-data-set study expects of it, the more the noisier it is.

Model (normal-normal, Morris 1983 [1]_): relative to an anchor candidate :math:`a`, the difference of candidate
:math:`m` on unseen items is :math:`\\delta_m \\sim N(\\mu_m, \\tau^2)` with :math:`\\mu_a = 0`,
:math:`\\mu_m = -\\gamma` otherwise; the measured difference is :math:`d_m \\sim N(\\delta_m, s_m^2)`, with
:math:`s_m^2` the variance of the paired bootstrap difference (the same document resamples for both). The posterior
mean is :math:`\\tilde\\delta_m = \\mu_m + w_m (d_m - \\mu_m)` with :math:`w_m = \\tau^2 / (\\tau^2 + s_m^2)`: the
James-Stein estimator's shrinkage toward a prior mean (Efron and Morris 1975 [2]_), with the prior's
:math:`\\gamma, \\tau` taken from other data sets rather than from the candidates at hand (there are too few
candidates, and they are not exchangeable, for the within-set estimate of :math:`\\tau`).

:func:`prior_for` gives, per kind of data, the anchor (the candidate with the best mean held-out score across the
training data sets of ``benchmarks/method_choice.py``; for a kind without a training set, the documented default
of ``--method auto`` without experts), :math:`\\gamma` (``shortfall``: the mean held-out shortfall
of the other candidates to the anchor there) and :math:`\\tau` (``spread``: the standard deviation of the held-out
differences about :math:`-\\gamma`, less the held-out halves' own sampling variance, by the method of moments).
That benchmark says which data sets fitted them and checks the rule on the others.

References
----------
.. [1] C. N. Morris (1983). Parametric empirical Bayes inference: theory and applications. JASA 78(381), 47-55.
   doi:10.1080/01621459.1983.10477920
.. [2] B. Efron, C. Morris (1975). Data analysis using Stein's estimator and its generalizations. JASA 70(350),
   311-319. doi:10.1080/01621459.1975.10479864
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from crowdqa.aggregation.registry import choice_anchor

__all__ = ["EXPERTS_SUFFIX", "SHORTFALL", "SPREAD", "ChoicePrior", "candidate_name", "parse_candidate", "prior_for",
           "shrunk_scores"]

#: The suffix of a candidate fitted with the expert labels clamped.
EXPERTS_SUFFIX = "+experts"


@dataclass(frozen=True)
class ChoicePrior:
    """The prior of the rule for one kind of data (see the module notes).

    Attributes
    ----------
    anchor : str
        The candidate (:func:`candidate_name`) the prior favours: the best across the training data sets.
    shortfall : float
        :math:`\\gamma`, the prior mean shortfall of every other candidate to the anchor (a fraction of the metric).
    spread : float
        :math:`\\tau`, the prior standard deviation of a candidate's true difference to the anchor.
    source : str
        Where the numbers come from.
    """

    anchor: str
    shortfall: float
    spread: float
    source: str

    def as_dict(self) -> dict:
        """Plain JSON data."""
        return {"anchor": self.anchor, "shortfall": self.shortfall, "spread": self.spread, "source": self.source}


_SOURCE = ("benchmarks/method_choice.py: held-out halves of its training data sets (method of moments); "
           "checked on its other data sets")

#: :math:`\gamma` and :math:`\tau` as ``benchmarks/method_choice.py``'s ``fit_prior`` fitted them on its training
#: sets (pooled over the kinds of data).
SHORTFALL, SPREAD = 0.0488, 0.0775


def prior_for(kind: str) -> ChoicePrior:
    """The rule's prior on data of ``kind`` (:func:`crowdqa.quality.compare.metric_for`'s kind): the registry's
    anchor for it (:func:`crowdqa.aggregation.registry.choice_anchor`: the candidate best across the benchmark's
    training sets; for a kind without a training set there, spans of one type, its default without experts),
    :data:`SHORTFALL` and :data:`SPREAD`.

    Raises
    ------
    ValueError
        If no registered method is the anchor for ``kind``.
    """
    anchor = choice_anchor(kind)
    if anchor is None:
        raise ValueError(f"no method is the anchor of the choice for {kind}: give one entry anchor_for=(({kind!r}, "
                         f"False),)")
    return ChoicePrior(candidate_name(*anchor), SHORTFALL, SPREAD, _SOURCE)


def candidate_name(method: str, use_experts: bool) -> str:
    """``method`` for a fit on the crowd alone, ``method+experts`` for a fit with the expert labels clamped."""
    return method + EXPERTS_SUFFIX if use_experts else method


def parse_candidate(name: str) -> tuple[str, bool]:
    """``(method, use_experts)`` of a :func:`candidate_name`."""
    if name.endswith(EXPERTS_SUFFIX):
        return name[: -len(EXPERTS_SUFFIX)], True
    return name, False


def shrunk_scores(
    point: NDArray, boot: NDArray, *, anchor: int, shortfall: float, spread: float,
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Each candidate's expected score on unseen items: its difference to the anchor shrunk toward the prior.

    Parameters
    ----------
    point : ndarray of shape (n_methods,)
        Measured scores :math:`\\hat p_m` (nan where undefined).
    boot : ndarray of shape (n_boot, n_methods)
        The scores on paired document resamples (nan where undefined in a resample).
    anchor : int
        Index of the anchor candidate :math:`a` (its score must be finite).
    shortfall, spread : float
        :math:`\\gamma \\ge 0` and :math:`\\tau \\ge 0` of the prior.

    Returns
    -------
    expected : ndarray of shape (n_methods,)
        :math:`\\hat p_a + \\mu_m + w_m (d_m - \\mu_m)`; nan where the score is undefined. The anchor's is its
        measured score.
    weight : ndarray of shape (n_methods,)
        :math:`w_m = \\tau^2 / (\\tau^2 + s_m^2)`, the weight of the measurement against the prior (1 for the anchor
        and for a candidate whose every resample equals the anchor's; 0 when :math:`\\tau = 0`).

    Raises
    ------
    ValueError
        A negative ``shortfall`` or ``spread``, shapes that disagree, or an anchor without a finite score.
    """
    point = np.asarray(point, dtype=np.float64)
    boot = np.asarray(boot, dtype=np.float64)
    if shortfall < 0 or spread < 0:
        raise ValueError(f"shortfall and spread must be >= 0, found {shortfall} and {spread}")
    if boot.ndim != 2 or boot.shape[1] != point.shape[0]:
        raise ValueError(f"boot must have shape (n_boot, {point.shape[0]}), found {boot.shape}")
    if not 0 <= anchor < point.shape[0] or not np.isfinite(point[anchor]):
        raise ValueError(f"the anchor (index {anchor}) must be a candidate with a finite score")
    diff = boot - boot[:, [anchor]]
    ok = np.isfinite(diff)
    n = ok.sum(axis=0)
    mean = np.where(n > 0, np.where(ok, diff, 0.0).sum(axis=0) / np.maximum(n, 1), 0.0)
    # The paired bootstrap variance of each difference (resamples where either score is undefined left out);
    # with fewer than two usable resamples the measurement is taken to say nothing (infinite variance).
    var = np.where(n > 1, np.where(ok, (diff - mean) ** 2, 0.0).sum(axis=0) / np.maximum(n - 1, 1), np.inf)
    var[anchor] = 0.0
    tau2 = float(spread) ** 2
    with np.errstate(invalid="ignore", divide="ignore"):
        # var == 0 (the anchor, or the same labels on every resampled document): the measurement is exact.
        weight = np.where(var == 0, 1.0, tau2 / (tau2 + var))
    prior_mean = np.full(point.shape, -float(shortfall))
    prior_mean[anchor] = 0.0
    d = point - point[anchor]
    expected = point[anchor] + prior_mean + weight * (d - prior_mean)
    return np.where(np.isfinite(point), expected, np.nan), weight
