"""Which tasks a push drafts, on an httpx fake of Label Studio's task listing (the real server:
tests/label_studio/test_push_drafts.py).

Oracle: the model's own labels of the same texts, read as a ``spans-jsonl`` upload of them would be
(:func:`crowdqa.jobs.preannotate.pre_annotate` on another reader's corpus), decoded to character spans.
"""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import numpy as np
import pytest

from crowdqa.aggregation import make_aggregator
from crowdqa.aggregation.batches import fitted_state
from crowdqa.aggregation.spans import decode_spans
from crowdqa.ingest import read_merged
from crowdqa.ingest.label_studio_api import LabelConfig, LabelStudio
from crowdqa.ingest.limits import DocumentLimits
from crowdqa.jobs.label_studio_drafts import DraftModel, draft_predictions
from crowdqa.jobs.preannotate import pre_annotate, pre_annotation_methods

SAMPLE = Path(__file__).resolve().parents[2] / "api" / "sample" / "crowd.jsonl"
CONFIG = LabelConfig(kind="spans", from_name="label", to_name="text", text_key="body", labels=())
TEXTS = {11: "Eligible adults with type 2 diabetes were given cognitive therapy .",
         12: "Participants were 40 children recruited from two schools .",
         13: "   ", 14: None, 15: "x " * 60, 16: "A task of the job's own ."}


@pytest.fixture(scope="module")
def model() -> DraftModel:
    """The first method that pre-annotates, fitted on the bundled sample's crowd."""
    method = pre_annotation_methods()[0]
    corpus = read_merged([{"path": SAMPLE, "format": "spans-jsonl", "role": "crowd"}]).corpus
    fitted = make_aggregator(method, {"random_state": 0}).fit(corpus)
    state = {**fitted_state(fitted), "class_names": np.asarray(corpus.class_names, dtype=str)}
    return DraftModel(method=method, params={}, state=state)


def _client(asked: list) -> LabelStudio:
    def answer(request: httpx.Request) -> httpx.Response:
        asked.append(dict(request.url.params))
        tasks = [{"id": k, "data": {} if text is None else {"body": text}} for k, text in TEXTS.items()]
        return httpx.Response(200, json={"total": len(tasks), "tasks": tasks})

    return LabelStudio("http://ls.test", "0" * 40, transport=httpx.MockTransport(answer))


def test_drafts_the_texts_of_unannotated_tasks_and_notes_those_it_cannot(model, tmp_path):
    """Tasks 11 and 12 are drafted as the model labels the same texts read through another reader; the job's own
    task (16) is skipped; a blank text and a task without the config's key get no draft (one note), and a text past
    the document bound another; the listing asked for is the unannotated tasks' ids and data alone."""
    asked: list = []
    with _client(asked) as client:
        drafts = draft_predictions(client, 7, CONFIG, model, skip={16}, version="crowdqa-x-job-1",
                                   limits=DocumentLimits(max_chars=100))
    assert [a["include"] for a in asked] == ["id,data"]
    filters = json.loads(asked[0]["query"])["filters"]["items"]
    assert filters == [{"filter": "filter:tasks:total_annotations", "operator": "equal", "type": "Number",
                        "value": 0}]
    assert drafts.notes == ["no draft for 2 tasks without annotation and without text under 'body'",
                            "no draft for 1 task without annotation and with more than 100 characters "
                            "(CROWDQA_MAX_DOCUMENT_CHARS)"]
    assert [(row["task"], row["model_version"], "score" in row) for row in drafts.rows] == [
        (11, "crowdqa-x-job-1", False), (12, "crowdqa-x-job-1", False)]

    path = tmp_path / "docs.jsonl"
    path.write_text("".join(json.dumps({"doc_id": str(k), "annotator": "nobody", "start": None, "end": None,
                                        "label": None, "text": TEXTS[k]}) + "\n" for k in (11, 12)))
    other = read_merged([{"path": path, "format": "spans-jsonl", "role": "crowd"}]).corpus
    labels, corpus = pre_annotate(model.state, method=model.method, params={}, documents=other)
    spans = decode_spans(labels, corpus)
    types = corpus.entity_types
    expected = {int(corpus.doc_ids[d]): [] for d in range(corpus.n_docs)}
    for d, s, e, t in zip(spans.doc.tolist(), spans.start.tolist(), spans.end.tolist(), spans.type.tolist(),
                          strict=True):
        expected[int(corpus.doc_ids[d])].append((s, e, types[t - 1], TEXTS[int(corpus.doc_ids[d])][s:e]))
    got = {row["task"]: [(r["value"]["start"], r["value"]["end"], r["value"]["labels"][0], r["value"]["text"])
                         for r in row["result"]] for row in drafts.rows}
    assert got == expected
    assert any(got.values())  # the model found spans: the comparison is not of empties
    assert {r["from_name"] for row in drafts.rows for r in row["result"]} == {"label"}


def test_a_choice_project_gets_no_draft_and_no_request(model):
    asked: list = []
    with _client(asked) as client:
        drafts = draft_predictions(client, 7, LabelConfig("choices", "c", "text", "body", ("a", "b")), model,
                                   skip=set(), version="v", limits=DocumentLimits())
    assert (drafts.rows, drafts.notes, asked) == ([], [], [])
