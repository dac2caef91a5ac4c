"""The report does not depend on the order of the upload's rows (documents and annotators permuted).

Regression: the F1 bootstrap intervals depended on row order; the bootstrap drew one random stream
for all workers in worker-index order, and each worker's documents by index in upload order, so the
same upload with its rows permuted gave other intervals. Oracle: the report of the unpermuted corpus.
"""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from crowdqa.aggregation.corpus import MISSING
from tests.quality.test_report import build_report, random_corpus
from tests.quality.test_routing import _permuted


def _by_pair(report: dict) -> dict:
    return {frozenset((p["a"], p["b"])): (p["documents"], p["tokens"], p["kappa"])
            for p in report["agreement"]["crowd_kappa"]}


@settings(max_examples=12, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), bio=st.booleans(), n_boot=st.sampled_from([1, 50, 200]), data=st.data())
def test_permuting_the_upload_gives_the_same_report(seed, bio, n_boot, data):
    """Property: every worker's and the aggregate's scores and intervals (Clopper-Pearson and bootstrap) are
    identical, keyed by annotator id, when the documents and the annotators come in another order."""
    corpus = random_corpus(seed, n_docs=10, n_crowd=6, n_experts=2, bio=bio)
    rng = np.random.default_rng(seed)
    agg = rng.integers(0, corpus.n_classes, corpus.n_tokens)
    agg[rng.random(corpus.n_tokens) < 0.05] = MISSING
    doc_perm = np.asarray(data.draw(st.permutations(range(corpus.n_docs))))
    worker_perm = np.asarray(data.draw(st.permutations(range(corpus.n_workers))))
    other, o_agg, _ = _permuted(corpus, agg, agg, doc_perm, worker_perm)
    kw = {"method": "mv", "experts_used_in_fit": False, "n_boot": n_boot, "seed": seed % 1000, "min_pair_docs": 1}
    a, b = build_report(corpus, agg, **kw), build_report(other, o_agg, **kw)
    assert a["aggregate_vs_expert"] == b["aggregate_vs_expert"]
    assert sorted(a["workers"], key=lambda w: w["annotator"]) == sorted(b["workers"], key=lambda w: w["annotator"])
    assert a["agreement"]["krippendorff_alpha"] == b["agreement"]["krippendorff_alpha"]
    assert _by_pair(a) == _by_pair(b)
