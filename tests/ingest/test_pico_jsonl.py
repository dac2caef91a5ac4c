"""crowdqa.ingest.pico_jsonl: PICO-data JSON Lines."""

from __future__ import annotations

import json

import pytest

from crowdqa.ingest import read_corpus
from crowdqa.ingest.errors import IngestError
from crowdqa.ingest.merge import merge_corpora
from tests.conftest import shared_path


def _layout(root):
    (root / "docs").mkdir()
    (root / "docs" / "1.txt").write_text("Forty adults with asthma.")
    (root / "docs" / "2.txt").write_text("Mice were used.")
    ann = root / "annotations" / "dev"
    ann.mkdir(parents=True)
    lines = [
        {"docid": "1", "Participants": {"W1": [[0, 12]], "W2": []}, "Outcome": {"W1": [[18, 24]]}},
        {"docid": "2", "Participants": {"W2": [[0, 4], [2, 9]]}},
    ]
    (ann / "crowd.json").write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    return ann / "crowd.json"


def test_docs_found_beside_the_file_category_and_empty_assignment(tmp_path):
    p = _layout(tmp_path)
    with pytest.raises(IngestError, match="categories Participants, Outcome: choose one"):
        read_corpus(p, format="pico-jsonl")
    c = read_corpus(p, format="pico-jsonl", category="P").corpus
    assert c.doc_ids == ("1", "2") and c.worker_ids == ("pico:W1", "pico:W2")
    assert c.class_names == ("O", "Participants")
    assert c.labels_of(0).tolist() == [1, 1, 0, 0, 0, -1, -1, -1, -1]
    assert c.labels_of(1).tolist() == [0, 0, 0, 0, 0, 1, 1, 0, 0]  # overlapping same-type spans merge
    o = read_corpus(p, format="pico-jsonl", category="outcome", role="expert").corpus
    assert o.class_names == ("O", "Outcome") and o.worker_roles == ("expert",)


def test_missing_text_and_bad_span(tmp_path):
    p = _layout(tmp_path)
    p.write_text(json.dumps({"docid": "3", "Participants": {"W1": [[0, 1]]}}) + "\n"
                 + json.dumps({"docid": "1", "Participants": {"W1": [[0, "x"]]}}) + "\n")
    res = read_corpus(p, format="pico-jsonl", on_error="skip")
    assert [(x.line, x.message.split(":")[0]) for x in res.problems] == [
        (1, "no text for document '3' in " + str(tmp_path / "docs")), (2, "span of 'W1'")]
    (tmp_path / "docs").rename(tmp_path / "texts")
    with pytest.raises(IngestError, match="carry no texts: give the folder"):
        read_corpus(p, format="pico-jsonl")
    assert read_corpus(p, format="pico-jsonl", docs=tmp_path / "texts", on_error="skip").corpus.n_docs == 0


def test_expert_dev_crowd_and_experts_merge():
    """Oracle: annotator and document counts read from the JSON files with json.loads, independently.

    The shared docs/ folder may hold texts that do not match the offsets (see the benchmark
    notes); spans outside the text are skipped and counted, never a traceback."""
    d = shared_path("pico", "annotations", "expert-dev")
    crowd = read_corpus(d / "PICO-annos-crowdsourcing.json", format="pico-jsonl", on_error="skip")
    prof = read_corpus(d / "PICO-annos-professional.json", format="pico-jsonl", role="expert", on_error="skip")
    allprof = read_corpus(d / "PICO-annos-allprof.json", format="pico-jsonl", role="expert",
                          category="Participants", on_error="skip")
    merged = merge_corpora([crowd.corpus, prof.corpus, allprof.corpus])
    recs = [json.loads(x) for x in (d / "PICO-annos-crowdsourcing.json").read_text().splitlines() if x.strip()]
    experts = {k for f in ("PICO-annos-professional.json", "PICO-annos-allprof.json")
               for x in (d / f).read_text().splitlines() if x.strip()
               for k in json.loads(x).get("Participants", {})}
    assert merged.n_docs == len(recs) == 64
    assert len(merged.workers_with_role("crowd")) == len({k for r in recs for k in r["Participants"]})
    assert {w for w, r in zip(merged.worker_ids, merged.worker_roles, strict=True) if r == "expert"} == {
        f"pico:{k}" for k in experts}
    for res in (crowd, prof, allprof):
        assert all("is not inside document" in p.message for p in res.problems)
