"""What a finished job gives out: its worker rows (a page, or all as CSV), its labels as a file, and the review
of its Mechanical Turk batch.

The API's job routes and the dashboard's pages and downloads call these; each raises
:class:`~crowdqa.jobs.errors.JobNotFinishedError` for a job that has not finished (or has no report), by the
one check of :mod:`crowdqa.jobs.finished`. The review is :mod:`crowdqa.jobs.review`'s, made from the report
and the batch file the job's dataset stores (the command line reviews a file without the store).
"""

from __future__ import annotations

import csv
import io
import shutil
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

from numpy.typing import NDArray
from sqlmodel import Session

from crowdqa.aggregation.corpus import Corpus
from crowdqa.ingest.formats import FORMATS, WRITE_FORMATS
from crowdqa.ingest.mturk_review import read_batch
from crowdqa.ingest.writers import LabelScores, csv_escape, write_labels
from crowdqa.jobs.errors import JobNotRunnableError
from crowdqa.jobs.finished import check_aggregated, finished_report
from crowdqa.jobs.review import ReviewOutcome, ReviewRules, review_batch, review_report
from crowdqa.jobs.uploads import load_job_corpus
from crowdqa.quality.report_model import QualityReport
from crowdqa.store import crud
from crowdqa.store.artifacts import ArtifactStore
from crowdqa.store.models import Job, Upload, WorkerScore
from crowdqa.store.settings import Settings

__all__ = ["QualityReport", "has_batch", "WORKER_COLUMNS", "LabelsFile", "label_formats", "worker_scores",
           "workers_csv", "export_labels", "labels_file", "review_job"]

#: The columns of a worker row, in the order the CSV export writes them (the store's sortable columns).
WORKER_COLUMNS = crud.WORKER_SORT_KEYS


def label_formats(kind: str | None) -> list[str]:
    """The output formats that fit a report of this kind (categorical answers: categorical-csv only)."""
    if kind == "tags":  # a tag per token: no spans to write
        return [f for f in WRITE_FORMATS if f in ("conll", "tokens-csv", "tokens-jsonl")]
    return [f for f in WRITE_FORMATS if (f == "categorical-csv") == (kind == "categorical")]


def worker_scores(*, session: Session, job: Job, sort: str | None = None, order: str = "asc", offset: int = 0,
                  limit: int = 100) -> tuple[list[WorkerScore], int]:
    """One page of a finished job's worker rows, sorted (default: f1 for span reports, accuracy for categorical
    ones), and the count. ValueError for a sort key a categorical report's rows do not have."""
    check_aggregated(job)
    kind = crud.report_kind(session=session, job_id=job.id) or "spans"
    if sort is None:
        sort = crud.DEFAULT_SORT.get(kind, "annotator")
    if kind in crud.ACCURACY_KINDS and sort not in crud.CATEGORICAL_SORT_KEYS:
        raise ValueError(f"sort: job {job.id} has a categorical report, whose workers have no {sort}; "
                         f"sort by one of {', '.join(crud.CATEGORICAL_SORT_KEYS)}")
    return crud.list_worker_scores(session=session, job_id=job.id, sort=sort, order=order, offset=offset,
                                   limit=limit)


def workers_csv(rows: list[WorkerScore]) -> str:
    """Worker rows as CSV (:data:`WORKER_COLUMNS`), text cells escaped against spreadsheet formulas."""
    buf = io.StringIO()
    out = csv.writer(buf)
    out.writerow(WORKER_COLUMNS)
    for r in rows:
        out.writerow([csv_escape(v) if isinstance(v := getattr(r, c), str) else ("" if v is None else v)
                      for c in WORKER_COLUMNS])
    return buf.getvalue()


@dataclass(frozen=True)
class LabelsFile:
    """The labels of a job written to a temporary file; remove ``folder`` once the file has been sent."""

    path: Path
    folder: Path
    media_type: str
    filename: str

    def chunks(self, size: int = 1 << 16):
        """The file's bytes, in chunks."""
        with open(self.path, "rb") as fh:
            yield from iter(lambda: fh.read(size), b"")

    def remove(self) -> None:
        """Remove the temporary folder."""
        shutil.rmtree(self.folder, ignore_errors=True)


def export_labels(*, settings: Settings, job: Job, format: str) -> LabelsFile:
    """Write a finished job's aggregate in ``format`` (a folder format: the folder zipped) to a temporary file."""
    check_aggregated(job)
    if format not in WRITE_FORMATS:
        raise ValueError(f"format must be one of {', '.join(WRITE_FORMATS)}, found {format!r}")
    store = ArtifactStore(settings.data_dir)
    stored = store.load_arrays(job.artifacts["labels"])
    labels = stored["labels"]
    corpus = load_job_corpus(store, job.corpus_sha256, n_tokens=len(labels))
    scores = None
    if "token_score" in stored:  # a job finished before scores were kept has none
        calibrated = store.load_arrays(job.artifacts["proba"]).get("calibrated")
        if calibrated is not None:
            scores = LabelScores(token=stored["token_score"], span=stored["span_score"], proba=calibrated)
    return labels_file(labels, corpus, format=format, scores=scores, name=job.id)


def labels_file(labels: NDArray, corpus: Corpus, *, format: str, scores: LabelScores | None = None,
                name: str) -> LabelsFile:
    """Write ``labels`` of ``corpus``'s tokens in ``format`` (a folder format: the folder zipped) to a temporary
    file sent as ``<name><suffix>``: a job's aggregate, or a pre-annotation's labels."""
    writer = FORMATS[format].writer
    folder = Path(tempfile.mkdtemp(prefix="crowdqa-labels-"))
    target = folder / f"labels{writer.suffix}"
    try:
        if writer.folder:  # sent as a zip of the folder
            out = folder / format
            write_labels(labels, corpus, out, format=format, scores=scores)
            with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as zf:
                for f in sorted(out.rglob("*")):
                    if f.is_file():
                        zf.write(f, f.relative_to(out).as_posix())
        else:
            write_labels(labels, corpus, target, format=format, scores=scores)
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise
    return LabelsFile(path=target, folder=folder, media_type=writer.media_type, filename=f"{name}{writer.suffix}")


def has_batch(*, session: Session, job: Job) -> bool:
    """True when the job's dataset holds a Mechanical Turk batch-results (mturk-csv) crowd upload to review."""
    return bool(crud.dataset_uploads(session=session, dataset_id=job.dataset_id, format="mturk-csv", role="crowd"))


def _batch_upload(session: Session, job: Job, upload_id: str | None) -> Upload:
    """The mturk-csv crowd upload of the job's dataset to review: ``upload_id``, or the only one."""
    if upload_id is not None:
        found = crud.dataset_uploads(session=session, dataset_id=job.dataset_id, upload_ids=[upload_id])
        if not found:
            raise LookupError(f"no upload {upload_id!r} in the job's dataset")
        if found[0].format != "mturk-csv":
            raise ValueError(f"upload {upload_id} is {found[0].format}, not an mturk-csv batch-results file")
        return found[0]
    batches = crud.dataset_uploads(session=session, dataset_id=job.dataset_id, format="mturk-csv", role="crowd")
    if not batches:
        raise JobNotRunnableError(f"the dataset of job {job.id} has no mturk-csv crowd upload to review")
    if len(batches) > 1:
        raise ValueError(f"the dataset holds {len(batches)} mturk-csv uploads; name one with upload_id "
                         f"({', '.join(u.id for u in batches)})")
    return batches[0]


def review_job(*, session: Session, settings: Settings, job: Job, rules: ReviewRules,
               upload_id: str | None = None, block_from: str = "verdict") -> ReviewOutcome:
    """Review a finished job's workers by its report: the Mechanical Turk batch-results upload of its dataset
    assignment by assignment when it has one (or ``upload_id`` names one), else every crowd worker of the report
    (any upload format; :func:`crowdqa.jobs.review.review_report`).

    Raises JobNotFinishedError (the job is not finished, :func:`crowdqa.jobs.finished.check_aggregated`),
    JobNotRunnableError (the upload is not part of the job's snapshot), LookupError (no such upload) and
    ValueError (rules).
    """
    report = finished_report(session=session, job=job)
    blocked = crud.blocked_annotators(session=session, project_id=job.project_id)
    if upload_id is None and not has_batch(session=session, job=job):
        formats = sorted({u.format for u in crud.dataset_uploads(session=session, dataset_id=job.dataset_id,
                                                                 role="crowd")})
        return review_report(report, rules, blocked=blocked, block_from=block_from,
                             source_format=", ".join(formats))
    upload = _batch_upload(session, job, upload_id)
    store = ArtifactStore(settings.data_dir)
    parts = store.snapshot_parts(job.corpus_sha256) or [job.corpus_sha256]
    if upload.corpus_sha256 not in parts:
        raise JobNotRunnableError(f"upload {upload.id} was added after job {job.id} ran: re-run the job to "
                                  "review it")
    batch = read_batch(store.path(upload.raw_path).read_bytes(), source=upload.filename)
    return review_batch(batch, report, rules, blocked=blocked, block_from=block_from)
