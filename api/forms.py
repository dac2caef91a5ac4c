"""The upload form, made from the tables of :mod:`crowdqa.ingest.formats`.

:class:`UploadForm` holds the file, its format and role, the docs zip, and one field per upload option a
client may send (:data:`~crowdqa.ingest.formats.UPLOAD_OPTIONS`): type, choices, default and help come
from the table, so the OpenAPI document shows each option as the command line's ``--help`` does. A
field the form does not hold is refused (422), never ignored.
"""

from __future__ import annotations

import difflib
from typing import Any, Literal

from fastapi import Request, UploadFile
from pydantic import BaseModel, ConfigDict, Field, create_model

from crowdqa.api.errors import ProblemError
from crowdqa.ingest.formats import FORMATS, READ_FORMATS, ROLES, UPLOAD_OPTIONS, UploadOption

__all__ = ["UploadForm", "UPLOAD_FIELDS", "upload_options", "refuse_unknown_fields"]


def _field(o: UploadOption) -> tuple[Any, Any]:
    kind = Literal[o.choices] if o.choices else o.type
    return kind, Field(o.default, description=o.help[0].upper() + o.help[1:] + ".")


class _UploadBase(BaseModel):
    model_config = ConfigDict(extra="forbid")

    file: UploadFile = Field(description="The label dump.")
    format: Literal[READ_FORMATS] = Field(description="Upload format: " + "; ".join(
        f"{n}: {FORMATS[n].description}" for n in READ_FORMATS) + ".")
    role: Literal[ROLES] = Field(ROLES[0], description="Whether the file's annotators are crowd workers or experts.")
    docs: UploadFile | None = Field(None, description=(
        "A zip of <doc_id>.txt texts, for span formats without texts (pico-jsonl, brat, spans)."))


#: The multipart form of ``POST /datasets/{id}/uploads``.
UploadForm: type[_UploadBase] = create_model(
    "UploadForm", __base__=_UploadBase, **{o.name: _field(o) for o in UPLOAD_OPTIONS if o.client})

#: The form's field names.
UPLOAD_FIELDS: tuple[str, ...] = tuple(UploadForm.model_fields)


def upload_options(form: _UploadBase) -> dict[str, Any]:
    """The upload options the client sent (those left out take the table's defaults when read)."""
    return form.model_dump(include={o.name for o in UPLOAD_OPTIONS if o.client}, exclude_unset=True)


async def refuse_unknown_fields(request: Request) -> None:
    """422 for a form field the upload does not take, naming the closest one (``text_colum``)."""
    form = await request.form()  # parsed once: FastAPI has read it for the route's own fields
    unknown = sorted(set(form.keys()) - set(UPLOAD_FIELDS))
    if unknown:
        close = difflib.get_close_matches(unknown[0], UPLOAD_FIELDS, n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise ProblemError(422, f"unknown form field {unknown[0]!r}{hint} (an upload takes {', '.join(UPLOAD_FIELDS)})")
