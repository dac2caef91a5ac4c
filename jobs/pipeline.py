"""The pipeline one job runs: fit an aggregator on the crowd, build the quality report.

The same function serves ``crowdqa aggregate`` (synchronously) and the queued jobs
(:func:`crowdqa.jobs.tasks.run_job`), so the command line and the service give identical results.
:func:`run_pipeline` is a sequence of named stages (the crowd view, the fit, the cross-fit, the scoring), each
returning a typed value; between two stages and between two EM iterations it calls the caller's ``checkpoint``
(a job's cancel and CPU-budget check), the one place a running pipeline is stopped.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from functools import cached_property
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from crowdqa.aggregation import ConvergenceWarning, make_aggregator
from crowdqa.aggregation.batches import carry_workers, fitted_state, restore_state, supports_batches
from crowdqa.aggregation.confidence import AggregateConfidence, posterior_chain
from crowdqa.aggregation.corpus import MISSING, Corpus
from crowdqa.aggregation.memory import Shape
from crowdqa.aggregation.registry import check_memory
from crowdqa.ingest.vocabulary import check_corpus_vocabularies
from crowdqa.jobs.calibration import Calibrated, HeldoutChain, calibrate
from crowdqa.quality.references import reference_labels
from crowdqa.quality.report import build_report_data
from crowdqa.quality.worker_quality import VerdictRules

if TYPE_CHECKING:
    from crowdqa.quality.report_model import FitRecord, QualityReport

__all__ = ["ModelStart", "PipelineResult", "ProgressFn", "Checkpoint", "FitRun", "CrossFitRun", "Fitted", "PriorFit",
           "run_pipeline", "fit_model", "cross_fit", "cross_fit_stage", "fixed_schedule"]

#: ``progress(stage, iteration, log_likelihood)``; ``iteration`` and ``log_likelihood``
#: are None outside the EM loop. Stages: "fitting", "cross-fitting" (with ``use_experts``),
#: "scoring"; callers add their own "reading" before and "writing" after.
ProgressFn = Callable[[str, int | None, float | None], None]

#: ``checkpoint()``: called between stages and between EM iterations; raises to stop the run (a job's
#: :class:`~crowdqa.jobs.errors.JobCancelled` or :class:`~crowdqa.jobs.errors.BudgetExceededError`).
Checkpoint = Callable[[], None]


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
    confidence : AggregateConfidence
        Calibrated scores: ``token`` (n_tokens,), ``span`` (n_spans,) in ``decode_spans(labels)`` order,
        ``document`` (n_docs,), the tempered marginals ``proba`` (n_tokens, n_classes); the report's
        ``calibration`` block says which temperature and how calibrated against the experts.
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
    #: The calibrated scores of every token, span and document (:mod:`crowdqa.jobs.calibration`).
    confidence: AggregateConfidence | None = None

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


@dataclass(frozen=True)
class CrossFitRun:
    """How the aggregate was scored with ``use_experts``: ``folds`` fits over ``expert_documents`` documents."""

    folds: int
    expert_documents: int
    seconds: float
    seed: int


@dataclass(frozen=True)
class FitRun:
    """What the report's ``fit`` block says about one fit (:class:`crowdqa.quality.report_model.FitRecord`).

    Made once by the fitting stage; a later stage adds to it with :func:`dataclasses.replace`, never in place.
    """

    iterations: int
    #: None: a fixed number of EM iterations was asked for (tol=None), or none at all (frozen).
    converged: bool | None
    seconds: float
    log_likelihood: list[float]
    params: dict[str, Any]
    #: What each worker's "skill" in the report measures (None: the model has no worker score).
    skill: str | None
    warnings: list[str]
    #: The stop at max_iter said in words, for the job's progress and the report's text (not only
    #: "converged False"): the labels of an unconverged fit may still change with more iterations.
    convergence_note: str | None
    #: Where a new batch's fit started (:class:`ModelStart`): from, mode, workers seen before and new.
    start: dict[str, Any] | None = None
    cross_fit: CrossFitRun | None = None
    #: Tokens no crowd worker labelled (not scored); None when there are none.
    uncovered_tokens: int | None = None

    def as_data(self) -> dict[str, Any]:
        """The record as the plain dict :func:`crowdqa.quality.report.build_report_data` takes; ``stages`` holds
        the seconds of fitting (and cross-fitting)."""
        stages = {"fitting": self.seconds}
        data: dict[str, Any] = {
            "iterations": self.iterations, "converged": self.converged, "seconds": self.seconds,
            "log_likelihood": list(self.log_likelihood), "params": dict(self.params), "skill": self.skill,
            "warnings": list(self.warnings), "convergence_note": self.convergence_note, "stages": stages}
        if self.start is not None:
            data["start"] = dict(self.start)
        if self.cross_fit is not None:
            data["cross_fit"] = asdict(self.cross_fit)
            stages["cross_fitting"] = self.cross_fit.seconds
        if self.uncovered_tokens is not None:
            data["uncovered_tokens"] = self.uncovered_tokens
        return data


@dataclass(frozen=True)
class Fitted:
    """The fitting stage's outcome: the aggregate, the worker models, the estimator and its record."""

    labels: NDArray[np.int64]
    proba: NDArray[np.float64]
    worker_confusion: NDArray[np.float64]
    aggregator: Any
    record: FitRun


@dataclass(frozen=True)
class PriorFit:
    """A fit of the method on this corpus's crowd made before the pipeline ran, for it to reuse: what the
    comparison of ``--method auto`` made for the method it chose (:func:`crowdqa.jobs.compare.choose_method`),
    with default parameters, on the same crowd, expert labels and cross-fitting folds."""

    #: The fit on every expert label (or the crowd alone); None: not made yet (a clamped candidate of a comparison
    #: is scored by its folds alone), the pipeline makes it.
    fitted: Fitted | None
    #: With ``use_experts``: the held-out predictions of the cross-fitting and its record (else None).
    heldout: NDArray[np.int64] | None = None
    cross_fit: CrossFitRun | None = None
    #: With ``use_experts``: the cross-fitting folds' posterior chains of their held-out documents (calibration).
    pieces: tuple[HeldoutChain, ...] = ()
    #: The parameters the fits were made with (the check that the pipeline would make the same fits).
    params: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class _Steps:
    """The caller's hooks: ``progress`` at each stage and EM iteration, ``checkpoint`` before each of them."""

    progress: ProgressFn | None
    checkpoint: Checkpoint | None

    def stop_check(self) -> None:
        if self.checkpoint is not None:
            self.checkpoint()

    def enter(self, stage: str) -> None:
        """Between stages: the stop check, then the new stage's progress."""
        self.stop_check()
        if self.progress is not None:
            self.progress(stage, None, None)

    def iteration_hook(self, stage: str, *, with_values: bool = True) -> Callable[[int, float], None]:
        """The aggregator's per-iteration ``callback``: the stop check between EM iterations, then the progress
        (with the iteration and objective, or, for cross-fitting's many fits, the stage alone)."""

        def on_iteration(iteration: int, log_likelihood: float) -> None:
            self.stop_check()  # between two EM iterations: where a deleted job or a spent CPU budget stops
            if self.progress is not None:
                if with_values:
                    self.progress(stage, int(iteration), float(log_likelihood))
                else:
                    self.progress(stage, None, None)

        return on_iteration


def run_pipeline(
    corpus: Corpus,
    *,
    method: str,
    params: dict[str, Any] | None = None,
    use_experts: bool = False,
    reference: str = "union",
    progress: ProgressFn | None = None,
    checkpoint: Checkpoint | None = None,
    crossfit_folds: int = 4,
    seed: int = 0,
    blocked: frozenset[str] = frozenset(),
    start: ModelStart | None = None,
    unmatched_expert_documents: int = 0,
    prior: PriorFit | None = None,
    verdict_rules: VerdictRules | None = None,
) -> PipelineResult:
    """Fit ``method`` on the crowd annotators of ``corpus`` and report against its experts.

    With ``use_experts`` the expert reference labels are clamped (the fit's ``true_labels``) during the
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
    ``checkpoint()`` is called between stages and between EM iterations; what it raises stops the run.
    ``prior``: the same fit (and cross-fit) made already (:class:`PriorFit`), used instead of fitting again.
    ``verdict_rules``: the rules of the workers' verdicts (:mod:`crowdqa.quality.worker_quality`; default its own).
    Raises ValueError for an unknown method or parameter, or a corpus without crowd labels.
    """
    steps = _Steps(progress, checkpoint)
    crowd, excluded = crowd_view(corpus, blocked)
    aggregator = _aggregator(method, params, start, corpus)
    check_memory(method, Shape.of_corpus(corpus))  # before the fit allocates: one line / 422 instead of a crash
    known = _known_labels(corpus, use_experts=use_experts, reference=reference, start=start)
    clamped = np.zeros(corpus.n_tokens, dtype=bool) if known is None else known >= 0
    _check_prior(prior, params=params, start=start, use_experts=use_experts, folds=crossfit_folds, seed=seed)
    steps.enter("fitting")
    fitted = prior.fitted if prior is not None and prior.fitted is not None else fit_model(
        aggregator, crowd, known=known, params=params, start=start, callback=steps.iteration_hook("fitting"))
    heldout = None
    pieces: list[HeldoutChain] = []
    if use_experts:
        steps.enter("cross-fitting")
        if prior is not None:
            heldout, crossed, pieces = prior.heldout, prior.cross_fit, list(prior.pieces)
        else:
            heldout, crossed = cross_fit_stage(method, params, crowd, known, corpus, folds=crossfit_folds, seed=seed,
                                               callback=steps.iteration_hook("cross-fitting", with_values=False),
                                               start=start, pieces=pieces)
        fitted = replace(fitted, record=replace(fitted.record, cross_fit=crossed))
    steps.enter("scoring")
    t1 = time.perf_counter()
    report = _score(corpus, crowd, fitted, method=method, use_experts=use_experts, reference=reference,
                    clamped=clamped, heldout=heldout, excluded=excluded, unmatched=unmatched_expert_documents,
                    verdict_rules=verdict_rules)
    calibrated = _calibrate(corpus, crowd, fitted, method=method, use_experts=use_experts, reference=reference,
                            pieces=pieces, folds=crossfit_folds, seed=seed)
    report["calibration"] = calibrated.report
    report_seconds = time.perf_counter() - t1
    report["fit"]["stages"]["scoring"] = round(report_seconds, 6)  # the report's own dict, made by _score
    frozen = start is not None and start.frozen
    return PipelineResult(
        labels=fitted.labels,
        proba=fitted.proba,
        worker_confusion=fitted.worker_confusion,
        report_data=report,
        clamped=clamped,
        timings={"fit": fitted.record.seconds, "report": round(report_seconds, 6)},
        model=start.state if frozen else _model_state(fitted.aggregator, corpus),
        confidence=calibrated.confidence,
    )


def _calibrate(corpus: Corpus, crowd: Corpus, fitted: Fitted, *, method: str, use_experts: bool, reference: str,
               pieces: list[HeldoutChain], folds: int, seed: int) -> Calibrated:
    """The calibration (:mod:`crowdqa.jobs.calibration`): with experts, graded on the documents no fit saw
    (without ``use_experts`` the main fit's expert documents; with it the cross-fitting's held-out chains; a reused
    prior fit without them is calibrated by the default alone)."""
    has_experts = len(corpus.workers_with_role("expert")) > 0
    ref = reference_labels(corpus, rule=reference) if has_experts and (pieces or not use_experts) else None
    chain = posterior_chain(fitted.aggregator, crowd, proba=fitted.proba)
    return calibrate(crowd, chain, fitted.labels, method=method, reference=ref,
                     pieces=pieces or None, folds=folds, seed=seed)


def crowd_view(corpus: Corpus, blocked: frozenset[str]) -> tuple[Corpus, NDArray[np.bool_]]:
    """The corpus's crowd annotators without the ``blocked`` ones, and which annotators are blocked (a mask of
    shape (n_workers,)). ValueError when no crowd label is left to aggregate."""
    crowd_ids = corpus.workers_with_role("crowd")
    excluded = np.array([corpus.worker_ids[w] in blocked for w in range(corpus.n_workers)], dtype=bool)
    crowd = corpus.select_workers(crowd_ids[~excluded[crowd_ids]])
    if crowd.n_obs == 0:
        raise ValueError(
            f"the corpus has no crowd labels to aggregate (expected at least one crowd upload, found "
            f"{len(crowd_ids)} crowd annotators, {int(excluded[crowd_ids].sum())} of them blocked, with labels on "
            f"{corpus.n_tokens} tokens)"
        )
    return crowd, excluded


def _known_labels(corpus: Corpus, *, use_experts: bool, reference: str, start: ModelStart | None
                  ) -> NDArray[np.int64] | None:
    """The expert reference labels the fit clamps (``use_experts``), or None."""
    if start is not None and start.frozen and use_experts:
        raise ValueError("a frozen model is not refitted, so clamped expert labels would teach it nothing: "
                         "start EM from the earlier model instead (not frozen), or leave use_experts off")
    if not use_experts:
        return None
    if len(corpus.workers_with_role("expert")) == 0:
        raise ValueError("use_experts needs expert labels, and the data has none: give the experts' labels "
                         "(an upload with role 'expert'; on the command line, --expert PATH)")
    return reference_labels(corpus, rule=reference)


def fit_model(aggregator: Any, crowd: Corpus, *, known: NDArray | None, params: dict[str, Any] | None = None,
              start: ModelStart | None = None, callback: Callable[[int, float], None] | None = None) -> Fitted:
    """The fitting stage: fit ``aggregator`` on ``crowd`` (or, with a frozen ``start``, predict with the earlier
    parameters) and record how it went, with the warnings it gave."""
    frozen = start is not None and start.frozen
    t0 = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        if frozen:
            labels, proba = aggregator.predict_with_proba(crowd)
            confusion = _carried_confusion(start.state, crowd)
        else:
            aggregator.fit(crowd, true_labels=known, callback=callback)
            labels, proba = aggregator.labels_, aggregator.proba_
            confusion = aggregator.worker_confusion_
    seconds = round(time.perf_counter() - t0, 6)
    record = FitRun(
        iterations=0 if frozen else int(getattr(aggregator, "n_iter_", 0)),
        converged=None if frozen or fixed_schedule(aggregator) else bool(getattr(aggregator, "converged_", True)),
        seconds=seconds,
        log_likelihood=[] if frozen else [float(x) for x in getattr(aggregator, "log_likelihood_", [])],
        params=dict(params or {}),
        skill=getattr(aggregator, "skill_description", None),
        warnings=[str(w.message) for w in caught],
        convergence_note=next((f"not converged: {w.message}" for w in caught
                               if issubclass(w.category, ConvergenceWarning)), None),
        start=None if start is None else _start_record(start, crowd),
    )
    return Fitted(labels=np.asarray(labels, dtype=np.int64), proba=np.asarray(proba, dtype=np.float64),
                  worker_confusion=np.asarray(confusion, dtype=np.float64), aggregator=aggregator, record=record)


def _start_record(start: ModelStart, crowd: Corpus) -> dict[str, Any]:
    """The report's ``fit.start``: where the batch's fit started and how many of its annotators the earlier
    model knew."""
    seen = np.isin(np.asarray(crowd.worker_ids, dtype=str), start.state["worker_ids_"])
    active = np.bincount(crowd.worker, minlength=crowd.n_workers) > 0
    return {"from": start.source, "mode": "frozen" if start.frozen else "warm start",
            "workers_seen_before": int(np.count_nonzero(seen & active)),
            "workers_new": int(np.count_nonzero(~seen & active))}


def _check_prior(prior: PriorFit | None, *, params: dict[str, Any] | None, start: ModelStart | None,
                 use_experts: bool, folds: int, seed: int) -> None:
    """ValueError for a prior fit that is not the fit this run would make (other parameters, a batch start, other
    cross-fitting folds)."""
    if prior is None:
        return
    crossed = prior.cross_fit
    if (prior.params != dict(params or {}) or start is not None
            or use_experts != (crossed is not None)  # clamped and cross-fitted exactly when the run uses experts
            or (crossed is not None and (crossed.seed, min(folds, crossed.expert_documents))
                != (seed, crossed.folds))):
        raise ValueError("a prior fit is reused only by a run with its parameters, no batch start, the same "
                         "use of the experts and its cross-fitting folds")


def cross_fit_stage(method: str, params: dict[str, Any] | None, crowd: Corpus, known: NDArray, corpus: Corpus, *,
                     folds: int, seed: int, callback: Callable[[int, float], None],
                     start: ModelStart | None, pieces: list[HeldoutChain] | None = None,
                     records: list[dict[str, Any]] | None = None) -> tuple[NDArray[np.int64], CrossFitRun]:
    """The cross-fitting stage: held-out predictions on the expert documents (:func:`cross_fit`) and its record."""
    t0 = time.perf_counter()
    heldout, n_folds, n_expert_docs = cross_fit(method, params, crowd, known, corpus, folds=folds, seed=seed,
                                                callback=callback, start=start, pieces=pieces, records=records)
    return heldout, CrossFitRun(folds=n_folds, expert_documents=n_expert_docs,
                                seconds=round(time.perf_counter() - t0, 6), seed=seed)


def _score(corpus: Corpus, crowd: Corpus, fitted: Fitted, *, method: str, use_experts: bool, reference: str,
           clamped: NDArray[np.bool_], heldout: NDArray[np.int64] | None, excluded: NDArray[np.bool_],
           unmatched: int, verdict_rules: VerdictRules | None = None) -> dict[str, Any]:
    """The scoring stage: the quality report as plain JSON data, with the blocked annotators marked and the
    expert documents the reader left out counted (set while it is built, not patched in afterwards)."""
    # A token no crowd worker labelled has no aggregate, only the model's prior (or a clamped expert
    # label): it is not scored, so documents only the experts labelled do not read as missed spans.
    covered = np.bincount(crowd.token, minlength=corpus.n_tokens) > 0
    uncovered = int(np.count_nonzero(~covered))
    # Labels only the experts or only the crowd use are said in the report (disjoint ones were refused when the job
    # was asked for).
    record = replace(fitted.record, uncovered_tokens=uncovered or None,
                     warnings=[*fitted.record.warnings, *check_corpus_vocabularies(corpus)])
    scored = np.where(covered | clamped, fitted.labels, MISSING)
    skills = getattr(fitted.aggregator, "skills_", None)
    if skills is not None and excluded.any():  # a blocked worker's skill is the model's prior, not a measure
        skills = np.where(excluded, np.nan, np.asarray(skills, dtype=np.float64))
    report = build_report_data(
        corpus, scored, method=method, experts_used_in_fit=bool(use_experts),
        clamped=clamped if use_experts else None,
        heldout=None if heldout is None else np.where(covered, heldout, MISSING), fit=record.as_data(),
        reference=reference, skills=skills, model_confusion=_model_confusion(crowd, fitted, excluded),
        verdict_rules=verdict_rules,
    )
    # Blocked annotators are left out of the fit and scored like the others: each entry says so.
    workers = [{**entry, "blocked": blocked} for entry, blocked in zip(report["workers"], excluded.tolist(),
                                                                          strict=True)]
    return {**report, "workers": workers,
            "blocked_workers": [corpus.worker_ids[w] for w in np.flatnonzero(excluded)],
            "counts": {**report["counts"], "expert_documents_without_crowd": int(unmatched)}}


def _model_confusion(crowd: Corpus, fitted: Fitted, excluded: NDArray[np.bool_]) -> NDArray[np.float64] | None:
    """The fit's confusion matrices by annotator of the full corpus (the crowd corpus keeps its vocabulary), NaN
    for annotators the fit did not see (experts, blocked workers): their matrices are the model's prior."""
    confusion = fitted.worker_confusion
    if confusion.ndim != 3 or confusion.shape[0] != crowd.n_workers:
        return None
    seen = (np.bincount(crowd.worker, minlength=crowd.n_workers) > 0) & ~excluded
    return np.where(seen[:, None, None], confusion, np.nan)


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
    pieces: list[HeldoutChain] | None = None, records: list[dict[str, Any]] | None = None,
) -> tuple[NDArray[np.int64], int, int]:
    """Held-out predictions on the expert documents, the number of folds used and of expert documents.

    Expert documents are permuted with ``seed`` and split into ``min(folds, n)`` folds;
    fold ``f`` is predicted by a fit whose ``known`` holds only the other folds'
    labels. Tokens outside the expert documents stay ``MISSING`` (never scored).
    ``pieces``, when given, receives each fold's posterior chain of its held-out documents (for calibration);
    ``records`` each fold's ``seconds``, ``iterations``, ``converged`` and ``warnings`` (caught, not shown).
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
        t0 = time.perf_counter()
        with warnings.catch_warnings(record=True) as caught:
            # Not shown: the main fit records this method's warnings for these settings (a comparison, which
            # makes no main fit of a clamped candidate, keeps the folds' in ``records``).
            warnings.simplefilter("always")
            model.fit(crowd, true_labels=np.where(held, MISSING, known), callback=callback)
        if records is not None:
            records.append({"seconds": time.perf_counter() - t0, "iterations": int(getattr(model, "n_iter_", 0)),
                            "converged": None if fixed_schedule(model) else bool(getattr(model, "converged_", True)),
                            "warnings": [str(w.message) for w in caught]})
        heldout[held] = np.asarray(model.labels_, dtype=np.int64)[held]
        if pieces is not None:
            pieces.append(HeldoutChain(held, posterior_chain(model, crowd).select(held),
                                       np.asarray(model.labels_, dtype=np.int64)))
    return heldout, n_folds, int(expert_docs.size)


def fixed_schedule(aggregator: Any) -> bool:
    """True for an EM aggregator told to run exactly ``max_iter`` iterations (``tol=None``)."""
    return hasattr(aggregator, "max_iter") and getattr(aggregator, "tol", 0.0) is None
