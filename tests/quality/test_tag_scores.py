"""Reports of tag labels: per-tag, micro and macro scores against scikit-learn, and the tags report as a whole."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics import accuracy_score, f1_score, precision_recall_fscore_support

from benchmarks._tag_crowd import hide_per_token, tag_crowd
from crowdqa.aggregation.hmm_crowd import HMMCrowd
from crowdqa.quality.agreement import krippendorff_alpha_nominal
from crowdqa.quality.report import build_report, build_report_data
from crowdqa.quality.tag_scores import macro_f1_bounds, tag_blocks, tag_doc_counts


def test_tag_scores_equal_scikit_learn(seed):
    """Oracle: scikit-learn's per-class precision, recall and F1, its micro F1 (= accuracy) and its macro F1 over
    the tags that occur on either side (``labels=``), to 1e-12."""
    rng = np.random.default_rng(seed)
    k, n = 6, 400
    ref = rng.integers(0, k - 1, n)  # tag k - 1 is never the reference: a prediction-only tag
    pred = np.where(rng.random(n) < 0.7, ref, rng.integers(0, k, n))
    doc = np.sort(rng.integers(0, 30, n))
    names = tuple(f"T{c}" for c in range(k))
    out = tag_blocks(pred, ref, doc=doc, n_docs=30, class_names=names, n_boot=200, seed=[seed], min_boot_docs=3)
    p, r, f, _ = precision_recall_fscore_support(ref, pred, labels=list(range(k)), zero_division=np.nan)
    for c, name in enumerate(names):
        block = out["per_tag"][name]
        for key, expected in (("precision", p[c]), ("recall", r[c]), ("f1", f[c])):
            assert (block[key] is None and np.isnan(expected)) or block[key] == pytest.approx(expected, abs=1e-12)
    used = sorted(set(ref.tolist()) | set(pred.tolist()))
    assert out["macro"]["f1"] == pytest.approx(f1_score(ref, pred, labels=used, average="macro"), abs=1e-12)
    assert out["micro"]["f1"] == pytest.approx(accuracy_score(ref, pred), abs=1e-12)
    assert out["micro"]["f1"] == pytest.approx(f1_score(ref, pred, average="micro"), abs=1e-12)
    low, high = out["macro"]["f1_ci"]
    assert low <= out["macro"]["f1"] <= high


def test_macro_interval_of_identical_documents_is_a_point():
    """Every resample of identical documents has the same counts (up to scale): the interval is the estimate."""
    counts = tag_doc_counts([0, 1, 1, 2], [0, 1, 2, 2], doc=[0, 0, 0, 0], n_docs=1, n_classes=3)
    counts = np.repeat(counts, 10, axis=0)
    low, high = macro_f1_bounds(counts, n_boot=50, rng=np.random.default_rng(0))
    expected = f1_score([0, 1, 2, 2], [0, 1, 1, 2], average="macro")
    assert low == pytest.approx(expected) and high == pytest.approx(expected)


def test_tags_report_scores_tokens_and_sentences(seed):
    """The report of a partly labelled tag crowd: kind tags, accuracy over tokens equal to a direct count, the
    confusion matrix against the expert, sentences as documents, Krippendorff's alpha over tokens equal to the
    dense nominal alpha (checked against the published vectors in test_metric_vectors) on the (annotator x
    token) matrix, and the typed model accepts it."""
    crowd = tag_crowd(n_docs=40, n_workers=12, n_classes=5, labels_per_token=4, seed=seed % 1000)
    corpus = hide_per_token(crowd.corpus, keep=0.8, seed=seed)
    labels = HMMCrowd().fit(corpus.select_role("crowd")).labels_
    report = build_report_data(corpus, labels, method="hmm-crowd", experts_used_in_fit=False, n_boot=100)
    assert report["kind"] == "tags" and report["counts"]["documents"] == 40
    agg = report["aggregate_vs_expert"]
    assert agg["accuracy"]["correct"] == int((labels == crowd.truth).sum())
    cm = np.array(agg["token_confusion"]["matrix"])
    assert cm.sum() == corpus.n_tokens and cm[labels[0], crowd.truth[0]] >= 1
    assert agg["micro"]["f1"] == pytest.approx(agg["accuracy"]["value"])
    dense = np.full((corpus.n_workers, corpus.n_tokens), np.nan)
    dense[corpus.worker, corpus.token] = corpus.label
    assert report["agreement"]["krippendorff_alpha"] == pytest.approx(krippendorff_alpha_nominal(dense), abs=1e-9)
    assert type(build_report(corpus, labels, method="hmm-crowd", experts_used_in_fit=False,
                             n_boot=20).aggregate_vs_expert).__name__ == "TagAggregateScores"


def test_a_workers_documents_on_tags_are_the_sentences_it_labelled(seed):
    """A worker's ``documents`` in a tags report counted its tokens (the report scores each token as an item). The
    oracle: a Python set of (sentence, worker) pairs walked annotation by annotation; ``tokens`` stays the count of
    its labels."""
    crowd = tag_crowd(n_docs=30, n_workers=8, n_classes=4, labels_per_token=3, seed=seed % 1000)
    corpus = hide_per_token(crowd.corpus, keep=0.6, seed=seed)
    labels = HMMCrowd().fit(corpus.select_role("crowd")).labels_
    report = build_report_data(corpus, labels, method="hmm-crowd", experts_used_in_fit=False, n_boot=20)
    token_doc = corpus.token_doc
    pairs = {(int(token_doc[t]), int(w)) for t, w in zip(corpus.token.tolist(), corpus.worker.tolist(), strict=True)}
    for w, entry in enumerate(report["workers"]):
        assert entry["documents"] == sum(1 for _, v in pairs if v == w), entry["annotator"]
        assert entry["tokens"] == int((corpus.worker == w).sum())
    assert max(e["documents"] for e in report["workers"]) <= corpus.n_docs < max(e["tokens"] for e in report["workers"])
