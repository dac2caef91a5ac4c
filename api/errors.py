"""Every error is ``application/problem+json`` (RFC 9457), documented in the OpenAPI document."""

from __future__ import annotations

import logging
import uuid
from http import HTTPStatus
from typing import Any

import redis
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Match
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from crowdqa.jobs.errors import (
    DatasetBusyError,
    JobNotRunnableError,
    JobParamsError,
    QueueUnavailableError,
    QuotaExceededError,
    UploadConflictError,
)
from crowdqa.store.errors import ArtifactMissingError, UploadTooLargeError

__all__ = ["Problem", "ProblemError", "problem_response", "problem_responses", "install_error_handlers"]

logger = logging.getLogger(__name__)

PROBLEM_JSON = "application/problem+json"


class Problem(BaseModel):
    """An RFC 9457 problem document."""

    type: str = Field(default="about:blank", description="A URI naming the kind of problem.")
    title: str = Field(description="Short summary of the kind of problem (the HTTP reason phrase).")
    status: int = Field(description="The HTTP status code.")
    detail: str | None = Field(default=None, description="What went wrong in this request.")
    errors: list[dict[str, Any]] | None = Field(default=None, description="Field errors (validation failures).")


class ProblemError(Exception):
    """Raise from a route to answer with a problem document."""

    def __init__(self, status: int, detail: str, *, headers: dict[str, str] | None = None) -> None:
        super().__init__(detail)
        self.status, self.detail, self.headers = status, detail, headers


def problem_response(status: int, detail: str | None = None, *, errors: list | None = None,
                     headers: dict[str, str] | None = None) -> JSONResponse:
    """A problem+json response."""
    body = Problem(title=HTTPStatus(status).phrase, status=status, detail=detail, errors=errors)
    return JSONResponse(body.model_dump(exclude_none=True), status_code=status, media_type=PROBLEM_JSON,
                        headers=headers)


_DESCRIPTIONS = {
    401: "Missing, unknown or expired API key.",
    403: "The key may not do this (only an admin key creates or revokes keys).",
    404: "No such resource in the key's project.",
    409: "The resource is not in a state that allows this.",
    413: "The request body exceeds its size limit: CROWDQA_MAX_UPLOAD_BYTES for an upload, "
         "CROWDQA_MAX_BODY_BYTES for any other request.",
    422: "The request or the uploaded file is invalid.",
    429: "Too many requests: failed authentications from this address, or a limit of the project "
         "(CROWDQA_MAX_ACTIVE_JOBS, CROWDQA_MAX_UPLOADS_PER_HOUR, CROWDQA_MAX_PROJECT_BYTES, "
         "CROWDQA_LABEL_STUDIO_CONCURRENCY); retry after the Retry-After header's seconds.",
    503: "The job queue (Redis) is unavailable; nothing was lost, retry later.",
}


def problem_responses(*codes: int) -> dict[int | str, dict[str, Any]]:
    """OpenAPI ``responses`` entries for these problem status codes (401, 413, 422 and 429 always included: the
    key and the body's size are checked before the body is read, by :mod:`crowdqa.api.request_gate`)."""
    out: dict[int | str, dict[str, Any]] = {}
    for code in sorted({401, 413, 422, 429, *codes}):
        out[code] = {"model": Problem, "description": _DESCRIPTIONS.get(code, HTTPStatus(code).phrase),
                     "content": {PROBLEM_JSON: {}}}
        if code == 429:
            out[code]["headers"] = {"Retry-After": {"description": "Seconds to wait before asking again.",
                                                    "schema": {"type": "integer"}}}
    return out


def _validation_errors(exc: RequestValidationError) -> list[dict[str, Any]]:
    return [{"loc": [str(p) for p in e.get("loc", ())], "msg": str(e.get("msg", "")), "type": str(e.get("type", ""))}
            for e in exc.errors()]


def _allowed_methods(request: Request) -> str:
    """Every method some route of the app serves at the request's path (RFC 9110: a 405 lists them all)."""
    methods = [m for m in ("DELETE", "GET", "HEAD", "PATCH", "POST", "PUT")
               if any(route.matches({**request.scope, "method": m})[0] == Match.FULL
                      for route in request.app.router.routes)]
    return ", ".join(methods)


async def _too_large(_: Request, exc: UploadTooLargeError):
    return problem_response(413, f"{exc.what} exceeds the limit of {exc.limit} bytes ({exc.setting})")


class _UnexpectedErrors:
    """An unexpected exception of a request becomes a 500 problem, its traceback logged once.

    Starlette's handler for ``Exception`` answers from its outermost middleware and then re-raises, so the
    server (uvicorn: "Exception in ASGI application") logged the traceback a second time. This middleware
    sits inside the others, logs, answers and does not re-raise; an exception after the response started
    (nothing can be answered then), or raised by an outer middleware, is left to the server, which logs it
    once.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def send_started(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, receive, send_started)
        except Exception as exc:
            if started:
                raise
            request_id = uuid.uuid4().hex[:12]
            logger.exception("unhandled error in %s %s (request id %s)", scope.get("method"), scope.get("path"),
                             request_id, exc_info=exc)
            scope.setdefault("state", {})["request_id"] = request_id
            request = Request(scope, receive)
            # The app's handler for Exception answers (the dashboard shows a page for its own addresses).
            handler = getattr(scope.get("app"), "exception_handlers", {}).get(Exception)
            response = await handler(request, exc) if handler is not None else _internal_error()
            await response(scope, receive, send)


def _internal_error() -> JSONResponse:
    return problem_response(500, "internal error; the server log has the details")


def install_error_handlers(app: FastAPI) -> None:
    """Map every exception the service raises to a problem document."""
    app.add_middleware(_UnexpectedErrors)

    @app.exception_handler(ProblemError)
    async def _problem(_: Request, exc: ProblemError):
        return problem_response(exc.status, exc.detail, headers=exc.headers)

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException):
        headers = getattr(exc, "headers", None)
        if exc.status_code == 400:
            # FastAPI's "error parsing the body" wraps whatever the body reader raised: the body limit
            # (a chunked upload without Content-Length, cut off by crowdqa.api.request_gate) is a 413;
            # bytes that are not JSON / not multipart are the same documented 422 as an invalid body.
            cause = exc.__cause__ or exc.__context__
            if isinstance(cause, UploadTooLargeError):
                return await _too_large(request, cause)
            return problem_response(422, f"the request body cannot be parsed: {exc.detail}", headers=headers)
        if exc.status_code == 405:
            # Starlette names only the first route of the path in Allow; list every method of the path.
            headers = {**(headers or {}), "Allow": _allowed_methods(request)}
        return problem_response(exc.status_code, str(exc.detail) if exc.detail else None, headers=headers)

    @app.exception_handler(RequestValidationError)
    async def _validation(_: Request, exc: RequestValidationError):
        errors = _validation_errors(exc)
        first = errors[0] if errors else {}
        detail = f"{'.'.join(first.get('loc', []))}: {first.get('msg', 'invalid request')}" if first else None
        if first.get("type") == "json_invalid":  # loc is ("body", <character>): say so in words
            raw = exc.errors()[0]
            why = (raw.get("ctx") or {}).get("error", "")
            detail = (f"the request body is not valid JSON{': ' + str(why) if why else ''} "
                      f"(at character {first['loc'][-1]})")
        return problem_response(422, detail, errors=errors)

    app.exception_handler(UploadTooLargeError)(_too_large)

    @app.exception_handler(JobParamsError)
    async def _params(_: Request, exc: JobParamsError):
        return problem_response(422, str(exc), errors=[{"loc": ["body", "params", exc.field], "msg": str(exc),
                                                        "type": "value_error"}])

    async def _conflict(_: Request, exc: Exception):
        return problem_response(409, str(exc))

    # JobNotRunnableError's handler serves its subclasses too (JobNotFinishedError, JobModelMissingError).
    for conflict in (UploadConflictError, JobNotRunnableError, DatasetBusyError):
        app.exception_handler(conflict)(_conflict)

    @app.exception_handler(QuotaExceededError)
    async def _quota(_: Request, exc: QuotaExceededError):
        return problem_response(429, str(exc), headers={"Retry-After": str(exc.retry_after)})

    @app.exception_handler(QueueUnavailableError)
    async def _queue_down(_: Request, exc: QueueUnavailableError):
        return problem_response(503, str(exc), headers={"Retry-After": "5"})

    @app.exception_handler(redis.exceptions.RedisError)
    async def _redis_down(_: Request, exc: redis.exceptions.RedisError):
        return problem_response(503, f"the job queue is unavailable: {exc}", headers={"Retry-After": "5"})

    @app.exception_handler(ArtifactMissingError)
    async def _artifact(_: Request, exc: ArtifactMissingError):
        logger.error("artifact missing: %s", exc)
        return problem_response(500, "a stored result file is missing or damaged; re-run the job")

    @app.exception_handler(ValueError)  # IngestError too: a file that cannot be read
    async def _value(_: Request, exc: ValueError):
        return problem_response(422, str(exc).splitlines()[0] if str(exc) else "invalid value")

    @app.exception_handler(Exception)  # raised outside _UnexpectedErrors: the server logs it as it re-raises
    async def _unexpected(_: Request, exc: Exception):
        return _internal_error()
