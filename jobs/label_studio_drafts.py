"""Drafts in Label Studio: a finished job's model labels the project's tasks that nobody annotated yet.

A push (:func:`crowdqa.jobs.label_studio.push`) of a job whose model reads the text (a method of
:func:`~crowdqa.jobs.preannotate.pre_annotation_methods`, and the job kept its model) also writes a prediction on
each task of the Label Studio project that holds no annotation (Label Studio's ``total_annotations`` is 0) and is not
one of the job's own tasks: the task's text is read from Label Studio (``GET /api/tasks?include=id,data``, paged,
within the push's time and bytes), made a document as the pull makes one (the task as a ``label-studio`` export
task, read by the same reader, with the same bounds of a document), and labelled by the job's saved model
(:func:`~crowdqa.jobs.preannotate.pre_annotate`), so the next batch of an annotation team opens pre-filled.

The drafts take the job's model version, the one the push makes the project's: Label Studio pre-fills its editor
with the predictions of the project's model version only (``Task.get_predictions_for_prelabeling`` in 1.23), so a
draft in a version of its own would not be shown. A draft carries no score: the calibrated scores are of the
aggregate of what annotators labelled, and nothing measures a draft of an unseen text task by task (the tagger's
benchmark gives its quality on unseen sentences as a whole). So a project's data manager still sorts the annotated
tasks by the crowd's disputes, and the drafted ones stay without a prediction score, as before.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from tempfile import TemporaryDirectory
from typing import Any

from numpy.typing import NDArray
from sqlmodel import Session

from crowdqa.aggregation.corpus import Corpus
from crowdqa.aggregation.spans import decode_spans
from crowdqa.ingest.label_studio_api import LabelConfig, LabelStudio, prediction_result, upload_bytes
from crowdqa.ingest.limits import DocumentLimits
from crowdqa.jobs.batches import job_model
from crowdqa.jobs.errors import JobModelMissingError
from crowdqa.jobs.preannotate import model_method, pre_annotate, pre_annotation_methods, read_documents
from crowdqa.store.models import Job
from crowdqa.store.settings import Settings

__all__ = ["DraftModel", "Drafts", "draft_model", "model_method", "draft_predictions", "document_spans",
           "undrafted_note"]


@dataclass(frozen=True)
class DraftModel:
    """A finished job's fitted model that labels texts nobody annotated, as plain values (no row of the database)."""

    method: str
    params: dict[str, Any]
    state: dict[str, NDArray]


@dataclass
class Drafts:
    """The draft predictions of a push and what it noticed of the tasks it could not draft."""

    rows: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def draft_model(*, session: Session, settings: Settings, job: Job) -> tuple[DraftModel | None, str]:
    """The job's model if it can label tasks nobody annotated, else None and why not (a clause for a note or a
    refusal)."""
    method = model_method(session=session, job=job)
    able = pre_annotation_methods()
    if method not in able:
        return None, (f"{method} labels only what annotators labelled (its model reads no text); a job of "
                      f"{', '.join(able)} pre-annotates them")
    try:
        state = job_model(settings, job)
    except JobModelMissingError as exc:
        return None, f"{exc}; run the job again to pre-annotate them"
    return DraftModel(method=method, params=dict(job.params or {}) if str(job.method) == method else {},
                      state=state), ""


def draft_predictions(client: LabelStudio, ls_project: int, config: LabelConfig, model: DraftModel, *,
                      skip: set[int], version: str, limits: DocumentLimits) -> Drafts:
    """Predictions of ``model`` on the project's tasks that hold no annotation, but those in ``skip`` (the job's
    own tasks, which the aggregate covers): one per task with a text, in model version ``version``, without a
    score. Tasks without a text under the config's key, or longer than a document may be, get none (a note each
    kind)."""
    drafts = Drafts()
    if config.kind != "spans":
        return drafts
    tasks, untexted, too_long = [], 0, 0
    for task in client.unannotated_tasks(ls_project):
        data = task.get("data") if isinstance(task, dict) else None
        text = data.get(config.text_key) if isinstance(data, dict) else None
        if not isinstance(task, dict) or not isinstance(task.get("id"), int) or task["id"] in skip:
            continue
        if not isinstance(text, str) or not text.strip():
            untexted += 1
        elif len(text) > limits.max_chars:
            too_long += 1
        else:
            tasks.append({"id": task["id"], "data": {config.text_key: text}, "annotations": []})
    if untexted:
        drafts.notes.append(f"no draft for {_tasks(untexted)} without annotation and without text under "
                            f"{config.text_key!r}")
    if too_long:
        drafts.notes.append(f"no draft for {_tasks(too_long)} without annotation and with more than "
                            f"{limits.max_chars} characters (CROWDQA_MAX_DOCUMENT_CHARS)")
    if not tasks:
        return drafts
    data, fmt, options = upload_bytes(tasks, config)
    with TemporaryDirectory(prefix="crowdqa-drafts-") as tmp:
        path = Path(tmp) / f"label-studio-{ls_project}-unannotated.json"
        path.write_bytes(data)
        documents = read_documents(path, format=fmt, options={**options, "limits": limits})
    labels, corpus = pre_annotate(model.state, method=model.method, params=model.params, documents=documents)
    drafts.rows = [{"task": int(doc_id), "model_version": version,
                    "result": prediction_result(config, [span for span, _ in spans], text=text)}
                   for doc_id, text, spans in zip(corpus.doc_ids, corpus.texts, document_spans(labels, corpus),
                                                  strict=True)]
    return drafts


def document_spans(labels: NDArray, corpus: Corpus) -> list[list[tuple[tuple[int, int, str], int]]]:
    """The spans of ``labels`` (:func:`~crowdqa.aggregation.spans.decode_spans`) per document of ``corpus``, each as
    ``((start, end, type), k)``: character offsets in the document's text, the entity type, and the span's index in
    decoding order (where its score is)."""
    spans = decode_spans(labels, corpus)
    types = corpus.entity_types
    out: list[list[tuple[tuple[int, int, str], int]]] = [[] for _ in range(corpus.n_docs)]
    for k, (d, s, e, t) in enumerate(zip(spans.doc.tolist(), spans.start.tolist(), spans.end.tolist(),
                                         spans.type.tolist(), strict=True)):
        out[d].append(((s, e, types[t - 1]), k))
    return out


def undrafted_note(count: int, why: str) -> str:
    """The note of a push that could not pre-annotate the ``count`` tasks nobody annotated."""
    return f"no draft for the {_tasks(count)} of the project without annotation: {why}"


def _tasks(n: int) -> str:
    return f"{n} task" if n == 1 else f"{n} tasks"
