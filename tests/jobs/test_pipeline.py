"""run_pipeline: fits on the crowd only, clamps experts when asked, reports, publishes progress."""

from __future__ import annotations

import numpy as np
import pytest

from crowdqa.aggregation import make_aggregator
from crowdqa.jobs.pipeline import run_pipeline
from crowdqa.quality.references import reference_labels
from tests.utils.factories import synthetic_corpus


@pytest.mark.filterwarnings("ignore::aggregation.ConvergenceWarning")
def test_matches_a_direct_fit_on_the_crowd(seed):
    """Oracle: the aggregator fitted directly on ``corpus.select_role("crowd")`` gives the same labels and proba."""
    corpus = synthetic_corpus(seed=seed)
    result = run_pipeline(corpus, method="ds", params={"max_iter": 20})
    direct = make_aggregator("ds", {"max_iter": 20}).fit(corpus.select_role("crowd"))
    np.testing.assert_array_equal(result.labels, direct.labels_)
    np.testing.assert_allclose(result.proba, direct.proba_)
    assert result.worker_confusion.shape == (corpus.n_workers, 2, 2)
    assert result.report.experts_used_in_fit is False and not result.clamped.any()
    assert result.fit.iterations == direct.n_iter_


def test_use_experts_clamps_the_reference(seed):
    """With use_experts every token the expert labelled takes the expert's label (the oracle is the reference)."""
    corpus = synthetic_corpus(seed=seed, accuracy=0.6)
    result = run_pipeline(corpus, method="ds", use_experts=True)
    ref = reference_labels(corpus, rule="union")
    known = ref >= 0
    np.testing.assert_array_equal(result.clamped, known)
    np.testing.assert_array_equal(result.labels[known], ref[known])
    assert result.report.experts_used_in_fit is True


def test_progress_once_per_iteration(seed):
    """The progress callback sees every EM iteration, in order, with the logged objective."""
    corpus = synthetic_corpus(seed=seed)
    events = []
    result = run_pipeline(corpus, method="ds", params={"max_iter": 15, "tol": 0.0},
                          progress=lambda stage, it, ll: events.append((stage, it, ll)))
    iterations = [(it, ll) for stage, it, ll in events if it is not None]
    assert [it for it, _ in iterations] == list(range(1, result.fit.iterations + 1))
    assert [ll for _, ll in iterations] == result.fit.log_likelihood
    assert [s for s, it, _ in events if it is None] == ["fitting", "scoring"]


def test_refuses_what_cannot_run():
    """No crowd labels, experts asked for but absent, unknown parameters: ValueError naming the problem."""
    corpus = synthetic_corpus()
    with pytest.raises(ValueError, match="no crowd labels"):
        run_pipeline(corpus.select_role("expert"), method="mv")
    with pytest.raises(ValueError, match="use_experts needs expert labels"):
        run_pipeline(_without_experts(corpus), method="mv", use_experts=True)
    with pytest.raises(ValueError, match="unknown parameter"):
        run_pipeline(corpus, method="ds", params={"iterations": 3})


def _without_experts(corpus):
    from crowdqa.aggregation.corpus import Corpus

    crowd = corpus.workers_with_role("crowd")
    sub = corpus.select_workers(crowd)
    return Corpus(token=sub.token, worker=sub.worker, label=sub.label, doc_lengths=sub.doc_lengths,
                  token_start=sub.token_start, token_end=sub.token_end, doc_ids=sub.doc_ids, texts=sub.texts,
                  worker_ids=tuple(corpus.worker_ids[i] for i in crowd), worker_roles=("crowd",) * len(crowd),
                  class_names=sub.class_names)


@pytest.mark.filterwarnings("ignore::aggregation.ConvergenceWarning")
def test_use_experts_scores_the_aggregate_by_cross_fitting(seed):
    """Oracle: the held-out predictions redone by hand, fold by fold, with the pipeline's seeded split.

    Each expert document is predicted by a fit that was given only the other folds' expert
    labels; the report's aggregate block is scored on exactly those predictions.
    """
    from crowdqa.quality.report import build_report

    corpus = synthetic_corpus(seed=seed, accuracy=0.6)
    result = run_pipeline(corpus, method="ds", params={"max_iter": 30}, use_experts=True, crossfit_folds=3, seed=7)
    ref = reference_labels(corpus, rule="union")
    crowd = corpus.select_role("crowd")
    docs = np.unique(corpus.token_doc[ref >= 0])
    heldout = np.full(corpus.n_tokens, -1)
    for part in np.array_split(np.random.default_rng(7).permutation(docs), min(3, docs.size)):
        held = np.isin(corpus.token_doc, part)
        model = make_aggregator("ds", {"max_iter": 30}).fit(crowd, true_labels=np.where(held, -1, ref))
        heldout[held] = model.labels_[held]
    expected = build_report(corpus, result.labels, method="ds", experts_used_in_fit=True, clamped=ref >= 0,
                            heldout=heldout, fit=result.fit)
    assert result.report.aggregate_vs_expert == expected.aggregate_vs_expert
    assert result.report.aggregate_scored_on == "held-out predictions (cross-fitting)"
    assert result.fit.cross_fit.folds == min(3, docs.size)
    assert result.fit.cross_fit.expert_documents == docs.size
    assert result.report.aggregate_vs_expert.token.tokens == int((ref >= 0).sum())


def test_fixed_schedule_records_converged_as_not_tested(seed):
    """HMMCrowd's default (the authors' five EM steps, tol=None) is no failure to converge: no warning,
    converged None."""
    corpus = synthetic_corpus(seed=seed)
    fixed = run_pipeline(corpus, method="hmm-crowd")
    assert fixed.fit.converged is None and fixed.fit.warnings == [] and fixed.fit.iterations == 5
    tested = run_pipeline(corpus, method="hmm-crowd", params={"tol": 0.0, "max_iter": 2})
    assert tested.fit.converged is False and any("max_iter=2" in w for w in tested.fit.warnings)


def test_stage_seconds_are_in_the_report_fit_block():
    """Issue 14: the report's fit block keeps the seconds of every stage; it is the result's fit dict."""
    corpus = synthetic_corpus()
    result = run_pipeline(corpus, method="ds", params={"max_iter": 5}, use_experts=True)
    stages = result.report.fit.stages
    assert set(stages) == {"fitting", "cross_fitting", "scoring"} and all(v >= 0 for v in stages.values())
    assert result.report.fit is result.fit


def test_report_data_is_the_typed_report(seed):
    """The plain report (what ``crowdqa aggregate`` writes, no pydantic) is the typed report dumped, as JSON text,
    with a blocked worker and the experts used (cross-fitting); the typed report is the API's, validated from it."""
    import json

    corpus = synthetic_corpus(seed=seed)
    blocked = corpus.worker_ids[int(corpus.workers_with_role("crowd")[0])]
    result = run_pipeline(corpus, method="ds", params={"max_iter": 5}, use_experts=True, blocked=frozenset({blocked}))
    data = json.dumps(result.report_data)
    assert json.dumps(result.report.model_dump(mode="json")) == data
    assert result.report_data["blocked_workers"] == [blocked] and result.report.blocked_workers == [blocked]
    assert [w["annotator"] for w in result.report_data["workers"] if w["blocked"]] == [blocked]


@pytest.mark.parametrize("method", ["mace", "glad", "gold-mv", "mv"])
def test_report_carries_each_workers_skill(method, seed):
    """Oracle: the aggregator's own ``skills_`` (fitted directly on the crowd), per worker; None without one."""
    corpus = synthetic_corpus(seed=seed)
    result = run_pipeline(corpus, method=method, use_experts=method == "gold-mv")
    workers = result.report.workers
    if method == "mv":
        assert result.fit.skill is None and all(w.skill is None for w in workers)
        return
    known = reference_labels(corpus, rule="union") if method == "gold-mv" else None
    direct = make_aggregator(method).fit(corpus.select_role("crowd"), true_labels=known)
    assert result.fit.skill == direct.skill_description
    for w, entry in enumerate(workers):
        if corpus.worker_roles[w] == "expert":
            assert entry.skill is None
        else:
            assert entry.skill == pytest.approx(direct.skills_[w], rel=1e-12)


def test_a_fit_stopped_at_max_iter_says_so_in_the_report_text(seed):
    """Issue 28: non-convergence is reported in words (fit record, text report), not only as converged False."""
    from crowdqa.quality.report import format_report as render_text

    corpus = synthetic_corpus(seed=seed)
    stopped = run_pipeline(corpus, method="bsc-seq", params={"max_iter": 1, "features": ()})
    assert stopped.fit.converged is False
    assert stopped.fit.convergence_note.startswith("not converged: ") and "max_iter=1" in stopped.fit.convergence_note
    assert f"warning: {stopped.fit.convergence_note}" in render_text(stopped.report)
    done = run_pipeline(corpus, method="ds")
    assert done.fit.converged is True and done.fit.convergence_note is None
    assert "warning: not converged" not in render_text(done.report)


class _Stop(Exception):
    pass


@pytest.mark.parametrize("method, use_experts", [("ds", False), ("ds", True), ("mace", False)])
def test_checkpoint_runs_between_stages_and_em_iterations_without_progress(method, use_experts, seed):
    """Issue 32: the stop check is the pipeline's own ``checkpoint`` (before each stage and each EM iteration of
    the fit and of every cross-fit), called with no progress callback; what it raises ends the run there."""
    corpus = synthetic_corpus(seed=seed)
    params = {"max_iter": 6, "tol": 0.0} if method == "ds" else {"max_iter": 6, "n_restarts": 1}
    calls: list[int] = []
    done = run_pipeline(corpus, method=method, params=params, use_experts=use_experts,
                        checkpoint=lambda: calls.append(1))
    folds = done.fit.cross_fit.folds if use_experts else 0
    iterations_per_fit = done.fit.iterations
    # fitting + its iterations, cross-fitting + every fold's iterations, scoring
    assert len(calls) == 1 + iterations_per_fit + (1 + folds * iterations_per_fit if use_experts else 0) + 1

    def stop_at_third() -> None:
        calls.append(1)
        if len(calls) == 3:
            raise _Stop

    calls.clear()
    seen: list[tuple] = []
    with pytest.raises(_Stop):
        run_pipeline(corpus, method=method, params=params, use_experts=use_experts, checkpoint=stop_at_third,
                     progress=lambda *a: seen.append(a))
    # stopped before the second EM iteration's progress: the stage, then iteration 1 only
    assert seen == [("fitting", None, None), ("fitting", 1, seen[1][2])]
