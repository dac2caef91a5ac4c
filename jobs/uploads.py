"""A dataset's uploads: store, parse and merge an uploaded file, remove one, delete the dataset.

Uploads are parsed, checked to merge with the dataset's other uploads and committed (raw bytes and parsed
corpus on disk, rows in the database) before any job can use them, so a job that dies never leaves a
half-written dataset. A dataset is the list of its uploads' corpora; a job runs on a snapshot of that
list, merged when it runs (:func:`load_job_corpus`). Stored files are content-addressed and shared between
rows, so they go only when no row names them (:func:`collect_garbage`). The API routes and the dashboard
call these (the command line reads files, not datasets: :mod:`crowdqa.jobs.local`).

Every entry point that adds uploads to a dataset (:func:`add_upload`, a Label Studio pull in
:mod:`crowdqa.jobs.label_studio`) takes the same steps, so each meets every guard: :func:`admit_upload` (the
project's limits; a pull takes its two checks apart, the count before it asks Label Studio for anything),
:func:`store_raw` or :func:`store_raws` (the size limit of :class:`UploadLimits` and the bytes kept; files of known
size, a pull's, are checked before a byte of them is stored), :func:`stage_upload` (a stored file made an upload
row: parse and summary) and :func:`merge_uploads` (the rows added to the dataset under its lock, with the checks
against its other uploads). A refused request removes the files it made (:func:`discard_raw`,
:func:`discard_staged`).
"""

from __future__ import annotations

import io
import logging
import tempfile
import threading
from collections import defaultdict
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path, PurePosixPath
from typing import Any, BinaryIO

from sqlmodel import Session

from crowdqa.aggregation.corpus import Corpus
from crowdqa.ingest import ParseResult, read_corpus
from crowdqa.ingest._inflate import BoundedZip
from crowdqa.ingest.errors import IngestError, Problem
from crowdqa.ingest.index import (
    CorpusIndex,
    KindConflict,
    annotator_counts,
    check_index_vocabularies,
    check_mergeable,
    index_corpus,
    index_union,
    summarize_indexes,
)
from crowdqa.ingest.limits import DocumentLimits
from crowdqa.ingest.merge import drop_expert_only, merge_corpora
from crowdqa.ingest.summary import summarize
from crowdqa.ingest.vocabulary import written_otherwise
from crowdqa.jobs.errors import DatasetBusyError, UploadConflictError
from crowdqa.jobs.quotas import check_stored_bytes, check_upload_rate
from crowdqa.quality.json_data import plain_json
from crowdqa.store import crud
from crowdqa.store.artifacts import Artifact, ArtifactStore, safe_suffix
from crowdqa.store.errors import UploadTooLargeError
from crowdqa.store.models import Dataset, LabelStudioLink, Upload, utcnow
from crowdqa.store.settings import Settings

__all__ = ["FORM_OVERHEAD", "UploadLimits", "load_job_corpus", "job_corpus", "extract_docs", "parse_upload",
           "add_upload", "admit_upload", "store_raw", "store_raws", "discard_raw", "discard_staged", "StagedUpload",
           "NoLabelsError", "stage_upload", "merge_uploads", "delete_upload", "delete_dataset", "collect_garbage",
           "dataset_locks", "corpus_index", "dataset_state", "check_dataset_vocabularies"]

logger = logging.getLogger(__name__)

#: One lock per dataset: an upload, a deletion or a Label Studio pull changes a dataset's uploads under it.
dataset_locks: defaultdict[str, threading.Lock] = defaultdict(threading.Lock)

#: Room for multipart headers and form fields on top of an uploaded file itself.
FORM_OVERHEAD = 64 * 1024


@dataclass(frozen=True)
class UploadLimits:
    """Every size limit of an upload, made from ``CROWDQA_MAX_UPLOAD_BYTES`` here only: the request gate refuses
    a larger request body before reading it (API and dashboard), :func:`add_upload` a larger file or docs zip
    (any entry point), and the docs zip's texts are unpacked up to ``texts`` bytes."""

    #: Bytes of the uploaded file, and of the docs zip.
    file: int
    #: Bytes of an upload request's body: the files and the form's other fields (:data:`FORM_OVERHEAD`).
    request: int
    #: Bytes the docs zip's texts may unpack to.
    texts: int
    #: The longest document a reader accepts (``CROWDQA_MAX_DOCUMENT_CHARS``, ``CROWDQA_MAX_DOCUMENT_TOKENS``).
    document: DocumentLimits = DocumentLimits()

    @classmethod
    def of(cls, settings: Settings) -> UploadLimits:
        return cls(file=settings.max_upload_bytes, request=settings.max_upload_bytes + FORM_OVERHEAD,
                   texts=4 * settings.max_upload_bytes,
                   document=DocumentLimits(max_chars=settings.max_document_chars,
                                           max_tokens=settings.max_document_tokens))


def load_job_corpus(store: ArtifactStore, sha: str, *, n_tokens: int | None = None) -> Corpus:
    """The corpus a job runs on: a dataset snapshot (the merge of its uploads' corpora) or one corpus file,
    without the documents only experts labelled (:func:`job_corpus`).

    ``n_tokens`` is the length of a finished job's stored labels: a job that ran before expert-only documents
    were left out has labels on them too, and gets the corpus it ran on (all documents) to read them with.
    """
    merged = _merged(store, sha)
    if n_tokens is not None and n_tokens == merged.n_tokens:
        return merged
    return drop_expert_only(merged, source="the dataset's expert uploads")[0]


def job_corpus(store: ArtifactStore, sha: str) -> tuple[Corpus, int]:
    """:func:`load_job_corpus` and how many expert documents it left out because no crowd annotator labelled
    them (:func:`crowdqa.ingest.merge.drop_expert_only`; IngestError when no expert document matches)."""
    return drop_expert_only(_merged(store, sha), source="the dataset's expert uploads")


def _merged(store: ArtifactStore, sha: str) -> Corpus:
    """A dataset snapshot's uploads merged (:func:`crowdqa.ingest.merge.merge_corpora`), or one corpus file."""
    parts = store.snapshot_parts(sha)
    return store.load_corpus(sha) if parts is None else merge_corpora([store.load_corpus(p) for p in parts])


def extract_docs(zip_path: Path, target: Path, *, max_bytes: int, max_files: int = 1_000_000) -> int:
    """Unpack the ``<doc_id>.txt`` files of a docs zip into ``target``; return how many.

    Only the base name of each member is used (no member path reaches the filesystem), other
    files are ignored, and the zip is read within the bounds of :mod:`crowdqa.ingest._inflate`
    (per member and in total, by size and by ratio, on the bytes actually decompressed: a zip
    bomb's headers may lie), in total at most ``max_bytes``. Raises IngestError for a bad zip, a
    duplicate name or too much data.
    """
    count = 0
    with BoundedZip(zip_path, source="docs", max_bytes=max_bytes) as zf:
        for info in zf.infos:
            name = PurePosixPath(info.filename.replace("\\", "/")).name
            if info.is_dir() or not name.endswith(".txt") or name.startswith("."):
                continue
            count += 1
            if count > max_files:
                raise IngestError(f"the docs zip holds more than {max_files} texts", source="docs")
            out = target / name
            if out.exists():
                raise IngestError(f"the docs zip holds {name!r} twice", source="docs")
            with open(out, "wb") as dst:
                zf.extract(info, dst)
    return count


def parse_upload(path, *, format: str, role: str, options: dict[str, Any], docs: Path | None = None,
                 filename: str | None = None, document_limits: DocumentLimits | None = None):
    """Parse a stored upload with ``ingest.read_corpus``; any parser failure becomes an IngestError.

    Messages and skipped-row records name the file as the client sent it (``filename``) and
    the docs zip as ``docs``, never the server's storage paths.
    """
    name = _shown_name(filename)  # the client's file name, as one printable line without folders
    names = {str(path): name, **({str(docs): "docs"} if docs is not None else {})}

    def shown(text: str) -> str:
        for stored, name in names.items():
            text = text.replace(stored, name)
        return text

    try:
        parsed = read_corpus(path, format=format, role=role, docs=docs, limits=document_limits, **options)
    except IngestError as exc:
        raise IngestError(shown(exc.detail), source=shown(exc.source), line=exc.line) from None
    except ValueError as exc:
        raise ValueError(shown(str(exc))) from None
    except RecursionError as exc:
        raise IngestError("the file is nested too deeply to parse", source=names[str(path)]) from exc
    except Exception as exc:  # noqa: BLE001 - a parser bug must still be a 4xx naming the file, never a 500
        logger.exception("parser %s failed on an upload", format)
        raise IngestError(f"cannot read the file as {format}: {type(exc).__name__}: {shown(str(exc))}",
                          source=names[str(path)]) from exc
    problems = [Problem(source=shown(q.source), line=q.line, message=shown(q.message)) for q in parsed.problems]
    return ParseResult(corpus=parsed.corpus, problems=problems, format=parsed.format,
                       notes=[shown(n) for n in parsed.notes], dropped=parsed.dropped)


def add_upload(*, session: Session, settings: Settings, dataset: Dataset, stream: BinaryIO, filename: str,
               format: str, role: str, options: dict[str, Any], docs_stream: BinaryIO | None = None) -> Upload:
    """Store, parse and merge one uploaded file into ``dataset``; return its row.

    ``docs_stream`` is an optional zip of ``<doc_id>.txt`` texts for span formats that do not
    carry them (PICO, spans tables without a text column, brat). Raises QuotaExceededError past
    the project's limits (uploads per hour, bytes kept), UploadTooLargeError past the size limit
    and IngestError (or ValueError) for a file that cannot be read or does not merge with the
    dataset's earlier uploads; nothing is recorded then.
    """
    admit_upload(session=session, settings=settings, project_id=dataset.project_id)
    store, limits = ArtifactStore(settings.data_dir), UploadLimits.of(settings)
    raw = store_raw(session=session, settings=settings, project_id=dataset.project_id, data=stream,
                    filename=filename)
    docs = None
    try:
        if docs_stream is not None:
            docs = store.put_stream(docs_stream, kind="docs", suffix=".zip", limit=limits.file)
            options = {**options, "docs_sha256": docs.sha256}
        with tempfile.TemporaryDirectory(prefix="crowdqa-docs-") as tmp:
            folder = None
            if docs is not None:
                folder = Path(tmp)
                extract_docs(store.path(docs), folder, max_bytes=limits.texts)
            _refuse_same_file(session=session, dataset=dataset, sha256=raw.sha256, filename=filename)
            staged = stage_upload(store=store, dataset=dataset, raw=raw, filename=filename, format=format,
                                  role=role, options=options, docs=folder, document_limits=limits.document)
        try:
            return merge_uploads(session=session, store=store, dataset=dataset, added=[staged])[0]
        except BaseException:
            discard_staged(session=session, store=store, staged=staged)
            raise
    except BaseException:
        discard_raw(session=session, store=store, raw=raw)
        raise


def admit_upload(*, session: Session, settings: Settings, project_id: str, replaced: int = 0) -> None:
    """The project's limits (QuotaExceededError, 429) before a byte is read: bytes kept (less ``replaced``, the
    bytes of the uploads this request replaces if it succeeds), and uploads per hour (this request is counted,
    refused or not). Every path that adds uploads (an upload, a Label Studio pull) calls it once per request."""
    check_stored_bytes(session=session, settings=settings, project_id=project_id, freed=replaced)
    check_upload_rate(session=session, settings=settings, project_id=project_id)


def store_raw(*, session: Session, settings: Settings, project_id: str, data: BinaryIO | bytes,
              filename: str, freed: int = 0) -> Artifact:
    """Keep an upload's raw bytes (content-addressed), bounded by :attr:`UploadLimits.file`
    (UploadTooLargeError), and refuse them (QuotaExceededError) when they take the project past the bytes it
    may keep; nothing is kept then. ``freed``: see :func:`~crowdqa.jobs.quotas.check_stored_bytes` (a request
    replacing uploads, net of the files it stored before this one)."""
    store = ArtifactStore(settings.data_dir)
    stream = io.BytesIO(data) if isinstance(data, bytes) else data
    raw = store.put_stream(stream, kind="uploads", suffix=safe_suffix(filename), limit=UploadLimits.of(settings).file)
    try:
        check_stored_bytes(session=session, settings=settings, project_id=project_id, incoming=raw.size,
                           freed=freed)
    except BaseException:
        discard_raw(session=session, store=store, raw=raw)
        raise
    return raw


def store_raws(*, session: Session, settings: Settings, project_id: str, files: Sequence[tuple[bytes, str]],
               freed: int = 0) -> list[Artifact]:
    """Keep the raw bytes of a request's files (``(data, filename)``, their sizes known), all of them checked
    before one is stored: each against :attr:`UploadLimits.file` (UploadTooLargeError), together against the bytes
    the project may keep, less ``freed`` (QuotaExceededError; see :func:`~crowdqa.jobs.quotas.check_stored_bytes`).
    Nothing is kept when one is refused or a write fails."""
    limit = UploadLimits.of(settings).file
    if any(len(data) > limit for data, _ in files):
        raise UploadTooLargeError(limit)
    if files:
        check_stored_bytes(session=session, settings=settings, project_id=project_id,
                           incoming=sum(len(data) for data, _ in files), freed=freed)
    store, raws = ArtifactStore(settings.data_dir), []
    try:
        for data, filename in files:
            raws.append(store.put_bytes(data, kind="uploads", suffix=safe_suffix(filename)))
    except BaseException:
        for raw in raws:
            discard_raw(session=session, store=store, raw=raw)
        raise
    return raws


def discard_raw(*, session: Session, store: ArtifactStore, raw: Artifact) -> None:
    """Remove a raw file that no upload row names (content-addressed: another upload may share it)."""
    if not crud.file_has_upload(session=session, sha256=raw.sha256):
        store.path(raw).unlink(missing_ok=True)


def discard_staged(*, session: Session, store: ArtifactStore, staged: StagedUpload) -> None:
    """Remove the corpus and index files of a staged upload that was not merged, if staging made them and no
    upload row names that corpus (one committed meanwhile with the same labels keeps them)."""
    if staged.corpus_new and not crud.corpus_has_upload(session=session, corpus_sha256=staged.upload.corpus_sha256):
        store.find(staged.upload.corpus_sha256, kind="corpora", suffix=".npz").unlink(missing_ok=True)
        store.index_path(staged.upload.corpus_sha256).unlink(missing_ok=True)


@dataclass(frozen=True)
class StagedUpload:
    """An upload parsed and stored (its corpus and index on disk) but not yet part of its dataset."""

    #: The row, not yet added to the database.
    upload: Upload
    #: The index of its corpus (what :func:`merge_uploads` checks it by).
    index: CorpusIndex
    #: The file's name as messages show it (one printable line, no folders).
    source: str
    #: Whether staging made its corpus file (no upload kept these labels before): see :func:`discard_staged`.
    corpus_new: bool = False


class NoLabelsError(IngestError):
    """A stored file that parses to no labels at all."""


def stage_upload(*, store: ArtifactStore, dataset: Dataset, raw: Artifact, filename: str, format: str, role: str,
                 options: dict[str, Any], document_limits: DocumentLimits, docs: Path | None = None) -> StagedUpload:
    """Turn a stored raw file into an upload row of ``dataset``: parse it (:func:`parse_upload`, documents within
    ``document_limits``: :attr:`UploadLimits.document`), keep its corpus
    and index, and summarise it. Raises IngestError (NoLabelsError for a file without labels) or ValueError;
    :func:`merge_uploads` adds the row to the dataset."""
    read_options = {k: v for k, v in options.items() if k != "docs_sha256"}
    parsed = parse_upload(store.path(raw), format=format, role=role, options=read_options, docs=docs,
                          filename=filename, document_limits=document_limits)
    corpus: Corpus = parsed.corpus
    if corpus.n_obs == 0:
        raise NoLabelsError(f"the file holds no labels (read as {format!r})", source=filename or "upload")
    own = store.put_corpus(corpus)
    index = index_corpus(corpus)
    store.put_index(own.sha256, index)
    upload = Upload(
        dataset_id=dataset.id, filename=crud.text_safe(filename or "upload")[:300], format=format, role=role,
        options=plain_json(options), size=raw.size, sha256=raw.sha256, raw_path=raw.path,
        corpus_sha256=own.sha256, summary=plain_json(summarize(corpus, problems=parsed.problems,
                                                               notes=parsed.notes, dropped=parsed.dropped)),
        problems=[str(p) for p in parsed.problems][:1000],
    )
    return StagedUpload(upload=upload, index=index, source=_shown_name(filename), corpus_new=own.new)


def merge_uploads(*, session: Session, store: ArtifactStore, dataset: Dataset, added: Sequence[StagedUpload],
                  removed: Collection[str] = (), link: LabelStudioLink | None = None) -> list[Upload]:
    """Add staged uploads to ``dataset`` (and remove its uploads of ids ``removed``, loading those rows alone: an id
    of another dataset's upload touches nothing; and record ``link``) in one transaction; return the added rows.
    The dataset becomes the list of its uploads' corpora (merged when a job runs).

    Checked against the latest committed uploads, by their indexes (no label of theirs is read): the same file
    twice and labels of another kind (UploadConflictError, 409), uploads that do not merge (IngestError),
    expert labels whose documents match no crowd document (IngestError, issue 30), and expert and crowd labels
    sharing none (IngestError; labels only one side uses are a note in the added uploads' summaries).
    """
    gone = set(removed)
    with dataset_locks[dataset.id]:
        # Serialise changes to one dataset across threads (the lock) and processes (a row write lock held
        # until the commit in crud.replace_uploads), then check against the latest committed uploads.
        crud.lock_dataset(session=session, dataset=dataset)
        for staged in added:
            _refuse_same_file(session=session, dataset=dataset, sha256=staged.upload.sha256,
                              filename=staged.source, ignore=gone)
        parts = crud.upload_corpora(session=session, dataset_id=dataset.id, exclude=gone)
        indexes = [corpus_index(store, p) for p in parts]
        for staged in added:
            try:
                check_mergeable(indexes, staged.index, source=staged.source)
            except KindConflict as exc:
                raise UploadConflictError(str(exc)) from None
            parts.append(staged.upload.corpus_sha256)
            indexes.append(staged.index)
        state = dataset_state(store, parts, indexes, snapshot=False)
        for staged in added:
            _refuse_unmatched_experts(state["summary"], staged.index, filename=staged.source,
                                      others=[ix for ix in indexes if ix is not staged.index])
        _check_vocabularies(indexes, added)
        state["corpus_sha256"] = _snapshot(store, parts)  # stored once every check passed
        rows = [staged.upload for staged in added]
        now = utcnow()  # their place in the dataset's merge order is taken now, under the lock, in this order
        for k, row in enumerate(rows):
            row.created_at = now + timedelta(microseconds=k)
        old = crud.dataset_uploads(session=session, dataset_id=dataset.id, upload_ids=gone)
        crud.replace_uploads(session=session, dataset=dataset, removed=old, added=rows, link=link, **state)
    for row in rows:
        session.refresh(row)
    return rows


def corpus_index(store: ArtifactStore, corpus_sha: str):
    """The stored index of a corpus, made (once) from the corpus for uploads stored before indexes existed
    or before their document hashes changed (``CorpusIndex.current``)."""
    path = store.index_path(corpus_sha)
    if path.is_file():
        index = CorpusIndex.load(path)
        if index.current:
            return index
    index = index_corpus(store.load_corpus(corpus_sha))
    store.put_index(corpus_sha, index)
    return index


def dataset_state(store: ArtifactStore, parts: list[str], indexes: list, *, snapshot: bool = True) -> dict[str, Any]:
    """The dataset columns for a list of upload corpora: snapshot sha256 (None with ``snapshot=False``: nothing is
    stored), summary and annotator rows."""
    if not parts:
        return {"corpus_sha256": None, "summary": None, "annotators": []}
    union = index_union(indexes)
    return {"corpus_sha256": _snapshot(store, parts) if snapshot else None,
            "summary": plain_json(summarize_indexes(indexes, union=union)),
            "annotators": annotator_counts(indexes, union=union)}


def _snapshot(store: ArtifactStore, parts: list[str]) -> str | None:
    """The sha256 naming the merge of ``parts``: the one corpus's, or a stored snapshot's."""
    if not parts:
        return None
    return parts[0] if len(parts) == 1 else store.put_snapshot(parts)


def _refuse_unmatched_experts(summary: dict, new_index: CorpusIndex, *, filename: str,
                              others: Sequence[CorpusIndex] = ()) -> None:
    """Refuse an upload of expert labels when the dataset has crowd labels and no document both have (the
    ids do not match), naming ids of the upload that are the other uploads' written otherwise (``Q1``/``q1``).
    An expert upload before any crowd upload is accepted: a job refuses it later, if the crowd's documents still
    match none of the experts'."""
    coverage, roles = summary["coverage"], summary["annotators"]
    if "expert" not in new_index.worker_roles.tolist() or not roles["crowd"] or coverage["documents_with_expert"]:
        return
    n = coverage.get("expert_documents_without_crowd", 0)
    alike = written_otherwise(new_index.doc_ids[:1000].tolist(), [str(d) for ix in others for d in ix.doc_ids.tolist()],
                              limit=3, say_how=False)
    raise IngestError(f"none of the dataset's {n} expert documents (items) matches a crowd document by id: "
                      "the expert labels would grade nothing (check the id column and its prefixes"
                      + (f"; ids written otherwise: {', '.join(alike)}" if alike else "") + ")",
                      source=_shown_name(filename))


def _check_vocabularies(indexes: list[CorpusIndex], added: Sequence[StagedUpload]) -> None:
    """Refuse uploads that leave the dataset's expert and crowd labels sharing none (IngestError naming both sets,
    whichever role came first); otherwise add a note naming the labels only one side uses to each added upload's
    summary (:func:`crowdqa.ingest.index.check_index_vocabularies`)."""
    if not added:
        return
    notes = check_index_vocabularies(indexes, source=", ".join(dict.fromkeys(s.source for s in added)))
    for staged in added:
        if notes:
            summary = dict(staged.upload.summary or {})
            summary["notes"] = [*summary.get("notes", []), *notes]
            staged.upload.summary = summary


def check_dataset_vocabularies(*, session: Session, settings: Settings, dataset: Dataset) -> None:
    """Refuse a job on a dataset whose expert and crowd labels share none (IngestError, 422): uploads check this
    as they come, but deleting an upload can leave it so, and a dataset stored before the check may hold it."""
    store = ArtifactStore(settings.data_dir)
    parts = crud.upload_corpora(session=session, dataset_id=dataset.id)
    try:
        check_index_vocabularies([corpus_index(store, p) for p in parts])
    except IngestError as exc:
        raise ValueError(f"the dataset's {exc.detail}; delete the upload that does not match") from None


def _shown_name(filename: str | None) -> str:
    base = PurePosixPath((filename or "").replace("\\", "/")).name
    return "".join(ch if ch.isprintable() else "?" for ch in base)[:200] or "upload"


def _refuse_same_file(*, session: Session, dataset: Dataset, sha256: str, filename: str,
                      ignore: Collection[str] = ()) -> None:
    same = crud.find_upload(session=session, dataset_id=dataset.id, sha256=sha256)
    if same is not None and same.id not in ignore:
        raise UploadConflictError(
            f"{_shown_name(filename)} is already uploaded to this dataset, as upload {same.id} ({same.format}, "
            f"{same.role}); delete that upload first to replace it")


def delete_upload(*, session: Session, settings: Settings, dataset: Dataset, upload: Upload) -> None:
    """Remove one upload from its dataset: the dataset becomes the merge of the others (jobs keep their
    snapshots), and the upload's files go once nothing else uses them."""
    store = ArtifactStore(settings.data_dir)
    with dataset_locks[dataset.id]:
        crud.lock_dataset(session=session, dataset=dataset)
        parts = crud.upload_corpora(session=session, dataset_id=dataset.id, exclude={upload.id})
        state = dataset_state(store, parts, [corpus_index(store, p) for p in parts])
        crud.remove_upload(session=session, dataset=dataset, upload=upload, **state)
    collect_garbage(session=session, settings=settings)


def delete_dataset(*, session: Session, settings: Settings, dataset: Dataset) -> None:
    """Delete a dataset's rows (uploads, annotators, jobs, reports) and the files only they used; refused with
    DatasetBusyError while one of its jobs runs (its worker would write results for rows that are gone)."""
    if crud.has_running_job(session=session, dataset_id=dataset.id):
        raise DatasetBusyError(f"dataset {dataset.id} has a running job; wait for it or delete the job first")
    crud.delete_dataset(session=session, dataset=dataset)
    collect_garbage(session=session, settings=settings)


def collect_garbage(*, session: Session, settings: Settings) -> int:
    """Remove stored files no row references any more; return how many went.

    Files are content-addressed and shared between rows holding the same bytes, so a file
    goes only when no upload, dataset or job names it. Files younger than
    ``settings.gc_grace`` stay (an upload of the same bytes may not have committed yet);
    they go at a later deletion or start-up. A failure here is logged, never raised: the
    rows are already gone and the next collection retries.
    """
    try:
        store = ArtifactStore(settings.data_dir)
        referenced = store.expand_references(crud.referenced_artifacts(session=session))
        removed = store.remove_unreferenced(referenced, older_than=settings.gc_grace)
    except Exception:  # noqa: BLE001 - deleting rows succeeded; stray files are retried next time
        logger.exception("collecting unreferenced files failed")
        return 0
    if removed:
        logger.info("removed %d stored files no row references", removed)
    return removed
