"""Live with Label Studio: pull a project's annotations into a dataset, push a job's aggregate back.

**Pull** (:func:`pull`) reads the project's labeling config, then its tasks through the REST API, page by page;
a second pull of the same dataset asks only for the tasks updated since the last one (Label Studio moves a
task's ``updated_at`` when an annotation of it is added, changed or deleted) and lays them over the tasks it
pulled before, kept in the dataset's :class:`~crowdqa.store.models.LabelStudioLink`. The tasks become one
upload per role in the formats a file upload uses (:func:`crowdqa.ingest.label_studio_api.upload_bytes`:
``label-studio`` JSON for spans, ``categorical`` rows for choices), so the stored corpus and summary are what
uploading the same export gives. Everything is fetched and parsed before anything is written, and the old
uploads are swapped for the new ones in one transaction: a pull cut halfway leaves the dataset as it was.
Tasks deleted in Label Studio leave the dataset at the next pull: an incremental one also lists the ids of the
project's tasks (``GET /api/tasks?include=id``, a few bytes a task) and drops the held tasks it no longer lists
(:attr:`PullResult.removed`); a full pull (``full=True``) reads every task again. A pull that finds no annotation
left in a linked project (every task deleted, or every annotation) removes the link's uploads, and nothing else of
the dataset; a first pull of such a project is refused (nothing to make a dataset of).

**Push** (:func:`push`) writes a finished job's aggregate on the project's tasks as predictions
(``model_version`` ``crowdqa-<method>-job-<id>``), each scored by the calibrated probability that the task's
aggregate is right wherever an annotator marked something (:mod:`crowdqa.jobs.calibration`; each span region carries
its own span score; a task everyone left empty scores 1), and made the project's model version (the one whose
scores Label Studio's data manager shows and sorts by), so reviewers sort tasks by it: the lowest scores are the
tasks most likely to need a correction, where the crowd disputed. A push replaces every earlier crowdqa prediction
on the project's tasks (its own job's and, unless told to keep them, other jobs'), so a task holds one; tasks
deleted in Label Studio since the job's snapshot are skipped. Optionally a data manager view (tab) lists the tasks
in that order, made once. The push of a job whose model reads the text also drafts the project's tasks that nobody
annotated yet (:mod:`crowdqa.jobs.label_studio_drafts`), in the same model version, so the next batch opens
pre-filled; a push of another job says how many such tasks it left without a draft, and why.

**Bounds.** Label Studio is another server: it may be slow, or answer without end. Every request of a pull or push
is done within ``CROWDQA_LABEL_STUDIO_TIMEOUT`` seconds (connect to last byte) and all of them within
``CROWDQA_LABEL_STUDIO_DEADLINE``; an answer is read as it streams, refused past
``CROWDQA_LABEL_STUDIO_MAX_ANSWER_BYTES`` (and all of one exchange's past ``CROWDQA_LABEL_STUDIO_MAX_PULL_BYTES``)
(:class:`~crowdqa.ingest.label_studio_api.ExchangeLimits`); a project runs ``CROWDQA_LABEL_STUDIO_CONCURRENCY``
pulls and pushes at once (:mod:`crowdqa.jobs.outbound`). No database connection is held while Label Studio is
waited on: the session's transaction is ended (:func:`_release`) before each outbound step, and what the step
needs of the database is read into plain values first. A pull is counted against the project's uploads per
hour before its first request to Label Studio.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from sqlmodel import Session

from crowdqa.ingest.errors import IngestError
from crowdqa.ingest.label_studio_api import (
    ExchangeLimits,
    LabelConfig,
    LabelStudio,
    LabelStudioError,
    plain_task,
    prediction_result,
    read_label_config,
    split_tasks,
    upload_bytes,
)
from crowdqa.jobs.errors import UploadConflictError
from crowdqa.jobs.label_studio_drafts import document_spans, draft_model, draft_predictions, undrafted_note
from crowdqa.jobs.outbound import exchange_slot
from crowdqa.jobs.quotas import check_stored_bytes, check_upload_rate
from crowdqa.jobs.results import load_job_result
from crowdqa.jobs.uploads import (
    NoLabelsError,
    UploadLimits,
    collect_garbage,
    discard_raw,
    discard_staged,
    merge_uploads,
    stage_upload,
    store_raws,
)
from crowdqa.store import crud
from crowdqa.store.artifacts import ArtifactStore
from crowdqa.store.models import Dataset, DatasetCreate, Job, LabelStudioLink, Upload
from crowdqa.store.sealed import SealError, seal, unseal
from crowdqa.store.settings import Settings, url_origin

__all__ = ["LabelStudio", "LabelStudioError", "LabelStudioRefused", "PullResult", "PushResult", "connect", "pull",
           "push", "linked_client", "model_version", "exchange_limits", "last_pull", "PREDICTION_CHUNK", "URLS_SETTING",
           "VERSION_PREFIX", "VIEW_TITLE"]

#: Predictions per ``POST /api/projects/{id}/import/predictions``.
PREDICTION_CHUNK = 500
#: The setting naming the Label Studio servers the service may reach (:attr:`Settings.label_studio_origins`).
URLS_SETTING = "CROWDQA_LABEL_STUDIO_URLS"


class LabelStudioRefused(LabelStudioError):
    """The URL names a server this crowdqa server may not reach (:data:`URLS_SETTING`); refused before any
    connection, so the refusal says nothing of what answers there."""


def exchange_limits(settings: Settings) -> ExchangeLimits:
    """The time and bytes one pull or push may spend on Label Studio (``CROWDQA_LABEL_STUDIO_*``)."""
    return ExchangeLimits(timeout=settings.label_studio_timeout, deadline=settings.label_studio_deadline,
                          max_answer_bytes=settings.label_studio_max_answer_bytes,
                          max_total_bytes=settings.label_studio_max_pull_bytes)


def connect(url: str, token: str, *, allowed: Collection[str] | None, settings: Settings) -> LabelStudio:
    """A client for the Label Studio at ``url``, refused (:class:`LabelStudioRefused`) when ``allowed`` (origins,
    :func:`crowdqa.store.settings.url_origin`) does not hold the URL's origin; None allows any http(s) URL.

    The client keeps the bounds of :func:`exchange_limits`; its deadline runs from here. The API and the
    dashboard pass ``settings.label_studio_origins``: their callers hold only an API key, and
    must not make the server reach its own network. The CLI passes None: it runs as the operator, who could reach
    any URL from that machine anyway, and for whom the setting is written. The refusal names the setting, never
    its value (the operator's).
    """
    # Refuses other schemes and credentials in the URL, whatever ``allowed``.
    client = LabelStudio(url, token, limits=exchange_limits(settings))
    if allowed is not None and url_origin(client.url) not in allowed:
        client.close()
        raise LabelStudioRefused(f"this crowdqa server may not reach the Label Studio at {client.url}: its operator "
                                 f"names the servers it may reach ({URLS_SETTING})")
    return client


@dataclass
class PullResult:
    """What one pull did."""

    dataset: Dataset
    link: LabelStudioLink
    kind: str
    fetched: int
    tasks: int
    changed: bool
    uploads: list[Upload] = field(default_factory=list)
    created: bool = False
    #: Tasks the last pull held that Label Studio holds no more (deleted there), dropped from the dataset.
    removed: int = 0
    #: What the pull noticed and did anyway: experts named who annotated none of the tasks it holds.
    notes: list[str] = field(default_factory=list)


def _default_name(ls_project: int, info: dict) -> str:
    title = " ".join(str(info.get("title") or "").split())
    return (f"label-studio {ls_project}" + (f": {title}" if title else ""))[:200]


def _release(session: Session) -> None:
    """End the session's transaction, so its connection goes back to the pool before crowdqa waits on Label Studio
    (a slow server must not hold the pool that every other request needs). Its rows expire: what the waiting
    step needs of them is read into plain values before."""
    session.commit()


@dataclass(frozen=True)
class _Held:
    """What a pull reads of the database before it asks Label Studio for tasks: the dataset's link as it was."""

    dataset_id: str | None
    linked: bool
    experts: tuple[str, ...]
    ground_truth: bool
    cursor: str | None
    tasks: dict[int, dict]
    replaced: int


def _held(*, session: Session, settings: Settings, client: LabelStudio, project_id: str, name: str, ls_project: int,
          experts: list[str] | None, ground_truth: bool | None) -> _Held:
    """The dataset ``name``'s link, checked against the pull (conflicts; the bytes the project keeps), as plain
    values."""
    dataset = crud.find_dataset(session=session, project_id=project_id, name=name)
    link = crud.get_label_studio_link(session=session, dataset_id=dataset.id) if dataset is not None else None
    # A pull is an upload request; a re-pull's new uploads replace the link's, whose bytes it frees.
    replaced = _replaced_bytes(session, project_id, link)
    check_stored_bytes(session=session, settings=settings, project_id=project_id, freed=replaced)
    if dataset is not None and link is None and dataset.n_uploads:
        raise UploadConflictError(f"dataset {name!r} holds uploads that were not pulled from Label Studio; "
                                  "pull into a new dataset (--dataset NAME)")
    if link is not None and (link.url.rstrip("/") != client.url or link.ls_project != int(ls_project)):
        raise UploadConflictError(f"dataset {name!r} is pulled from project {link.ls_project} of {link.url}, "
                                  f"not project {ls_project} of {client.url}")
    return _Held(dataset_id=dataset.id if dataset is not None else None, linked=link is not None,
                 experts=tuple(experts) if experts else tuple(link.experts if link is not None else ()),
                 ground_truth=ground_truth if ground_truth is not None else (
                     link.ground_truth if link is not None else False),
                 cursor=link.cursor if link is not None else None,
                 tasks={int(t["id"]): t for t in link.tasks} if link is not None else {}, replaced=replaced)


def pull(*, session: Session, settings: Settings, client: LabelStudio, ls_project: int, project_name: str,
         dataset_name: str | None = None, experts: list[str] | None = None, ground_truth: bool | None = None,
         keep_token: str | None = None, full: bool = False) -> PullResult:
    """Pull a Label Studio project into a dataset of ``project_name`` (made on the first pull); see the module.

    ``experts`` (e-mails or user ids) and ``ground_truth`` (Label Studio's ground-truth flag makes an expert)
    default to the last pull's. ``keep_token`` is sealed into the link, so a push needs no token. A pull is an
    upload request, with an upload's guards (:mod:`crowdqa.jobs.uploads`), counted before its first request to
    Label Studio, and one of the project's exchanges with it (:func:`~crowdqa.jobs.outbound.exchange_slot`).
    Raises LabelStudioError (server, token, config, time or bytes past their bounds), QuotaExceededError or
    UploadTooLargeError (the project's limits), IngestError or UploadConflictError (the tasks do not merge with
    the dataset's other uploads); nothing is written then (but the upload request's count).
    """
    project_id = crud.get_or_create_project(session=session, name=project_name).id
    check_upload_rate(session=session, settings=settings, project_id=project_id)  # counted, refused or not
    with exchange_slot(settings=settings, project_id=project_id, what="pull"):
        _release(session)
        info = client.project(ls_project)
        config = read_label_config(str(info.get("label_config") or ""))
        name = dataset_name or _default_name(ls_project, info)
        held = _held(session=session, settings=settings, client=client, project_id=project_id, name=name,
                     ls_project=ls_project, experts=experts, ground_truth=ground_truth)
        _release(session)
        since = None if full or not held.linked else held.cursor
        emails = client.emails()
        fetched = [plain_task(t, config, emails) for t in client.tasks(ls_project, since=since)]
        # Tasks deleted in Label Studio: the held ones it lists no more.
        current = client.task_ids(ls_project) | {t["id"] for t in fetched} if since is not None else None
    base = {} if full else dict(held.tasks)
    if current is not None:
        base = {k: t for k, t in base.items() if k in current}
    base.update({t["id"]: t for t in fetched})
    removed = len(held.tasks.keys() - base.keys())
    tasks = [base[k] for k in sorted(base)]
    experts = list(held.experts)
    dataset = crud.find_dataset(session=session, project_id=project_id, name=name)
    link = crud.get_label_studio_link(session=session, dataset_id=dataset.id) if dataset is not None else None
    same_roles = link is not None and link.experts == experts and link.ground_truth == held.ground_truth
    if link is not None and not fetched and not removed and same_roles and not full:
        _keep_token(session, settings, link, keep_token)
        return PullResult(dataset=dataset, link=link, kind=config.kind, fetched=0, tasks=len(tasks), changed=False)
    by_role = split_tasks(tasks, experts=frozenset(experts), ground_truth=held.ground_truth)
    source = f"{client.url} project {ls_project}"
    # A linked project with no annotations left (its tasks deleted, or their annotations) empties the link's
    # uploads; only a first pull has nothing to make a dataset of.
    if link is None and not by_role["crowd"] and not by_role["expert"]:
        raise IngestError(f"project {ls_project} has no annotations to pull", source=source)
    if by_role["expert"] and not by_role["crowd"]:
        raise IngestError(_no_crowd(tasks, held.ground_truth), source=source)
    created = dataset is None
    if created:
        dataset = crud.create_dataset(session=session, project_id=project_id, dataset_in=DatasetCreate(name=name))
    link = link or LabelStudioLink(dataset_id=dataset.id, url=client.url, ls_project=int(ls_project))
    link.experts, link.ground_truth, link.tasks = experts, held.ground_truth, tasks
    link.cursor = max((t["updated_at"] for t in tasks if t["updated_at"]), default=link.cursor)
    if keep_token:
        link.token_sealed = seal(settings.data_dir, keep_token)
    try:
        uploads = _store(session=session, settings=settings, dataset=dataset, link=link, config=config,
                         by_role=by_role, ls_project=int(ls_project), replaced=held.replaced)
    except BaseException:
        session.rollback()
        if created:
            crud.delete_dataset(session=session, dataset=dataset)
        raise
    return PullResult(dataset=dataset, link=link, kind=config.kind, fetched=len(fetched), tasks=len(tasks),
                      changed=True, uploads=uploads, created=created, removed=removed,
                      notes=_unmatched_experts(tasks, experts))


def last_pull(*, session: Session, dataset_id: str) -> dict[str, Any] | None:
    """What the dataset's link holds after its last pull (the Label Studio project, the tasks held, the uploads it
    made, and the notes the pull made of them), or None for a dataset not pulled from Label Studio: what a page
    shows beside the counts a pull returned."""
    link = crud.get_label_studio_link(session=session, dataset_id=dataset_id)
    if link is None:
        return None
    return {"project": link.ls_project, "url": link.url, "tasks": len(link.tasks), "uploads": len(link.upload_ids),
            "notes": _unmatched_experts(link.tasks, link.experts)}


def _unmatched_experts(tasks: list[dict], experts: list[str]) -> list[str]:
    """A note for each expert named (e-mail or user id) who annotated none of ``tasks``: a typo makes the expert a
    crowd worker without a word otherwise (an expert yet to annotate is fine: the note only says so)."""
    seen = {who for t in tasks for a in t["annotations"] for who in (a["completed_by"], a.get("user_id"))}
    annotators = sorted({a["completed_by"] for t in tasks for a in t["annotations"]})
    shown = ", ".join(annotators[:10]) + (f" and {len(annotators) - 10} more" if len(annotators) > 10 else "")
    return [f"expert {e!r} annotated none of the project's tasks (its annotators: {shown})"
            for e in experts if e not in seen]


def _no_crowd(tasks: list[dict], ground_truth: bool) -> str:
    """Why a pull that leaves the crowd no annotation is refused (a job would have nothing to aggregate)."""
    anns = [a for t in tasks for a in t["annotations"]]
    why = "every annotation is an expert's, so the crowd has none to aggregate"
    if ground_truth and all(a["ground_truth"] for a in anns):
        # Label Studio's import flags each imported annotation unless it says "ground_truth": false; its editor
        # keeps at most one flagged annotation per task.
        why += (f" (all {len(anns)} are flagged ground truth, as Label Studio flags the annotations of an import "
                "that does not say \"ground_truth\": false): name the experts instead of taking ground truth "
                "for expert")
    return why


def _replaced_bytes(session: Session, project_id: str, link: LabelStudioLink | None) -> int:
    """Bytes of the uploads a pull through ``link`` replaces (freed when its swap commits)."""
    if link is None or not link.upload_ids:
        return 0
    return crud.stored_upload_bytes(session=session, project_id=project_id, upload_ids=link.upload_ids)


def _keep_token(session: Session, settings: Settings, link: LabelStudioLink, token: str | None) -> None:
    if token:
        link.token_sealed = seal(settings.data_dir, token)
        session.add(link)
        session.commit()


def _store(*, session: Session, settings: Settings, dataset: Dataset, link: LabelStudioLink, config: LabelConfig,
           by_role: dict[str, list[dict]], ls_project: int, replaced: int) -> list[Upload]:
    """Store and stage one upload per role as an upload of a file is (:mod:`crowdqa.jobs.uploads`: the size and
    bytes limits, the parse, the summary) and swap them for the link's earlier uploads in one transaction, with
    every check of an upload (:func:`~crowdqa.jobs.uploads.merge_uploads`). The files are checked against the
    limits together before one is stored, and a refused pull removes every file it made. A role whose annotations
    hold no label (choices left empty) makes no upload; a pull of none empties the link's uploads. ``replaced``:
    the bytes of the link's uploads, freed when the swap commits (:func:`_replaced_bytes`, as the pull admitted
    the request by)."""
    store = ArtifactStore(settings.data_dir)
    files = []
    for role, tasks in by_role.items():
        if tasks:
            data, fmt, options = upload_bytes(tasks, config)
            name = f"label-studio-{ls_project}-{role}{'.json' if fmt == 'label-studio' else '.csv'}"
            files.append((data, name, fmt, options, role))
    raws = store_raws(session=session, settings=settings, project_id=dataset.project_id,
                      files=[(data, name) for data, name, *_ in files], freed=replaced)
    staged = []
    try:
        for raw, (_, name, fmt, options, role) in zip(raws, files, strict=True):
            try:
                staged.append(stage_upload(store=store, dataset=dataset, raw=raw, filename=name, format=fmt,
                                           role=role, options=options,
                                           document_limits=UploadLimits.of(settings).document))
            except NoLabelsError:
                continue
        removed, link.upload_ids = link.upload_ids, [s.upload.id for s in staged]
        added = merge_uploads(session=session, store=store, dataset=dataset, added=staged, removed=removed,
                              link=link)
    except BaseException:
        session.rollback()
        for done in staged:
            discard_staged(session=session, store=store, staged=done)
        for raw in raws:
            discard_raw(session=session, store=store, raw=raw)
        raise
    if removed:
        collect_garbage(session=session, settings=settings)
    return added


def linked_client(*, session: Session, settings: Settings, dataset_id: str, allowed: Collection[str] | None,
                  token: str | None = None, url: str | None = None) -> tuple[LabelStudio, LabelStudioLink]:
    """A client for the project a dataset was pulled from, with ``token`` or the link's sealed one, refused when
    the link's server is not among ``allowed`` (see :func:`connect`; the list may have changed since the
    pull)."""
    link = crud.get_label_studio_link(session=session, dataset_id=dataset_id)
    if link is None:
        raise LookupError(f"dataset {dataset_id} was not pulled from Label Studio (crowdqa label-studio pull)")
    if token is None:
        if link.token_sealed is None:
            raise LabelStudioError("no Label Studio token is kept for this dataset: give one (--token)")
        try:
            token = unseal(settings.data_dir, link.token_sealed)
        except SealError as exc:
            raise LabelStudioError(f"the kept Label Studio token cannot be opened ({exc}): give one (--token)") \
                from None
    return connect(url or link.url, token, allowed=allowed, settings=settings), link


#: The start of every crowdqa model version: a push replaces the earlier predictions whose version starts so.
VERSION_PREFIX = "crowdqa-"
#: The title of the project's data manager view a push with ``view`` makes once.
VIEW_TITLE = "crowdqa: disputed first"


def model_version(job: Job) -> str:
    """The ``model_version`` of a job's predictions: the method and the job."""
    return f"{VERSION_PREFIX}{job.method}-job-{job.id}"


@dataclass
class PushResult:
    """What one push wrote."""

    model_version: str
    predictions: int
    url: str
    ls_project: int
    view: int | None = None
    #: Tasks of the job's snapshot that Label Studio holds no more (deleted since the pull): no prediction.
    skipped: int = 0
    #: Earlier crowdqa model versions (other jobs') whose predictions the push removed.
    replaced: list[str] = field(default_factory=list)
    #: Tasks that nobody annotated, labelled by the job's model (drafts in the same model version).
    pre_annotated: int = 0
    #: What the push noticed: tasks without annotation it could not draft, and why.
    notes: list[str] = field(default_factory=list)


#: Data manager columns a disputed-first view hides (the prediction score stays in sight).
_VIEW_HIDDEN = ["tasks:inner_id", "tasks:annotations_results", "tasks:annotations_ids", "tasks:predictions_results",
                "tasks:file_upload", "tasks:storage_filename", "tasks:created_at", "tasks:updated_at",
                "tasks:updated_by", "tasks:avg_lead_time", "tasks:draft_exists"]


def push(*, session: Session, settings: Settings, job: Job, allowed: Collection[str] | None,
         token: str | None = None, view: bool = False, keep_earlier: bool = False,
         pre_annotate: bool | None = None) -> PushResult:
    """Write a finished job's aggregate on the Label Studio tasks of its dataset as predictions; see the module.

    Every earlier crowdqa prediction on the project's tasks (model versions ``crowdqa-...``, of this job or
    another) is removed first, so a task holds one crowdqa prediction, the latest push's
    (:attr:`PushResult.replaced`); with ``keep_earlier`` only this job's own are replaced, and other jobs'
    predictions stay beside them. Tasks deleted in Label Studio since the job's snapshot get none
    (:attr:`PushResult.skipped`). With ``view``, the project also gets a data manager tab (a view) listing its
    tasks by prediction score, lowest first (the tasks the crowd disputed most, for the experts to review first),
    made on the first such push and found again by its title on the next.

    ``pre_annotate``: the project's tasks that hold no annotation (and are not the job's) get a draft of the
    job's model, in the same model version (:mod:`crowdqa.jobs.label_studio_drafts`), when the job's model reads the
    text; None (the default) drafts when it can, and else notes how many tasks it left without a draft and why
    (:attr:`PushResult.notes`); True refuses (ValueError, before any request) a job whose model cannot; False
    drafts nothing. The drafts are read and labelled before the push removes or writes any prediction: a push that
    fails there leaves the project's predictions as they were.
    """
    model, why = (None, "") if pre_annotate is False else draft_model(session=session, settings=settings, job=job)
    if pre_annotate and model is None:
        raise ValueError(f"job {job.id} cannot pre-annotate the tasks nobody annotated: {why}")
    client, link = linked_client(session=session, settings=settings, dataset_id=job.dataset_id, allowed=allowed,
                                 token=token)
    # Plain values of the rows: no database connection is held while Label Studio is waited on (_release).
    version, project_id = model_version(job), job.project_id
    url, ls_project = link.url, link.ls_project
    with client, exchange_slot(settings=settings, project_id=project_id, what="push"):
        result = load_job_result(settings=settings, job=job)
        _release(session)
        config = read_label_config(str(client.project(ls_project).get("label_config") or ""))
        rows = _predictions(result.corpus, result.labels, result.scores, config, version)
        # Tasks of the job's snapshot deleted in Label Studio since: Label Studio refuses a whole import that
        # names one, so they are left out (and counted).
        held = client.task_ids(ls_project)
        kept = [row for row in rows if row["task"] in held]
        notes, drafts = [], []
        if config.kind != "spans":
            model, why = None, "crowdqa drafts the tasks of span projects (<Labels> on a text) only"
        if model is not None:
            found = draft_predictions(client, ls_project, config, model, skip={row["task"] for row in rows},
                                      version=version, limits=UploadLimits.of(settings).document)
            drafts, notes = found.rows, found.notes
        elif pre_annotate is None and (undrafted := client.count_unannotated(ls_project)):
            notes.append(undrafted_note(undrafted, why))
        # A push again replaces predictions rather than adding a second set: this job's, and by default every
        # earlier crowdqa job's (Label Studio lists a project's model versions with their prediction counts).
        versions = client.request("GET", f"/api/projects/{ls_project}/model-versions/")
        earlier = sorted(v for v in (versions if isinstance(versions, dict) else {})
                         if isinstance(v, str) and v.startswith(VERSION_PREFIX) and v != version)
        replaced = [] if keep_earlier else earlier
        for old in [version, *replaced]:
            client.request("DELETE", f"/api/projects/{ls_project}/model-versions/", json={"model_version": old})
        written = kept + drafts
        for a in range(0, len(written), PREDICTION_CHUNK):
            client.request("POST", f"/api/projects/{ls_project}/import/predictions",
                           json=written[a:a + PREDICTION_CHUNK])
        # The project's model version is the one whose scores the data manager shows and sorts by.
        client.request("PATCH", f"/api/projects/{ls_project}", json={"model_version": version})
        view_id = _disputed_first_view(client, ls_project) if view else None
    return PushResult(model_version=version, predictions=len(kept), url=url, ls_project=ls_project,
                      view=view_id, skipped=len(rows) - len(kept), replaced=replaced, pre_annotated=len(drafts),
                      notes=notes)


def _disputed_first_view(client: LabelStudio, ls_project: int) -> int | None:
    """The project's crowdqa view (tab) of its tasks by prediction score, lowest first: found by its title, or made.
    It sorts by the project's model version, which each push sets, so one view serves every push."""
    views = client.request("GET", "/api/dm/views", params={"project": ls_project})
    for found in views if isinstance(views, list) else []:
        if isinstance(found, dict) and (found.get("data") or {}).get("title") == VIEW_TITLE:
            return found.get("id")
    made = client.request("POST", "/api/dm/views", json={"project": ls_project, "data": {
        "title": VIEW_TITLE, "ordering": ["tasks:predictions_score"],
        "hiddenColumns": {"explore": _VIEW_HIDDEN, "labeling": _VIEW_HIDDEN}}})
    return made.get("id") if isinstance(made, dict) else None


def _predictions(corpus, labels, scores, config: LabelConfig, version: str) -> list[dict[str, Any]]:
    """One prediction per document (a Label Studio task id), scored by the calibrated probability that the task's
    aggregate is right wherever an annotator marked something (``scores.document``); each span region carries its
    own (``scores.span``)."""
    score = np.asarray(scores.document, dtype=np.float64)
    names = corpus.class_names
    if config.kind == "choices":
        first = np.asarray(corpus.doc_start[:-1])
        return [{"task": int(d), "score": float(s), "model_version": version,
                 "result": prediction_result(config, choice=names[lab] if lab >= 0 else None)}
                for d, s, lab in zip(corpus.doc_ids, score.tolist(), labels[first].tolist(), strict=True)]
    per_doc = document_spans(labels, corpus)
    n_spans = sum(len(found) for found in per_doc)
    span_score = scores.span.tolist() if scores.span.size == n_spans else None
    out = []
    for d, (doc_id, found) in enumerate(zip(corpus.doc_ids, per_doc, strict=True)):
        result = prediction_result(config, [span for span, _ in found], text=corpus.texts[d])
        for region, (_, k) in zip(result, found, strict=True):
            if span_score is not None:
                region["score"] = round(float(span_score[k]), 6)
        out.append({"task": int(doc_id), "score": float(score[d]), "model_version": version, "result": result})
    return out
