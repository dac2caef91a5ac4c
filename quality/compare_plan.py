"""How many more expert documents would separate the compared methods: SLiCE's sample size for the best one.

:func:`plan_inputs` takes what the sample size needs of the best method's counts; :func:`more_documents` turns a
wanted interval half-width into expert documents to add (:func:`crowdqa.quality.sample_size.slice_sample_size`
for F1 scores, :func:`crowdqa.quality.sample_size.binomial_sample_size` for accuracy).
"""

from __future__ import annotations

import math

from numpy.typing import NDArray

from crowdqa.quality.sample_size import binomial_sample_size, slice_sample_size

__all__ = ["ACCURACY_KINDS", "LEVEL", "more_documents", "plan_inputs"]

LEVEL = 0.95
#: The kinds of data scored by accuracy (each token an item); the others by an F1.
ACCURACY_KINDS = frozenset({"categorical", "tags"})


def plan_inputs(kind: str, best_counts: NDArray, documents: int) -> dict:
    """What SLiCE needs of the best method: its precision and recall (or accuracy), and per document how many
    instances it predicts and the reference holds."""
    totals = best_counts.sum(axis=0)
    if kind in ACCURACY_KINDS:
        return {"accuracy": float(totals[0] / totals[1]) if totals[1] else None, "documents": documents,
                "per_document": float(totals[1] / documents) if documents else 0.0}
    tp, fp, fn = (float(x) for x in totals)
    return {"precision": tp / (tp + fp) if tp + fp else None, "recall": tp / (tp + fn) if tp + fn else None,
            "predicted_per_document": (tp + fp) / documents if documents else 0.0,
            "actual_per_document": (tp + fn) / documents if documents else 0.0, "documents": documents}


def more_documents(plan: dict, half_width: float, *, level: float = LEVEL) -> int | None:
    """Expert documents to add so the best method's interval has half-width ``half_width`` (SLiCE's sample size:
    predicted positives for precision, actual positives for recall, divided by how many a document holds; for
    accuracy the binomial sample size of items); a perfect score counts as 0.99; None for a score of 0."""
    half_width = min(max(half_width, 0.005), 0.25)
    docs = plan["documents"]
    try:
        if "accuracy" in plan:
            acc = plan["accuracy"]
            if not acc or plan["per_document"] <= 0:
                return None
            acc = min(acc, 0.99)
            need = binomial_sample_size(acc, half_width=half_width, confidence=level) / plan["per_document"]
        else:
            p, r = plan["precision"], plan["recall"]
            if not p or not r:
                return None
            # A perfect score on a small subset says little: SLiCE needs a value inside (0, 1).
            p, r = min(p, 0.99), min(r, 0.99)
            if plan["predicted_per_document"] <= 0 or plan["actual_per_document"] <= 0:
                return None
            # The frequency only sets SLiCE's negatives, which are not used here: the positives set the documents.
            size = slice_sample_size(precision=p, recall=r, frequency=0.5, half_width=half_width, confidence=level)
            need = max(size.n_precision / plan["predicted_per_document"], size.n_recall / plan["actual_per_document"])
    except ValueError:
        return None
    return max(0, math.ceil(need) - docs)
