"""Every file format crowdqa reads and writes, and every option an upload takes: one table each.

The entry points (CLI, API, dashboard) are made from these tables, never spelled again:
:func:`crowdqa.ingest.read_corpus` dispatches on :data:`FORMATS` and checks its keywords against
:data:`UPLOAD_OPTIONS`; the API's upload form model (``crowdqa.api.forms``) and the command line's upload flags
(``crowdqa.api.commands._uploads``) are generated from :data:`UPLOAD_OPTIONS`; the label writers,
the aggregate reader and the API's label download take their names, media types and suffixes from
:data:`FORMATS`. A new upload option is one row of :data:`UPLOAD_OPTIONS` (and its name in the rows of
the formats whose reader takes it as a keyword).

This module imports no numpy (of crowdqa, only the roles of :mod:`crowdqa.aggregation.roles`), so the
command line's ``--help`` and :mod:`crowdqa.ingest.errors` can read it.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from crowdqa.aggregation.roles import ROLES

__all__ = ["AGGREGATE_FORMATS", "CLIENT_FIELDS", "FORMATS", "Format", "READ_FORMATS", "ROLES", "ROUTING_EXPORTS",
           "UPLOAD_OPTIONS", "UploadOption", "WRITE_FORMATS", "Writer", "check_options", "check_upload",
           "choice_message", "option", "NO_SUCH_PATH", "missing_path"]

@dataclass(frozen=True)
class UploadOption:
    """One option an upload takes, as every entry point (CLI, API, dashboard) shows it.

    Attributes
    ----------
    name : str
        The keyword of :func:`crowdqa.ingest.read_corpus` and of the readers, the API's form field;
        the command line's flag is ``--`` + the name with ``-`` for ``_``.
    help : str
        One line, shown by ``--help``, the OpenAPI document and the dashboard.
    type : {str, bool}, default=str
        ``bool`` options are switches (a flag on the command line, a checkbox on the dashboard).
    choices : tuple of str, default=()
        The values allowed, if they are few; empty for free text.
    default : str, bool or None, default=None
        The value when the option is not given (``None``: the reader decides, e.g. by the header).
    client : bool, default=True
        Whether an API client may send it; ``docs`` names a server folder, so a client sends a zip instead.
    metavar : str, default="NAME"
        The placeholder ``--help`` shows for a free-text value.
    """

    name: str
    help: str
    type: type = str
    choices: tuple[str, ...] = ()
    default: str | bool | None = None
    client: bool = True
    metavar: str = "NAME"


#: The options an upload takes besides its file, format and role, in the order the CLI and the API list them.
UPLOAD_OPTIONS: tuple[UploadOption, ...] = (
    UploadOption("docs", "folder of <doc_id>.txt texts for span formats without texts", client=False, metavar="DIR"),
    UploadOption("category", "the PICO / EBM-NLP element, or the one label to keep"),
    UploadOption("text_column", "column or key holding the document text"),
    UploadOption("answer_column", "MTurk answer column (default Answer.taskAnswers); categorical: the label column"),
    UploadOption("id_column", "column or key holding the document (categorical: item) id"),
    UploadOption("annotator_column", "categorical: the annotator column (name or number)"),
    UploadOption("gold_column", "categorical: the gold label column (name or number)"),
    UploadOption("keep_rejected", "keep rejected MTurk assignments", type=bool, default=False),
    UploadOption("on_error", "fail on the first bad row, or skip bad rows and count them", choices=("fail", "skip"),
                 default="fail"),
    UploadOption("repeats", "categorical: an annotator's repeated answers to one item: identical ones count once; "
                 "differing ones keep the first, the last, are dropped, or refuse the file",
                 choices=("first", "last", "drop", "refuse"), default="first"),
    UploadOption("scheme", "label scheme: inside/outside, BIO, auto (IO for one entity type, BIO for several), or "
                 "tags (one tag of a tag set per token, no spans, any tokens may be left unlabelled; conll)",
                 choices=("auto", "io", "bio", "tags"), default="auto"),
)

_OPTION = {o.name: o for o in UPLOAD_OPTIONS}


def option(name: str) -> UploadOption:
    """The row of :data:`UPLOAD_OPTIONS` named ``name``."""
    return _OPTION[name]


@dataclass(frozen=True)
class Writer:
    """How aggregated labels are written in one format (:func:`crowdqa.ingest.writers.write_labels`).

    Attributes
    ----------
    media_type : str
        The HTTP content type of the download.
    suffix : str
        The file name suffix (a folder format is downloaded as a zip).
    folder : bool, default=False
        Whether the writer makes a folder rather than one file.
    """

    media_type: str
    suffix: str
    folder: bool = False


@dataclass(frozen=True)
class Format:
    """One file format and what crowdqa does with it.

    Attributes
    ----------
    name : str
    description : str
    reader : str or None
        ``"module:function"`` of the upload reader, ``reader(path, *, role, problems, **options)``
        returning a Corpus (imported on first use); None if the format is not an upload format.
    options : tuple of str
        The :data:`UPLOAD_OPTIONS` the reader takes as keywords. ``role`` and ``on_error`` apply to
        every format and are not listed.
    writer : Writer or None
        How aggregated labels are written in this format, if they can be.
    aggregate : bool
        Whether :func:`crowdqa.ingest.aggregate_input.read_aggregate` reads an aggregate in this
        format back onto a corpus' tokens.
    experts : bool
        Whether one file of this format can hold expert labels beside the crowd's (a gold column,
        ``gold/`` folders, a role per row, stored roles), so that using the experts needs no second file.
    """

    name: str
    description: str
    reader: str | None = None
    options: tuple[str, ...] = ()
    writer: Writer | None = None
    aggregate: bool = False
    experts: bool = False


_SPANS = ("docs", "category", "scheme")

#: Every format, by name.
FORMATS: dict[str, Format] = {f.name: f for f in (
    Format("mturk-csv", "Mechanical Turk batch results: one assignment per row, spans in the answer JSON",
           "crowdqa.ingest.mturk_csv:read_mturk_csv",
           ("text_column", "answer_column", "id_column", "category", "keep_rejected", "scheme")),
    Format("spans-jsonl", "one character span per JSON line, with the spans-csv keys",
           "crowdqa.ingest.spans_table:read_spans_jsonl", _SPANS,
           writer=Writer("application/x-ndjson", ".jsonl"), aggregate=True, experts=True),
    Format("spans-csv", "one character span per row: doc_id, annotator, start, end, label (role, text optional)",
           "crowdqa.ingest.spans_table:read_spans_csv", _SPANS, aggregate=True, experts=True),
    Format("conll", "CoNLL columns: a token and one tag per annotator on each line, blank lines between sentences",
           "crowdqa.ingest.conll:read_conll", ("scheme",),
           writer=Writer("text/plain; charset=utf-8", ".conll"), aggregate=True),
    Format("tokens-csv", "one row per token and annotator: doc_id, token_index, token, annotator, label (role "
           "optional); a tag set, any tokens labelled", "crowdqa.ingest.token_table:read_tokens_csv",
           writer=Writer("text/csv; charset=utf-8", ".csv"), experts=True),
    Format("tokens-jsonl", "one JSON line per token and annotator, with the tokens-csv keys",
           "crowdqa.ingest.token_table:read_tokens_jsonl",
           writer=Writer("application/x-ndjson", ".jsonl"), experts=True),
    Format("conll-folders", "Rodrigues et al.'s per-worker CoNLL folders (folder or zip): ground_truth/<HIT>.txt "
           "and mturk_train_data/<worker>/<HIT>.txt", "crowdqa.ingest.conll_folders:read_conll_folders",
           experts=True),
    Format("ebm-nlp", "EBM-NLP corpus folder (or archive): tokens and per-worker token label files",
           "crowdqa.ingest.ebm_nlp:read_ebm_nlp", ("category",),
           writer=Writer("application/zip", ".zip", folder=True), aggregate=True, experts=True),
    Format("pico-jsonl", "PICO crowd annotations (Nguyen et al. 2017): one JSON document per line",
           "crowdqa.ingest.pico_jsonl:read_pico_jsonl", ("docs", "category")),
    Format("brat", "brat standoff: one folder per annotator of <doc>.txt and <doc>.ann",
           "crowdqa.ingest.brat:read_brat", _SPANS),
    Format("label-studio", "Label Studio JSON export (tasks with annotations)",
           "crowdqa.ingest.label_studio:read_label_studio", ("text_column", "id_column", "category", "scheme")),
    Format("doccano", "doccano JSONL export",
           "crowdqa.ingest.doccano:read_doccano", ("text_column", "id_column", "category", "scheme")),
    Format("categorical", "one answer per row: item, annotator, label (and an optional gold column)",
           "crowdqa.ingest.categorical:read_categorical",
           ("id_column", "annotator_column", "answer_column", "gold_column", "repeats"), experts=True),
    Format("categorical-csv", "item,label rows: an aggregate of categorical answers",
           writer=Writer("text/csv; charset=utf-8", ".csv"), aggregate=True),
    Format("token-scores", "the marginal export: one row per token, doc_id, token, text, label, score (the "
           "calibrated probability that the label is right) and p:<class> for every class",
           writer=Writer("text/csv; charset=utf-8", ".csv")),
    Format("corpus", "a corpus .npz written by crowdqa (crowdqa ingest --save); roles as stored",
           "crowdqa.ingest._io:read_corpus_npz", aggregate=True, experts=True),
)}

#: Upload formats (:func:`crowdqa.ingest.read_corpus` reads them).
READ_FORMATS: tuple[str, ...] = tuple(n for n, f in FORMATS.items() if f.reader)
#: Formats aggregated labels are written in.
WRITE_FORMATS: tuple[str, ...] = tuple(n for n, f in FORMATS.items() if f.writer)
#: Formats an aggregate is read back from.
AGGREGATE_FORMATS: tuple[str, ...] = tuple(n for n, f in FORMATS.items() if f.aggregate)

#: What a routing list can be written as: the task CSV, or the routed documents as tasks of an annotation
#: tool whose export reads back as an expert upload (:mod:`crowdqa.ingest.routing_export`).
ROUTING_EXPORTS: tuple[str, ...] = ("csv", "label-studio", "doccano", "spans-jsonl")


#: What every entry point says of a path that is not there (a file or a folder may have been meant); the operating
#: system's "No such file or directory" is said in these words too.
NO_SUCH_PATH = "no such file or folder"


def missing_path(path: object, *, option: str | None = None) -> str:
    """The one line for a path that is not there: ``"--aggregate x.jsonl: no such file or folder"``."""
    return f"{option + ' ' if option else ''}{path}: {NO_SUCH_PATH}"


def choice_message(name: str, value: object, choices: tuple[str, ...] | None = None) -> str:
    """``"<name> must be 'a', 'b' or 'c', found <value>"``, the choices of option ``name`` by default."""
    choices = option(name).choices if choices is None else choices
    listed = " or ".join([", ".join(map(repr, choices[:-1])), repr(choices[-1])] if len(choices) > 1
                         else map(repr, choices))
    return f"{name} must be {listed}, found {value!r}"


#: The fields of an upload sent by a client (the API's form, the dashboard's), besides the options: the file,
#: its format and role, and the zip of document texts (a file from a client, never a server path).
CLIENT_FIELDS: tuple[str, ...] = ("file", "format", "role", "docs")


def check_upload(fields: Mapping[str, Any], *, client: bool = False, source: str = "") -> None:
    """The one check of an upload's format, role and options, whichever entry point it comes through.

    The API's upload form (a dependency of its route), the dashboard's upload form and
    :func:`crowdqa.ingest.read_corpus` (the command line, every library caller) call it, so the same bad field
    gets the same message from every entry point.

    Parameters
    ----------
    fields : mapping
        ``format``, ``role`` and option name -> value, each optional; ``None`` stands for "not given". From a
        client, also ``file`` and ``docs``: its files, which the form model checks.
    client : bool, default=False
        Check what a client sent: an option a client may not send (``docs`` as a server folder) is unknown, and
        the names in :data:`CLIENT_FIELDS` are the form's.
    source : str, default=""
        The file the fields are for, named in the message of an unknown format or option.

    Raises
    ------
    IngestError
        One line naming the first unknown field (with the closest known name) or value outside its choices.
    """
    from crowdqa.ingest.errors import IngestError  # errors imports this table

    for name, value in fields.items():
        if name == "format":
            if value not in READ_FORMATS:
                raise IngestError(f"unknown format {value!r}; expected one of {', '.join(READ_FORMATS)}",
                                  source=source)
        elif name == "role":
            if value not in ROLES:
                raise IngestError(choice_message("role", value, ROLES))
        elif not (client and name in CLIENT_FIELDS):
            _check_option(name, value, client=client, source=source,
                          also=CLIENT_FIELDS if client else ())


def check_options(options: Mapping[str, Any], *, client: bool = False, source: str = "") -> None:
    """Refuse an option that is not in :data:`UPLOAD_OPTIONS` (or that an API client may not send), or a value
    outside its choices, with an IngestError naming it (:func:`check_upload` of the options alone)."""
    for name, value in options.items():
        _check_option(name, value, client=client, source=source)


def _check_option(name: str, value: Any, *, client: bool, source: str, also: tuple[str, ...] = ()) -> None:
    """IngestError for an unknown option ``name`` (naming the closest of the options and ``also``, the
    form's other fields) or a value outside its choices."""
    from crowdqa.ingest.errors import IngestError

    if name not in _OPTION or (client and not _OPTION[name].client):
        known = [*also, *(o.name for o in UPLOAD_OPTIONS if o.client or not client)]
        close = difflib.get_close_matches(name, known, n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise IngestError(f"unknown upload option {name!r}{hint} (options: {', '.join(known)})", source=source)
    if _OPTION[name].choices and value is not None and value not in _OPTION[name].choices:
        raise IngestError(choice_message(name, value), source=source)
