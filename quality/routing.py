r"""Which documents the experts should label next: greedy expected narrowing of the intervals.

A project has crowd labels on every document, an aggregate with token posteriors, and expert
labels on a few documents (perhaps none). Each expert document measures three things the user
needs: the aggregate's token precision and recall (or accuracy, for categorical answers), every
crowd worker's precision and recall, and (when the experts' labels are clamped in the next
fit) the true labels where the aggregate is unsure. :func:`route_documents` ranks the
documents without expert labels so that a budget of ``N`` of them teaches the most.

Scoring rule
------------
Every measured proportion :math:`q` (the aggregate's precision and recall, each crowd
worker's precision and recall) has :math:`n_q` trials on the expert documents (tokens the
aggregate or worker marked positive, for precision; reference-positive tokens, for recall)
and an estimate :math:`\hat p_q` (the measured value, or the model's expectation from the
posteriors while :math:`n_q = 0`). Its 95% Clopper-Pearson interval at the estimate has
width :math:`W(n, \hat p_q)`, evaluated at :math:`k = n \hat p_q` successes (the beta
quantiles are continuous in :math:`k` and :math:`n`; :math:`W(0, \cdot) = 1`), exactly as
SLiCE [1]_ (:mod:`crowdqa.quality.sample_size`) plans a gold standard at the expected value.
A document :math:`d` is expected to add :math:`m_{qd}` trials, counted from the aggregate's
token marginals :math:`\pi_t = P(\text{token } t \text{ positive})`: the tokens the
aggregate (or the worker) marks positive for precision, :math:`\sum_t \pi_t` over the
tokens the aggregate (or worker) labelled for recall. The user's target is SLiCE's: every
interval no wider than :math:`2h` (``half_width``); the excess
:math:`E_q(n) = \max(W(n, \hat p_q) - 2h, 0)` is what remains to be learned. The value of a
set :math:`S` of documents is

.. math::

    f(S) = \sum_q \omega_q \bigl[E_q(n_q) - E_q(n_q + \textstyle\sum_{d\in S} m_{qd})\bigr]
           + \lambda \sum_{d \in S} \Bigl(\frac{\mathrm{E[FP}_d]}{A} + \frac{\mathrm{E[FN}_d]}{T}\Bigr)

with weights :math:`\omega = 1` for the aggregate's precision and recall and
:math:`\omega_w = \gamma\, s_w` for worker :math:`w`'s, where :math:`s_w` is the worker's
share of the crowd labels (a worker whose labels make more of the aggregate, and more of the
pay, matters more; the workers together weigh :math:`\gamma` = ``worker_weight``, as much as
the aggregate by default). The last term is the posterior uncertainty of the document:
:math:`\mathrm{E[FP}_d] = \sum_{t \in d,\ \text{agg. positive}} P(t = O)` and
:math:`\mathrm{E[FN}_d] = \sum_{t \in d,\ \text{agg. } O} \pi_t` are the aggregate's
expected errors there, which the experts' labels correct when clamped; divided by the
aggregate's positives :math:`A = \sum_t [\text{agg. positive}]` and the expected true
positives :math:`T = \sum_t \pi_t` they are the expected gain in the aggregate's precision
and recall, in the same units as the interval widths (:math:`\lambda` =
``correction_weight``). For categorical answers there is one proportion per source
(accuracy) and the expected errors are :math:`\sum_t 1 - P(t = \text{agg. label})` over the
items labelled.

Each :math:`E_q` is convex and decreasing in :math:`n` (the interval narrows like
:math:`1/\sqrt{n}`), so every term has diminishing returns and :math:`f` is, to that
approximation, monotone submodular: the ranking is the greedy order, each step adding the
document of largest marginal gain :math:`f(S \cup \{d\}) - f(S)` with the trial counts
updated by the expected :math:`m_{qd}`, which carries the (1 - 1/e) guarantee of Nemhauser,
Wolsey & Fisher [2]_ for a budget of ``N``. This is what spreads a budget: once a worker's
interval is narrow, that worker's other documents lose their pull, so under-measured
workers (coverage) and the aggregate's intervals share it. Uncertainty sampling [3]_ [4]_
is the special case ``worker_weight=0`` with every interval already at its target: the
documents with the most expected aggregate errors (Settles & Craven's total token
uncertainty, in expected errors rather than entropy) come first. Ties break by document id,
so the ranking does not depend on the order of the upload.

Notes
-----
Routed documents are not a random sample. The Clopper-Pearson intervals of a report treat
the expert documents as one (and tokens within them as independent draws, as SLiCE does);
an estimate on hand-picked documents can be biased where a random sample's is not (Sawade
et al. [5]_ reweight such samples; this ranking does not). ``benchmarks/routing.py``
measures both the narrowing and the estimate's error on PICO against random documents.

References
----------
.. [1] L. Canales, S. Menke, S. Marchesseau, A. D'Agostino, C. del Rio-Bermudez, M. Taberna,
   J. Tello (2021). Assessing the performance of clinical natural language processing
   systems: development of an evaluation methodology. JMIR Medical Informatics 9(7), e20492.
   doi:10.2196/20492
.. [2] G. L. Nemhauser, L. A. Wolsey, M. L. Fisher (1978). An analysis of approximations for
   maximizing submodular set functions - I. Mathematical Programming 14, 265-294.
   doi:10.1007/BF01588971
.. [3] D. D. Lewis, W. A. Gale (1994). A sequential algorithm for training text classifiers.
   SIGIR '94, 3-12. doi:10.1007/978-1-4471-2099-5_1
.. [4] B. Settles, M. Craven (2008). An analysis of active learning strategies for sequence
   labeling tasks. EMNLP 2008, 1070-1079.
.. [5] C. Sawade, N. Landwehr, T. Scheffer (2010). Active estimation of F-measures. NIPS 23.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
from numpy.typing import NDArray

from crowdqa.aggregation.corpus import MISSING, Corpus
from crowdqa.quality.intervals import clopper_pearson_bounds
from crowdqa.quality.references import reference_labels

__all__ = ["PARTS", "RoutingPlan", "RoutingTerms", "check_budget", "interval_width", "routing_terms", "route_documents"]

#: The parts of a document's gain, in the order of :attr:`RoutingPlan.parts`' columns.
PARTS = ("aggregate_precision", "aggregate_recall", "workers", "corrections")


def interval_width(n: NDArray | float, p: NDArray | float, *, confidence: float = 0.95) -> NDArray[np.float64]:
    """Width of the Clopper-Pearson interval at ``k = n p`` successes in ``n`` trials, elementwise.

    Parameters
    ----------
    n : array-like of float
        Trials (expected counts may be fractional), ``>= 0``.
    p : array-like of float
        The proportion planned at, in [0, 1].
    confidence : float, default=0.95

    Returns
    -------
    ndarray of float
        ``high - low``; 1 where ``n == 0`` (nothing is known: the interval is [0, 1]).
    """
    n = np.asarray(n, dtype=np.float64)
    p = np.clip(np.asarray(p, dtype=np.float64), 0.0, 1.0)
    n, p = np.broadcast_arrays(n, p)
    low, high = clopper_pearson_bounds(np.minimum(n * p, n), n, level=confidence)
    return np.where(n > 0, high - low, 1.0)


@dataclass(frozen=True)
class RoutingTerms:
    """The measured proportions and what each candidate document adds to them.

    Attributes
    ----------
    names : tuple of str, length n_quantities
        ``"aggregate:precision"``, ``"aggregate:recall"`` (or ``"aggregate:accuracy"``),
        ``"<worker id>:precision"``, ...
    part : ndarray of shape (n_quantities,)
        Index into :data:`PARTS` of each quantity.
    trials : ndarray of shape (n_quantities,)
        Trials measured on the expert documents now.
    estimate : ndarray of shape (n_quantities,)
        The proportion planned at.
    weight : ndarray of shape (n_quantities,)
    row_quantity, row_doc : ndarray of shape (n_rows,)
        Sparse ``m_{qd}``: quantity and document of each row (candidate documents only).
    row_trials : ndarray of shape (n_rows,)
        Expected trials the document adds to the quantity.
    corrections : ndarray of shape (n_docs,)
        Expected gain in the aggregate's precision plus recall (accuracy) from correcting
        its expected errors on the document; 0 outside the candidates.
    expected_errors : ndarray of shape (n_docs,)
        The aggregate's expected token errors on each document.
    candidates : ndarray of shape (n_docs,), bool
    """

    names: tuple[str, ...]
    part: NDArray[np.int64]
    trials: NDArray[np.float64]
    estimate: NDArray[np.float64]
    weight: NDArray[np.float64]
    row_quantity: NDArray[np.int64]
    row_doc: NDArray[np.int64]
    row_trials: NDArray[np.float64]
    corrections: NDArray[np.float64]
    expected_errors: NDArray[np.float64]
    candidates: NDArray[np.bool_]


def _ratio(num: NDArray, den: NDArray, fallback: float = 0.5) -> NDArray[np.float64]:
    num, den = np.asarray(num, dtype=np.float64), np.asarray(den, dtype=np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        out = num / den
    return np.where(den > 0, out, fallback)


def _check_terms_input(corpus: Corpus, labels: NDArray, proba: NDArray, *, worker_weight: float,
                       correction_weight: float) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
    """``labels`` and ``proba`` as arrays, or a ValueError naming the argument of the wrong shape or value."""
    n_tokens = corpus.n_tokens
    labels = np.asarray(labels, dtype=np.int64)
    proba = np.asarray(proba, dtype=np.float64)
    if labels.shape != (n_tokens,):
        raise ValueError(f"labels must have shape ({n_tokens},), found {labels.shape}")
    if proba.shape != (n_tokens, corpus.n_classes):
        raise ValueError(f"proba must have shape ({n_tokens}, {corpus.n_classes}), found {proba.shape}")
    for name, value in (("worker_weight", worker_weight), ("correction_weight", correction_weight)):
        if not (np.isfinite(value) and value >= 0):
            raise ValueError(f"{name} must be a finite number >= 0, found {value}")
    return labels, proba


class _CrowdRows(NamedTuple):
    """The crowd workers' annotations (rows of the COO arrays) and the tokens they cover."""

    worker: NDArray[np.int64]
    token: NDArray[np.int64]
    label: NDArray[np.int64]
    #: Rows on a token with a reference label.
    on_ref: NDArray[np.bool_]
    #: Tokens (n_tokens,) a crowd worker labelled; those of them on candidate documents; those with a reference.
    covered: NDArray[np.bool_]
    candidate_tokens: NDArray[np.bool_]
    valid: NDArray[np.bool_]
    n_workers: int

    @classmethod
    def of(cls, corpus: Corpus, crowd_obs: NDArray, ref: NDArray, candidates: NDArray) -> _CrowdRows:
        covered = np.bincount(corpus.token[crowd_obs], minlength=corpus.n_tokens) > 0
        token = corpus.token[crowd_obs]
        return cls(worker=corpus.worker[crowd_obs].astype(np.int64), token=token,
                   label=corpus.label[crowd_obs].astype(np.int64), on_ref=ref[token] >= 0, covered=covered,
                   candidate_tokens=covered & candidates[corpus.token_doc], valid=covered & (ref >= 0),
                   n_workers=corpus.n_workers)

    def wsum(self, x: NDArray, rows: NDArray | slice = slice(None)) -> NDArray[np.float64]:
        """Per-worker sum of ``x`` over the crowd rows ``rows``."""
        return np.bincount(self.worker[rows], weights=x[rows], minlength=self.n_workers)


class _MetricTerms(NamedTuple):
    """The metric-specific quantities of :func:`routing_terms`: the aggregate's (trials, hits, model
    expectation, per-document rows) and each crowd worker's, per metric, and the corrections."""

    agg_names: tuple[str, ...]
    agg_trials: NDArray[np.float64]
    agg_hits: float
    agg_model: NDArray[np.float64]
    agg_rows: list[NDArray]
    agg_parts: tuple[int, ...]
    expected_errors: NDArray[np.float64]
    corrections: NDArray[np.float64]
    metrics: tuple[str, ...]
    w_trials: list[NDArray]
    w_hits: list[NDArray]
    w_model: list[NDArray]
    w_add: list[NDArray]
    w_parts: tuple[int, ...]


def _span_metric_terms(corpus: Corpus, crowd: _CrowdRows, lab: NDArray, proba: NDArray, ref: NDArray
                       ) -> _MetricTerms:
    """Precision and recall of the positive (non-O) tokens, for span labels."""
    doc, n_docs, covered, valid = corpus.token_doc, corpus.n_docs, crowd.covered, crowd.valid
    cand_tok = crowd.candidate_tokens
    pi = 1.0 - proba[:, 0]                     # P(token positive)
    pos = (lab > 0) & covered                  # the aggregate marks it positive
    err_fp = np.where(pos, proba[:, 0], 0.0)
    err_fn = np.where(covered & ~pos, pi, 0.0)
    scale_fp, scale_fn = _ratio(1.0, pos.sum(), 0.0), _ratio(1.0, pi[covered].sum(), 0.0)
    o = (crowd.label > 0).astype(np.float64)   # the worker marks it positive
    po = pi[crowd.token]
    ref_pos = (ref[crowd.token] > 0).astype(np.float64)
    hits = crowd.wsum(o * ref_pos, crowd.on_ref)
    return _MetricTerms(
        agg_names=("aggregate:precision", "aggregate:recall"),
        agg_trials=np.array([np.count_nonzero(pos & valid), np.count_nonzero(valid & (ref > 0))], dtype=np.float64),
        agg_hits=float(np.count_nonzero(pos & valid & (ref > 0))),
        agg_model=np.array([_ratio(pi[pos].sum(), pos.sum()), _ratio(pi[pos].sum(), pi[covered].sum())]),
        agg_rows=[np.bincount(doc[cand_tok], weights=pos[cand_tok], minlength=n_docs),
                  np.bincount(doc[cand_tok], weights=pi[cand_tok], minlength=n_docs)],
        agg_parts=(0, 1),
        expected_errors=np.bincount(doc, weights=err_fp + err_fn, minlength=n_docs),
        corrections=np.bincount(doc, weights=err_fp * scale_fp + err_fn * scale_fn, minlength=n_docs),
        metrics=("precision", "recall"),
        w_trials=[crowd.wsum(o, crowd.on_ref), crowd.wsum(ref_pos, crowd.on_ref)], w_hits=[hits, hits],
        w_model=[_ratio(crowd.wsum(o * po), crowd.wsum(o)), _ratio(crowd.wsum(o * po), crowd.wsum(po))],
        w_add=[o, po], w_parts=(2, 2),
    )


def _categorical_metric_terms(corpus: Corpus, crowd: _CrowdRows, lab: NDArray, proba: NDArray, ref: NDArray
                              ) -> _MetricTerms:
    """Accuracy, for categorical answers."""
    doc, n_docs, covered = corpus.token_doc, corpus.n_docs, crowd.covered
    p_label = proba[np.arange(corpus.n_tokens), lab]
    expected_errors = np.bincount(doc, weights=np.where(covered, 1.0 - p_label, 0.0), minlength=n_docs)
    one = np.ones(crowd.worker.size)
    return _MetricTerms(
        agg_names=("aggregate:accuracy",),
        agg_trials=np.array([np.count_nonzero(crowd.valid)], dtype=np.float64),
        agg_hits=float(np.count_nonzero(crowd.valid & (lab == ref))),
        agg_model=np.array([_ratio(p_label[covered].sum(), covered.sum())]),
        agg_rows=[np.bincount(doc[crowd.candidate_tokens], minlength=n_docs).astype(np.float64)],
        agg_parts=(0,),
        expected_errors=expected_errors,
        corrections=expected_errors * _ratio(1.0, covered.sum(), 0.0),
        metrics=("accuracy",),
        w_trials=[crowd.wsum(one, crowd.on_ref)],
        w_hits=[crowd.wsum((crowd.label == ref[crowd.token]).astype(np.float64), crowd.on_ref)],
        w_model=[_ratio(crowd.wsum(proba[crowd.token, crowd.label]), crowd.wsum(one))],
        w_add=[one], w_parts=(2,),
    )


def _candidates(corpus: Corpus, candidates: NDArray | None, expert_obs: NDArray) -> NDArray[np.bool_]:
    """The documents that may be routed, shape (n_docs,): ``candidates`` (default all) without those the
    experts labelled (``expert_obs``: their annotations)."""
    expert_doc = np.bincount(corpus.obs_doc[expert_obs], minlength=corpus.n_docs) > 0
    if candidates is None:
        return ~expert_doc
    candidates = np.asarray(candidates, dtype=bool)
    if candidates.shape != (corpus.n_docs,):
        raise ValueError(f"candidates must have shape ({corpus.n_docs},), found {candidates.shape}")
    return candidates & ~expert_doc


def routing_terms(corpus: Corpus, labels: NDArray, proba: NDArray, *, reference: str = "union",
                  candidates: NDArray | None = None, worker_weight: float = 1.0,
                  correction_weight: float = 1.0) -> RoutingTerms:
    """Build the quantities of the scoring rule (module docstring) from a fitted aggregate.

    Parameters
    ----------
    corpus : Corpus
        Crowd labels, and expert labels on the documents already labelled by experts.
    labels : ndarray of shape (n_tokens,)
        The aggregate's class per token (``MISSING`` where no crowd worker labelled it).
    proba : ndarray of shape (n_tokens, n_classes)
        The aggregate's posterior per token.
    reference : str, default="union"
        How the experts' labels combine (:func:`crowdqa.quality.references.reference_labels`).
    candidates : ndarray of shape (n_docs,), bool, optional
        Documents the experts may be sent; default every document without expert labels.
        Documents with expert labels are never candidates.
    worker_weight, correction_weight : float, default=1.0
        :math:`\\gamma` and :math:`\\lambda` of the scoring rule, ``>= 0``.

    Returns
    -------
    RoutingTerms
    """
    labels, proba = _check_terms_input(corpus, labels, proba, worker_weight=worker_weight,
                                       correction_weight=correction_weight)
    n_docs, n_w = corpus.n_docs, corpus.n_workers
    crowd_obs = np.isin(corpus.worker, corpus.workers_with_role("crowd"))
    expert_obs = np.isin(corpus.worker, corpus.workers_with_role("expert"))
    candidates = _candidates(corpus, candidates, expert_obs)
    ref = (reference_labels(corpus, rule=reference) if expert_obs.any()
           else np.full(corpus.n_tokens, MISSING, dtype=np.int64))
    crowd_rows = _CrowdRows.of(corpus, crowd_obs, ref, candidates)
    metric_terms = _span_metric_terms if corpus.has_outside else _categorical_metric_terms
    m = metric_terms(corpus, crowd_rows, np.where(labels == MISSING, 0, labels), proba, ref)
    doc, w_obs, t_obs = corpus.token_doc, crowd_rows.worker, crowd_rows.token
    cand_obs = candidates[doc[t_obs]]

    # Aggregate quantities: measured estimate once there are trials, else the model's expectation.
    n_agg = len(m.agg_names)
    agg_est = np.where(m.agg_trials > 0, _ratio(np.full(n_agg, m.agg_hits), m.agg_trials), m.agg_model)
    cand_docs = np.flatnonzero(candidates)
    row_q = [np.full(cand_docs.size, i, dtype=np.int64) for i in range(n_agg)]
    row_d = [cand_docs] * n_agg
    row_m = [m.agg_rows[i][cand_docs] for i in range(n_agg)]
    # Worker quantities: one per crowd worker and metric, rows per (worker, candidate document) pair.
    crowd = corpus.workers_with_role("crowd").astype(np.int64)
    share = np.bincount(w_obs, minlength=n_w)[crowd] / max(w_obs.size, 1)
    key = w_obs[cand_obs] * n_docs + doc[t_obs[cand_obs]]
    pair, inv = np.unique(key, return_inverse=True)
    pair_w, pair_d = pair // n_docs, pair % n_docs
    slot = np.full(n_w, -1, dtype=np.int64)
    slot[crowd] = np.arange(crowd.size)
    names = list(m.agg_names)
    parts = list(m.agg_parts)
    trials, estimate, weight = [m.agg_trials], [agg_est], [np.ones(n_agg)]
    for j, metric in enumerate(m.metrics):
        base = n_agg + j * crowd.size
        names += [f"{corpus.worker_ids[w]}:{metric}" for w in crowd]
        parts += [m.w_parts[j]] * crowd.size
        tr = m.w_trials[j][crowd]
        trials.append(tr)
        estimate.append(np.where(tr > 0, _ratio(m.w_hits[j][crowd], tr), m.w_model[j][crowd]))
        weight.append(worker_weight * share)
        row_q.append(base + slot[pair_w])
        row_d.append(pair_d)
        row_m.append(np.bincount(inv, weights=m.w_add[j][cand_obs], minlength=pair.size))
    return RoutingTerms(
        names=tuple(names), part=np.asarray(parts, dtype=np.int64),
        trials=np.concatenate(trials), estimate=np.clip(np.concatenate(estimate), 0.0, 1.0),
        weight=np.concatenate(weight), row_quantity=np.concatenate(row_q).astype(np.int64),
        row_doc=np.concatenate(row_d).astype(np.int64), row_trials=np.concatenate(row_m).astype(np.float64),
        corrections=np.where(candidates, m.corrections * correction_weight, 0.0), expected_errors=m.expected_errors,
        candidates=candidates,
    )


@dataclass(frozen=True)
class RoutingPlan:
    """The ranked documents and why each was chosen.

    Attributes
    ----------
    order : ndarray of shape (n_ranked,)
        Document indices, best first (``n_ranked = min(budget, candidates)``).
    gain : ndarray of shape (n_ranked,)
        Marginal gain of each document when it was added (non-increasing up to ties).
    parts : ndarray of shape (n_ranked, 4)
        That gain split into :data:`PARTS`.
    top_quantity : tuple of str
        Per document, the part of :data:`PARTS` contributing most of its gain, named by its leading
        quantity (``"aggregate:precision"``, ``"<worker id>:recall"``, ...) or ``"corrections"``.
    reason : tuple of str
        One line per document saying why it was chosen.
    expected_errors : ndarray of shape (n_ranked,)
        The aggregate's expected token errors on the document.
    candidates : int
        Documents that could be routed (without expert labels).
    widths : dict of str to float
        The aggregate's interval widths now (``W(n_q, p_q)``), keyed by quantity name.
    half_width : float
    """

    order: NDArray[np.int64]
    gain: NDArray[np.float64]
    parts: NDArray[np.float64]
    top_quantity: tuple[str, ...]
    reason: tuple[str, ...]
    expected_errors: NDArray[np.float64]
    candidates: int
    widths: dict[str, float]
    half_width: float


def check_budget(budget: object) -> int:
    """``budget`` as an int ``>= 1``; ValueError for anything else (a bool, a float, 0, a negative)."""
    if isinstance(budget, bool) or not isinstance(budget, int | np.integer):
        raise ValueError(f"budget must be a whole number of documents >= 1, found {budget!r}")
    if budget < 1:
        raise ValueError(f"budget must be a whole number of documents >= 1, found {budget}")
    return int(budget)


def route_documents(
    corpus: Corpus,
    labels: NDArray,
    proba: NDArray,
    *,
    budget: int,
    half_width: float = 0.05,
    confidence: float = 0.95,
    reference: str = "union",
    candidates: NDArray | None = None,
    worker_weight: float = 1.0,
    correction_weight: float = 1.0,
) -> RoutingPlan:
    """Rank the documents without expert labels for the experts (the module's scoring rule).

    Parameters
    ----------
    corpus : Corpus
    labels : ndarray of shape (n_tokens,)
        The aggregate (an aggregator's ``labels_``).
    proba : ndarray of shape (n_tokens, n_classes)
        Its posteriors (``proba_``).
    budget : int
        Documents to rank, ``>= 1``; fewer come back when fewer are candidates.
    half_width : float, default=0.05
        SLiCE's target half-width of every interval, in (0, 0.5]: an interval already this
        narrow gains nothing. 0.05 is the project's planning question (a +-5-point margin
        at 95% confidence, ``benchmarks/sample_size_example.py``).
    confidence : float, default=0.95
        Level of the intervals, as in the reports.
    reference, candidates, worker_weight, correction_weight
        See :func:`routing_terms`.

    Returns
    -------
    RoutingPlan

    Examples
    --------
    >>> c = Corpus.from_arrays(token=[0, 1, 2, 3], worker=[0, 0, 0, 0], label=[1, 1, 0, 0],
    ...     doc_lengths=[2, 2], token_start=[0, 2, 0, 2], token_end=[1, 3, 1, 3], doc_ids=["a", "b"],
    ...     texts=["x y", "z w"], worker_ids=["w"], worker_roles=["crowd"], class_names=["O", "P"])
    >>> proba = np.array([[0.1, 0.9], [0.2, 0.8], [0.9, 0.1], [0.8, 0.2]])
    >>> plan = route_documents(c, np.array([1, 1, 0, 0]), proba, budget=2)
    >>> [c.doc_ids[d] for d in plan.order]
    ['a', 'b']
    """
    budget = check_budget(budget)
    if not 0.0 < half_width <= 0.5:
        raise ValueError(f"half_width must be in (0, 0.5], found {half_width}")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), found {confidence}")
    terms = routing_terms(corpus, labels, proba, reference=reference, candidates=candidates,
                          worker_weight=worker_weight, correction_weight=correction_weight)
    target = 2.0 * half_width
    ranking = _rank_greedily(corpus, terms, budget=budget, target=target, confidence=confidence)
    order = np.asarray(ranking.order, dtype=np.int64)
    widths = {name: float(interval_width(terms.trials[i], terms.estimate[i], confidence=confidence))
              for i, name in enumerate(terms.names) if terms.part[i] < 2}
    return RoutingPlan(order=order, gain=np.asarray(ranking.gains), parts=ranking.parts,
                       top_quantity=tuple(ranking.top_quantity), reason=tuple(ranking.reasons),
                       expected_errors=terms.expected_errors[order], candidates=int(terms.candidates.sum()),
                       widths=widths, half_width=float(half_width))


class _Ranking(NamedTuple):
    """The documents :func:`_rank_greedily` picked, in order, with each one's gain and why."""

    order: list[int]
    gains: list[float]
    parts: NDArray[np.float64]
    top_quantity: list[str]
    reasons: list[str]


def _rank_greedily(corpus: Corpus, terms: RoutingTerms, *, budget: int, target: float, confidence: float
                   ) -> _Ranking:
    """Pick ``budget`` candidate documents one at a time, each the one of largest marginal gain (ties to the
    smallest document id), revealing its trials in expectation before the next pick (module docstring)."""
    n_docs = corpus.n_docs

    def excess(n: NDArray, q: NDArray) -> NDArray[np.float64]:
        return np.maximum(interval_width(n, terms.estimate[q], confidence=confidence) - target, 0.0)

    n = terms.trials.copy()
    q_row, d_row, m_row = terms.row_quantity, terms.row_doc, terms.row_trials
    by_q = np.argsort(q_row, kind="stable")      # rows of each quantity, for the updates
    q_ptr = np.searchsorted(q_row[by_q], np.arange(len(terms.names) + 1))
    by_d = np.argsort(d_row, kind="stable")      # rows of each document, for the picks
    d_ptr = np.searchsorted(d_row[by_d], np.arange(n_docs + 1))
    all_q = np.arange(len(terms.names))
    now = excess(n, all_q)

    def row_gain(rows: NDArray) -> NDArray[np.float64]:
        q = q_row[rows]
        live = now[q] > 0                        # an interval at its target gains nothing more
        out = np.zeros(rows.size)
        if np.any(live):
            r, ql = rows[live], q[live]
            out[live] = terms.weight[ql] * (now[ql] - excess(n[ql] + m_row[r], ql))
        return out

    gain_row = row_gain(np.arange(q_row.size))
    doc_gain = np.bincount(d_row, weights=gain_row, minlength=n_docs) + terms.corrections
    # Rank of each document id: ties go to the smallest id, whatever the upload's order.
    id_rank = np.empty(n_docs, dtype=np.int64)
    id_rank[np.argsort(np.asarray(corpus.doc_ids, dtype=object), kind="stable")] = np.arange(n_docs)
    avail = terms.candidates.copy()
    k = min(budget, int(avail.sum()))
    order, gains, parts, tops, reasons = [], [], np.zeros((k, len(PARTS))), [], []
    for i in range(k):
        score = np.where(avail, doc_gain, -np.inf)
        best = score.max()
        tied = np.flatnonzero(score >= best - 1e-12 * max(1.0, abs(best)))
        d = int(tied[np.argmin(id_rank[tied])])
        rows = by_d[d_ptr[d]:d_ptr[d + 1]]
        g = gain_row[rows]
        parts[i] = np.bincount(terms.part[q_row[rows]], weights=g, minlength=len(PARTS))
        parts[i, PARTS.index("corrections")] += terms.corrections[d]
        # The reason names the part that contributes most, and within it the quantity that does.
        lead = int(np.argmax(parts[i]))
        in_lead = terms.part[q_row[rows]] == lead
        top = int(q_row[rows[in_lead][np.argmax(g[in_lead])]]) if lead < 3 and in_lead.any() else -1
        tops.append("corrections" if top < 0 else terms.names[top])
        reasons.append(_reason(top, terms, d, float(n[top]) if top >= 0 else 0.0, target))
        order.append(d)
        gains.append(float(parts[i].sum()))
        avail[d] = False
        # Reveal d (in expectation): its trials join every quantity it touches; those rows change.
        touched = np.unique(q_row[rows])
        np.add.at(n, q_row[rows], m_row[rows])
        now[touched] = excess(n[touched], touched)
        upd = np.concatenate([by_q[q_ptr[q]:q_ptr[q + 1]] for q in touched]) if touched.size else by_q[:0]
        new = row_gain(upd)
        doc_gain += np.bincount(d_row[upd], weights=new - gain_row[upd], minlength=n_docs)
        gain_row[upd] = new
    return _Ranking(order, gains, parts, tops, reasons)


def _reason(top: int, terms: RoutingTerms, doc: int, trials: float, target: float) -> str:
    """One line naming what the document measures most (``top``: a quantity, or -1 for the corrections);
    ``trials``: that quantity's trials (measured plus expected from the documents ranked before)."""
    if top < 0:
        if terms.corrections[doc] <= 0:
            return "no crowd labels to measure or uncertain tokens to settle"
        return f"settles uncertain tokens: {terms.expected_errors[doc]:.1f} expected aggregate errors"
    who, metric = terms.names[top].rsplit(":", 1)
    if who == "aggregate":
        return f"narrows the aggregate's {metric} interval (on {trials:.0f} tokens so far; target width {target:g})"
    return f"measures worker {who}'s {metric} (on {trials:.0f} tokens so far)"
