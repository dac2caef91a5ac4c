"""Dashboard pages for paying and blocking: a job's batch review and the project's block list.

The review page reads its rules from the query string (a GET form: looking changes nothing), calls the
same use case as ``POST /api/v1/jobs/{id}/review`` (:func:`crowdqa.jobs.exports.review_job`) and shows the
summary with download links for the reviewed batch and the bonus list; every worker has a Block button
(a POST form with the CSRF token) that puts it on the project's block list.
"""

from __future__ import annotations

from typing import Annotated, Any
from urllib.parse import urlencode

from fastapi import Form, Query, Request
from fastapi.responses import HTMLResponse, Response
from pydantic import ValidationError

from crowdqa.api.dashboard.auth import DashSessionDep, check_csrf
from crowdqa.api.dashboard.pages import Csrf, error_message, job_dataset, owned_job, router
from crowdqa.api.dashboard.web import PageError, redirect, render
from crowdqa.api.deps import SessionDep, SettingsDep
from crowdqa.api.routes.review import ReviewRequest
from crowdqa.jobs import blocklist, exports, review
from crowdqa.jobs.errors import JobNotRunnableError

__all__ = ["review_page", "blocked_page"]

#: The rule fields of the review form, in the order the form shows them.
RULE_FIELDS = ("reject_below", "min_tokens", "decide_by", "against", "metric", "bonus", "bonus_above", "upload_id",
               "block_from")


def _rules(request: Request) -> dict[str, str]:
    """The rule fields given in the query string (empty ones left out, each cut to 100 characters)."""
    return {k: v.strip()[:100] for k in RULE_FIELDS if (v := request.query_params.get(k, "")).strip()}


def _outcome(session, settings, job, given: dict[str, str], **extra: Any):
    """The review the rules in ``given`` make; a PageError saying why it was not made (bad rules 422, no such
    upload 404, a job or upload that cannot be reviewed 409)."""
    try:
        body = ReviewRequest.model_validate({**given, **extra})
        return exports.review_job(session=session, settings=settings, job=job, rules=body.rules(),
                                  upload_id=body.upload_id, block_from=body.block_from)
    except (ValidationError, ValueError) as exc:
        raise PageError(422, f"review not made: {error_message(exc)}") from None
    except LookupError as exc:
        raise PageError(404, f"review not made: {exc}") from None
    except JobNotRunnableError as exc:
        raise PageError(409, f"review not made: {exc}") from None


@router.get("/jobs/{job_id}/review")
def review_page(request: Request, job_id: str, session: SessionDep, settings: SettingsDep,
                dash: DashSessionDep) -> HTMLResponse:
    """The review form and, once a threshold is given, what the rules decide (nothing is written)."""
    job = owned_job(session, dash, job_id)
    given = _rules(request)
    summary, error, status = None, None, 200
    if "reject_below" in given:
        try:
            summary = _outcome(session, settings, job, given).summary
        except PageError as exc:  # shown on the form's page
            error, status = exc.detail, exc.status
    query = urlencode(given)
    return render(request, "review.html", {
        "job": job, "dataset": job_dataset(session, dash, job), "form": given, "summary": summary, "error": error,
        "query": query,
        "interval": review.interval_name(summary["rules"]["level"]) if summary else None,
        "mturk_batch": exports.has_batch(session=session, job=job),
        "next": f"/jobs/{job.id}/review" + (f"?{query}" if query else ""),
    }, dash=dash, status_code=status)


@router.get("/jobs/{job_id}/review.csv")
def review_download(request: Request, job_id: str, session: SessionDep, settings: SettingsDep,
                    dash: DashSessionDep,
                    output: Annotated[str, Query(pattern="^(batch|bonuses|decisions|block-list)$")] = "batch"
                    ) -> Response:
    """The reviewed batch-results CSV (or the bonus list, the decisions, the block list), as the API's review
    actions give them."""
    job = owned_job(session, dash, job_id)
    outcome = _outcome(session, settings, job, _rules(request))
    if output in ("decisions", "block-list"):
        data = outcome.decisions_csv() if output == "decisions" else outcome.block_list_csv()
        return Response(data, media_type="text/csv; charset=utf-8",
                        headers={"Content-Disposition": f'attachment; filename="{job.id}-{output}.csv"'})
    if outcome.batch is None:
        raise PageError(409, f"review not made: the dataset of job {job.id} has no mturk-csv crowd upload to "
                             "write back; download the decisions or the block list")
    if output == "bonuses":
        return Response(outcome.bonus_csv(), media_type="text/csv; charset=utf-8",
                        headers={"Content-Disposition": f'attachment; filename="{job.id}-bonuses.csv"'})
    return Response(outcome.reviewed_csv(), media_type=outcome.media_type,
                    headers={"Content-Disposition": f'attachment; filename="{job.id}-reviewed.csv"'})


@router.post("/jobs/{job_id}/review/block")
def apply_block_list(request: Request, job_id: str, session: SessionDep, settings: SettingsDep,
                     dash: DashSessionDep, csrf: Csrf = None) -> Response:
    """Put the review's block list (the rules in the query string) on the project's block list, then show it."""
    check_csrf(request, dash, csrf)
    job = owned_job(session, dash, job_id)
    outcome = _outcome(session, settings, job, _rules(request))
    blocklist.block_rows(session=session, project_id=dash.project.id, rows=outcome.summary["block_list"])
    return redirect("/blocked")


def _back(next_path: str) -> str:
    """Where to go after a block or unblock: a dashboard path given by the form, else the block list."""
    if next_path.startswith("/") and not next_path.startswith("//") and "\\" not in next_path:
        return next_path
    return "/blocked"


@router.get("/blocked")
def blocked_page(request: Request, session: SessionDep, dash: DashSessionDep) -> HTMLResponse:
    """The project's block list, with an Unblock button per worker and a form to block one."""
    rows, count = blocklist.list_blocked(session=session, project_id=dash.project.id, limit=10_000)
    return render(request, "blocked.html", {"rows": rows, "count": count}, dash=dash)


@router.post("/blocked")
def block(request: Request, session: SessionDep, dash: DashSessionDep,
          annotator: Annotated[str, Form(max_length=1000)] = "", reason: Annotated[str, Form(max_length=2000)] = "",
          next: Annotated[str, Form(max_length=2000)] = "/blocked", csrf: Csrf = None) -> Response:
    """Block a worker (its later jobs fit without it) and go back where the form was."""
    check_csrf(request, dash, csrf)
    try:
        blocklist.block_workers(session=session, project_id=dash.project.id, annotators=[annotator.strip()],
                                reason=reason.strip())
    except ValidationError as exc:
        rows, count = blocklist.list_blocked(session=session, project_id=dash.project.id, limit=10_000)
        return render(request, "blocked.html", {"rows": rows, "count": count,
                                                "error": f"not blocked: {error_message(exc)}"},
                      dash=dash, status_code=422)
    return redirect(_back(next))


@router.post("/blocked/remove")
def unblock(request: Request, session: SessionDep, dash: DashSessionDep,
            annotator: Annotated[str, Form(max_length=1000)],
            next: Annotated[str, Form(max_length=2000)] = "/blocked", csrf: Csrf = None) -> Response:
    """Unblock a worker: jobs started from now on fit with its labels again."""
    check_csrf(request, dash, csrf)
    try:
        blocklist.unblock_worker(session=session, project_id=dash.project.id, annotator=annotator)
    except LookupError as exc:
        raise PageError(404, str(exc)) from None
    return redirect(_back(next))

