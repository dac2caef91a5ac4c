"""Pay-or-reject rules on worker scores: which workers' assignments to approve, reject or pay a bonus.

A requester reviewing a Mechanical Turk batch decides per worker, from how well the worker's
labels agree with the aggregate (or with the experts), whether to approve or reject the
worker's assignments and whether to pay a bonus. :func:`worker_evidence` takes every worker's
score, its interval (at the report's level, ``bootstrap.level``) and the number of compared tokens out of a
quality report
(:func:`crowdqa.quality.report.build_report`); :func:`decide` applies :class:`ReviewRules` to all
workers at once.

Rules
-----
* **Reject** a worker with at least ``min_tokens`` compared tokens whose score is below
  ``reject_below``. With ``decide_by="interval"`` (the default) the whole interval must be
  below: the rule rejects only when the interval's *upper* bound is below the threshold, so
  a worker whose interval reaches the threshold is approved (the data cannot tell them from a
  worker at the bar; a wrong rejection costs a worker pay and reputation, and on Mechanical Turk
  cannot be undone through the usual interface). A worker without an interval (F1 bootstrap
  intervals need at least 3 documents) is never rejected by the interval rule.
  ``decide_by="estimate"`` compares the point estimate instead.
* **Approve** every other worker: too few tokens, no score (F1 without a positive token on
  either side), an interval that reaches the threshold, or a score at or above it.
* **Bonus** (optional): an approved worker with at least ``min_tokens`` compared tokens whose
  interval's *lower* bound (``decide_by="estimate"``: the estimate) is at or above
  ``bonus_above`` gets ``bonus`` dollars. Both decisions ask the same evidence: the interval
  must clear the threshold.
* The score is token F1 (``metric="f1"``) for span labels and accuracy for categorical answers,
  which have no positive class; ``metric="auto"`` picks by the report's ``kind``. It is measured
  against the aggregate (``against="aggregate"``, every worker's documents) or against the experts
  (``against="expert"``, the documents both labelled; a worker without expert overlap has no
  score there and is approved).

The intervals are the report's, at its level (``bootstrap.level``, 95% by default), which the feedback
names: a document-level bootstrap for F1, Clopper-Pearson for accuracy. References: Dawid & Skene (1979)
for scoring workers against an aggregate; Clopper & Pearson (1934), Biometrika 26(4),
doi:10.1093/biomet/26.4.404, for the accuracy interval.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from enum import StrEnum
from typing import Any

import numpy as np
from numpy.typing import NDArray

from crowdqa.quality.report_schema import ACCURACY_KINDS

__all__ = ["ReviewRules", "WorkerEvidence", "Verdict", "Reason", "Decisions", "worker_evidence", "decide",
           "feedback", "bonus_reason", "interval_name", "METRICS", "AGAINST", "DECIDE_BY"]

METRICS = ("auto", "f1", "accuracy")
AGAINST = ("aggregate", "expert")
DECIDE_BY = ("interval", "estimate")


class Verdict(StrEnum):
    """What happens to a worker's assignments."""

    approve = "approve"
    reject = "reject"


class Reason(StrEnum):
    """Why a worker got its verdict (one per worker)."""

    below = "below"                    # rejected: the score (its whole interval) is below the threshold
    too_few_tokens = "too_few_tokens"  # approved: fewer compared tokens than min_tokens
    no_score = "no_score"              # approved: nothing to score (no overlap, or F1 without positives)
    no_interval = "no_interval"        # approved: the interval rule has no interval to judge by
    interval_reaches = "interval_reaches"  # approved: below the threshold, but the interval reaches it
    at_or_above = "at_or_above"        # approved: the score is at or above the threshold


def _amount(value: Any) -> Decimal:
    """A bonus in dollars: a positive number with at most two decimals."""
    try:
        amount = Decimal(str(value).strip())
    except (InvalidOperation, ValueError):
        raise ValueError(f"bonus must be an amount in dollars such as 0.50, found {value!r}") from None
    if not amount.is_finite() or amount <= 0:
        raise ValueError(f"bonus must be a positive amount in dollars, found {value}")
    if amount != amount.quantize(Decimal("0.01")):
        raise ValueError(f"bonus must be in whole cents (at most two decimals), found {value}")
    return amount.quantize(Decimal("0.01"))


def _fraction(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or not 0 <= value <= 1:
        raise ValueError(f"{name} must be a number in [0, 1], found {value!r}")
    return float(value)


@dataclass(frozen=True)
class ReviewRules:
    """The rules of one review, checked at construction (``ValueError`` naming the rule).

    Parameters
    ----------
    reject_below : float
        Reject workers whose score is below this (in [0, 1]); 0 rejects nobody.
    min_tokens : int, default=50
        Judge only workers with at least this many compared tokens (items for categorical answers).
    metric : {"auto", "f1", "accuracy"}, default="auto"
    against : {"aggregate", "expert"}, default="aggregate"
    decide_by : {"interval", "estimate"}, default="interval"
        ``interval``: reject only when the interval's upper bound is below ``reject_below`` (and pay a
        bonus only when its lower bound reaches ``bonus_above``); ``estimate``: compare the estimate.
    bonus : Decimal, str or float, optional
        Dollars paid to each worker who clears ``bonus_above``; needs ``bonus_above``.
    bonus_above : float, optional
        The bonus threshold, in [0, 1]; needs ``bonus``.
    """

    reject_below: float
    min_tokens: int = 50
    metric: str = "auto"
    against: str = "aggregate"
    decide_by: str = "interval"
    bonus: Decimal | None = None
    bonus_above: float | None = None

    def __post_init__(self) -> None:
        set_ = object.__setattr__
        set_(self, "reject_below", _fraction("reject_below", self.reject_below))
        if isinstance(self.min_tokens, bool) or not isinstance(self.min_tokens, int) or self.min_tokens < 0:
            raise ValueError(f"min_tokens must be an integer >= 0, found {self.min_tokens!r}")
        for name, allowed in (("metric", METRICS), ("against", AGAINST), ("decide_by", DECIDE_BY)):
            if getattr(self, name) not in allowed:
                raise ValueError(f"{name} must be one of {', '.join(allowed)}, found {getattr(self, name)!r}")
        if (self.bonus is None) != (self.bonus_above is None):
            raise ValueError("bonus and bonus_above go together: give both (e.g. bonus 0.50, bonus_above 0.8) or "
                             "neither")
        if self.bonus is not None:
            set_(self, "bonus", _amount(self.bonus))
            set_(self, "bonus_above", _fraction("bonus_above", self.bonus_above))
            if self.bonus_above < self.reject_below:
                raise ValueError(f"bonus_above ({self.bonus_above}) must not be below reject_below "
                                 f"({self.reject_below})")


@dataclass(frozen=True)
class WorkerEvidence:
    """Every worker's score, its interval and the tokens it is measured on.

    Attributes
    ----------
    ids : tuple of str, length n_workers
    roles : tuple of str, length n_workers
    score : ndarray of shape (n_workers,)
        NaN where the worker has no score.
    low, high : ndarray of shape (n_workers,)
        The interval at ``level``; NaN where there is none.
    tokens : ndarray of shape (n_workers,)
        Compared tokens (items); 0 where there is no score block.
    metric : {"f1", "accuracy"}
    against : {"aggregate", "expert"}
    level : float or None
        The intervals' confidence level (the report's ``bootstrap.level``); None when the report does not say.
    """

    ids: tuple[str, ...]
    roles: tuple[str, ...]
    score: NDArray[np.float64]
    low: NDArray[np.float64]
    high: NDArray[np.float64]
    tokens: NDArray[np.int64]
    metric: str
    against: str
    level: float | None = None


def _resolve_metric(metric: str, kind: str) -> str:
    if metric == "auto":
        return "accuracy" if kind in ACCURACY_KINDS else "f1"
    if metric == "f1" and kind in ACCURACY_KINDS:
        raise ValueError("metric f1: these are categorical answers, which have no positive class and so no F1; "
                         "use metric accuracy (or auto)")
    return metric


def worker_evidence(report: dict[str, Any], *, metric: str = "auto", against: str = "aggregate") -> WorkerEvidence:
    """Collect the scores :func:`decide` needs from a quality report.

    Parameters
    ----------
    report : dict
        A report from :func:`crowdqa.quality.report.build_report` (or its stored JSON).
    metric : {"auto", "f1", "accuracy"}, default="auto"
    against : {"aggregate", "expert"}, default="aggregate"

    Returns
    -------
    WorkerEvidence
        One entry per worker of the report, in its order.
    """
    if against not in AGAINST:
        raise ValueError(f"against must be one of {', '.join(AGAINST)}, found {against!r}")
    metric = _resolve_metric(metric, report.get("kind", "spans"))
    side = "vs_aggregate" if against == "aggregate" else "vs_expert"
    workers = report.get("workers") or []
    n = len(workers)
    score, low, high = np.full(n, np.nan), np.full(n, np.nan), np.full(n, np.nan)
    tokens = np.zeros(n, dtype=np.int64)
    for i, w in enumerate(workers):
        block = w.get(side) or {}
        if metric == "f1":
            value, ci, compared = block.get("f1"), block.get("f1_ci"), block.get("tokens")
        else:
            acc = block.get("accuracy") or {}
            value, ci, compared = acc.get("value"), acc.get("ci"), acc.get("compared")
        score[i] = np.nan if value is None else float(value)
        if ci:
            low[i], high[i] = float(ci[0]), float(ci[1])
        tokens[i] = int(compared or 0)
    return WorkerEvidence(ids=tuple(w["annotator"] for w in workers), roles=tuple(w.get("role", "crowd")
                                                                                 for w in workers),
                          score=score, low=low, high=high, tokens=tokens, metric=metric, against=against,
                          level=(report.get("bootstrap") or {}).get("level"))


@dataclass(frozen=True)
class Decisions:
    """What :func:`decide` concluded, one entry per worker of the evidence.

    Attributes
    ----------
    evidence : WorkerEvidence
    rules : ReviewRules
    verdict : tuple of Verdict
    reason : tuple of Reason
    bonus : tuple of Decimal or None
    """

    evidence: WorkerEvidence
    rules: ReviewRules
    verdict: tuple[Verdict, ...]
    reason: tuple[Reason, ...]
    bonus: tuple[Decimal | None, ...]

    def of(self, worker_id: str) -> int | None:
        """Index of ``worker_id``, or None when the evidence does not hold it."""
        index = self.__dict__.get("_index")
        if index is None:
            index = {w: i for i, w in enumerate(self.evidence.ids)}
            object.__setattr__(self, "_index", index)
        return index.get(worker_id)


def decide(evidence: WorkerEvidence, rules: ReviewRules) -> Decisions:
    """Apply ``rules`` to every worker at once (see the module notes).

    Parameters
    ----------
    evidence : WorkerEvidence
    rules : ReviewRules

    Returns
    -------
    Decisions
    """
    e = evidence
    enough = e.tokens >= rules.min_tokens
    scored = ~np.isnan(e.score)
    has_ci = ~np.isnan(e.high)
    below = scored & (e.score < rules.reject_below)
    reject = enough & below
    if rules.decide_by == "interval":
        # The estimate and the whole interval below (a percentile bootstrap interval need not hold its estimate).
        reject &= has_ci & (e.high < rules.reject_below)
    # One reason per worker: np.select takes the first condition that holds (with the estimate rule an
    # enough-token worker below the threshold is rejected, so the interval reasons never come up).
    reason = np.select([reject, ~enough, ~scored, below & ~has_ci, below], [0, 1, 2, 3, 4], default=5)
    reasons = (Reason.below, Reason.too_few_tokens, Reason.no_score, Reason.no_interval, Reason.interval_reaches,
               Reason.at_or_above)
    bonus: list[Decimal | None] = [None] * len(e.ids)
    if rules.bonus is not None:
        bar = e.low if rules.decide_by == "interval" else e.score
        with np.errstate(invalid="ignore"):  # NaN (no interval) never clears the bar
            paid = ~reject & enough & (bar >= rules.bonus_above)
        bonus = [rules.bonus if p else None for p in paid.tolist()]
    return Decisions(evidence=e, rules=rules,
                     verdict=tuple(Verdict.reject if r else Verdict.approve for r in reject.tolist()),
                     reason=tuple(reasons[int(k)] for k in reason.tolist()), bonus=tuple(bonus))


def _num(x: float) -> str:
    return f"{x:.2f}"


def interval_name(level: float | None) -> str:
    """How an interval at confidence ``level`` is named to a reader: ``"95% interval"`` for 0.95, ``"90%
    interval"`` for 0.9, and ``"interval"`` when the level is unknown."""
    return "interval" if level is None else f"{100 * level:g}% interval"


def _wording(e: WorkerEvidence, i: int) -> tuple[str, str, str]:
    """The metric's name, the reference's name and worker ``i``'s interval text, as the worker reads them."""
    name = "F1" if e.metric == "f1" else "accuracy"
    ref = "the workers' consensus" if e.against == "aggregate" else "the expert labels"
    ci = "" if np.isnan(e.high[i]) else f" ({interval_name(e.level)} {_num(e.low[i])} to {_num(e.high[i])})"
    return name, ref, ci


def feedback(decisions: Decisions, i: int) -> str:
    """The text a worker sees for decision ``i`` (plain ASCII, one line): the verdict and why."""
    e, rules = decisions.evidence, decisions.rules
    name, ref, ci = _wording(e, i)
    unit = "tokens" if e.metric == "f1" else "items"
    measured = f"{name} {_num(e.score[i])}{ci} against {ref} over {int(e.tokens[i])} {unit}"
    reason = decisions.reason[i]
    if reason is Reason.below:
        return f"Rejected: {measured}; work below {name} {_num(rules.reject_below)} is rejected."
    if reason is Reason.too_few_tokens:
        return f"Approved: too few {unit} to judge ({int(e.tokens[i])}, fewer than {rules.min_tokens})."
    if reason is Reason.no_score:
        return f"Approved: no {name} against {ref} to judge by."
    if reason is Reason.no_interval:
        return f"Approved: {measured}; too few documents for an interval to judge by."
    if reason is Reason.interval_reaches:
        return f"Approved: {measured}; the interval reaches {_num(rules.reject_below)}."
    return f"Approved: {measured}."


def bonus_reason(decisions: Decisions, i: int) -> str:
    """Why worker ``i`` earned its bonus (plain ASCII, one line)."""
    e, rules = decisions.evidence, decisions.rules
    name, ref, ci = _wording(e, i)
    return f"Bonus for quality: {name} {_num(e.score[i])}{ci} against {ref}, at least {_num(rules.bonus_above)}."
