"""The upload form, made from the tables of :mod:`crowdqa.ingest.formats`.

:class:`UploadForm` holds the file, its format and role, the docs zip, and one field per upload option a
client may send (:data:`~crowdqa.ingest.formats.UPLOAD_OPTIONS`): type, choices, default and help come
from the table, so the OpenAPI document shows each option as the command line's ``--help`` does. A
field the form does not hold is refused (422), never ignored.

The API's route (:func:`check_upload_request`, a dependency) and the dashboard (:func:`upload_form`) check an
upload's fields by :func:`crowdqa.ingest.formats.check_upload`, the check the command line's reader makes, and
read them into this one form model.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from fastapi import Request, UploadFile
from pydantic import BaseModel, ConfigDict, Field, create_model

from crowdqa.ingest.formats import FORMATS, READ_FORMATS, ROLES, UPLOAD_OPTIONS, UploadOption, check_upload

__all__ = ["UploadForm", "UPLOAD_FIELDS", "DocumentsForm", "upload_options", "upload_form", "documents_form",
           "check_upload_request"]


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


class _DocumentsBase(BaseModel):
    model_config = ConfigDict(extra="forbid")

    file: UploadFile = Field(description="The documents to label, with or without labels (labels are not read): "
                                         "e.g. JSONL with doc_id and text, CoNLL tokens one a line.")
    format: Literal[READ_FORMATS] = Field(description="The format the documents are read as, as an upload's.")


#: The multipart form of ``POST /jobs/{id}/predictions``: the documents, their format and the upload options.
DocumentsForm: type[_DocumentsBase] = create_model(
    "DocumentsForm", __base__=_DocumentsBase, **{o.name: _field(o) for o in UPLOAD_OPTIONS if o.client})


def upload_options(form: _UploadBase | _DocumentsBase) -> dict[str, Any]:
    """The upload options the client sent (those left out take the table's defaults when read)."""
    return form.model_dump(include={o.name for o in UPLOAD_OPTIONS if o.client}, exclude_unset=True)


def upload_form(fields: Mapping[str, Any]) -> _UploadBase:
    """An upload's form fields, checked by the readers' one check (:func:`~crowdqa.ingest.formats.check_upload`:
    an unknown field or a value outside its choices is an IngestError, 422, naming it) and read into
    :class:`UploadForm` (pydantic's ValidationError, a ValueError, for what the check leaves to the model)."""
    check_upload(fields, client=True)
    return UploadForm.model_validate(dict(fields))


def documents_form(fields: Mapping[str, Any]) -> _DocumentsBase:
    """A pre-annotation's form fields, checked as an upload's are (:func:`upload_form`), read into
    :class:`DocumentsForm`."""
    check_upload(fields, client=True)
    return DocumentsForm.model_validate(dict(fields))


async def check_upload_request(request: Request) -> None:
    """The upload routes' dependency (an upload, a pre-annotation's documents): its form's fields through
    :func:`~crowdqa.ingest.formats.check_upload` (the dashboard's and the command line's check) before FastAPI reads
    them into its form model."""
    form = await request.form()  # parsed once: FastAPI has read it for the route's own fields
    check_upload(dict(form.multi_items()), client=True)
