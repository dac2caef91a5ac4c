"""The pipeline one job runs: fit an aggregator on the crowd, build the quality report.

The same function serves ``crowdqa aggregate`` (synchronously) and the queued jobs
(:func:`crowdqa.jobs.tasks.run_job`), so the command line and the service give identical results.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from crowdqa.aggregation import ConvergenceWarning, make_aggregator
from crowdqa.aggregation.batches import carry_workers, fitted_state, restore_state, supports_batches
from crowdqa.aggregation.corpus import MISSING, Corpus
from crowdqa.aggregation.memory import Shape
from crowdqa.aggregation.registry import check_memory
from crowdqa.quality.references import reference_labels
from crowdqa.quality.report import build_report_data

if TYPE_CHECKING:
    from crowdqa.quality.report_model import FitRecord, QualityReport

__all__ = ["ModelStart", "PipelineResult", "ProgressFn", "run_pipeline"]

#: ``progress(stage, iteration, log_likelihood)``; ``iteration`` and ``log_likelihood``
#: are None outside the EM loop. Stages: "fitting", "cross-fitting" (with ``use_experts``),
#: "scoring"; callers add their own "reading" before and "writing" after.
ProgressFn = Callable[[str, int | None, float | None], None]


@dataclass(frozen=True)
class ModelStart:
    """An earlier fit a new batch is aggregated with (:mod:`crowdqa.aggregation.batches`).

    Attributes
    ----------
    state : dict of str to ndarray
        The earlier estimator's fitted state and ``class_names``, the classes it was fitted on
        (what :attr:`PipelineResult.model` holds).
    frozen : bool
        True: predict with the earlier parameters, no EM; False: start EM from them (warm start).
    source : str
        Where it came from (``"job <id>"``, a file name), for the report.
    """

    state: dict[str, NDArray]
    frozen: bool
    source: str


@dataclass(frozen=True)
class PipelineResult:
    """What a job produces.

    Attributes
    ----------
    labels : ndarray of shape (n_tokens,)
        Aggregated class index of each token.
    proba : ndarray of shape (n_tokens, n_classes)
        Posterior of each token's true class.
    worker_confusion : ndarray of shape (n_workers, n_classes, n_classes)
        ``worker_confusion[w, t, o]`` = P(annotator w answers o | true class t).
    report_data : dict
        The quality report as plain JSON data (``crowdqa.quality.report.build_report_data``): what the
        command line writes, without pydantic. Its ``fit`` block holds iterations, converged, seconds,
        log_likelihood history, warnings, and ``stages``: seconds per stage (fitting, cross_fitting,
        scoring); a caller adds its reading and writing seconds to ``report_data["fit"]["stages"]``.
    clamped : ndarray of shape (n_tokens,), bool
        Tokens whose label was fixed to the expert reference during the fit.
    timings : dict
        Seconds spent fitting and reporting.
    model : dict of str to ndarray or None
        The fitted state a later batch can start from (with ``class_names``); None for a method
        that keeps none.
    """

    labels: NDArray[np.int64]
    proba: NDArray[np.float64]
    worker_confusion: NDArray[np.float64]
    report_data: dict[str, Any]
    clamped: NDArray[np.bool_]
    timings: dict[str, float] = field(default_factory=dict)
    model: dict[str, NDArray] | None = None

    @cached_property
    def report(self) -> QualityReport:
        """The report as its typed model, validated from :attr:`report_data` on first use (what the service
        stores and serves); after that, change the model, not :attr:`report_data`."""
        from crowdqa.quality.report_model import QualityReport

        return QualityReport.model_validate(self.report_data)

    @property
    def fit(self) -> FitRecord:
        """The typed report's ``fit`` block (the same object): a caller adds its reading and writing seconds
        to ``fit.stages`` before it saves :attr:`report`."""
        return self.report.fit


def run_pipeline(
    corpus: Corpus,
    *,
    method: str,
    params: dict[str, Any] | None = None,
    use_experts: bool = False,
    reference: str = "union",
    progress: ProgressFn | None = None,
    crossfit_folds: int = 4,
    seed: int = 0,
    blocked: frozenset[str] = frozenset(),
    start: ModelStart | None = None,
    unmatched_expert_documents: int = 0,
) -> PipelineResult:
    """Fit ``method`` on the crowd annotators of ``corpus`` and report against its experts.

    With ``use_experts`` the expert reference labels are clamped (``known``) during the
    fit, so the labels returned on expert documents are the experts' and the experts
    teach the worker models. The aggregate is then scored against the experts by
    cross-fitting: the expert documents are split into ``crossfit_folds`` folds (seeded),
    and each fold is predicted by a fit that was given the other folds' expert labels
    only, so no score is computed on labels the fit was shown.
    Annotators in ``blocked`` (the project's block list) are left out of the fit and still scored; the
    report marks them (``blocked`` of each worker, ``blocked_workers``).
    With ``start`` (a new batch) the aggregator carries an earlier fit: ``start.frozen`` predicts
    with its parameters and fits nothing; otherwise EM starts from them (``warm_start``); the
    annotators are matched by id, a new one starting from the crowd average.
    ``unmatched_expert_documents`` (the expert documents the reader left out because no crowd annotator
    labelled them: :func:`crowdqa.ingest.merge.drop_expert_only`) is reported in ``counts``.
    Raises ValueError for an unknown method or parameter, or a corpus without crowd labels.
    """
    crowd_ids = corpus.workers_with_role("crowd")
    excluded = np.array([corpus.worker_ids[w] in blocked for w in range(corpus.n_workers)], dtype=bool)
    crowd = corpus.select_workers(crowd_ids[~excluded[crowd_ids]])
    if crowd.n_obs == 0:
        raise ValueError(
            f"the corpus has no crowd labels to aggregate (expected at least one crowd upload, found "
            f"{len(crowd_ids)} crowd annotators, {int(excluded[crowd_ids].sum())} of them blocked, with labels on "
            f"{corpus.n_tokens} tokens)"
        )
    aggregator = _aggregator(method, params, start, corpus)
    check_memory(method, Shape.of_corpus(corpus))  # before the fit allocates: one line / 422 instead of a crash
    if start is not None and start.frozen and use_experts:
        raise ValueError("a frozen model is not refitted, so clamped expert labels would teach it nothing: "
                         "start EM from the earlier model instead (not frozen), or leave use_experts off")
    known = None
    clamped = np.zeros(corpus.n_tokens, dtype=bool)
    if use_experts:
        if len(corpus.workers_with_role("expert")) == 0:
            raise ValueError("use_experts needs expert labels, and the data has none: give the experts' labels "
                             "(an upload with role 'expert'; on the command line, --expert PATH)")
        known = reference_labels(corpus, rule=reference)
        clamped = known >= 0

    def callback(iteration: int, log_likelihood: float) -> None:
        if progress is not None:
            progress("fitting", int(iteration), float(log_likelihood))

    if progress is not None:
        progress("fitting", None, None)
    t0 = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        if start is not None and start.frozen:
            labels, proba = aggregator.predict_with_proba(crowd)
            confusion = _carried_confusion(start.state, crowd)
        else:
            aggregator.fit(crowd, known=known, callback=callback)
            labels, proba = aggregator.labels_, aggregator.proba_
            confusion = aggregator.worker_confusion_
    fit_seconds = time.perf_counter() - t0
    frozen = start is not None and start.frozen
    history = [] if frozen else [float(x) for x in getattr(aggregator, "log_likelihood_", [])]
    fit = {
        "iterations": 0 if frozen else int(getattr(aggregator, "n_iter_", 0)),
        # None: a fixed number of EM iterations was asked for (tol=None), or none at all (frozen).
        "converged": None if frozen or fixed_schedule(aggregator) else bool(getattr(aggregator, "converged_", True)),
        "seconds": round(fit_seconds, 6),
        "log_likelihood": history,
        "params": {k: v for k, v in (params or {}).items()},
        # What each worker's "skill" in the report measures (None: the model has no worker score).
        "skill": getattr(aggregator, "skill_description", None),
        "warnings": [str(w.message) for w in caught],
        # The stop at max_iter said in words, for the job's progress and the report's text (not only
        # "converged False"): the labels of an unconverged fit may still change with more iterations.
        "convergence_note": next((f"not converged: {w.message}" for w in caught
                                  if issubclass(w.category, ConvergenceWarning)), None),
        "stages": {"fitting": round(fit_seconds, 6)},
    }
    if start is not None:
        seen = np.isin(np.asarray(crowd.worker_ids, dtype=str), start.state["worker_ids_"])
        active = np.bincount(crowd.worker, minlength=crowd.n_workers) > 0
        fit["start"] = {"from": start.source, "mode": "frozen" if frozen else "warm start",
                        "workers_seen_before": int(np.count_nonzero(seen & active)),
                        "workers_new": int(np.count_nonzero(~seen & active))}
    heldout = None
    if use_experts:
        if progress is not None:
            progress("cross-fitting", None, None)
        t_cf = time.perf_counter()
        def fold_step(iteration: int, log_likelihood: float) -> None:
            if progress is not None:  # a checkpoint per EM iteration of every fold's fit, too
                progress("cross-fitting", None, None)

        heldout, n_folds, n_expert_docs = cross_fit(method, params, crowd, known, corpus, folds=crossfit_folds,
                                                     seed=seed, callback=fold_step, start=start)
        fit["cross_fit"] = {"folds": n_folds, "expert_documents": n_expert_docs,
                            "seconds": round(time.perf_counter() - t_cf, 6), "seed": seed}
        fit["stages"]["cross_fitting"] = fit["cross_fit"]["seconds"]
    if progress is not None:
        progress("scoring", None, None)
    t1 = time.perf_counter()
    labels = np.asarray(labels, dtype=np.int64)
    # A token no crowd worker labelled has no aggregate, only the model's prior (or a clamped expert
    # label): it is not scored, so documents only the experts labelled do not read as missed spans.
    covered = np.bincount(crowd.token, minlength=corpus.n_tokens) > 0
    uncovered = int(np.count_nonzero(~covered))
    if uncovered:
        fit["uncovered_tokens"] = uncovered
    scored = np.where(covered | clamped, labels, MISSING)
    skills = getattr(aggregator, "skills_", None)
    if skills is not None and excluded.any():  # a blocked worker's skill is the model's prior, not a measure
        skills = np.where(excluded, np.nan, np.asarray(skills, dtype=np.float64))
    report = build_report_data(
        corpus, scored, method=method, experts_used_in_fit=bool(use_experts),
        clamped=clamped if use_experts else None,
        heldout=None if heldout is None else np.where(covered, heldout, MISSING), fit=fit, reference=reference,
        skills=skills,
    )
    for entry, blocked in zip(report["workers"], excluded.tolist(), strict=True):
        entry["blocked"] = blocked  # left out of the fit, scored like the others
    report["blocked_workers"] = [corpus.worker_ids[w] for w in np.flatnonzero(excluded)]
    report["counts"]["expert_documents_without_crowd"] = int(unmatched_expert_documents)
    report_seconds = time.perf_counter() - t1
    report["fit"]["stages"]["scoring"] = round(report_seconds, 6)
    return PipelineResult(
        labels=labels,
        proba=np.asarray(proba, dtype=np.float64),
        worker_confusion=np.asarray(confusion, dtype=np.float64),
        report_data=report,
        clamped=clamped,
        timings={"fit": round(fit_seconds, 6), "report": round(report_seconds, 6)},
        model=start.state if frozen else _model_state(aggregator, corpus),
    )


def _aggregator(method: str, params: dict[str, Any] | None, start: ModelStart | None, corpus: Corpus) -> Any:
    """A new aggregator, carrying ``start``'s fit (warm start unless frozen) when given."""
    aggregator = make_aggregator(method, dict(params or {}))
    if start is None:
        return aggregator
    names = tuple(str(c) for c in start.state.get("class_names", np.array([], dtype=str)).tolist())
    if names != tuple(corpus.class_names):
        raise ValueError(f"the earlier model was fitted on the classes {list(names)}, this batch has "
                         f"{list(corpus.class_names)}: a new batch must have the same labels")
    restore_state(aggregator, start.state)
    if not start.frozen:
        aggregator.set_params(warm_start=True)
    return aggregator


def _model_state(aggregator: Any, corpus: Corpus) -> dict[str, NDArray] | None:
    """What a later batch can start from: the fitted state and the classes, or None for a method without one."""
    if not supports_batches(aggregator):
        return None
    return {**fitted_state(aggregator), "class_names": np.asarray(corpus.class_names, dtype=str)}


def _carried_confusion(state: dict[str, NDArray], corpus: Corpus) -> NDArray[np.float64]:
    """The confusion matrices a frozen model gives ``corpus``'s annotators."""
    conf, _ = carry_workers(tuple(state["worker_ids_"].tolist()), state["worker_confusion_"],
                            state["worker_labels_"], corpus.worker_ids)
    return conf


def cross_fit(
    method: str, params: dict[str, Any] | None, crowd: Corpus, known: NDArray, corpus: Corpus, *, folds: int,
    seed: int, callback: Callable[[int, float], None] | None = None, start: ModelStart | None = None,
) -> tuple[NDArray[np.int64], int, int]:
    """Held-out predictions on the expert documents, the number of folds used and of expert documents.

    Expert documents are permuted with ``seed`` and split into ``min(folds, n)`` folds;
    fold ``f`` is predicted by a fit whose ``known`` holds only the other folds'
    labels. Tokens outside the expert documents stay ``MISSING`` (never scored).
    """
    if folds < 1:
        raise ValueError(f"crossfit_folds must be >= 1, found {folds}")
    # The documents with a known token, in order (a bincount: np.unique hashes, many times slower).
    expert_docs = np.flatnonzero(np.bincount(corpus.token_doc[known >= 0], minlength=corpus.n_docs))
    n_folds = int(min(folds, expert_docs.size))
    heldout = np.full(corpus.n_tokens, MISSING, dtype=np.int64)
    for part in np.array_split(np.random.default_rng(seed).permutation(expert_docs), n_folds):
        in_part = np.zeros(corpus.n_docs, dtype=bool)
        in_part[part] = True
        held = in_part[corpus.token_doc]
        model = _aggregator(method, params, start, corpus)
        with warnings.catch_warnings():
            # The main fit already recorded this method's warnings for these settings.
            warnings.simplefilter("ignore")
            model.fit(crowd, known=np.where(held, MISSING, known), callback=callback)
        heldout[held] = np.asarray(model.labels_, dtype=np.int64)[held]
    return heldout, n_folds, int(expert_docs.size)


def fixed_schedule(aggregator: Any) -> bool:
    """True for an EM aggregator told to run exactly ``max_iter`` iterations (``tol=None``)."""
    return hasattr(aggregator, "max_iter") and getattr(aggregator, "tol", 0.0) is None
