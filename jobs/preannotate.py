"""Pre-annotation: a fitted model that reads the text labels documents nobody annotated.

The use case behind ``crowdqa aggregate --predict DOCS --predictions OUT``: a model learned from the crowd
(the one just fitted, or an earlier job's, ``--from-model``, which ``GET /jobs/{id}/model`` serves) labels
new documents, so an annotation team can pre-fill its next batch. Only a model with a text model of its own
can do this (its estimator says so with ``labels_unannotated``: a tagger that votes on any document); the others
know nothing of a document without labels and are refused by name.

The service's way (``POST /jobs/{id}/predictions``, the dashboard's job page): :func:`start_prediction` checks the
job, reads the uploaded documents as an upload is read (the same readers and bounds; a file without labels is what
it expects) and queues a :class:`~crowdqa.store.models.Prediction`; the queue's worker runs :func:`label_prediction`
(``crowdqa.jobs.tasks.run_pre_annotation``) and :func:`prediction_labels` writes the labels as a job's labels are
written, in the shape ``--predictions`` writes them.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np
from numpy.typing import NDArray
from rq import Queue
from sqlmodel import Session

from crowdqa.aggregation.corpus import Corpus
from crowdqa.jobs.errors import JobNotRunnableError, QueueUnavailableError
from crowdqa.store import crud
from crowdqa.store.models import Job, JobStatus, Prediction, utcnow
from crowdqa.store.settings import Settings

__all__ = ["pre_annotation_methods", "check_pre_annotation", "read_documents", "pre_annotate", "label_documents",
           "PreAnnotationRefusedError", "model_method", "check_job_can_predict", "start_prediction",
           "label_prediction", "prediction_formats", "prediction_labels", "delete_prediction", "requeue_predictions"]


def pre_annotation_methods() -> tuple[str, ...]:
    """The methods whose fitted model labels documents nobody annotated (their estimator says so)."""
    from crowdqa.aggregation.registry import METHODS, aggregator_class

    return tuple(m for m in METHODS if getattr(aggregator_class(m), "labels_unannotated", False))


def check_pre_annotation(method: str) -> None:
    """ValueError naming the methods that can, for a ``method`` whose model cannot label unannotated documents."""
    if method not in pre_annotation_methods():
        raise ValueError(f"--predict needs a method whose model reads the text: {method} labels only what annotators "
                         f"labelled; use {', '.join(pre_annotation_methods())}")


def read_documents(path: str | os.PathLike, *, format: str, options: dict[str, Any]) -> Corpus:
    """The documents of ``path`` (read as ``format``, like an upload), their labels, if any, left out.

    Raises IngestError (naming the file) for a file that cannot be read, and for one with no document.
    """
    from crowdqa.ingest import read_merged
    from crowdqa.ingest.errors import IngestError

    corpus = read_merged([dict(path=path, format=format, role="crowd", **options)]).corpus
    if corpus.n_tokens == 0:
        raise IngestError("the file holds no document with tokens to label", source=str(path))
    return corpus


def pre_annotate(state: dict[str, NDArray], *, method: str, params: dict[str, Any] | None,
                 documents: Corpus) -> tuple[NDArray[np.int64], Corpus]:
    """Labels of ``documents`` under a fitted model's state (``fitted_state`` plus ``class_names``).

    Returns
    -------
    labels : ndarray of shape (n_tokens,)
        Class indices of the model's classes.
    corpus : Corpus
        ``documents`` without labels, in the model's classes (what the labels are written with).
    """
    from crowdqa.aggregation import make_aggregator
    from crowdqa.aggregation.batches import restore_state

    check_pre_annotation(method)
    bare = _without_labels(documents, class_names=tuple(str(c) for c in state["class_names"].tolist()))
    model = restore_state(make_aggregator(method, dict(params or {})), state)
    return np.asarray(model.predict(bare), dtype=np.int64), bare


def label_documents(state: dict[str, NDArray], *, method: str, params: dict[str, Any] | None,
                    path: str | os.PathLike, format: str, options: dict[str, Any], output: str | os.PathLike,
                    output_format: str) -> Corpus:
    """Read the documents of ``path``, label them with the model ``state`` and write the labels to ``output``
    (``crowdqa aggregate --predict``); returns the documents as labelled (without their labels)."""
    from crowdqa.ingest.writers import write_labels

    labels, corpus = pre_annotate(state, method=method, params=params,
                                  documents=read_documents(path, format=format, options=options))
    write_labels(labels, corpus, output, format=output_format)
    return corpus


# ---------------------------------------------------------------- the service's way: a prediction on the queue
class PreAnnotationRefusedError(JobNotRunnableError):
    """A finished job whose model cannot label documents nobody annotated (its method does not read the text)."""


def model_method(*, session: Session, job: Job) -> str:
    """The method whose model a finished job fitted and kept: its own, or for ``auto`` the one it chose (its report's
    ``method``). The one answer for every entry point that labels new documents (the API's pre-annotation, a Label
    Studio push's drafts)."""
    from crowdqa.aggregation.registry import METHODS

    if str(job.method) in METHODS:
        return str(job.method)
    report = crud.get_report(session=session, job_id=job.id)
    return str((report.body if report is not None else {}).get("method") or job.method)


def check_job_can_predict(*, session: Session, job: Job) -> str:
    """The method whose model labels new documents for ``job``; JobNotFinishedError for a job that has not finished,
    PreAnnotationRefusedError for a method that cannot (both 409)."""
    from crowdqa.jobs.finished import check_finished

    check_finished(job)
    method = model_method(session=session, job=job)
    if method not in pre_annotation_methods():
        raise PreAnnotationRefusedError(
            f"job {job.id} ran {method}, whose model labels only what annotators labelled: pre-annotation needs a "
            f"method whose model reads the text ({', '.join(pre_annotation_methods())}); run one on the dataset")
    if "model" not in (job.artifacts or {}):
        from crowdqa.jobs.errors import JobModelMissingError

        raise JobModelMissingError(f"job {job.id} kept no fitted model (it finished before crowdqa kept them): "
                                   "re-run it first")
    return method


def _read_upload(*, settings: Settings, path: Path, filename: str, format: str,
                 options: dict[str, Any]) -> tuple[Corpus, dict[str, Any]]:
    """The documents of a stored upload, read as any upload is (:func:`crowdqa.jobs.uploads.parse_upload`, within
    the document bounds), and their summary; IngestError for a file without a document."""
    from crowdqa.ingest.errors import IngestError
    from crowdqa.jobs.uploads import UploadLimits, parse_upload

    parsed = parse_upload(path, format=format, role="crowd", options=options, filename=filename,
                          document_limits=UploadLimits.of(settings).document)
    corpus = parsed.corpus
    if corpus.n_tokens == 0:
        raise IngestError(f"the file holds no document with tokens to label (read as {format!r})", source=filename)
    summary = {"documents": corpus.n_docs, "tokens": corpus.n_tokens,
               **({"notes": list(parsed.notes)[:20]} if parsed.notes else {})}
    return corpus, summary  # kept as read: its labels, if any, are left out when it is labelled


def _without_labels(documents: Corpus, *, class_names: tuple[str, ...]) -> Corpus:
    """``documents`` (tokens, texts and ids) with no label and no annotator, in the classes ``class_names``."""
    return Corpus.from_arrays(token=[], worker=[], label=[], doc_lengths=documents.doc_lengths,
                              token_start=documents.token_start, token_end=documents.token_end,
                              doc_ids=documents.doc_ids, texts=documents.texts, worker_ids=[], worker_roles=[],
                              class_names=class_names)


def start_prediction(*, session: Session, settings: Settings, queue: Queue, job: Job, stream: BinaryIO,
                     filename: str, format: str, options: dict[str, Any]) -> Prediction:
    """Check that ``job`` can label new documents, read the uploaded documents, keep them and queue their labelling.

    Raises, before anything is kept or queued: JobNotFinishedError or PreAnnotationRefusedError (409) for the job;
    QuotaExceededError (429) past the project's limits (an upload is counted as an upload); UploadTooLargeError
    (413) past ``CROWDQA_MAX_UPLOAD_BYTES``; IngestError (422) for a file that cannot be read, holds no document or
    a document past the document bounds. QueueUnavailableError (503) leaves the row failed.
    """
    from crowdqa.jobs.queue import PRE_ANNOTATION_FAILURE_CALLBACK, PRE_ANNOTATION_TASK, enqueue_job
    from crowdqa.jobs.quotas import check_prediction_quota
    from crowdqa.jobs.uploads import admit_upload, discard_raw, store_raw
    from crowdqa.quality.json_data import plain_json
    from crowdqa.store.artifacts import ArtifactStore

    method = check_job_can_predict(session=session, job=job)
    check_prediction_quota(session=session, settings=settings, project_id=job.project_id)
    admit_upload(session=session, settings=settings, project_id=job.project_id)
    store = ArtifactStore(settings.data_dir)
    raw = store_raw(session=session, settings=settings, project_id=job.project_id, data=stream, filename=filename)
    try:  # only the documents as read are kept: the raw bytes go (unless an upload keeps the same file)
        documents, summary = _read_upload(settings=settings, path=store.path(raw), filename=filename, format=format,
                                          options=options)
    finally:
        discard_raw(session=session, store=store, raw=raw)
    kept = store.put_corpus(documents)
    prediction = crud.create_prediction(session=session, prediction=Prediction(
        project_id=job.project_id, job_id=job.id, method=method, filename=crud.text_safe(filename)[:300],
        format=format, options=plain_json(options), size=raw.size, documents_sha256=kept.sha256,
        summary=plain_json(summary)))
    try:
        enqueue_job(queue, prediction.id, settings=settings, task=PRE_ANNOTATION_TASK,
                    on_failure=PRE_ANNOTATION_FAILURE_CALLBACK, what="pre-annotation")
    except QueueUnavailableError as exc:
        crud.update_prediction(session=session, prediction_id=prediction.id, only_if=JobStatus.queued,
                               status=JobStatus.failed, finished_at=utcnow(),
                               error=f"not queued: {exc}; upload the documents again when the queue is back")
        raise
    return prediction


def label_prediction(settings: Settings, prediction: Prediction, *,
                     progress: Callable[[str], None] = lambda stage: None) -> dict[str, Any]:
    """Label a claimed pre-annotation's documents with its job's model; return the artifacts to finish it with
    (``labels``: the class index of every token, with the model's ``class_names``). ValueError when the job or its
    model is gone."""
    from crowdqa.jobs.batches import job_model
    from crowdqa.store.artifacts import ArtifactStore
    from crowdqa.store.db import open_session

    progress("reading")
    with open_session(settings) as session:
        job = session.get(Job, prediction.job_id)
        if job is None:
            raise ValueError(f"job {prediction.job_id} was deleted; its model is gone")
        state = job_model(settings, job)
        params = dict(job.params or {}) if job.method == prediction.method else {}
    store = ArtifactStore(settings.data_dir)
    documents = store.load_corpus(prediction.documents_sha256)
    progress("labelling")
    labels, _ = pre_annotate(state, method=prediction.method, params=params, documents=documents)
    progress("writing")
    # The class names travel with the labels: a re-run of the job later may fit other classes.
    return {"labels": store.put_arrays(labels=labels, class_names=state["class_names"]).as_dict()}


def prediction_formats(*, session: Session, prediction: Prediction) -> list[str]:
    """The formats a pre-annotation's labels can be written in: its job's aggregate's (spans or tags), but for
    token-scores, which writes calibrated scores (predictions carry labels only, as ``--predictions`` writes them)."""
    from crowdqa.jobs.exports import label_formats

    return [f for f in label_formats(crud.report_kind(session=session, job_id=prediction.job_id))
            if f != "token-scores"]


def prediction_labels(*, session: Session, settings: Settings, prediction: Prediction, format: str):
    """A finished pre-annotation's labels in ``format``, as :func:`label_documents` writes them, in a temporary
    file (:class:`crowdqa.jobs.exports.LabelsFile`). JobNotFinishedError (409) before it finished; ValueError
    (422) for a format its labels do not have."""
    from crowdqa.jobs.errors import JobNotFinishedError
    from crowdqa.jobs.exports import labels_file
    from crowdqa.store.artifacts import ArtifactStore

    if prediction.status != JobStatus.finished:
        raise JobNotFinishedError(f"pre-annotation {prediction.id} is {prediction.status.value}, not finished"
                                  + (f": {prediction.error}" if prediction.error else ""))
    formats = prediction_formats(session=session, prediction=prediction)
    if format not in formats:
        raise ValueError(f"format must be one of {', '.join(formats)} for these labels, found {format!r}")
    store = ArtifactStore(settings.data_dir)
    stored = store.load_arrays(prediction.artifacts["labels"])
    names = tuple(str(c) for c in stored["class_names"].tolist())
    corpus = _without_labels(store.load_corpus(prediction.documents_sha256), class_names=names)
    return labels_file(stored["labels"], corpus, format=format, name=f"{prediction.id}-predictions")


def delete_prediction(*, session: Session, settings: Settings, queue: Queue, prediction: Prediction) -> None:
    """Delete a pre-annotation and its files; a queued one leaves the queue, a running one finds its row gone when
    it would save."""
    from crowdqa.jobs.queue import cancel_job
    from crowdqa.jobs.uploads import collect_garbage

    if prediction.status == JobStatus.queued:
        cancel_job(queue, prediction.id)
    crud.delete_prediction(session=session, prediction=prediction)
    collect_garbage(session=session, settings=settings)


def requeue_predictions(settings: Settings) -> tuple[int, int]:
    """At an embedded server's start: fail the pre-annotations left running (the service stopped under them) and
    queue the queued ones again (the in-memory queue forgot them); returns (failed, queued)."""
    from crowdqa.jobs.queue import PRE_ANNOTATION_FAILURE_CALLBACK, PRE_ANNOTATION_TASK, enqueue_job, get_queue
    from crowdqa.store.db import open_session

    queue = get_queue(settings)
    with open_session(settings) as session:
        failed = crud.fail_running_predictions(
            session=session, error="abandoned: the service stopped while it ran; upload the documents again")
        queued = crud.queued_prediction_ids(session=session)
    for prediction_id in queued:
        enqueue_job(queue, prediction_id, settings=settings, task=PRE_ANNOTATION_TASK,
                    on_failure=PRE_ANNOTATION_FAILURE_CALLBACK, what="pre-annotation")
    return failed, len(queued)
