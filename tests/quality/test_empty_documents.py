"""A report of an upload with documents without tokens (whitespace-only or empty texts), end to end."""

from __future__ import annotations

import numpy as np

from crowdqa.ingest.brat import read_brat
from crowdqa.quality.report import build_report_data


def test_brat_upload_with_empty_texts_is_reported(tmp_path):
    """Oracle: counting by hand. Three annotators on one text of three tokens, beside an empty and a
    whitespace-only text (first and last in document order): each annotator labelled one document, each crowd
    pair shares that one document and its three tokens (the empty texts hold no annotation to share)."""
    for a in ("alice", "bob", "carol"):
        (tmp_path / a).mkdir()
        for doc, text, ann in (("a0", "", ""), ("d1", "Patients with asthma", "T1\tP 0 8\tPatients\n"),
                               ("z2", "   ", "")):
            (tmp_path / a / f"{doc}.txt").write_text(text, encoding="utf-8")
            (tmp_path / a / f"{doc}.ann").write_text(ann if a != "bob" else "", encoding="utf-8")
    corpus = read_brat(tmp_path)
    assert corpus.doc_ids == ("a0", "d1", "z2") and corpus.doc_lengths.tolist() == [0, 3, 0]
    report = build_report_data(corpus, np.zeros(corpus.n_tokens, dtype=np.int64), method="mv",
                               experts_used_in_fit=False, min_pair_docs=1)
    assert report["counts"]["documents"] == 3 and report["counts"]["annotations"] == 9
    assert [w["documents"] for w in report["workers"]] == [1, 1, 1]
    pairs = report["agreement"]["crowd_kappa"]
    assert [(p["a"], p["b"], p["documents"], p["tokens"]) for p in pairs] == [
        ("alice", "bob", 1, 3), ("alice", "carol", 1, 3), ("bob", "carol", 1, 3)]
