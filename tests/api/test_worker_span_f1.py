"""GET /jobs/{id}/workers?sort=span_f1: the workers' strict span F1 against the experts, stored and sortable."""

from __future__ import annotations

import pytest

from crowdqa.ingest import read_corpus
from crowdqa.ingest.merge import merge_corpora
from tests.api.conftest import SAMPLE, auth, sample_dataset, wait_job
from tests.quality.test_report_worker_spans import _brute_force


def test_workers_sort_by_span_f1(client, keys):
    """Oracle: each crowd worker's strict span F1 by the brute force of tests/quality (Python sets of
    (document, start, end) against the union of the experts) on the sample files read directly; the rows come
    sorted by it both ways, the expert (no span score) last."""
    key = keys["a"]
    ds = sample_dataset(client, key)
    r = client.post(f"/api/v1/datasets/{ds}/jobs", headers=auth(key), json={"method": "mv"})
    assert r.status_code == 202, r.text
    job = r.json()["id"]
    assert wait_job(client, job, key)["status"] == "finished"

    corpus = merge_corpora([read_corpus(SAMPLE / "crowd.jsonl", format="spans-jsonl").corpus,
                            read_corpus(SAMPLE / "expert.jsonl", format="spans-jsonl", role="expert").corpus])
    expected = {}
    for w, counts in enumerate(_brute_force(corpus, "union")):
        if counts is not None:
            tp, fp, fn, _ = counts
            expected[corpus.worker_ids[w]] = 2 * tp / (2 * tp + fp + fn) if tp + fp + fn else None
    assert len(expected) == 10 and len(set(expected.values())) > 3  # every crowd worker, different scores

    for order in ("asc", "desc"):
        rows = client.get(f"/api/v1/jobs/{job}/workers?sort=span_f1&order={order}", headers=auth(key)).json()
        assert rows["count"] == 11
        got = [(w["annotator"], w["span_f1"]) for w in rows["data"]]
        assert got[-1] == ("upwork:md1", None)
        scores = [f for _, f in got[:-1]]
        assert scores == sorted(scores, reverse=order == "desc")
        assert dict(got[:-1]) == pytest.approx(expected)
        for w in rows["data"][:-1]:
            assert w["span_f1"] == w["detail"]["span_vs_expert"]["f1"]
