"""Compare aggregation methods on a corpus's expert subset: the use case behind ``crowdqa compare``,
``--method auto`` and the ``"compare"`` job.

The corpus is read once by the caller; every method is fitted on the same crowd view of it, one after another in
this process, and scored by :func:`crowdqa.quality.compare.compare_aggregates` (the rule is documented there).
Without ``use_experts`` the fits see the crowd only and are scored on all expert documents; with it each method is
scored on held-out predictions by the same cross-fitting as the report (:func:`crowdqa.jobs.pipeline.cross_fit`).
With ``expert_variants`` (``compare --expert-variants``, and ``--method auto`` unless told whether to use the
experts) both are candidates: every method on the crowd alone and,
where clamping can change its labels on the items the experts did not label, with the experts clamped
(``METHOD+experts``; the registry entry's ``clamped_candidate``). A plain vote is the exception: clamping only
overwrites the clamped items, so its clamped fit predicts every other item as its crowd-only fit does.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from crowdqa.aggregation import make_aggregator
from crowdqa.aggregation.corpus import MISSING, Corpus
from crowdqa.aggregation.memory import Shape
from crowdqa.aggregation.registry import METHODS, check_memory, default_method, methods_by_cost
from crowdqa.jobs.params import check_data_kind, validate_params
from crowdqa.quality.compare import Scoreboard, format_comparison, metric_for
from crowdqa.quality.compare_plan import ACCURACY_KINDS
from crowdqa.quality.method_choice import candidate_name
from crowdqa.quality.references import reference_labels
from crowdqa.quality.report_model import MethodsComparison

if TYPE_CHECKING:
    from crowdqa.jobs.pipeline import PriorFit

__all__ = ["AutoChoice", "applicable_methods", "parse_methods", "run_comparison",
           "auto_method", "choose_method", "check_methods", "job_comparison", "MethodsComparison",
           "format_comparison"]

#: The kinds of labels in words.
KIND_NAMES: dict[str, str] = {"typed-bio": "BIO labels with several entity types", "spans": "span labels of one type",
                              "categorical": "categorical answers", "tags": "tag labels (a tag per token)"}

#: ``progress(method, index, total)`` before each method's fit (index from 0), and ``(None, total, total)`` when
#: the scoring starts.
CompareProgress = Callable[[str | None, int, int], None]


def _applies(method: str, corpus: Corpus, *, use_experts: bool) -> bool:
    """Whether ``method`` applies to ``corpus`` by its registry rules (classes, sequences, experts)."""
    categorical = not corpus.has_outside and bool((corpus.doc_lengths == 1).all())
    try:
        check_data_kind(method, n_classes=corpus.n_classes, categorical=categorical, use_experts=use_experts)
    except ValueError:
        return False
    return True


def applicable_methods(corpus: Corpus, *, use_experts: bool = False) -> list[str]:
    """Every method that applies to ``corpus`` (``--methods all``), in cost order, by the registry's data-kind rules
    (:func:`crowdqa.aggregation.registry.check_data_kind`): its number of classes in the method's range, sequence
    methods not on categorical answers, a method that learns from the experts only with ``use_experts``."""
    return [m for m in methods_by_cost() if _applies(m, corpus, use_experts=use_experts)]


def parse_methods(text: str | list[str] | None) -> list[str] | None:
    """``"ID,ID"`` (or a list) as method ids, checked; None for ``"all"`` or nothing (every applicable method)."""
    if text is None:
        return None
    items = [m.strip() for m in (text.split(",") if isinstance(text, str) else text) if m.strip()]
    if items == ["all"] or not items:
        return None
    unknown = [m for m in items if m not in METHODS]
    if unknown:
        raise ValueError(f"methods must be 'all' or ids from {', '.join(METHODS)}; found unknown {unknown[0]!r}")
    if len(set(items)) != len(items):
        raise ValueError(f"methods names {sorted({m for m in items if items.count(m) > 1})[0]!r} twice")
    return items


def check_methods(methods: list[str] | None, params_for: dict[str, dict] | None, *, use_experts: bool
                  ) -> dict[str, dict]:
    """Check the methods and their parameters before any data is read; return the parameters by method."""
    params_for = dict(params_for or {})
    for method in params_for:
        if method not in METHODS:
            raise ValueError(f"params for unknown method {method!r} (methods: {', '.join(METHODS)})")
        if methods is not None and method not in methods:
            raise ValueError(f"params for {method}, which is not among the compared methods {methods}")
    for method in methods or []:
        check_data_kind(method, use_experts=use_experts)
    return {m: validate_params(m, p) for m, p in params_for.items()}


def _fit(method: str, params: dict, crowd: Corpus, corpus: Corpus, known, *, use_experts: bool,
         seed: int, checkpoint: Callable[[], None] | None) -> tuple[np.ndarray, dict, PriorFit]:
    """One method's labels to score (held-out predictions with ``use_experts``), its fit record, and the fit for
    the pipeline to reuse; ``checkpoint`` between EM iterations.

    On the crowd alone the method is fitted once. With ``use_experts`` it is fitted k times, once per
    cross-fitting fold: the folds give the scored predictions and the record (``seconds`` of the longest fold,
    ``cross_fit_seconds`` of all, the most ``iterations``, ``converged`` only if every fold did, every fold's
    ``warnings``). The fit on every expert label (the fit ``aggregate --use-experts`` makes) scores nothing here,
    so it is not made: the pipeline makes it for the candidate auto chooses, and reuses the folds.
    """
    from crowdqa.jobs.pipeline import PriorFit, cross_fit_stage, fit_model

    def on_iteration(iteration: int, value: float) -> None:
        if checkpoint is not None:
            checkpoint()  # between two EM iterations: where a deleted job or a spent CPU budget stops

    if not use_experts:
        run = fit_model(make_aggregator(method, params), crowd, known=known, params=params, callback=on_iteration)
        record = {"seconds": run.record.seconds, "iterations": run.record.iterations,
                  "converged": run.record.converged, "warnings": sorted(set(run.record.warnings))}
        return run.labels, record, PriorFit(fitted=run, params=dict(params))
    pieces: list = []
    folds: list[dict[str, Any]] = []
    heldout, crossed = cross_fit_stage(method, params, crowd, known, corpus, folds=4, seed=seed,
                                       callback=on_iteration, start=None, pieces=pieces, records=folds)
    converged = [f["converged"] for f in folds]
    record = {"seconds": round(max(f["seconds"] for f in folds), 6), "iterations": max(f["iterations"] for f in folds),
              "converged": None if None in converged else all(converged),
              "warnings": sorted({w for f in folds for w in f["warnings"]}), "cross_fit_seconds": crossed.seconds}
    return heldout, record, PriorFit(fitted=None, heldout=heldout, cross_fit=crossed, pieces=tuple(pieces),
                                     params=dict(params))


def candidates(methods: list[str], *, use_experts: bool, expert_variants: bool) -> list[tuple[str, bool]]:
    """The ``(method, use_experts)`` fits a comparison makes: each method as ``use_experts`` says, and with
    ``expert_variants`` each method also with the experts clamped where its registry entry says clamping can
    change its labels on the other items (``clamped_candidate``); a method that learns from the experts only
    (``experts``) is clamped only."""
    if use_experts or not expert_variants:
        return [(m, bool(use_experts)) for m in methods]
    out = [(m, False) for m in methods if not METHODS[m].experts]
    out += [(m, True) for m in methods if METHODS[m].clamped_candidate]
    return out


def run_comparison(
    corpus: Corpus, *, methods: list[str] | None = None, params_for: dict[str, dict] | None = None,
    use_experts: bool = False, expert_variants: bool = False, reference: str = "union",
    progress: CompareProgress | None = None,
    n_boot: int = 1000, seed: int = 0, blocked: frozenset[str] = frozenset(),
    checkpoint: Callable[[], None] | None = None, keep_fits: dict[str, PriorFit] | None = None,
) -> dict[str, Any]:
    """Fit every method on the crowd of ``corpus`` and compare their aggregates on the expert documents.

    Parameters
    ----------
    corpus : Corpus
        Crowd and expert labels, read once.
    methods : list of str, optional
        Method ids; None: :func:`applicable_methods`.
    params_for : dict, optional
        Parameters of some methods by id (``{method: {"max_iter": 50}}``); the others run with their defaults.
    use_experts : bool
        Clamp the expert labels in every fit and score held-out predictions by cross-fitting.
    expert_variants : bool
        Without ``use_experts``: each method on the crowd alone *and* with the experts clamped (:func:`candidates`).
    reference : str
        The expert reference rule (union, majority) or an expert's id.
    progress : callable, optional
        Called before each candidate's fit (its name, ``METHOD`` or ``METHOD+experts``) and before the scoring.
    n_boot, seed : int
        The paired bootstrap's resamples and seed (and the cross-fitting's seed).
    blocked : frozenset of str
        Annotators left out of every fit.
    checkpoint : callable, optional
        Called before each method's fit and between its EM iterations; what it raises stops the comparison (a
        job's cancel or CPU budget).
    keep_fits : dict, optional
        Filled with fits to reuse (:class:`~crowdqa.jobs.pipeline.PriorFit` by candidate name): the crowd-only
        fit the rule recommends so far (at most two alive at once: it and the one being made), and every clamped
        candidate's folds (held-out labels and chains of the expert documents; the pipeline makes its full fit).

    Returns
    -------
    dict
        :meth:`crowdqa.quality.compare.Comparison.as_dict` with, per method, its fit's ``seconds``,
        ``iterations``, ``converged``, ``warnings`` and ``params``, the metric's value under its own name
        (``f1`` / ``accuracy``) with ``*_low``, ``*_high``; plus ``use_experts``, ``expert_variants``,
        ``reference`` and ``seconds``.

    Raises
    ------
    ValueError
        No expert labels, no crowd labels, a method that does not apply, or a bad parameter.
    """
    t_all = time.perf_counter()
    params = check_methods(methods, params_for, use_experts=use_experts)
    variants = expert_variants and not use_experts
    fitted = _candidates_of(corpus, methods, use_experts=use_experts, variants=variants)
    ref, crowd = _reference_and_crowd(corpus, reference, blocked)
    covered = np.bincount(crowd.token, minlength=corpus.n_tokens) > 0
    board, fits = Scoreboard(corpus, ref), {}
    for i, (method, clamped) in enumerate(fitted):
        name = candidate_name(method, clamped)
        if checkpoint is not None:
            checkpoint()  # between two methods' fits
        if progress is not None:
            progress(name, i, len(fitted))
        lab, fits[name], prior = _fit(method, params.get(method, {}), crowd, corpus, ref if clamped else None,
                                      use_experts=clamped, seed=seed, checkpoint=checkpoint)
        fits[name]["params"] = params.get(method, {})
        board.add(method, np.where(covered, lab, MISSING), use_experts=clamped)
        if keep_fits is not None:
            _keep_leader(keep_fits, name, prior, board, n_boot=n_boot, seed=seed)
        del lab, prior  # a fit left out is freed before the next method's fit is made
    if checkpoint is not None:
        checkpoint()
    if progress is not None:
        progress(None, len(fitted), len(fitted))
    result = board.comparison(n_boot=n_boot, seed=seed).as_dict()
    result.update(use_experts=bool(use_experts), expert_variants=bool(variants), reference=reference,
                  score=_add_fits(result, fits), seconds=round(time.perf_counter() - t_all, 6),
                  fit_seconds=round(sum(f.get("cross_fit_seconds", f["seconds"]) for f in fits.values()), 6))
    return result


def _candidates_of(corpus: Corpus, methods: list[str] | None, *, use_experts: bool, variants: bool
                   ) -> list[tuple[str, bool]]:
    """The checked candidates of a comparison: ``methods`` (None: every method that applies) as :func:`candidates`
    makes them."""
    chosen = (applicable_methods(corpus, use_experts=use_experts or variants) if methods is None
              else list(methods))
    _check_chosen(chosen, corpus, use_experts=use_experts or variants)
    return candidates(chosen, use_experts=use_experts, expert_variants=variants)


def _reference_and_crowd(corpus: Corpus, reference: str, blocked: frozenset[str]) -> tuple[np.ndarray, Corpus]:
    """The expert reference and the crowd view without the ``blocked`` annotators; ValueError without either."""
    ref = reference_labels(corpus, rule=reference) if corpus.workers_with_role("expert").size else None
    if ref is None or not np.any(ref != MISSING):
        raise ValueError("compare scores every method against the experts, and the data has no expert labels: "
                         "give them (an upload with role 'expert'; on the command line, --expert PATH)")
    crowd_ids = corpus.workers_with_role("crowd")
    keep = np.array([corpus.worker_ids[w] not in blocked for w in crowd_ids.tolist()], dtype=bool)
    crowd = corpus.select_workers(crowd_ids[keep])
    if crowd.n_obs == 0:
        raise ValueError("the corpus has no crowd labels to aggregate")
    return ref, crowd


def _keep_leader(kept: dict[str, PriorFit], name: str, prior: PriorFit, board: Scoreboard, *, n_boot: int,
                 seed: int) -> None:
    """Keep in ``kept`` the fit of the method the rule recommends among the methods fitted so far (the comparison
    of them, same resamples and ties), and no other: one fit is held while the next is made, not one per method.

    The leader of the methods so far need not be the final recommendation: a later best can make a simpler,
    dropped method not significantly worse than it. Then nothing is kept and the pipeline fits that method again.
    A clamped candidate's folds (``prior.fitted`` None: held-out labels and chains of the expert documents only)
    are always kept.
    """
    if prior.fitted is None:
        kept[name] = prior
        return
    try:
        comparison = board.comparison(n_boot=n_boot, seed=seed)
        leader = candidate_name(comparison.recommended, comparison.recommended_use_experts)
    except ValueError:  # no method so far has a score (no reference positive among their documents)
        leader = None
    if leader != name and leader in kept:
        return
    for dropped in [n for n, fit in kept.items() if fit.fitted is not None]:
        del kept[dropped]  # clamped candidates' folds stay (they hold expert documents only)
    if leader == name:
        kept[name] = prior


def _check_chosen(chosen: list[str], corpus: Corpus, *, use_experts: bool) -> None:
    """The registry's rules for each chosen method, in its words (ValueError naming the rule), and the memory
    limit."""
    categorical = not corpus.has_outside and bool((corpus.doc_lengths == 1).all())
    shape = Shape.of_corpus(corpus)
    for method in chosen:
        check_data_kind(method, n_classes=corpus.n_classes, categorical=categorical, use_experts=use_experts)
        check_memory(method, shape, report=False)


def _add_fits(result: dict[str, Any], fits: dict[str, dict]) -> str:
    """Give each method of the comparison its score under its own name (``f1`` / ``accuracy``, the other None)
    and its fit record; return the score's name."""
    name = "accuracy" if result["kind"] in ACCURACY_KINDS else "f1"
    other = "f1" if name == "accuracy" else "accuracy"
    for entry in result["methods"]:
        entry[name], entry[f"{name}_low"], entry[f"{name}_high"] = entry["value"], entry["low"], entry["high"]
        entry[other] = entry[f"{other}_low"] = entry[f"{other}_high"] = None
        entry.update(fits[candidate_name(entry["method"], entry["use_experts"])])
    return name


def job_comparison(*, session: Any, settings: Any, job: Any) -> dict[str, Any]:
    """The comparison of a finished ``compare`` job (its JSON file) or ``auto`` job (inside its report).

    Raises JobNotFinishedError for a job that has not finished and NoComparisonError for a job without one (409).
    """
    import json

    from crowdqa.jobs.errors import NoComparisonError
    from crowdqa.jobs.finished import check_finished, finished_report
    from crowdqa.store.artifacts import ArtifactStore

    check_finished(job)
    if str(job.method) == "compare":
        return json.loads(ArtifactStore(settings.data_dir).path(job.artifacts["comparison"]).read_bytes())
    comparison = finished_report(session=session, job=job).get("comparison") if str(job.method) == "auto" else None
    if comparison is None:
        raise NoComparisonError(f"job {job.id} ran method {job.method}"
                                + (" without expert labels (the default method, no comparison)"
                                   if str(job.method) == "auto" else "")
                                + ": only a compare job or an auto job with experts has a comparison")
    return comparison


@dataclass(frozen=True)
class AutoChoice:
    """The method ``--method auto`` fits, the comparison it was chosen by (None without expert labels) and why;
    ``fit``: the comparison's fit of that method, for :func:`crowdqa.jobs.pipeline.run_pipeline` to reuse;
    ``use_experts``: whether that fit clamps the experts (the pipeline's ``use_experts``)."""

    method: str
    comparison: dict[str, Any] | None
    why: str
    fit: PriorFit | None = None
    use_experts: bool = False


def choose_method(corpus: Corpus, *, use_experts: bool | None = None, **kwargs: Any) -> AutoChoice:
    """The method ``--method auto`` fits, with the comparison's fit of it.

    With expert labels, the recommendation of :func:`run_comparison` over every applicable method (``kwargs`` go
    there). ``use_experts`` says which candidates: None (not given) both kinds, each method on the crowd alone
    and, where clamping can change its labels, with the experts clamped (``expert_variants``), so auto clamps
    when its rule expects that to score better on the items the experts did not label; True only clamped fits;
    False only crowd-only fits. Clamped candidates are scored by cross-fitting. ``AutoChoice.use_experts`` says
    what the chosen fit does, and every record of the run (the job row, the report's ``experts_used_in_fit``, the
    comparison's ``recommended_use_experts``) says the same (docs/explanation/method-choice.md says why).
    Without expert labels, the registry's default for the data's kind
    (:func:`crowdqa.aggregation.registry.default_method`, chosen from the project's benchmarks) on the crowd
    alone. The comparison keeps the fit of the leader so far (and the cross-fitting of every clamped candidate),
    then only the chosen one's.
    """
    kind, _ = metric_for(corpus)
    experts = corpus.workers_with_role("expert")
    if not np.isin(corpus.worker, experts).any():
        method = default_method(kind)
        return AutoChoice(method, None, f"no expert labels to compare methods on: the default for "
                                        f"{KIND_NAMES[kind]}, {method}")
    if kwargs.get("expert_variants"):
        raise ValueError("method auto compares expert variants exactly when use_experts is not given (None)")
    fits: dict[str, PriorFit] = {}
    comparison = run_comparison(corpus, keep_fits=fits, use_experts=bool(use_experts),
                                expert_variants=use_experts is None, **kwargs)
    method, clamped = comparison["recommended"], comparison["recommended_use_experts"]
    if use_experts is not None and clamped != use_experts:
        raise AssertionError(f"auto was asked for use_experts={use_experts} and chose a fit with {clamped}")
    return AutoChoice(method, comparison, comparison["reason"], fits.get(candidate_name(method, clamped)),
                      use_experts=clamped)


def requested_use_experts(*, method: str, params: dict[str, Any], use_experts: bool) -> bool | None:
    """What a job row asked of the experts: None for an ``auto`` job that left it to auto (kept in its params as
    ``{"expert_variants": true}``, the candidates of both kinds), else the row's ``use_experts``."""
    return None if method == "auto" and (params or {}).get("expert_variants") else bool(use_experts)


def auto_method(corpus: Corpus, **kwargs: Any) -> tuple[str, dict[str, Any] | None, str]:
    """:func:`choose_method` as ``(method, comparison or None, why)``."""
    choice = choose_method(corpus, **kwargs)
    return choice.method, choice.comparison, choice.why
