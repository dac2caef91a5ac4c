"""Dashboard: connect a Label Studio project (pull its annotations into a dataset) and push a job back.

The token field is a password field; the token is kept sealed with the dataset (the same use case as
``POST /api/v1/label-studio/pulls``), never rendered again, never logged.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import Form, Request
from fastapi.responses import Response

from crowdqa.api.dashboard.auth import DashSessionDep, check_csrf
from crowdqa.api.dashboard.pages import (
    FORM_ERRORS,
    Csrf,
    datasets_view,
    error_message,
    job_page_response,
    owned_job,
    router,
)
from crowdqa.api.dashboard.web import redirect
from crowdqa.api.deps import SessionDep, SettingsDep
from crowdqa.jobs.errors import UploadConflictError
from crowdqa.jobs.label_studio import connect, pull, push

__all__ = ["connect_label_studio", "push_to_label_studio"]


@router.post("/label-studio")
def connect_label_studio(request: Request, session: SessionDep, settings: SettingsDep, dash: DashSessionDep,
                         url: Annotated[str, Form(max_length=500)], token: Annotated[str, Form(max_length=4000)],
                         project: Annotated[str, Form(max_length=20)],
                         dataset: Annotated[str, Form(max_length=200)] = "",
                         experts: Annotated[str, Form(max_length=20_000)] = "",
                         ground_truth: Annotated[str | None, Form(max_length=10)] = None,
                         csrf: Csrf = None) -> Response:
    """Pull a Label Studio project into a dataset (named, or ``label-studio <id>: <title>``; a second pull of the
    same project reads what changed), then show the dataset with what the pull did and noticed."""
    check_csrf(request, dash, csrf)
    if not project.strip().isdigit():
        return datasets_view(request, session, dash, error=f"the Label Studio project id must be a number, found "
                              f"{project.strip()[:20]!r}", status_code=422)
    names = [e.strip() for e in experts.replace("\n", ",").split(",") if e.strip()]
    try:
        with connect(url, token, allowed=settings.label_studio_origins, settings=settings) as client:
            done = pull(session=session, settings=settings, client=client, ls_project=int(project),
                        project_name=dash.project.name, dataset_name=dataset.strip() or None, experts=names,
                        ground_truth=True if ground_truth else None, keep_token=token)
    except (*FORM_ERRORS, UploadConflictError) as exc:
        session.rollback()
        return datasets_view(request, session, dash, error=error_message(exc), status_code=422)
    # The dataset's page says what the pull did: its counts here, the rest (tasks held, notes) from the link.
    return redirect(f"/datasets/{done.dataset.id}?pulled={int(done.changed)}&fetched={done.fetched}"
                    f"&removed={done.removed}&created={int(done.created)}")


@router.post("/jobs/{job_id}/label-studio")
def push_to_label_studio(request: Request, job_id: str, session: SessionDep, settings: SettingsDep,
                         dash: DashSessionDep, csrf: Csrf = None) -> Response:
    """Write the job's aggregate on the Label Studio tasks as predictions, with the token kept at the pull (and,
    when the job's model reads the text, its drafts on the tasks nobody annotated)."""
    check_csrf(request, dash, csrf)
    job = owned_job(session, dash, job_id)
    try:
        done = push(session=session, settings=settings, job=job, allowed=settings.label_studio_origins)
    except (*FORM_ERRORS, LookupError) as exc:  # shown on the job's page, where the push was asked for
        return job_page_response(request, session, settings, dash, job, error=error_message(exc), status_code=422)
    return redirect(f"/jobs/{job.id}?pushed={done.predictions}&skipped={done.skipped}&drafted={done.pre_annotated}")
