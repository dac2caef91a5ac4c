"""Dashboard pages for signing in, datasets and jobs: parse the form, call the service layer, render.

Every handler uses the same use cases as the API routes (``crowdqa.jobs.uploads``, ``crowdqa.jobs.service``,
``crowdqa.store.crud``) with the project of the signed-in session, so a page can do nothing the project's key could not.
"""

from __future__ import annotations

import json
import secrets
from typing import Annotated, Any

from fastapi import APIRouter, Form, Query, Request
from fastapi.responses import HTMLResponse, JSONResponse, Response
from pydantic import ValidationError

from crowdqa.api.dashboard.auth import (
    COOKIE_PATH,
    LOGIN_COOKIE,
    SESSION_COOKIE,
    SESSION_SECONDS,
    CsrfError,
    DashboardSession,
    DashSessionDep,
    check_csrf,
    check_same_origin,
    cookie_secure,
    end_session,
    new_session_cookie,
    read_session,
)
from crowdqa.api.dashboard.charts import line_curve
from crowdqa.api.dashboard.web import PREFIX, PageError, redirect, render
from crowdqa.api.deps import QueueDep, SessionDep, SettingsDep
from crowdqa.api.errors import ProblemError
from crowdqa.api.forms import upload_form, upload_options
from crowdqa.api.request_gate import API_PREFIX
from crowdqa.api.throttle import client_address, throttle_of
from crowdqa.ingest.formats import READ_FORMATS, ROLES, UPLOAD_OPTIONS
from crowdqa.jobs import reconcile, service, uploads
from crowdqa.jobs.batches import batch_methods, start_candidates
from crowdqa.jobs.errors import (
    DatasetBusyError,
    JobNotRunnableError,
    KeyRefusedError,
    QueueUnavailableError,
    QuotaExceededError,
)
from crowdqa.jobs.params import data_kind, default_method, method_defaults
from crowdqa.store import crud
from crowdqa.store.errors import UploadTooLargeError
from crowdqa.store.models import Dataset, DatasetCreate, Job, JobCreate, JobPublic, JobStatus, job_methods

__all__ = ["router", "owned_dataset", "owned_job", "job_dataset", "error_message", "datasets_view", "FORM_ERRORS",
           "Csrf", "given_fields", "form_text"]

router = APIRouter(prefix=PREFIX, include_in_schema=False)
PAGE_ROWS = 200  # the newest uploads and jobs a dataset page lists (it says how many more the API lists)

#: What a form may get wrong (a file that cannot be read is a ValueError); the page shows the message.
FORM_ERRORS = (ValueError, JobNotRunnableError, QueueUnavailableError, UploadTooLargeError, ProblemError,
               QuotaExceededError)

Csrf = Annotated[str | None, Form(alias="csrf")]


def error_message(exc: Exception) -> str:
    """An error as the one line a page shows: a validation error's first field and message, a reader's error with
    its file and line, a problem's detail, else the exception's first line."""
    if isinstance(exc, ValidationError):
        first = exc.errors()[0] if exc.errors() else {}
        return f"{'.'.join(str(p) for p in first.get('loc', ()))}: {first.get('msg', 'invalid value')}"
    # A reader's error (a ValueError) says where in its str ("file:line: message"); its ``detail`` is the message alone.
    text = str(exc) if isinstance(exc, ValueError) else getattr(exc, "detail", None) or str(exc)
    return str(text).splitlines()[0] if text else type(exc).__name__


def owned_dataset(session, dash: DashboardSession, dataset_id: str) -> Dataset:
    """The session's project's dataset; 404 for any other (as the API answers)."""
    dataset = crud.get_dataset(session=session, project_id=dash.project.id, dataset_id=dataset_id[:64])
    if dataset is None:
        raise PageError(404, "no such dataset in this project")
    return dataset


def owned_job(session, dash: DashboardSession, job_id: str) -> Job:
    """The session's project's job; 404 for any other (as the API answers)."""
    job = crud.get_job(session=session, project_id=dash.project.id, job_id=job_id[:64])
    if job is None:
        raise PageError(404, "no such job in this project")
    return job


def job_dataset(session, dash: DashboardSession, job: Job | JobPublic) -> Dataset | None:
    """The job's dataset (for the breadcrumb of the job's pages), or None if it is gone."""
    return crud.get_dataset(session=session, project_id=dash.project.id, dataset_id=job.dataset_id)


# ---------------------------------------------------------------- sign in / out
@router.get("/signin")
def signin_form(request: Request, session: SessionDep) -> HTMLResponse:
    """The sign-in form (a fresh double-submit token for it)."""
    if read_session(session=session, cookie=request.cookies.get(SESSION_COOKIE)) is not None:
        return redirect("/")
    token = secrets.token_urlsafe(24)
    response = render(request, "signin.html", {"login_token": token})
    response.set_cookie(LOGIN_COOKIE, token, max_age=600, path=COOKIE_PATH, httponly=True, samesite="strict",
                        secure=cookie_secure(request))
    return response


def _signin_refused(request: Request, error: str, status_code: int, headers: dict[str, str] | None = None):
    token = secrets.token_urlsafe(24)
    response = render(request, "signin.html", {"login_token": token, "error": error}, status_code=status_code)
    response.set_cookie(LOGIN_COOKIE, token, max_age=600, path=COOKIE_PATH, httponly=True, samesite="strict",
                        secure=cookie_secure(request))
    response.headers.update(headers or {})
    return response


@router.post("/signin")
def signin(request: Request, session: SessionDep, key: Annotated[str, Form(max_length=300)],
           login_token: Annotated[str, Form(max_length=100)]) -> Response:
    """Exchange an API key for a session cookie (throttled per address like the API's 401s)."""
    import hmac

    check_same_origin(request)
    expected = request.cookies.get(LOGIN_COOKIE) or ""
    if not expected or not hmac.compare_digest(expected, login_token):
        raise CsrfError("the sign-in form expired; reload it and try again")
    throttle, client = throttle_of(request.app), client_address(request.scope)
    wait = throttle.retry_after(client)
    if wait:
        return _signin_refused(request, f"too many failed sign-ins from this address; try again in {wait} s", 429,
                               {"Retry-After": str(wait)})
    try:
        cookie, _ = new_session_cookie(session=session, key=key)
    except KeyRefusedError as exc:
        throttle.failed(client)
        return _signin_refused(request, str(exc), 401)
    response = redirect("/")
    response.set_cookie(SESSION_COOKIE, cookie, max_age=SESSION_SECONDS, path=COOKIE_PATH, httponly=True,
                        samesite="strict", secure=cookie_secure(request))
    response.delete_cookie(LOGIN_COOKIE, path=COOKIE_PATH)
    return response


@router.post("/signout")
def signout(request: Request, session: SessionDep, dash: DashSessionDep, csrf: Csrf = None) -> Response:
    """End the session: its row is deleted, so the cookie (or a copy of it) opens nothing again."""
    check_csrf(request, dash, csrf)
    end_session(session=session, cookie=request.cookies.get(SESSION_COOKIE))
    response = redirect("/signin")
    response.delete_cookie(SESSION_COOKIE, path=COOKIE_PATH, httponly=True, samesite="strict")
    return response


# ---------------------------------------------------------------- datasets
def datasets_view(request: Request, session, dash: DashboardSession, *, error: str | None = None,
                  status_code: int = 200) -> HTMLResponse:
    """The datasets page (the project's datasets and latest jobs), with ``error`` shown above them: where the
    forms of that page answer from, as well as the page itself."""
    rows, count = crud.list_datasets(session=session, project_id=dash.project.id, limit=1000)
    jobs, n_jobs = crud.list_jobs(session=session, project_id=dash.project.id, limit=1000)
    return render(request, "datasets.html", {"datasets": rows, "count": count, "jobs": jobs[::-1][:20],
                                             "n_jobs": n_jobs, "error": error}, dash=dash, status_code=status_code)


@router.get("/")
def datasets_page(request: Request, session: SessionDep, dash: DashSessionDep) -> HTMLResponse:
    """The project's datasets and its latest jobs."""
    return datasets_view(request, session, dash)


@router.post("/datasets")
def create_dataset(request: Request, session: SessionDep, dash: DashSessionDep,
                   name: Annotated[str, Form(max_length=1000)], csrf: Csrf = None) -> Response:
    """Create an empty dataset."""
    check_csrf(request, dash, csrf)
    try:
        dataset_in = DatasetCreate(name=name)
    except ValidationError as exc:
        return datasets_view(request, session, dash, error=error_message(exc), status_code=422)
    dataset = crud.create_dataset(session=session, project_id=dash.project.id, dataset_in=dataset_in)
    return redirect(f"/datasets/{dataset.id}")


def _dataset_page(request: Request, session, dash: DashboardSession, dataset: Dataset, *,
                  error: str | None = None, status_code: int = 200, form: dict[str, Any] | None = None,
                  pulled: dict[str, Any] | None = None) -> HTMLResponse:
    upload_rows, n_uploads = crud.list_uploads(session=session, dataset_id=dataset.id, limit=PAGE_ROWS,
                                               newest_first=True)
    jobs, n_jobs = crud.list_jobs(session=session, project_id=dash.project.id, dataset_id=dataset.id,
                                  limit=PAGE_ROWS, newest_first=True)
    datasets = {d.id: d for d in crud.list_datasets(session=session, project_id=dash.project.id, limit=1000)[0]}
    return render(request, "dataset.html", {
        "dataset": dataset, "uploads": upload_rows, "n_uploads": n_uploads, "jobs": jobs, "n_jobs": n_jobs,
        "api_dataset": f"{API_PREFIX}/datasets/{dataset.id}", "formats": READ_FORMATS,
        "roles": ROLES, "methods": list(job_methods()), "error": error,
        # A method the data allows first: auto's default for categorical answers, else for BIO labels.
        "default_method": default_method("categorical" if data_kind(dataset.summary).get("categorical")
                                         else "typed-bio"),
        "upload_options": [o for o in UPLOAD_OPTIONS if o.client], "form": form or {}, "defaults": _method_defaults(),
        "earlier_jobs": start_candidates(session=session, project_id=dash.project.id), "datasets": datasets,
        "batch_methods": batch_methods(), "pulled": pulled,
    }, dash=dash, status_code=status_code)


def _method_defaults() -> dict[str, str]:
    """Each method's parameters with their defaults, as JSON (the hint under the job form)."""
    defaults = method_defaults()  # auto and compare have none (compare: each method's parameters by method id)
    return {m: json.dumps(defaults.get(m, {}), default=str) for m in job_methods()}


@router.get("/datasets/{dataset_id}")
def dataset_page(request: Request, dataset_id: str, session: SessionDep, dash: DashSessionDep,
                 pulled: Annotated[int | None, Query(ge=0, le=1)] = None,
                 fetched: Annotated[int, Query(ge=0, le=10**9)] = 0,
                 removed: Annotated[int, Query(ge=0, le=10**9)] = 0,
                 created: Annotated[int, Query(ge=0, le=1)] = 0) -> HTMLResponse:
    """One dataset: its parse summary, uploads (with skipped rows), jobs, and the upload and job forms; after a
    Label Studio pull (``pulled``: 1 if it changed the dataset), what it read and removed, and its notes."""
    from crowdqa.jobs.label_studio import last_pull

    dataset = owned_dataset(session, dash, dataset_id)
    held = last_pull(session=session, dataset_id=dataset.id) if pulled is not None else None
    summary = None if held is None else {**held, "changed": bool(pulled), "fetched": fetched, "removed": removed,
                                         "which": "all" if created else "changed since the last pull"}
    return _dataset_page(request, session, dash, dataset, pulled=summary)


@router.post("/datasets/{dataset_id}/delete")
def delete_dataset(request: Request, dataset_id: str, session: SessionDep, settings: SettingsDep,
                   dash: DashSessionDep, csrf: Csrf = None) -> Response:
    """Delete a dataset with its uploads, jobs and files (refused while one of its jobs runs)."""
    check_csrf(request, dash, csrf)
    dataset = owned_dataset(session, dash, dataset_id)
    try:
        uploads.delete_dataset(session=session, settings=settings, dataset=dataset)
    except DatasetBusyError as exc:
        return _dataset_page(request, session, dash, dataset, status_code=409, error=str(exc))
    return redirect("/")


@router.post("/datasets/{dataset_id}/uploads")
async def upload(request: Request, dataset_id: str, session: SessionDep, settings: SettingsDep,
                 dash: DashSessionDep) -> Response:
    """Upload a crowd or expert file with the API's upload options (``crowdqa.ingest.formats.UPLOAD_OPTIONS``);
    the page then shows the parse summary."""
    from starlette.concurrency import run_in_threadpool
    from starlette.datastructures import UploadFile as Part

    form = await request.form()
    check_csrf(request, dash, form_text(form.get("csrf")))
    dataset = owned_dataset(session, dash, dataset_id)
    try:
        file = form.get("file")
        if not isinstance(file, Part) or not file.filename:
            raise ValueError("choose a file to upload")
        upload = upload_form(given_fields(form))  # the API's check and form model
        await run_in_threadpool(
            uploads.add_upload, session=session, settings=settings, dataset=dataset, stream=upload.file.file,
            filename=upload.file.filename, format=upload.format, role=upload.role, options=upload_options(upload),
            docs_stream=upload.docs.file if upload.docs is not None else None)
    except FORM_ERRORS as exc:
        session.rollback()
        status = getattr(exc, "status", 413 if isinstance(exc, UploadTooLargeError) else 422)
        return _dataset_page(request, session, dash, dataset, error=f"upload refused: {error_message(exc)}",
                             status_code=status)
    finally:
        await form.close()
    return redirect(f"/datasets/{dataset.id}")


def given_fields(form: Any) -> dict[str, Any]:
    """The upload form's fields as a client gives them: text stripped (and cut to 1000 characters), files with a
    name; a field left empty (an option not set, no docs zip) is not given, except the format (refused by name)."""
    from starlette.datastructures import UploadFile as Part

    fields: dict[str, Any] = {}
    for name, value in form.multi_items():
        if isinstance(value, Part):
            if value.filename:
                fields[name] = value
        elif name != "csrf" and (value.strip() or name == "format"):
            fields[name] = form_text(value)
    return fields


def form_text(value: Any, limit: int = 1000) -> str:
    """A text form field, stripped and cut to ``limit`` characters ('' for a missing one or a file)."""
    return value.strip()[:limit] if isinstance(value, str) else ""


def _use_experts_choice(value: str | None) -> bool | None:
    """The job form's experts choice: empty (not given: method auto decides, other methods do not clamp), ``no``
    or anything else (a checkbox's ``on``, ``yes``) for yes."""
    value = (value or "").strip().lower()
    return None if not value else value not in ("no", "0", "off", "false")


@router.post("/datasets/{dataset_id}/jobs")
def start_job(request: Request, dataset_id: str, session: SessionDep, settings: SettingsDep, queue: QueueDep,
              dash: DashSessionDep, method: Annotated[str, Form(max_length=40)],
              params: Annotated[str, Form(max_length=20_000)] = "{}",
              use_experts: Annotated[str | None, Form(max_length=10)] = None,
              reference: Annotated[str, Form(max_length=300)] = "union",
              from_job: Annotated[str, Form(max_length=64)] = "",
              frozen: Annotated[str | None, Form(max_length=10)] = None, csrf: Csrf = None) -> Response:
    """Start a job (method, parameters as JSON, use of experts, reference; a new batch: the earlier job whose
    model it starts from, frozen or as EM's start) and show its progress."""
    check_csrf(request, dash, csrf)
    dataset = owned_dataset(session, dash, dataset_id)
    experts = _use_experts_choice(use_experts)
    form = {"method": method, "params": params, "use_experts": experts, "reference": reference,
            "from_job": from_job, "frozen": bool(frozen)}
    try:
        try:
            parsed = json.loads(params or "{}")
        except json.JSONDecodeError as exc:
            raise ValueError(f"parameters must be a JSON object: {exc}") from None
        if not isinstance(parsed, dict):
            raise ValueError("parameters must be a JSON object, e.g. {\"max_iter\": 50}")
        job_in = JobCreate(method=method, params=parsed, use_experts=experts,
                           reference=reference.strip() or "union", from_job=from_job.strip() or None,
                           frozen=bool(frozen))
        job = service.start_job(session=session, settings=settings, queue=queue, dataset=dataset, job_in=job_in)
    except (ValidationError, *FORM_ERRORS) as exc:
        session.rollback()
        status = 409 if isinstance(exc, JobNotRunnableError) else 503 if isinstance(exc, QueueUnavailableError) \
            else getattr(exc, "status", 422)
        return _dataset_page(request, session, dash, dataset, error=f"job not started: {error_message(exc)}",
                             status_code=status, form=form)
    return redirect(f"/jobs/{job.id}")


# ---------------------------------------------------------------- jobs
def _progress_of(job: Job | JobPublic) -> dict[str, Any]:
    """The job's progress as a dict: a row holds the JSON, a public job the typed JobProgress."""
    return job.progress if isinstance(job.progress, dict) else job.progress.model_dump()


def job_progress(job: Job | JobPublic) -> dict[str, Any]:
    """What the progress poll returns: status, stage, iteration, log-likelihood, error."""
    p = _progress_of(job)
    return {"status": job.status.value, "stage": p.get("stage"), "iteration": p.get("iteration"),
            "log_likelihood": p.get("log_likelihood"), "stage_seconds": p.get("stage_seconds"),
            "error": job.error}


@router.get("/jobs")
def jobs_page(request: Request, session: SessionDep, dash: DashSessionDep,
              status: Annotated[JobStatus | None, Query()] = None,
              offset: Annotated[int, Query(ge=0, le=10**9)] = 0) -> HTMLResponse:
    """The project's jobs, newest first, optionally of one status."""
    _, count = crud.list_jobs(session=session, project_id=dash.project.id, status=status, limit=1)
    size = 50
    # Oldest-first pages from the store, shown newest first: page 0 is the last ``size`` rows.
    start = max(count - offset - size, 0)
    rows, _ = crud.list_jobs(session=session, project_id=dash.project.id, status=status, offset=start,
                             limit=max(min(size, count - offset), 0))
    datasets = {d.id: d for d in crud.list_datasets(session=session, project_id=dash.project.id, limit=1000)[0]}
    return render(request, "jobs.html", {"jobs": rows[::-1], "count": count, "offset": offset, "size": size,
                                         "status": status.value if status else None, "datasets": datasets,
                                         "statuses": [s.value for s in JobStatus]}, dash=dash)


@router.get("/jobs/{job_id}/progress")
def job_progress_json(job_id: str, session: SessionDep, settings: SettingsDep, queue: QueueDep,
                      dash: DashSessionDep) -> JSONResponse:
    """The job's status and progress, polled by the job page's script."""
    view = reconcile.observe(owned_job(session, dash, job_id), settings=settings, queue=queue)
    return JSONResponse(job_progress(view),
                        headers={"Cache-Control": "no-store"})


@router.post("/jobs/{job_id}/rerun")
def rerun_job(request: Request, job_id: str, session: SessionDep, settings: SettingsDep, queue: QueueDep,
              dash: DashSessionDep, csrf: Csrf = None) -> Response:
    """Run a finished or failed job again on the same snapshot and settings."""
    check_csrf(request, dash, csrf)
    job = owned_job(session, dash, job_id)
    try:
        service.rerun_job(session=session, settings=settings, queue=queue, job=job)
    except FORM_ERRORS as exc:
        return job_page_response(request, session, settings, dash, job, error=f"not re-run: {error_message(exc)}",
                                 status_code=409)
    return redirect(f"/jobs/{job.id}")


@router.post("/jobs/{job_id}/delete")
def delete_job(request: Request, job_id: str, session: SessionDep, settings: SettingsDep, queue: QueueDep,
               dash: DashSessionDep, csrf: Csrf = None) -> Response:
    """Delete a job and its results."""
    check_csrf(request, dash, csrf)
    job = owned_job(session, dash, job_id)
    dataset_id = job.dataset_id
    service.delete_job(session=session, settings=settings, queue=queue, job=job)
    return redirect(f"/datasets/{dataset_id}")


def job_page_response(request: Request, session, settings, dash: DashboardSession, job: Job | JobPublic, *,
                      error: str | None = None, status_code: int = 200, pushed: int | None = None, skipped: int = 0,
                      drafted: int = 0, **report: Any) -> HTMLResponse:
    """The job page: progress while it runs, the reason when it failed, the report when finished; after a push to
    Label Studio, how many predictions it wrote (``pushed``), tasks it skipped and tasks nobody annotated it drafted."""
    dataset = job_dataset(session, dash, job)
    history = []
    body = report.get("report")
    if body is not None:
        history = (body.get("fit") or {}).get("log_likelihood") or []
    elif _progress_of(job).get("log_likelihood") is not None:
        history = [_progress_of(job)["log_likelihood"]]
    return render(request, "job.html", {"job": job, "dataset": dataset, "progress": job_progress(job),
                                        "ll_curve": line_curve(history), "error": error, "report": None,
                                        "pushed": pushed, "skipped": skipped, "drafted": drafted,
                                        "pre_annotation": None,
                                        "comparison": None, **report, "label_studio": crud.get_label_studio_link(
                                            session=session, dataset_id=job.dataset_id) is not None},
                  dash=dash, status_code=status_code)
