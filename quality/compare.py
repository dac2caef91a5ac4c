r"""Compare aggregates against the experts, with paired bootstrap intervals, and recommend one method.

:func:`compare_aggregates` scores the aggregates of several methods against the expert reference on the expert
documents, with the report's metric for the data's kind (:func:`metric_for`):

* typed BIO (two or more entity types): conlleval-like span F1 (same start, length and type: the report's typed
  span block, :func:`crowdqa.quality.span_metrics.instance_counts` with ``mode="type"``), token F1 beside it;
* one entity type: token F1 (positive = not ``O``);
* categorical answers (no outside class): accuracy, macro F1 beside it.

Every method is scored on the same documents (those with an expert reference and a crowd label on every token),
and every interval comes from the *same* document resamples [1]_: each resample's document weights ``W``
(``n_boot x n_docs``, how often each document was drawn) multiply every method's per-document counts at once
(``W @ counts``), so the difference between two methods is a paired difference, resample by resample
(percentile intervals, resamples where a score is undefined left out).

The rule (:func:`recommend`) chooses the candidate with the highest *expected* score on the items the experts did
not label. A candidate is a method, or a method fitted with the expert labels clamped (``use_experts``, named
``METHOD+experts``); each is measured where its fit did not see the answer: a fit on the crowd alone on every expert
document, a clamped fit by 4-fold cross-fitting over the expert documents.

1. The measured point estimates :math:`\hat p_m` are noisy on a few hundred expert items, and the differences
   between methods are small, so the rule does not take the largest one as it is. It estimates each candidate's
   difference to an *anchor* :math:`a` (the candidate best across the project's data sets,
   :func:`crowdqa.quality.method_choice.prior_for`) by an
   empirical-Bayes normal-normal model [3]_: the true difference :math:`\delta_m \sim N(\mu_m, \tau^2)` with
   :math:`\mu_a = 0` and :math:`\mu_m = -\gamma` for every other candidate, observed as
   :math:`d_m = \hat p_m - \hat p_a \sim N(\delta_m, s_m^2)`, :math:`s_m^2` the variance of the paired bootstrap
   difference. The posterior mean (James-Stein shrinkage toward the prior mean [4]_) is
   :math:`\tilde\delta_m = \mu_m + w_m (d_m - \mu_m)`, :math:`w_m = \tau^2 / (\tau^2 + s_m^2)`, and the expected
   score :math:`\hat p_a + \tilde\delta_m` (:func:`shrunk_scores`).
2. The recommendation is the candidate with the highest expected score; ties go to the anchor, then to the cheaper
   method in the registry's order of cost (:func:`crowdqa.aggregation.registry.methods_by_cost`), then to the fit
   without the experts.
3. :math:`\gamma` (``shortfall``) and :math:`\tau` (``spread``) were fitted by the method of moments on the held-out
   halves of the training data sets of ``benchmarks/method_choice.py`` (its docstring names them; the other sets
   check the rule), which measures the rule's regret beside always-DS and always-MV.
4. Without the anchor among the candidates (``--methods`` left it out), its other variant (with or without the
   experts) is the anchor; without that either, the best point estimate is, and the rule chooses it.
5. The reason gives every candidate's expected shortfall to the recommended one in points (hundredths of the
   metric) with its measured score. Whether the expert documents could separate the methods at all is said
   beside it (no method significantly worse than the best by its paired 95% interval: ``too_small``, and from
   SLiCE's sample size, :func:`crowdqa.quality.sample_size.slice_sample_size`, how many more documents would);
   a method significantly worse than majority vote is warned about.

References
----------
.. [1] B. Efron, R. J. Tibshirani (1993). An Introduction to the Bootstrap, ch. 16 (paired comparisons).
   Chapman & Hall.
.. [2] L. Canales et al. (2021). Assessing the performance of clinical natural language processing systems:
   development of an evaluation methodology. JMIR Medical Informatics 9(7), e20492.
.. [3] C. N. Morris (1983). Parametric empirical Bayes inference: theory and applications. JASA 78(381), 47-55.
   doi:10.1080/01621459.1983.10477920
.. [4] B. Efron, C. Morris (1975). Data analysis using Stein's estimator and its generalizations. JASA 70(350),
   311-319. doi:10.1080/01621459.1975.10479864
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, replace

import numpy as np
from numpy.typing import NDArray

from crowdqa.aggregation.corpus import MISSING, Corpus, entity_type
from crowdqa.aggregation.registry import BASELINE, METHODS, methods_by_cost
from crowdqa.aggregation.spans import decode_spans
from crowdqa.quality.compare_plan import ACCURACY_KINDS, LEVEL, more_documents, plan_inputs
from crowdqa.quality.compare_table import CONVERGED_LEGEND, format_comparison
from crowdqa.quality.method_choice import candidate_name, parse_candidate, prior_for, shrunk_scores
from crowdqa.quality.metrics import grouped_counts, per_label_prf
from crowdqa.quality.paired_bootstrap import f1_from_sums, paired_bootstrap, percentile_bounds
from crowdqa.quality.span_metrics import instance_counts

__all__ = ["CONVERGED_LEGEND", "Comparison", "MethodScore", "compare_aggregates", "format_comparison", "metric_for",
           "more_documents", "paired_bootstrap", "recommend", "rule_text", "Scoreboard"]


def rule_text() -> str:
    """The rule in one sentence, with the registry's order of cost (written into every comparison)."""
    return ("recommend the candidate with the highest expected score on the items the experts did not label: its "
            "measured difference to the anchor (the candidate best across the project's data sets) shrunk toward the "
            "prior's difference by the weight tau^2 / (tau^2 + s^2), s^2 its paired bootstrap variance (empirical "
            "Bayes, Morris 1983); ties to the anchor, then the cheaper method (in the order "
            + ", ".join(methods_by_cost()) + ")")



@dataclass(frozen=True)
class MethodScore:
    """One method's score against the experts.

    Attributes
    ----------
    method : str
    value, low, high : float or None
        The metric and its percentile bootstrap interval (None: undefined).
    diff, diff_low, diff_high : float or None
        ``value - best value`` and the paired bootstrap interval of that difference.
    vs_mv_low, vs_mv_high : float or None
        Paired interval of ``value - value of majority vote`` (the registry's ``BASELINE``; None without it).
    extra : dict
        Secondary metrics (token F1 for typed BIO, macro F1 for categorical answers).
    use_experts : bool
        The fit clamped the expert labels (scored by cross-fitting); its candidate name is ``method+experts``.
    expected : float or None
        The expected score on unseen items (:func:`crowdqa.quality.method_choice.shrunk_scores`).
    weight : float or None
        The weight of the measurement against the prior in ``expected``.
    behind : float or None
        Points (hundredths of the metric) its expected score is below the recommended candidate's.
    """

    method: str
    value: float | None
    low: float | None
    high: float | None
    diff: float | None
    diff_low: float | None
    diff_high: float | None
    vs_mv_low: float | None = None
    vs_mv_high: float | None = None
    extra: dict = field(default_factory=dict)
    use_experts: bool = False
    expected: float | None = None
    weight: float | None = None
    behind: float | None = None

    @property
    def candidate(self) -> str:
        """``method``, or ``method+experts`` for a fit with the experts clamped."""
        return candidate_name(self.method, self.use_experts)


@dataclass(frozen=True)
class Comparison:
    """A comparison of methods on the expert documents and the recommendation (see the module notes).

    ``best`` and ``recommended`` are method ids; ``*_use_experts`` say whether that candidate clamps the experts.
    ``prior`` is the rule's prior (:class:`~crowdqa.quality.method_choice.ChoicePrior`) with the anchor it used.
    """

    kind: str
    metric: str
    documents: int
    methods: list[MethodScore]
    best: str
    recommended: str
    reason: str
    too_small: bool
    more_documents: int | None
    warnings: list[str]
    n_boot: int
    seed: int
    level: float = LEVEL
    rule: str = field(default_factory=rule_text)
    best_use_experts: bool = False
    recommended_use_experts: bool = False
    prior: dict = field(default_factory=dict)
    converged_legend: str = CONVERGED_LEGEND

    def as_dict(self) -> dict:
        """Plain JSON data; methods best first."""
        return asdict(self)


def metric_for(corpus: Corpus) -> tuple[str, str]:
    """``(kind, metric)`` of ``corpus``: ("categorical", "accuracy"), ("tags", "accuracy") (token accuracy, the
    tags report's score; documents are sentences), ("typed-bio", "span_f1") or ("spans", "token_f1")."""
    if corpus.scheme == "tags":
        return "tags", "accuracy"
    if not corpus.has_outside:
        return "categorical", "accuracy"
    names = corpus.class_names[1:]
    types = {entity_type(n) for n in names}
    if len(types) > 1 and all(n[:2] in ("B-", "I-") for n in names):
        return "typed-bio", "span_f1"
    return "spans", "token_f1"


def _num(x: float) -> float | None:
    return float(x) if x is not None and np.isfinite(x) else None


def _doc_counts(corpus: Corpus, labels: NDArray, ref: NDArray, tokens: NDArray, docs: NDArray, kind: str
                ) -> tuple[NDArray, NDArray]:
    """Per document (every one, zero outside ``docs``): the primary counts and the token-F1 counts (typed BIO) of
    one aggregate on the scored ``tokens``."""
    td = corpus.token_doc
    if kind in ACCURACY_KINDS:
        hit = labels[tokens] == ref[tokens]
        correct = np.bincount(td[tokens], weights=hit, minlength=corpus.n_docs)
        compared = np.bincount(td[tokens], minlength=corpus.n_docs)
        return np.stack([correct, compared], axis=1), np.zeros((corpus.n_docs, 0))
    token = grouped_counts(labels[tokens] > 0, ref[tokens] > 0, td[tokens], n_groups=corpus.n_docs)
    if kind == "spans":
        return token, token
    ps, rs = decode_spans(np.maximum(labels, 0), corpus), decode_spans(np.maximum(ref, 0), corpus)
    ps, rs = ps.select(docs[ps.doc]), rs.select(docs[rs.doc])
    return instance_counts(rs, ps, mode="type", n_docs=corpus.n_docs), token


def compare_aggregates(
    corpus: Corpus, labels: dict[str, NDArray], reference: NDArray, *, n_boot: int = 1000, seed: int = 0,
    level: float = LEVEL,
) -> Comparison:
    """Score every method's aggregate against ``reference`` and recommend one (the module's rule).

    Parameters
    ----------
    corpus : Corpus
    labels : dict of str to ndarray of shape (n_tokens,)
        Each method's aggregate (``MISSING`` where it gives none: a token no crowd worker labelled).
    reference : ndarray of shape (n_tokens,)
        The expert reference (``MISSING`` where no expert labelled).
    n_boot, seed, level
        The bootstrap's resamples, seed and level.

    Returns
    -------
    Comparison
        Scored on the documents with a reference where every method labels every reference token.
    """
    if not labels:
        raise ValueError("compare needs at least one method's aggregate")
    board = Scoreboard(corpus, reference)
    for method, aggregate in labels.items():
        board.add(method, aggregate)
    return board.comparison(n_boot=n_boot, seed=seed, level=level)


class Scoreboard:
    """The methods' aggregates scored against the expert reference one method at a time: each method's counts per
    document are made once, when it is added, so :meth:`comparison` of the methods added so far (the rule on them,
    e.g. to keep only the fit it would recommend) costs a bootstrap, not a scoring of every method again.

    Per-document counts do not depend on the other methods, so a comparison of the methods added so far equals
    :func:`compare_aggregates` of them (the same documents, resamples, order and rule).

    The last comparison is kept, keyed by what determines it: the board's state (each :meth:`add` starts a new one:
    the methods, their aggregates and counts) and ``n_boot``, ``seed`` and ``level``. Asking again with nothing
    changed (``--method auto`` asks after each fit, then once more for the result) returns that comparison without
    drawing the bootstrap again; any change computes it afresh.
    """

    def __init__(self, corpus: Corpus, reference: NDArray) -> None:
        self.corpus = corpus
        self.reference = np.asarray(reference, dtype=np.int64)
        if self.reference.shape != (corpus.n_tokens,):
            raise ValueError(f"labels and reference must have shape ({corpus.n_tokens},)")
        self.kind, self.metric = metric_for(corpus)
        self._has_ref = self.reference != MISSING
        self._doc_ref = np.bincount(corpus.token_doc[self._has_ref], minlength=corpus.n_docs) > 0
        self._gap = np.zeros(corpus.n_docs, dtype=bool)  # documents some method leaves a reference token without
        self._labels: dict[str, NDArray] = {}
        self._counts: dict[str, tuple[NDArray, NDArray]] = {}
        self._state = 0  # bumped by every add: the methods and their aggregates the cached comparison was made of
        self._cached: tuple[tuple, Comparison] | None = None

    def add(self, method: str, labels: NDArray, *, use_experts: bool = False) -> None:
        """Score ``method``'s aggregate (shape (n_tokens,), ``MISSING`` where it gives none) on every document with
        a reference; ``use_experts``: the fit clamped the experts (the candidate ``method+experts``), and
        ``labels`` are its held-out predictions."""
        lab = np.array(labels, dtype=np.int64)  # a copy: the caller changing its array cannot stale the cache
        if lab.shape != self.reference.shape:
            raise ValueError(f"labels and reference must have shape ({self.corpus.n_tokens},)")
        td = self.corpus.token_doc
        self._gap |= np.bincount(td[self._has_ref & (lab == MISSING)], minlength=self.corpus.n_docs) > 0
        tokens = self._has_ref & self._doc_ref[td]
        method = candidate_name(method, use_experts)
        self._labels[method] = lab
        self._counts[method] = _doc_counts(self.corpus, lab, self.reference, tokens, self._doc_ref, self.kind)
        self._state += 1

    def comparison(self, *, n_boot: int = 1000, seed: int = 0, level: float = LEVEL) -> Comparison:
        """The rule on the methods added so far: :func:`compare_aggregates` of them (the kept one when neither the
        methods nor ``n_boot``, ``seed`` and ``level`` changed since it was made)."""
        if not self._labels:
            raise ValueError("compare needs at least one method's aggregate")
        key = (self._state, n_boot, seed, level)
        if self._cached is None or self._cached[0] != key:
            self._cached = (key, self._compare(n_boot=n_boot, seed=seed, level=level))
        return self._cached[1]

    def resamples(self, *, n_boot: int = 1000, seed: int = 0) -> tuple[list[str], NDArray, NDArray]:
        """The candidates' names (:func:`~crowdqa.quality.method_choice.candidate_name`), their scores
        (shape (n_methods,)) and their scores on the paired document resamples (shape (n_boot, n_methods)) that
        :meth:`comparison` with the same ``n_boot`` and ``seed`` rests on."""
        names = list(self._labels)
        docs = self._doc_ref & ~self._gap
        primary = np.stack([self._counts[m][0][docs] for m in names])
        point, boot = paired_bootstrap(primary, score="accuracy" if self.kind in ACCURACY_KINDS else "f1",
                                       n_boot=n_boot, rng=np.random.default_rng([seed, 7]))
        return names, point, boot

    def _compare(self, *, n_boot: int, seed: int, level: float) -> Comparison:
        docs = self._doc_ref & ~self._gap
        tokens = self._has_ref & docs[self.corpus.token_doc]
        names, point, boot = self.resamples(n_boot=n_boot, seed=seed)
        primary = np.stack([self._counts[m][0][docs] for m in names])
        low, high = percentile_bounds(boot, level)
        finite = np.where(np.isfinite(point), point, -np.inf)
        best = int(np.argmax(finite))
        d_low, d_high = percentile_bounds(boot - boot[:, [best]], level)
        mv = names.index(BASELINE) if BASELINE in names else None
        if mv is not None:
            m_low, m_high = percentile_bounds(boot - boot[:, [mv]], level)
        extra = [_extra(self.corpus, self.kind, self._labels[m], self.reference, tokens, self._counts[m][1][docs])
                 for m in names]
        prior, anchor = _anchor(self.kind, names, finite)
        if anchor is None:
            expected, weight = np.full(len(names), np.nan), np.full(len(names), np.nan)
        else:
            expected, weight = shrunk_scores(point, boot, anchor=anchor, shortfall=prior["shortfall"],
                                             spread=prior["spread"])
        scores = [
            MethodScore(method=parse_candidate(m)[0], use_experts=parse_candidate(m)[1], value=_num(point[i]),
                        low=_num(low[i]), high=_num(high[i]),
                        diff=_num(point[i] - point[best]), diff_low=_num(d_low[i]), diff_high=_num(d_high[i]),
                        vs_mv_low=None if mv is None else _num(m_low[i]),
                        vs_mv_high=None if mv is None else _num(m_high[i]), extra=extra[i],
                        expected=_num(expected[i]), weight=_num(weight[i]))
            for i, m in enumerate(names)
        ]
        scores.sort(key=lambda s: (-(s.value if s.value is not None else -np.inf), _cost(s.method), s.use_experts))
        return recommend(scores, kind=self.kind, metric=self.metric, documents=int(docs.sum()),
                         plan=plan_inputs(self.kind, primary[best], int(docs.sum())), n_boot=n_boot, seed=seed,
                         level=level, prior=prior)


def _anchor(kind: str, names: list[str], finite: NDArray) -> tuple[dict, int | None]:
    """The prior of ``kind`` with the anchor among ``names``: the prior's, else its other variant (with or without
    the experts), else the best point estimate; None when no candidate has a score."""
    prior = prior_for(kind)
    method, use_experts = parse_candidate(prior.anchor)
    scored = [n for i, n in enumerate(names) if np.isfinite(finite[i])]
    for name in (prior.anchor, candidate_name(method, not use_experts)):
        if name in scored:
            return {**prior.as_dict(), "anchor": name, "prior_anchor": prior.anchor}, names.index(name)
    if not scored:
        return {**prior.as_dict(), "anchor": None, "prior_anchor": prior.anchor}, None
    best = int(np.argmax(finite))
    return {**prior.as_dict(), "anchor": names[best], "prior_anchor": prior.anchor}, best


def _extra(corpus: Corpus, kind: str, labels: NDArray, ref: NDArray, tokens: NDArray, token_counts: NDArray
           ) -> dict:
    """The secondary metric: token F1 (typed BIO) or macro F1 (categorical); none for one type."""
    if kind == "typed-bio":
        return {"token_f1": _num(float(f1_from_sums(token_counts.sum(axis=0))))}
    if kind in ACCURACY_KINDS:
        scores = per_label_prf(labels, ref, n_classes=corpus.n_classes, mask=tokens, outside=False)
        return {"macro_f1": _num(scores["macro"]["f1"])}
    return {}


def _cost(method: str) -> float:
    """The method's place in the registry's order of cost (an unregistered name comes last)."""
    return METHODS[method].cost if method in METHODS else math.inf


def recommend(
    scores: list[MethodScore], *, kind: str, metric: str, documents: int, plan: dict | None = None,
    n_boot: int = 1000, seed: int = 0, level: float = LEVEL, prior: dict | None = None,
) -> Comparison:
    """Apply the module's rule to scored methods (best point estimate first, as :func:`compare_aggregates` sorts
    them, each with its ``expected`` score): the highest expected score, ties to ``prior["anchor"]``, then the
    cheaper method, then the fit without the experts."""
    if not scores:
        raise ValueError("nothing to recommend from: no method was scored")
    best = scores[0]
    if best.value is None:
        raise ValueError(f"no method has a {metric} on the {documents} expert documents (no reference positive?)")
    prior = dict(prior or {})
    anchor = prior.get("anchor")
    ranked = sorted((s for s in scores if s.expected is not None),
                    key=lambda s: (-s.expected, s.candidate != anchor, _cost(s.method), s.use_experts))
    if not ranked:
        raise ValueError("nothing to recommend from: no method has an expected score (see shrunk_scores)")
    chosen = ranked[0]
    scores = [replace(s, behind=None if s.expected is None else round(100 * (chosen.expected - s.expected), 10))
              for s in scores]
    best = scores[0]
    label = metric.replace("_", " ")
    reason = _reason(chosen, best, scores, label=label, documents=documents, anchor=anchor)

    def not_worse(s: MethodScore) -> bool:
        return s is best or (s.diff_low is not None and s.diff_low <= 0 <= (s.diff_high or 0))

    others = [s for s in scores if s.candidate != best.candidate]
    too_small = bool(others) and all(not_worse(s) for s in others)
    more = None
    if too_small:
        # The gap to separate is to the next lower score: methods that tie the best (often the same labels) leave
        # no gap, and half of none asked SLiCE for the narrowest interval it takes (thousands of documents).
        runner_up = next((s.value if s.value is not None else 0.0 for s in others
                          if s.value is None or s.value < best.value), None)
        reason += (f"; the {documents} expert documents are too few to separate the methods at {level:.0%} (no "
                   f"method is significantly worse than {best.candidate}), which is why the prior weighs in")
        if runner_up is None:
            reason += f": every method has the same {label} ({best.value:.3f})"
        else:
            more = more_documents(plan, (best.value - runner_up) / 2, level=level) if plan else None
        if more:
            between = "the two best" if others[0].value == runner_up else "the best and the next lower score"
            reason += (f": about {more} more expert documents would give the best an interval half as wide as the gap "
                       f"between {between} ({best.value:.3f} and {runner_up:.3f}) (SLiCE)")
    warnings = [f"{s.candidate} is significantly worse than majority vote (paired difference interval "
                f"[{s.vs_mv_low:.3f}, {s.vs_mv_high:.3f}])"
                for s in scores if s.candidate != BASELINE and s.vs_mv_high is not None and s.vs_mv_high < 0]
    return Comparison(kind=kind, metric=metric, documents=documents, methods=list(scores), best=best.method,
                      recommended=chosen.method, reason=reason, too_small=too_small, more_documents=more,
                      warnings=warnings, n_boot=n_boot, seed=seed, level=level, best_use_experts=best.use_experts,
                      recommended_use_experts=chosen.use_experts, prior=prior)


def _reason(chosen: MethodScore, best: MethodScore, scores: list[MethodScore], *, label: str, documents: int,
            anchor: str | None) -> str:
    """Why ``chosen``: its expected score and how it was made, then every other candidate's expected shortfall to
    it in points with its measured score."""
    how = ("fitted with the experts clamped, measured by cross-fitting" if chosen.use_experts
           else "fitted on the crowd alone")
    reason = (f"{chosen.candidate} has the highest expected {label} on the items the experts did not label "
              f"({chosen.expected:.3f}; {how}: measured {chosen.value:.3f} on {documents} expert documents")
    if chosen.candidate == anchor:
        reason += f", and {anchor} is the candidate the prior favours, best across the project's data sets)"
    else:
        reason += (f", weighed {chosen.weight:.2f} against the prior that favours {anchor})" if anchor
                   else ")")
    if best.candidate != chosen.candidate:
        lead = 100 * (best.value - chosen.value)
        reason += (f"; the best measured, {best.candidate} ({best.value:.3f}), is expected {best.behind:.1f} points "
                   f"lower: its measured lead of {lead:.1f} points weighs {best.weight:.2f} against the prior")
    behind = sorted((s for s in scores if s.candidate not in (chosen.candidate, best.candidate)
                     and s.behind is not None), key=lambda s: s.behind)
    if behind:
        reason += "; expected points behind it: " + ", ".join(
            f"{s.candidate} {s.behind:.1f} (measured {s.value:.3f})" for s in behind)
    return reason
