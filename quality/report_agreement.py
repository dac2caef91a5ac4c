"""The report's agreement block: how annotators agree with one another, whatever the aggregate.

Cohen's kappa and pairwise F1 for every pair of experts (from their joint label counts, all pairs at once,
:func:`crowdqa.quality.pair_agreement.pair_confusions`), Cohen's kappa for every pair of crowd workers sharing
``min_pair_docs`` documents (:func:`crowdqa.quality.pair_agreement.pair_kappas`) with its median and mean, and
Krippendorff's alpha over all annotators (:func:`crowdqa.quality.agreement.krippendorff_alpha_corpus`).
"""

from __future__ import annotations

import numpy as np

from crowdqa.aggregation.corpus import Corpus
from crowdqa.quality.agreement import krippendorff_alpha_corpus
from crowdqa.quality.metrics import prf_from_counts
from crowdqa.quality.pair_agreement import kappa_from_confusions, pair_confusions, pair_kappas
from crowdqa.quality.report_schema import record, records
from crowdqa.quality.score_blocks import finite_or_none

__all__ = ["agreement_block", "expert_pairs"]


def agreement_block(corpus: Corpus, *, min_pair_docs: int) -> dict:
    """Agreement between annotators, whatever the aggregate (``Agreement``)."""
    crowd_kappas = pair_kappas(corpus, annotators=corpus.workers_with_role("crowd"), min_documents=min_pair_docs)
    names = np.array(corpus.worker_ids, dtype=object)  # ids and kappas (nan -> None) as Python objects, by column
    kappa = crowd_kappas.kappa
    finite = kappa[np.isfinite(kappa)]
    return record("Agreement", {
        "expert_kappa": expert_pairs(corpus),
        "krippendorff_alpha": finite_or_none(krippendorff_alpha_corpus(corpus)),
        "crowd_kappa": records("CrowdPair", {
            "a": names[crowd_kappas.a].tolist(), "b": names[crowd_kappas.b].tolist(),
            "documents": crowd_kappas.documents.tolist(), "tokens": crowd_kappas.tokens.tolist(),
            "kappa": np.where(np.isnan(kappa), None, kappa).tolist()}),
        "crowd_kappa_summary": record("KappaSummary", {
            "min_documents": min_pair_docs, "pairs": int(kappa.shape[0]),
            "median": finite_or_none(float(np.median(finite))) if finite.size else None,
            "mean": finite_or_none(float(np.mean(finite))) if finite.size else None,
        }),
    })


def expert_pairs(corpus: Corpus) -> list[dict]:
    """Every pair of experts (``ExpertPair``) from their joint label counts, all pairs at once: Cohen's kappa and
    the F1 of one against the other (positive = not class 0)."""
    experts = corpus.workers_with_role("expert")
    if experts.shape[0] < 2:
        return []
    joint = pair_confusions(corpus, annotators=experts, min_documents=1)
    cm = joint.confusion
    f1 = prf_from_counts(cm[:, 1:, 1:].sum(axis=(1, 2)), cm[:, 1:, 0].sum(axis=1), cm[:, 0, 1:].sum(axis=1))[2]
    return records("ExpertPair", {
        "a": [corpus.worker_ids[a] for a in joint.a.tolist()], "b": [corpus.worker_ids[b] for b in joint.b.tolist()],
        "tokens": [int(c.sum()) for c in cm], "kappa": [finite_or_none(k) for k in kappa_from_confusions(cm)],
        "f1": [finite_or_none(f) for f in f1]})
