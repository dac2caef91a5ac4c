"""The OpenAPI document as clients generated from it need it.

FastAPI writes most of the document from the routes; three things it writes in a way that a
generated client (``openapi-python-client``, and the OpenAPI generators that read media types
the same way) cannot use, and that are fixed here, once, for every route:

- A route's ``responses`` entry for an error names the :class:`~crowdqa.api.errors.Problem`
  model, which FastAPI files under ``application/json``, a media type the service never sends
  for an error; the schema is moved to ``application/problem+json``, the one it sends.
- An uploaded file is a string with ``contentMediaType: application/octet-stream`` (JSON
  Schema 2020-12, as pydantic 2 writes it); ``format: binary`` is added beside it, which is how
  OpenAPI 3.0 tools (and so most generators) recognise a file part of a multipart body.
- Operation ids are the route functions' names (``create_upload``, ``list_workers``) instead
  of FastAPI's path-derived ids: the method names of a generated client
  (:func:`operation_id`).
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi
from fastapi.routing import APIRoute

from crowdqa.api.errors import PROBLEM_JSON

__all__ = ["download_response", "install_openapi", "operation_id"]


def operation_id(route: APIRoute) -> str:
    """A route's operation id: its function's name (unique across the API; a test checks)."""
    return route.name


def download_response(description: str, *media_types: str) -> dict[str, Any]:
    """The ``responses[200]`` entry of a route that answers with a file, one schema per media type.

    Text (``text/*``, JSON Lines) is a string, a zip or ``.npz`` a binary string (a generated
    client's ``File``), a JSON file any JSON value. A generated client parses the first media type
    it knows, so text types are listed first; every client also keeps the raw bytes
    (``Response.content``), whatever format a ``format`` parameter chose.
    """
    def schema(media_type: str) -> dict[str, str]:
        if media_type.startswith("text/") or "ndjson" in media_type:
            return {"type": "string"}
        if media_type.split(";")[0].endswith("json"):
            return {}
        return {"type": "string", "format": "binary"}

    ordered = sorted(dict.fromkeys(media_types), key=lambda m: not m.startswith("text/"))
    return {"description": description, "content": {m: {"schema": schema(m)} for m in ordered}}


def install_openapi(app: FastAPI) -> None:
    """Serve the document built by :func:`_document` (built once, on first request)."""

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            app.openapi_schema = _document(app)
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]


def _document(app: FastAPI) -> dict[str, Any]:
    doc = get_openapi(title=app.title, version=app.version, summary=app.summary, description=app.description,
                      routes=app.routes)
    for operation in (op for path in doc.get("paths", {}).values() for op in path.values()):
        for response in operation.get("responses", {}).values():
            content = response.get("content", {})
            if PROBLEM_JSON in content and "application/json" in content:
                content[PROBLEM_JSON] = content.pop("application/json")
    _mark_binary(doc.get("components", {}).get("schemas", {}))
    return doc


def _mark_binary(node: Any) -> None:
    """Add ``format: binary`` to every octet-stream string schema under ``node``."""
    if isinstance(node, dict):
        if node.get("type") == "string" and node.get("contentMediaType") == "application/octet-stream":
            node.setdefault("format", "binary")
        for value in node.values():
            _mark_binary(value)
    elif isinstance(node, list):
        for value in node:
            _mark_binary(value)
