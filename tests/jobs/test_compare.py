"""Tests for crowdqa.jobs.compare: every method fitted on the crowd of one read corpus, scored on the experts."""

from __future__ import annotations

import numpy as np
import pytest

from crowdqa.jobs.compare import applicable_methods, auto_method, parse_methods, run_comparison
from crowdqa.jobs.pipeline import run_pipeline
from crowdqa.quality.method_choice import candidate_name
from tests.utils.factories import synthetic_corpus


def test_a_comparison_scores_each_method_as_its_own_report_does():
    corpus = synthetic_corpus(n_docs=40, accuracy=0.78, seed=4)
    out = run_comparison(corpus, methods=["mv", "ds", "hmm-crowd"], n_boot=200)
    assert [m["method"] for m in out["methods"]] == sorted(
        ["mv", "ds", "hmm-crowd"], key=lambda m: -next(x["f1"] for x in out["methods"] if x["method"] == m))
    assert out["recommended"] in {"mv", "ds", "hmm-crowd"} and out["documents"] == 20
    for entry in out["methods"]:
        report = run_pipeline(corpus, method=entry["method"]).report_data
        assert entry["f1"] == pytest.approx(report["aggregate_vs_expert"]["token"]["f1"])
        assert entry["f1_low"] <= entry["f1"] <= entry["f1_high"]
        assert entry["seconds"] > 0 and entry["converged"] in (True, None)
        assert entry["diff_low"] <= entry["diff"] <= entry["diff_high"]


def test_use_experts_scores_the_held_out_predictions_of_the_report():
    corpus = synthetic_corpus(n_docs=24, accuracy=0.75, seed=5)
    out = run_comparison(corpus, methods=["ds"], use_experts=True, n_boot=50)
    report = run_pipeline(corpus, method="ds", use_experts=True).report_data
    assert report["aggregate_scored_on"] == "held-out predictions (cross-fitting)"
    assert out["methods"][0]["f1"] == pytest.approx(report["aggregate_vs_expert"]["token"]["f1"])
    assert out["use_experts"] and out["methods"][0]["cross_fit_seconds"] > 0


def test_all_means_every_method_that_applies():
    corpus = synthetic_corpus(n_docs=6)
    spans = applicable_methods(corpus)
    assert spans[:2] == ["mv", "ds"] and {"hmm-crowd", "bsc-seq", "kos"} <= set(spans) and "gold-mv" not in spans
    assert "gold-mv" in applicable_methods(corpus, use_experts=True)
    assert parse_methods("all") is None and parse_methods("mv, ds") == ["mv", "ds"]
    with pytest.raises(ValueError, match="unknown 'nope'"):
        parse_methods("mv,nope")


def test_bad_requests_are_refused_with_a_reason():
    corpus = synthetic_corpus(n_docs=6)
    with pytest.raises(ValueError, match="gold-mv learns"):
        run_comparison(corpus, methods=["mv", "gold-mv"])
    with pytest.raises(ValueError, match="params for unknown method"):
        run_comparison(corpus, methods=["mv"], params_for={"nope": {}})
    with pytest.raises(ValueError, match="max_iter"):
        run_comparison(corpus, methods=["ds"], params_for={"ds": {"max_iter": 0}})
    crowd_only = corpus.select_workers(corpus.workers_with_role("crowd"))
    with pytest.raises(ValueError, match="no expert labels"):
        run_comparison(crowd_only, methods=["mv"])


def test_auto_without_experts_takes_the_documented_default():
    corpus = synthetic_corpus(n_docs=6)
    crowd_only = corpus.select_workers(corpus.workers_with_role("crowd"))
    method, comparison, why = auto_method(crowd_only)
    assert (method, comparison) == ("bsc-seq", None) and "no expert labels" in why
    method, comparison, _ = auto_method(corpus, methods=["mv", "ds"], n_boot=50)
    assert method == comparison["recommended"] and np.isfinite(comparison["methods"][0]["f1"])


def test_a_method_the_data_kind_rules_out_is_refused_and_left_out_of_all():
    from tests.quality.test_compare import _typed_corpus

    corpus = _typed_corpus()  # 5 classes: kos (binary) does not apply
    assert "kos" not in applicable_methods(corpus) and "hmm-crowd" in applicable_methods(corpus)
    with pytest.raises(ValueError, match="kos is defined for binary labels"):
        run_comparison(corpus, methods=["mv", "kos"])


def _without_seconds(value):
    if isinstance(value, dict):
        return {k: _without_seconds(v) for k, v in value.items() if k not in ("seconds", "stages")}
    if isinstance(value, list):
        return [_without_seconds(v) for v in value]
    return value


@pytest.mark.parametrize("use_experts", [False, True])
def test_auto_reuses_the_comparisons_fit_of_the_method_it_chose(monkeypatch, use_experts):
    """Issue 32: ``--method auto`` fitted the chosen method again after the comparison had (and, with the experts,
    cross-fitted it again); the pipeline now takes the comparison's fit, and reports what a fresh run reports."""
    from crowdqa.aggregation.dawid_skene import DawidSkene
    from crowdqa.jobs.compare import choose_method

    corpus = synthetic_corpus(n_docs=24, accuracy=0.75, seed=5)
    fits = []
    fit = DawidSkene.fit
    monkeypatch.setattr(DawidSkene, "fit", lambda self, *a, **k: fits.append(1) or fit(self, *a, **k))
    choice = choose_method(corpus, methods=["ds"], use_experts=use_experts, n_boot=50)
    assert choice.method == "ds" and choice.fit is not None
    assert choice.use_experts == use_experts == choice.comparison["recommended_use_experts"]
    made = len(fits)
    # With the experts: the 4 cross-fitting folds alone; without: one fit on the crowd. Auto clamps only if asked.
    assert made == (4 if use_experts else 1)
    reused = run_pipeline(corpus, method="ds", use_experts=choice.use_experts, prior=choice.fit)
    # The fit on every expert label is made once, by the pipeline, for the chosen candidate only.
    assert len(fits) == made + (1 if use_experts else 0)
    made = len(fits)
    fresh = run_pipeline(corpus, method="ds", use_experts=choice.use_experts)
    assert len(fits) == made + (5 if choice.use_experts else 1)
    np.testing.assert_array_equal(reused.labels, fresh.labels)
    np.testing.assert_array_equal(reused.proba, fresh.proba)
    assert _without_seconds(reused.report_data) == _without_seconds(fresh.report_data)
    with pytest.raises(ValueError, match="prior fit is reused only"):
        run_pipeline(corpus, method="ds", params={"max_iter": 3}, use_experts=choice.use_experts, prior=choice.fit)
    with pytest.raises(ValueError, match="the same use of the experts"):
        run_pipeline(corpus, method="ds", use_experts=not choice.use_experts, prior=choice.fit)


@pytest.mark.parametrize("use_experts", [False, True])
def test_auto_holds_at_most_two_fits_at_once(monkeypatch, use_experts):
    """``--method auto`` kept every compared method's fit until it chose (peak RSS on conll_val 185 -> 233 MB); it
    now keeps the leader's alone, so when a fit starts at most one other is alive, and the pipeline's result is
    the fresh run's."""
    import gc
    import weakref

    from crowdqa.jobs import pipeline
    from crowdqa.jobs.compare import choose_method

    corpus = synthetic_corpus(n_docs=30, accuracy=0.75, seed=6)
    made, at_start = [], []  # weak references to every Fitted made; how many were alive as each fit started
    fit_model = pipeline.fit_model

    def alive():
        gc.collect()
        return [ref() for ref in made if ref() is not None]

    def counting_fit(*args, **kwargs):
        at_start.append(len(alive()))
        fitted = fit_model(*args, **kwargs)
        made.append(weakref.ref(fitted))
        return fitted

    monkeypatch.setattr(pipeline, "fit_model", counting_fit)
    choice = choose_method(corpus, methods=["mv", "ds", "wawa", "hmm-crowd"], use_experts=use_experts, n_boot=50)
    # One fit per crowd-only candidate (the cross-fitting folds fit without fit_model, and a clamped candidate's
    # fit on every expert label is left to the pipeline): 4 methods, none clamped unless use_experts.
    assert len(at_start) == (0 if use_experts else 4) and max(at_start, default=0) <= 1, at_start
    assert len(alive()) <= 1 and (choice.fit is None or choice.fit.fitted is None
                                  or any(f is choice.fit.fitted for f in alive()))
    monkeypatch.setattr(pipeline, "fit_model", fit_model)
    reused = run_pipeline(corpus, method=choice.method, use_experts=choice.use_experts, prior=choice.fit)
    fresh = run_pipeline(corpus, method=choice.method, use_experts=choice.use_experts)
    np.testing.assert_array_equal(reused.labels, fresh.labels)
    assert _without_seconds(reused.report_data) == _without_seconds(fresh.report_data)


class _Board:
    """A scoreboard stub whose recommendation among the methods so far is scripted."""

    def __init__(self, leaders):
        self.leaders = iter(leaders)

    def comparison(self, **_):
        leader = next(self.leaders)
        if leader is None:
            raise ValueError("no method has a score")
        return type("Comparison", (), {"recommended": leader, "recommended_use_experts": False})()


def test_the_kept_fit_follows_the_leader_and_none_when_a_dropped_one_leads():
    """The rule on the methods so far can come back to a method whose fit was dropped (a later best makes a simpler
    one not significantly worse): nothing is kept then, and a later leader is kept again."""
    from types import SimpleNamespace

    from crowdqa.jobs.compare import _keep_leader

    kept = {}
    board = _Board(["mv", "ds", "ds", "mv", None, "hmm-crowd"])
    steps = []
    for method in ["mv", "ds", "wawa", "glad", "mace", "hmm-crowd"]:
        _keep_leader(kept, method, SimpleNamespace(fitted=f"fit of {method}"), board, n_boot=10, seed=0)
        steps.append({k: v.fitted for k, v in kept.items()})
    assert steps == [{"mv": "fit of mv"}, {"ds": "fit of ds"}, {"ds": "fit of ds"}, {}, {},
                     {"hmm-crowd": "fit of hmm-crowd"}]


def test_compare_with_the_experts_fits_each_method_k_times_as_the_how_to_says(monkeypatch):
    """docs/how-to/choose-a-method.md: with use_experts each method is fitted once per fold (the fit on every expert
    label scores nothing, so the comparison does not make it); the table's iterations, convergence and warnings
    describe the folds, and here agree with the fit ``aggregate --use-experts`` makes (max_iter=2: no fit
    converges)."""
    import re
    from pathlib import Path

    from crowdqa.aggregation.dawid_skene import DawidSkene

    how_to = Path(__file__).resolve().parents[2] / "docs" / "how-to" / "choose-a-method.md"
    readme = how_to.read_text(encoding="utf-8")
    said = re.search(r"Each method is then fitted (\d+) times\s+\(once per fold\)", readme)
    assert said, "the compare how-to says how many times --use-experts fits each method"
    corpus = synthetic_corpus(n_docs=24, accuracy=0.75, seed=5)
    fits = []
    fit = DawidSkene.fit
    monkeypatch.setattr(DawidSkene, "fit", lambda self, *a, **k: fits.append(1) or fit(self, *a, **k))
    out = run_comparison(corpus, methods=["ds"], params_for={"ds": {"max_iter": 2}}, use_experts=True, n_boot=50)
    assert len(fits) == int(said[1]) == 4
    entry = out["methods"][0]
    report = run_pipeline(corpus, method="ds", params={"max_iter": 2}, use_experts=True).report_data["fit"]
    assert (entry["iterations"], entry["converged"]) == (report["iterations"], report["converged"]) == (2, False)
    # Each fold's own warning (its objective's last change differs): the same words as the full fit's.
    said_by_fit = report["warnings"][0].split(" by ")[0]
    assert len(entry["warnings"]) == 4 and all(w.split(" by ")[0] == said_by_fit for w in entry["warnings"])
    assert entry["cross_fit_seconds"] > 0


@pytest.mark.parametrize("use_experts", [False, True])
def test_auto_draws_one_bootstrap_per_fitted_method_and_compare_one(monkeypatch, use_experts):
    """Auto asks the rule after each method's fit (to keep the leader's fit) and then for its result, which is the
    comparison after the last fit: that one is kept, not drawn again. So 3 methods draw 3 bootstraps under auto and
    1 under compare, and both results are a fresh comparison's."""
    from crowdqa.jobs.compare import choose_method
    from crowdqa.quality import compare

    corpus = synthetic_corpus(n_docs=24, accuracy=0.75, seed=5)
    methods = ["mv", "ds", "wawa"]
    fresh = run_comparison(corpus, methods=methods, use_experts=use_experts, n_boot=50)
    # Crowd-only candidates: the rule after each fit keeps the leader's; clamped ones keep their folds, no draw.
    n_candidates = 1 if use_experts else len(methods)
    draws = []
    bootstrap = compare.paired_bootstrap
    monkeypatch.setattr(compare, "paired_bootstrap", lambda *a, **k: draws.append(1) or bootstrap(*a, **k))
    choice = choose_method(corpus, methods=methods, use_experts=use_experts, n_boot=50)
    assert len(draws) == n_candidates
    assert _untimed(choice.comparison) == _untimed(fresh)
    draws.clear()
    assert _untimed(run_comparison(corpus, methods=methods, use_experts=use_experts,
                                   n_boot=50)) == _untimed(fresh)
    assert len(draws) == 1


def _untimed(value):
    """``value`` without its timings (every key ending in ``seconds``)."""
    if isinstance(value, dict):
        return {k: _untimed(v) for k, v in value.items() if not k.endswith("seconds")}
    if isinstance(value, list):
        return [_untimed(v) for v in value]
    return value


def test_auto_chooses_dawid_skene_where_it_is_provably_better_than_the_vote(tmp_path):
    """Issue 46: with a few hundred expert items the old rule fell back to majority vote. Here three of the five
    annotators of every item always answer "0", so the vote is "0" on every item and its accuracy is exactly the
    share of class 1's complement (the oracle: that count, by construction); the two honest annotators (accuracy 0.9)
    make Dawid-Skene, which learns that the three answer regardless of the truth, far better. With 200 expert
    items auto must choose Dawid-Skene (with or without the experts clamped), and its held-out accuracy on the
    other 400 items must beat the vote's."""
    from crowdqa.ingest import read_corpus
    from crowdqa.jobs.compare import choose_method

    rng = np.random.default_rng(46)
    truth = rng.integers(0, 2, size=600)
    rows = ["item,annotator,label,gold"]
    for i, t in enumerate(truth):
        gold = str(t) if i < 200 else ""
        rows += [f"i{i},spam{k},0,{gold}" for k in range(3)]
        rows += [f"i{i},good{k},{t if rng.random() < 0.9 else 1 - t},{gold}" for k in range(2)]
    (tmp_path / "crowd.csv").write_text("\n".join(rows) + "\n")
    corpus = read_corpus(tmp_path / "crowd.csv", format="categorical").corpus
    choice = choose_method(corpus, methods=["mv", "ds"], n_boot=200)
    assert choice.method == "ds", choice.why
    result = run_pipeline(corpus, method=choice.method, use_experts=choice.use_experts, prior=choice.fit)
    vote = run_pipeline(corpus, method="mv")
    item = {name: i for i, name in enumerate(corpus.doc_ids)}
    held = np.array([item[f"i{i}"] for i in range(200, 600)])
    assert np.all(vote.labels[held] == corpus.class_names.index("0"))
    vote_acc = np.mean(truth[200:] == 0)
    acc = np.mean(np.array(corpus.class_names)[result.labels[held]].astype(int) == truth[200:])
    assert acc > vote_acc + 0.2


def _by_hand_choice(corpus, methods, *, use_experts, n_boot, seed=0):
    """Auto's choice re-derived without the comparison's code: each candidate's labels on the expert tokens (a fit
    on the crowd alone, or 4 folds of expert documents each predicted by a fit given the other folds' labels,
    written out here), its accuracy per document, the sentence resamples drawn one at a time with the comparison's
    seed, the expected score ``p_a - gamma + w (d + gamma)`` with ``w = tau^2 / (tau^2 + s^2)`` (Morris 1983) and
    the highest, ties to the anchor. Returns (choice, {candidate: accuracy})."""
    from crowdqa.aggregation import make_aggregator
    from crowdqa.aggregation.corpus import MISSING
    from crowdqa.quality.method_choice import prior_for
    from crowdqa.quality.references import reference_labels

    ref = reference_labels(corpus)
    crowd = corpus.select_workers(corpus.workers_with_role("crowd"))
    doc = corpus.token_doc
    expert_docs = np.flatnonzero(np.bincount(doc[ref != MISSING], minlength=corpus.n_docs))
    labels = {}
    for method in methods:
        if not use_experts:
            labels[method] = make_aggregator(method, {}).fit(crowd).labels_
            continue
        held = np.full(corpus.n_tokens, MISSING)
        for part in np.array_split(np.random.default_rng(seed).permutation(expert_docs), 4):
            in_part = np.isin(doc, part)
            fit = make_aggregator(method, {}).fit(crowd, true_labels=np.where(in_part, MISSING, ref))
            held[in_part] = fit.labels_[in_part]
        labels[f"{method}+experts"] = held
    names = list(labels)
    scored = ref != MISSING
    correct = np.array([[np.sum((labels[n] == ref)[scored & (doc == d)]) for d in expert_docs] for n in names])
    compared = np.array([np.sum(scored & (doc == d)) for d in expert_docs])
    point = correct.sum(axis=1) / compared.sum()
    rng = np.random.default_rng([seed, 7])
    boot = np.empty((n_boot, len(names)))
    for b in range(n_boot):
        idx = rng.integers(0, expert_docs.size, expert_docs.size)
        boot[b] = correct[:, idx].sum(axis=1) / compared[idx].sum()
    prior = prior_for("tags" if corpus.scheme == "tags" else "categorical")
    anchor_method = prior.anchor.split("+")[0]
    anchor = names.index(f"{anchor_method}+experts" if use_experts else anchor_method)
    expected = {}
    for i, name in enumerate(names):
        if i == anchor:
            expected[name] = point[anchor]
            continue
        d = point[i] - point[anchor]
        s2 = np.var(boot[:, i] - boot[:, anchor], ddof=1)
        w = prior.spread ** 2 / (prior.spread ** 2 + s2)
        expected[name] = point[anchor] - prior.shortfall + w * (d + prior.shortfall)
    best = max(expected.values())
    tied = [n for n in names if np.isclose(expected[n], best, rtol=0, atol=1e-12)]
    choice = names[anchor] if names[anchor] in tied else tied[0]
    return choice, dict(zip(names, point.tolist(), strict=True)), expected


@pytest.mark.parametrize(("kind", "use_experts"), [("tags", False), ("tags", True), ("categorical", True)])
def test_auto_chooses_the_best_candidate_by_enumeration(kind, use_experts, tmp_path):
    """Oracle: the choice re-derived by hand (:func:`_by_hand_choice`: the candidates' fits, folds, accuracies,
    resamples and shrinkage written out here) equals auto's, with every candidate's measured and expected score.
    On tag labels (issue 44) auto scores token accuracy over sentences, among the methods valid for tags (the
    sequence models too), anchored on the tags default, bsc-seq; it clamps the experts only when asked."""
    from benchmarks._tag_crowd import tag_crowd
    from crowdqa.jobs.compare import choose_method
    from crowdqa.quality.compare import metric_for

    if kind == "tags":
        corpus = tag_crowd(n_docs=40, n_workers=8, n_classes=4, labels_per_token=3, seed=1).corpus
        methods = ["mv", "ds", "hmm-crowd", "bsc-seq"]
    else:
        from benchmarks.method_choice import spammer_crowd
        from crowdqa.ingest import read_corpus

        rows, _ = spammer_crowd(8, n_classes=3, spammers=0.3, n_items=120, n_workers=12)
        path = tmp_path / "crowd.csv"
        path.write_text("item,annotator,label,gold\n" + "".join(",".join(r) + "\n" for r in rows))
        corpus = read_corpus(path, format="categorical").corpus
        methods = ["mv", "ds", "ibcc"]
    assert metric_for(corpus) == (kind, "accuracy")
    choice = choose_method(corpus, methods=methods, use_experts=use_experts, n_boot=200)
    by_hand, measured, expected = _by_hand_choice(corpus, methods, use_experts=use_experts, n_boot=200)
    got = {candidate_name(m["method"], m["use_experts"]): m for m in choice.comparison["methods"]}
    assert set(got) == set(measured)
    for name, value in measured.items():
        assert got[name]["value"] == pytest.approx(value, abs=1e-12), name
        assert got[name]["expected"] == pytest.approx(expected[name], abs=1e-9), name
    assert candidate_name(choice.method, choice.use_experts) == by_hand and choice.use_experts == use_experts
    assert choice.comparison["kind"] == kind and (kind != "tags" or choice.comparison["prior"]["prior_anchor"]
                                                  == "bsc-seq")


def test_auto_on_tags_without_experts_takes_the_tags_default():
    """Issue 44: a tags corpus was auto's categorical kind (Dawid-Skene); its default is bsc-seq, the best on the
    tags benchmark."""
    from benchmarks._tag_crowd import tag_crowd
    from crowdqa.jobs.compare import choose_method

    corpus = tag_crowd(n_docs=20, n_workers=6, n_classes=4, labels_per_token=3, seed=2).corpus
    choice = choose_method(corpus.select_role("crowd"))
    assert choice.method == "bsc-seq" and "tag labels" in choice.why and choice.comparison is None


def _small_corpus(kind: str, seed: int, tmp_path):
    """A span corpus (synthetic_corpus) or a categorical crowd with planted spammers (the benchmark's), and the
    methods compared on it."""
    if kind == "spans":
        return synthetic_corpus(n_docs=24, accuracy=0.7, seed=seed), ["mv", "ds", "hmm-crowd"]
    from benchmarks.method_choice import spammer_crowd
    from crowdqa.ingest import read_corpus

    rows, _ = spammer_crowd(seed, n_classes=3, spammers=0.3, n_items=120, n_workers=12)
    path = tmp_path / "crowd.csv"
    path.write_text("item,annotator,label,gold\n" + "".join(",".join(r) + "\n" for r in rows))
    return read_corpus(path, format="categorical").corpus, ["mv", "ds", "ibcc"]


@pytest.mark.parametrize(("kind", "seed", "clamped"), [("spans", 0, False), ("spans", 3, True),
                                                        ("categorical", 0, True), ("categorical", 3, False)])
def test_auto_not_told_about_the_experts_chooses_what_compare_expert_variants_recommends(kind, seed, clamped,
                                                                                           tmp_path):
    """Issue 46: auto not told whether to use the experts (``use_experts=None``, the CLI without --use-experts or
    --no-use-experts, a job without use_experts) compares both kinds of candidates. Oracle: the comparison of
    ``compare --expert-variants`` (run_comparison with expert_variants, the benchmark's ``variants`` rule) on the
    same corpus: the same table and recommendation, clamped or not. The pipeline then fits the chosen candidate as
    compared, and the report's experts_used_in_fit says so. Which cases choose a clamped fit is a regression
    figure of this code (pinned so both kinds of choice are exercised)."""
    from crowdqa.jobs.compare import choose_method

    corpus, methods = _small_corpus(kind, seed, tmp_path)
    oracle = run_comparison(corpus, methods=methods, expert_variants=True, n_boot=100)
    choice = choose_method(corpus, methods=methods, n_boot=100)
    assert choice.comparison["expert_variants"] and not choice.comparison["use_experts"]
    assert _untimed(choice.comparison) == _untimed(oracle)
    assert (choice.method, choice.use_experts) == (oracle["recommended"], oracle["recommended_use_experts"])
    assert choice.use_experts is clamped
    result = run_pipeline(corpus, method=choice.method, use_experts=choice.use_experts, prior=choice.fit)
    assert result.report_data["experts_used_in_fit"] is clamped
    assert result.report_data["aggregate_scored_on"] == ("held-out predictions (cross-fitting)" if clamped
                                                         else "all expert tokens")
    fresh = run_pipeline(corpus, method=choice.method, use_experts=choice.use_experts)
    np.testing.assert_array_equal(result.labels, fresh.labels)
    for told in (False, True):  # told: only that kind of candidate, as compare with or without --use-experts
        asked = choose_method(corpus, methods=methods, use_experts=told, n_boot=100)
        assert _untimed(asked.comparison) == _untimed(run_comparison(corpus, methods=methods, use_experts=told,
                                                                     n_boot=100))
        assert asked.use_experts is told
