"""What the readers share: the first step of every reader, the tolerant CSV row loop, the span collector,
offsets from loose input, JSON span lists, document texts."""

from __future__ import annotations

import csv
import json
import os
import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from crowdqa.aggregation.corpus import Corpus
from crowdqa.ingest._io import read_text
from crowdqa.ingest.build import Span, corpus_from_spans
from crowdqa.ingest.errors import DocumentTooLongError, IngestError, ProblemLog
from crowdqa.ingest.formats import ROLES, choice_message
from crowdqa.ingest.limits import DocumentLimits

__all__ = ["as_offset", "parse_span_list", "DocsFolder", "reader_log", "csv_rows", "json_lines", "SpanCollector",
           "spans_at"]


def reader_log(role: str, problems: ProblemLog | None) -> ProblemLog:
    """Every reader's first step: refuse a ``role`` outside :data:`~crowdqa.ingest.formats.ROLES`, and return
    where bad rows go (``problems``, by default a log that raises at the first)."""
    if role not in ROLES:
        raise IngestError(choice_message("role", role, ROLES))
    return problems if problems is not None else ProblemLog("fail")


def csv_rows(reader: Any, *, width: int, source: str, problems: ProblemLog) -> Iterator[tuple[int, list[str]]]:
    """The rows of a ``csv.reader`` after its header, each with the line it starts on (quoted fields may
    span lines). Blank rows are passed over; a malformed row or one of another ``width`` is reported to
    ``problems`` (raised or skipped by its mode) and passed over, and reading goes on after it."""
    start = 2
    while True:
        try:
            values = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            problems.report(f"malformed CSV row: {exc}", source=source, line=start)
            start = reader.line_num + 1
            continue
        line, start = start, reader.line_num + 1
        if not any(v.strip() for v in values):
            continue
        if len(values) != width:
            problems.report(f"row has {len(values)} fields, the header has {width}", source=source, line=line)
            continue
        yield line, values


_LINE_BREAK = re.compile(r"\r\n|\r|\n")


def jsonl_lines(content: str) -> list[str]:
    """The lines of JSON Lines text, cut only where JSON allows no raw character in a string (``\\n``,
    ``\\r``, ``\\r\\n``): ``str.splitlines`` also cuts at U+2028, U+2029 and U+0085, which a JSON string
    may hold unescaped (``json.dumps(..., ensure_ascii=False)`` writes them so)."""
    return content.splitlines() if content.isascii() else _LINE_BREAK.split(content)


def json_lines(content: str, *, source: str, problems: ProblemLog) -> Iterator[tuple[int, Any]]:
    """The values of JSON Lines text, each with its line number (:func:`jsonl_lines`). Blank lines are
    passed over; a line that is not JSON is reported to ``problems`` and passed over."""
    for lineno, raw in enumerate(jsonl_lines(content), start=1):
        if not raw.strip():
            continue
        try:
            yield lineno, json.loads(raw)
        except ValueError as exc:
            problems.report(f"not a JSON object: {exc}", source=source, line=lineno)


class SpanCollector:
    """What a span reader gathers, document by document, and the corpus it makes.

    A reader checks its rows, then hands each document (its text, the annotators who labelled it, the
    spans they marked) to :meth:`add`; :meth:`corpus` aligns them all at once
    (:func:`crowdqa.ingest.build.corpus_from_spans`).

    Parameters
    ----------
    role : str
        The role of annotators whose role the file does not give.
    problems : ProblemLog
    category : str, optional
        Keep only spans of this label.
    """

    def __init__(self, *, role: str, problems: ProblemLog, category: str | None = None) -> None:
        self.role, self.problems, self.category = role, problems, category
        self.documents: dict[str, str] = {}
        self.text_source: dict[str, str] = {}
        #: Where each document was read (source, line), for a refusal its builder makes (too many tokens).
        self.read_at: dict[str, tuple[str, int | None]] = {}
        self.assignments: list[tuple[str, str]] = []
        self.spans: list[Span] = []
        self.roles: dict[str, str] = {}
        #: Spans left out by ``category``, by label (said when the category kept none).
        self.other_labels: dict[str, int] = {}

    def other_text(self, doc_id: str, text: str) -> str | None:
        """Where the document's earlier, different text came from ("" if not recorded); None if it agrees or is new."""
        if doc_id in self.documents and self.documents[doc_id] != text:
            return self.text_source.get(doc_id, "")
        return None

    def add(self, doc_id: str, text: str, annotators: Iterable[str], spans: Iterable[Span] = (), *,
            text_source: str = "", role: str | None = None, source: str = "", line: int | None = None) -> None:
        """Record one document's text (the first one given, from ``text_source``), its assignments (one per
        annotator, also one who marked nothing) and their spans (those of ``category``). A text longer than the
        reading's :class:`~crowdqa.ingest.limits.DocumentLimits` allows is refused, naming ``source`` and
        ``line`` (where the reader met it) or else ``text_source``."""
        if doc_id not in self.documents:
            self.problems.limits.check_chars(len(text), doc_id=doc_id, source=source or text_source, line=line)
            self.read_at[doc_id] = (source or text_source, line)
            self.documents[doc_id] = text
            self.text_source[doc_id] = text_source
        for a in annotators:
            self.assignments.append((doc_id, a))
            self.roles.setdefault(a, role or self.role)
        if self.category is None:
            self.spans.extend(spans)
            return
        for span in spans:
            if span.label == self.category:
                self.spans.append(span)
            else:
                self.other_labels[span.label] = self.other_labels.get(span.label, 0) + 1

    def corpus(self, *, scheme: str = "auto", types: list[str] | None = None) -> Corpus:
        """The corpus of everything added (spans aligned to tokens by the overlap rule). When ``category`` kept
        none of the file's spans, a note says so: its annotators read as marking nothing, which scores every
        span of the others as wrong (a misspelt category, or an expert file that names it otherwise)."""
        if self.category is not None and not self.spans and self.other_labels:
            labels = ", ".join(repr(k) for k in sorted(self.other_labels)[:8])
            self.problems.note(f"category {self.category!r} is none of the labels of this {self.role} file's "
                               f"{sum(self.other_labels.values())} spans ({labels}): its annotators read as marking "
                               "nothing")
        try:
            return corpus_from_spans(documents=self.documents, assignments=self.assignments, spans=self.spans,
                                     roles=self.roles, scheme=scheme, types=types, problems=self.problems)
        except DocumentTooLongError as exc:  # too many tokens: counted once all are tokenized at once
            raise exc.at(*self.read_at.get(exc.doc_id, (exc.source, exc.line))) from None


def spans_at(found: Iterable[tuple[int, int, str]], doc_id: str, annotator: str, *, source: str,
             line: int | None) -> list[Span]:
    """``(start, end, label)`` triples (:func:`parse_span_list`) as spans of one annotator on one document."""
    return [Span(doc_id, annotator, s, e, label, source=source, line=line) for s, e, label in found]


def as_offset(value: Any) -> int:
    """A character offset from JSON or CSV input: an int, or a string of digits.

    Raises
    ------
    ValueError
        For anything else (floats, booleans, negative numbers, text).
    """
    if isinstance(value, bool):
        raise ValueError(f"offset must be a non-negative integer, found {value!r}")
    if isinstance(value, int):
        out = value
    elif isinstance(value, str) and value.strip().isdigit():
        out = int(value.strip())
    elif isinstance(value, float) and value.is_integer():
        out = int(value)
    else:
        raise ValueError(f"offset must be a non-negative integer, found {value!r}")
    if out < 0:
        raise ValueError(f"offset must be a non-negative integer, found {value!r}")
    return out


def parse_span_list(value: Any, *, default_label: str | None) -> list[tuple[int, int, str]]:
    """Spans from the JSON shapes annotation tools write.

    Accepted: crowd-entity-annotation (``[{"<name>": {"entities": [...]}}]`` or
    ``{"entities": [...]}``), a list of objects with ``startOffset``/``endOffset``,
    ``start``/``end`` or ``start_offset``/``end_offset`` and ``label``, and a list of
    ``[start, end]`` or ``[start, end, label]``. Spans without a label get
    ``default_label``.

    Raises
    ------
    ValueError
        If the value is none of these shapes (the message says what was found).
    """
    out: list[tuple[int, int, str]] = []

    def label_of(obj: Any) -> str:
        if obj is None or obj == "":
            if default_label is None:
                raise ValueError("span has no label; give the label with category=NAME")
            return default_label
        if not isinstance(obj, str):
            raise ValueError(f"span label must be a string, found {obj!r}")
        return obj

    def walk(v: Any) -> None:
        if isinstance(v, dict):
            if "entities" in v:
                walk(v["entities"])
                return
            keys = next(
                ((a, b) for a, b in (("startOffset", "endOffset"), ("start_offset", "end_offset"), ("start", "end"))
                 if a in v and b in v),
                None,
            )
            if keys is not None:
                lab = v.get("label", v.get("labels"))
                if isinstance(lab, list):
                    for one in lab:
                        out.append((as_offset(v[keys[0]]), as_offset(v[keys[1]]), label_of(one)))
                else:
                    out.append((as_offset(v[keys[0]]), as_offset(v[keys[1]]), label_of(lab)))
                return
            inner = [x for x in v.values() if isinstance(x, dict | list)]
            if not inner:
                raise ValueError(f"no spans in JSON object with keys {sorted(v)[:5]}")
            for x in inner:
                walk(x)
            return
        if isinstance(v, list):
            if v and not isinstance(v[0], dict | list) and len(v) in (2, 3):
                lab = v[2] if len(v) == 3 else None
                out.append((as_offset(v[0]), as_offset(v[1]), label_of(lab)))
                return
            for x in v:
                walk(x)
            return
        raise ValueError(f"expected JSON spans, found {type(v).__name__} {str(v)[:40]!r}")

    walk(value)
    return out


class DocsFolder:
    """Texts ``<doc_id>.txt`` from a folder, read lazily and cached."""

    def __init__(self, folder: str | os.PathLike, *, limits: DocumentLimits | None = None) -> None:
        self.folder = Path(folder)
        self.limits = limits or DocumentLimits()
        if not self.folder.is_dir():
            raise IngestError("docs must be a folder of <doc_id>.txt files", source=str(folder))
        self._cache: dict[str, str] = {}

    def get(self, doc_id: str) -> str | None:
        """The text of ``doc_id``, or None if the folder has no such file."""
        if doc_id not in self._cache:
            if "/" in doc_id or "\\" in doc_id or doc_id.startswith("."):
                return None
            p = os.path.join(self.folder, f"{doc_id}.txt")  # (strings: pathlib objects cost more than the read)
            if not os.path.isfile(p):
                return None
            self.limits.check_bytes(os.path.getsize(p), doc_id=doc_id, source=p)  # before it is read
            text = read_text(p)
            self.limits.check_chars(len(text), doc_id=doc_id, source=p)
            self._cache[doc_id] = text
        return self._cache[doc_id]
