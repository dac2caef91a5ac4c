"""crowdqa.quality.review_rules: approve / reject / bonus decisions on worker scores.

Oracles: hand-computed cases from the rule as the issue words it, and a naive per-worker
if/else transcription of the module notes (:func:`_oracle`) that the vectorised ``decide``
must match on random evidence (hypothesis).
"""

from __future__ import annotations

import math
from decimal import Decimal

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from crowdqa.quality.review_rules import (
    Reason,
    ReviewRules,
    Verdict,
    WorkerEvidence,
    bonus_reason,
    decide,
    feedback,
    worker_evidence,
)


def _worker(name, *, f1=None, ci=None, tokens=0, acc=None, acc_ci=None, role="crowd", side="vs_aggregate"):
    block = {"f1": f1, "f1_ci": ci, "tokens": tokens,
             "accuracy": {"value": acc, "ci": acc_ci, "correct": 0, "compared": tokens}}
    other = "vs_expert" if side == "vs_aggregate" else "vs_aggregate"
    return {"annotator": name, "role": role, side: block, other: None}


def _report(*workers, kind="spans", level=0.95):
    return {"kind": kind, "workers": list(workers), "bootstrap": {"level": level}}


def test_hand_computed_cases_of_the_issue_rule():
    """Reject below F1 0.2 with at least 50 tokens, only when the interval's upper bound is below 0.2."""
    report = _report(
        _worker("mturk:SPAM", f1=0.10, ci=[0.05, 0.15], tokens=400),      # whole interval below: reject
        _worker("mturk:EDGE", f1=0.15, ci=[0.08, 0.20], tokens=400),      # upper bound = 0.2 reaches it: approve
        _worker("mturk:FEW", f1=0.05, ci=[0.01, 0.09], tokens=49),        # too few tokens: approve
        _worker("mturk:NOCI", f1=0.05, ci=None, tokens=80),               # no interval (< 3 docs): approve
        _worker("mturk:GOOD", f1=0.80, ci=[0.70, 0.88], tokens=60),       # above: approve
        _worker("mturk:NONE", f1=None, ci=None, tokens=70),               # no positives anywhere: approve
    )
    d = decide(worker_evidence(report), ReviewRules(reject_below=0.2, min_tokens=50))
    assert [v.value for v in d.verdict] == ["reject", "approve", "approve", "approve", "approve", "approve"]
    assert d.reason == (Reason.below, Reason.interval_reaches, Reason.too_few_tokens, Reason.no_interval,
                        Reason.at_or_above, Reason.no_score)
    # The estimate rule rejects on the point estimate: EDGE and NOCI go too, FEW still has too few tokens.
    e = decide(worker_evidence(report), ReviewRules(reject_below=0.2, min_tokens=50, decide_by="estimate"))
    assert [v.value for v in e.verdict] == ["reject", "reject", "approve", "reject", "approve", "approve"]
    assert feedback(d, 0) == ("Rejected: F1 0.10 (95% interval 0.05 to 0.15) against the workers' consensus over "
                              "400 tokens; work below F1 0.20 is rejected.")
    assert feedback(d, 2) == "Approved: too few tokens to judge (49, fewer than 50)."
    assert feedback(d, 1).endswith("the interval reaches 0.20.")


def test_bonus_needs_the_lower_bound_and_never_goes_to_a_rejected_worker():
    report = _report(
        _worker("mturk:A", f1=0.95, ci=[0.81, 0.99], tokens=100),   # lower bound 0.81 >= 0.8: bonus
        _worker("mturk:B", f1=0.90, ci=[0.70, 0.97], tokens=100),   # estimate above, lower bound below: none
        _worker("mturk:C", f1=0.95, ci=[0.85, 0.99], tokens=10),    # too few tokens: none
        _worker("mturk:D", f1=0.95, ci=None, tokens=100),           # no interval: none
    )
    rules = ReviewRules(reject_below=0.2, min_tokens=50, bonus="0.5", bonus_above=0.8)
    d = decide(worker_evidence(report), rules)
    assert d.bonus == (Decimal("0.50"), None, None, None)
    e = decide(worker_evidence(report), ReviewRules(reject_below=0.2, min_tokens=50, bonus=0.5, bonus_above=0.8,
                                                    decide_by="estimate"))
    assert e.bonus == (Decimal("0.50"), Decimal("0.50"), None, Decimal("0.50"))


def test_categorical_reports_use_accuracy_and_refuse_f1():
    report = _report(_worker("mturk:A", acc=0.2, acc_ci=[0.1, 0.3], tokens=60),
                     _worker("mturk:B", acc=0.9, acc_ci=[0.8, 0.95], tokens=60), kind="categorical")
    ev = worker_evidence(report)
    assert ev.metric == "accuracy" and ev.tokens.tolist() == [60, 60]
    d = decide(ev, ReviewRules(reject_below=0.5, min_tokens=10))
    assert d.verdict == (Verdict.reject, Verdict.approve)
    assert "accuracy 0.20 (95% interval 0.10 to 0.30)" in feedback(d, 0) and "60 items" in feedback(d, 0)
    with pytest.raises(ValueError, match="categorical answers, which have no positive class"):
        worker_evidence(report, metric="f1")


def test_against_expert_reads_the_expert_block_and_a_worker_without_overlap_is_approved():
    report = _report(_worker("mturk:A", f1=0.1, ci=[0.0, 0.15], tokens=200, side="vs_expert"),
                     {"annotator": "mturk:B", "role": "crowd", "vs_expert": None,
                      "vs_aggregate": {"f1": 0.0, "f1_ci": [0, 0], "tokens": 500}})
    d = decide(worker_evidence(report, against="expert"), ReviewRules(reject_below=0.2, against="expert"))
    assert d.verdict == (Verdict.reject, Verdict.approve)
    assert d.reason[1] is Reason.too_few_tokens  # no expert overlap: 0 compared tokens
    assert "against the expert labels" in feedback(d, 0)


def test_the_feedback_names_the_reports_interval_level():
    """A report at 90% says "90% interval" in the feedback and the bonus reason (the level of the report, not
    a fixed 95%). Oracle: the level written into the report; a report that states no level names no percentage."""
    workers = [_worker("mturk:ASPAM5", f1=0.05, ci=[0.01, 0.09], tokens=400),
               _worker("mturk:AGOOD1", f1=0.95, ci=[0.91, 0.98], tokens=400)]
    rules = ReviewRules(reject_below=0.2, min_tokens=50, bonus="0.50", bonus_above=0.9)
    d = decide(worker_evidence(_report(*workers, level=0.9)), rules)
    assert d.evidence.level == 0.9
    assert feedback(d, 0) == ("Rejected: F1 0.05 (90% interval 0.01 to 0.09) against the workers' consensus over "
                              "400 tokens; work below F1 0.20 is rejected.")
    assert "(90% interval 0.91 to 0.98)" in bonus_reason(d, 1) and "95%" not in bonus_reason(d, 1)
    plain = decide(worker_evidence({"kind": "spans", "workers": workers}), rules)
    assert "(interval 0.01 to 0.09)" in feedback(plain, 0)


@pytest.mark.parametrize("kwargs, message", [
    (dict(reject_below=1.5), r"reject_below must be a number in \[0, 1\], found 1.5"),
    (dict(reject_below=-0.1), r"reject_below must be a number in \[0, 1\]"),
    (dict(reject_below=float("nan")), r"reject_below must be a number in \[0, 1\]"),
    (dict(reject_below=0.2, min_tokens=-1), r"min_tokens must be an integer >= 0, found -1"),
    (dict(reject_below=0.2, min_tokens=2.5), r"min_tokens must be an integer >= 0"),
    (dict(reject_below=0.2, metric="kappa"), r"metric must be one of auto, f1, accuracy, found 'kappa'"),
    (dict(reject_below=0.2, against="gold"), r"against must be one of aggregate, expert"),
    (dict(reject_below=0.2, decide_by="vote"), r"decide_by must be one of interval, estimate"),
    (dict(reject_below=0.2, bonus="0.5"), r"bonus and bonus_above go together"),
    (dict(reject_below=0.2, bonus="-1", bonus_above=0.8), r"bonus must be a positive amount in dollars, found -1"),
    (dict(reject_below=0.2, bonus="0", bonus_above=0.8), r"bonus must be a positive amount"),
    (dict(reject_below=0.2, bonus="0.505", bonus_above=0.8), r"bonus must be in whole cents"),
    (dict(reject_below=0.2, bonus="lots", bonus_above=0.8), r"bonus must be an amount in dollars such as 0.50"),
    (dict(reject_below=0.2, bonus="1", bonus_above=1.2), r"bonus_above must be a number in \[0, 1\]"),
    (dict(reject_below=0.5, bonus="1", bonus_above=0.4), r"bonus_above \(0.4\) must not be below reject_below"),
])
def test_bad_rules_are_refused_naming_the_rule(kwargs, message):
    with pytest.raises(ValueError, match=message):
        ReviewRules(**kwargs)


# ----------------------------------------------------------------------------- properties
def _oracle(score, low, high, tokens, rules):
    """The module notes, one worker at a time."""
    if tokens < rules.min_tokens:
        return "approve", "too_few_tokens", None
    if math.isnan(score):
        return "approve", "no_score", None
    bonus = None
    if rules.bonus is not None:
        bar = low if rules.decide_by == "interval" else score
        if not math.isnan(bar) and bar >= rules.bonus_above:
            bonus = rules.bonus
    if score < rules.reject_below:
        if rules.decide_by == "estimate":
            return "reject", "below", None
        if math.isnan(high):
            return "approve", "no_interval", bonus
        if high < rules.reject_below:
            return "reject", "below", None
        return "approve", "interval_reaches", bonus
    return "approve", "at_or_above", bonus


@st.composite
def _evidence(draw):
    n = draw(st.integers(1, 25))
    grid = st.sampled_from([0.0, 0.1, 0.2, 0.25, 0.5, 0.8, 0.9, 1.0])  # ties with thresholds on purpose
    score, low, high, tokens = [], [], [], []
    for _ in range(n):
        s = draw(st.one_of(grid, st.floats(0, 1), st.just(float("nan"))))
        has_ci = draw(st.booleans()) and not math.isnan(s)
        lo = draw(st.one_of(grid, st.floats(0, 1))) if has_ci else float("nan")
        hi = max(lo, draw(st.one_of(grid, st.floats(0, 1)))) if has_ci else float("nan")
        score.append(s), low.append(lo), high.append(hi), tokens.append(draw(st.integers(0, 120)))
    ids = tuple(f"mturk:W{i}" for i in range(n))
    return WorkerEvidence(ids=ids, roles=("crowd",) * n, score=np.array(score), low=np.array(low),
                          high=np.array(high), tokens=np.array(tokens, dtype=np.int64), metric="f1",
                          against="aggregate")


@st.composite
def _rules(draw):
    threshold = draw(st.sampled_from([0.0, 0.2, 0.25, 0.5, 0.8]))
    bonus = draw(st.booleans())
    return ReviewRules(reject_below=threshold, min_tokens=draw(st.integers(0, 100)),
                       decide_by=draw(st.sampled_from(["interval", "estimate"])),
                       bonus="0.25" if bonus else None,
                       bonus_above=draw(st.sampled_from([max(threshold, 0.8), 1.0])) if bonus else None)


@settings(max_examples=200, deadline=None)
@given(_evidence(), _rules())
def test_decide_matches_the_per_worker_oracle(ev, rules):
    d = decide(ev, rules)
    for i in range(len(ev.ids)):
        verdict, reason, bonus = _oracle(ev.score[i], ev.low[i], ev.high[i], ev.tokens[i], rules)
        assert (d.verdict[i].value, d.reason[i].value, d.bonus[i]) == (verdict, reason, bonus), i


@settings(max_examples=200, deadline=None)
@given(_evidence(), _rules())
def test_the_interval_rule_never_rejects_a_worker_whose_interval_reaches_the_threshold(ev, rules):
    rules = ReviewRules(reject_below=rules.reject_below, min_tokens=rules.min_tokens, decide_by="interval")
    d = decide(ev, rules)
    for i, v in enumerate(d.verdict):
        if v is Verdict.reject:
            assert ev.high[i] < rules.reject_below and ev.tokens[i] >= rules.min_tokens
    # ... and it rejects a subset of what the estimate rule rejects.
    e = decide(ev, ReviewRules(reject_below=rules.reject_below, min_tokens=rules.min_tokens, decide_by="estimate"))
    assert all(b is Verdict.reject for a, b in zip(d.verdict, e.verdict, strict=True) if a is Verdict.reject)


@settings(max_examples=100, deadline=None)
@given(_evidence(), _rules(), st.randoms(use_true_random=False))
def test_permuting_workers_only_permutes_the_decisions(ev, rules, rnd):
    order = list(range(len(ev.ids)))
    rnd.shuffle(order)
    p = np.array(order)
    shuffled = WorkerEvidence(ids=tuple(ev.ids[i] for i in order), roles=ev.roles, score=ev.score[p], low=ev.low[p],
                              high=ev.high[p], tokens=ev.tokens[p], metric=ev.metric, against=ev.against)
    a, b = decide(ev, rules), decide(shuffled, rules)
    for j, i in enumerate(order):
        assert (b.verdict[j], b.reason[j], b.bonus[j]) == (a.verdict[i], a.reason[i], a.bonus[i])
        assert b.of(ev.ids[i]) == j
