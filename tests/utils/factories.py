"""Factories: synthetic corpora, projects with keys, auth headers."""

from __future__ import annotations

import numpy as np
from sqlmodel import Session

from crowdqa.aggregation.corpus import Corpus
from crowdqa.jobs import keys
from crowdqa.quality.report_model import QualityReport


def synthetic_corpus(*, n_docs: int = 20, doc_len: int = 12, n_crowd: int = 6, n_expert: int = 1,
                     crowd_per_doc: int = 4, accuracy: float = 0.85, seed: int = 0) -> Corpus:
    """A span task with one entity type (IO): true runs of 1-3 tokens, workers flip tokens at 1 - accuracy.

    Every document is labelled by ``crowd_per_doc`` crowd workers; the experts label every other
    document with the truth.
    """
    rng = np.random.default_rng(seed)
    n_tokens = n_docs * doc_len
    truth = np.zeros(n_tokens, dtype=np.int64)
    for d in range(n_docs):
        s = d * doc_len + int(rng.integers(0, doc_len - 3))
        truth[s:s + int(rng.integers(1, 4))] = 1
    token, worker, label = [], [], []
    for d in range(n_docs):
        toks = np.arange(d * doc_len, (d + 1) * doc_len)
        for w in rng.choice(n_crowd, size=crowd_per_doc, replace=False):
            flip = rng.random(doc_len) > accuracy
            token.append(toks)
            worker.append(np.full(doc_len, w))
            label.append(np.where(flip, 1 - truth[toks], truth[toks]))
        if d % 2 == 0:
            for e in range(n_expert):
                token.append(toks)
                worker.append(np.full(doc_len, n_crowd + e))
                label.append(truth[toks])
    words = ["w"] * doc_len
    text = " ".join(words)
    starts = np.arange(doc_len) * 2
    return Corpus.from_arrays(
        token=np.concatenate(token), worker=np.concatenate(worker), label=np.concatenate(label),
        doc_lengths=np.full(n_docs, doc_len), token_start=np.tile(starts, n_docs),
        token_end=np.tile(starts + 1, n_docs), doc_ids=[f"d{d}" for d in range(n_docs)],
        texts=[text] * n_docs,
        worker_ids=[f"crowd:{w}" for w in range(n_crowd)] + [f"expert:{e}" for e in range(n_expert)],
        worker_roles=["crowd"] * n_crowd + ["expert"] * n_expert, class_names=["O", "Entity"],
    )


def project_with_key(session: Session, name: str) -> tuple[str, str]:
    """Create a project and a key (its first key is an admin key, as in use); return (project_id, key)."""
    made = keys.create_key(session=session, project_name=name)
    return made.project_id, made.key


def auth(key: str) -> dict[str, str]:
    """The Authorization header of a key."""
    return {"Authorization": f"Bearer {key}"}


def worker_score(value: float | None, *, accuracy: float | None = None) -> dict:
    """A worker's score block of a report with precision = recall = F1 = ``value`` (and an accuracy, if given)."""
    return {"precision": value, "recall": value, "f1": value, "tp": 0, "fp": 0, "fn": 0, "precision_ci": None,
            "recall_ci": None, "f1_ci": None, "documents": 1, "tokens": 1,
            "accuracy": None if accuracy is None else {"value": accuracy, "correct": 1, "compared": 2, "ci": None}}


def report_with_workers(workers: list[dict], *, method: str = "mv") -> QualityReport:
    """A report whose only content is its worker entries (everything else empty)."""
    return QualityReport.model_validate({
        "method": method, "kind": "spans", "labels": ["O", "P"], "experts_used_in_fit": False,
        "aggregate_scored_on": "all expert tokens", "reference": "union",
        "counts": {"documents": 0, "tokens": 0, "annotations": 0, "crowd_workers": len(workers), "experts": 0,
                   "expert_documents": 0, "clamped_tokens": 0},
        "aggregate_vs_expert": None, "workers": [{"skill": None, **w} for w in workers],
        "agreement": {"expert_kappa": [], "krippendorff_alpha": None, "crowd_kappa": [],
                      "crowd_kappa_summary": {"min_documents": 3, "pairs": 0, "median": None, "mean": None}},
        "fit": None, "bootstrap": {"n_boot": 0, "seed": 0, "level": 0.95, "min_documents": 3}})
