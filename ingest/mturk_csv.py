"""Mechanical Turk batch-results CSV (``Batch_<n>_batch_results.csv``).

One row per assignment: ``HITId``, ``AssignmentId``, ``WorkerId``, ``AssignmentStatus``,
then ``Input.*`` columns (what the HIT showed) and ``Answer.*`` columns (what the
worker returned). Column conventions: ../shared/data/README.md.

Answers
-------
* **Spans.** With the crowd HTML element ``crowd-entity-annotation`` the answer is
  JSON in ``Answer.taskAnswers``:
  ``[{"<name>": {"entities": [{"startOffset": 24, "endOffset": 43, "label": "P"}]}}]``.
  A custom HIT may return JSON spans in another column (``answer_column``), as
  objects (``start``/``end``/``label``) or lists ``[start, end(, label)]``; spans
  without a label are labelled ``category`` (or ``"Span"``). With ``category`` set,
  only spans of that label are kept.
* **Categorical answers.** If no answer in the column is JSON (a multiple-choice HIT,
  such as CrowdTruth's example file), the batch is read as categorical data, with
  the conventions of :mod:`crowdqa.ingest.categorical`: each HIT (``id_column``) is a one-token
  document whose text is its id, the answer string is the label, and the classes are
  the answers in natural order (no outside class). A column that mixes JSON and plain answers
  is an error at the first row of the minority kind.

Defaults: the text is ``text_column`` or the first of ``Input.text``,
``Input.document``, ``Input.sentence``, ``Input.content``, or the only ``Input.*``
column; the document id is ``id_column`` or the first of ``Input.id``, ``Input.doc_id``,
``Input.docid``, ``Input.document_id``, else ``HITId``; the answer is ``answer_column``,
else ``Answer.taskAnswers``, else the only ``Answer.*`` column. Rejected assignments
(``AssignmentStatus`` = ``Rejected``, or a non-empty ``Reject`` column in a file
prepared for upload) are dropped unless ``keep_rejected``. The annotator is
``mturk:<WorkerId>``. Row numbers in messages are the CSV line where the row starts.
"""

from __future__ import annotations

import csv
import io
import json
import os
from pathlib import Path
from typing import Any

from crowdqa.aggregation.corpus import Corpus
from crowdqa.ingest._common import SpanCollector, csv_rows, parse_span_list, reader_log, spans_at
from crowdqa.ingest._io import read_text
from crowdqa.ingest.build import corpus_from_token_labels
from crowdqa.ingest.categorical import natural_key
from crowdqa.ingest.errors import IngestError, ProblemLog

__all__ = ["read_mturk_csv"]

_TEXT_DEFAULTS = ("Input.text", "Input.document", "Input.sentence", "Input.content")
_ID_DEFAULTS = ("Input.id", "Input.doc_id", "Input.docid", "Input.document_id")


def _pick(header: list[str], given: str | None, defaults: tuple[str, ...], prefix: str, what: str, src: str) -> str:
    if given is not None:
        if given not in header:
            raise IngestError(f"{what} column {given!r} not found; columns are {', '.join(header)}", source=src)
        return given
    for name in defaults:
        if name in header:
            return name
    candidates = [h for h in header if h.startswith(prefix)]
    if len(candidates) == 1:
        return candidates[0]
    raise IngestError(
        f"cannot tell which column holds the {what}: found {candidates or 'no ' + prefix + '* columns'}; "
        f"name it with {what.replace(' ', '_')}_column",
        source=src,
    )


def read_mturk_csv(path: str | os.PathLike, *, role: str = "crowd", problems: ProblemLog | None = None,
                   text_column: str | None = None, answer_column: str | None = None, id_column: str | None = None,
                   category: str | None = None, keep_rejected: bool = False, scheme: str = "auto") -> Corpus:
    """Read a Mechanical Turk batch-results CSV.

    Parameters
    ----------
    path : str or PathLike
    role, problems
        The keywords every reader takes (:func:`crowdqa.ingest._common.reader_log`).
    text_column, answer_column, id_column, category, keep_rejected, scheme
        Upload options (:data:`crowdqa.ingest.formats.UPLOAD_OPTIONS`); the column defaults are in the
        module docstring, and label-less spans get the
        ``category`` label.

    Returns
    -------
    Corpus
        Span answers: tokenized documents, one annotator ``mturk:<WorkerId>`` per worker.
        Categorical answers: one one-token document per HIT.
    """
    problems = reader_log(role, problems)
    src = str(Path(path))
    reader = csv.reader(io.StringIO(read_text(path), newline=""))
    header = _header(reader, src)
    answer_col = _pick(header, answer_column or ("Answer.taskAnswers" if "Answer.taskAnswers" in header else None),
                       (), "Answer.", "answer", src)
    id_col = id_column or next((c for c in _ID_DEFAULTS if c in header), "HITId")
    if id_col not in header:
        raise IngestError(f"id column {id_col!r} not found; columns are {', '.join(header)}", source=src)
    if id_column is None and id_col == "HITId":
        problems.note("document ids from the HITId column (no Input.id column; set id_column to choose another)")
    rows = _assignments(reader, header, id_col=id_col, keep_rejected=keep_rejected, src=src, problems=problems)
    answers = [(line, r, r[answer_col].strip()) for line, r in rows]
    n_json = sum(a[:1] in ("[", "{") for _, _, a in answers if a)
    if answers and n_json == 0:
        if text_column is not None:
            problems.note(f"text_column {text_column!r} is not used: the batch holds plain answers (categorical "
                          "items), which carry no text")
        return _categorical(answers, id_col=id_col, answer_col=answer_col, role=role, problems=problems, src=src)
    if n_json == 0:
        raise IngestError(f"no assignments with an answer in column {answer_col!r}", source=src)
    text_col = _pick(header, text_column, _TEXT_DEFAULTS, "Input.", "text", src)
    return _spans(answers, id_col=id_col, text_col=text_col, answer_col=answer_col, category=category, role=role,
                  scheme=scheme, problems=problems, src=src)


def _header(reader: Any, src: str) -> list[str]:
    """The header row, which must name a WorkerId column."""
    try:
        header = [h.strip() for h in next(reader)]
    except StopIteration:
        raise IngestError("empty file: expected a header row", source=src) from None
    except csv.Error as exc:
        raise IngestError(f"malformed CSV header: {exc}", source=src, line=1) from None
    if "WorkerId" not in header:
        raise IngestError(
            f"not a Mechanical Turk results file: no WorkerId column (columns are {', '.join(header[:8])})",
            source=src,
            line=1,
        )
    return header


def _assignments(reader: Any, header: list[str], *, id_col: str, keep_rejected: bool, src: str,
                 problems: ProblemLog) -> list[tuple[int, dict[str, str]]]:
    """The assignments to read, as ``(line, row)``: rejected ones are left out (and counted) unless
    ``keep_rejected``; rows without a worker or a document id are reported."""
    kept, rejected_lines = [], []
    for line, values in csv_rows(reader, width=len(header), source=src, problems=problems):
        r = dict(zip(header, values, strict=True))
        rejected = r.get("AssignmentStatus", "").strip() == "Rejected" or r.get("Reject", "").strip() != ""
        if rejected and not keep_rejected:
            rejected_lines.append(line)
        elif not r["WorkerId"].strip():
            problems.report("empty WorkerId", source=src, line=line)
        elif not r[id_col].strip():
            problems.report(f"empty document id in column {id_col!r}", source=src, line=line)
        else:
            kept.append((line, r))
    if rejected_lines:
        shown = ", ".join(map(str, rejected_lines[:20])) + (", ..." if len(rejected_lines) > 20 else "")
        problems.dropped["rejected"] = len(rejected_lines)
        problems.note(f"{len(rejected_lines)} rejected assignments left out (keep_rejected keeps them): "
                      f"{src} lines {shown}")
    return kept


def _repeated(aid: str, line: int, seen: dict[str, int], *, src: str, problems: ProblemLog) -> bool:
    """True (and reported) if assignment ``aid`` was read before, on the line ``seen`` holds."""
    if aid and aid in seen:
        problems.report(f"duplicate assignment {aid!r} (first on line {seen[aid]})", source=src, line=line)
        return True
    return False


def _spans(answers: list[tuple[int, dict[str, str], str]], *, id_col: str, text_col: str, answer_col: str,
           category: str | None, role: str, scheme: str, problems: ProblemLog, src: str) -> Corpus:
    """JSON span answers: tokenized documents, one annotator ``mturk:<WorkerId>`` per worker."""
    found = SpanCollector(role=role, problems=problems, category=category)
    seen_assignment: dict[str, int] = {}
    seen_pair: dict[tuple[str, str], int] = {}
    for line, r, answer in answers:
        doc_id, worker = r[id_col].strip(), f"mturk:{r['WorkerId'].strip()}"
        aid = r.get("AssignmentId", "").strip()
        if _repeated(aid, line, seen_assignment, src=src, problems=problems):
            continue
        if (doc_id, worker) in seen_pair:
            problems.report(
                f"duplicate assignment: worker {worker!r} answered document {doc_id!r} twice "
                f"(first on line {seen_pair[doc_id, worker]})",
                source=src,
                line=line,
            )
            continue
        text = r[text_col]
        if found.other_text(doc_id, text) is not None:
            problems.report(f"document {doc_id!r} has a different text than on an earlier row", source=src, line=line)
            continue
        if not answer:
            problems.report(f"empty answer in column {answer_col!r}", source=src, line=line)
            continue
        try:
            triples = parse_span_list(json.loads(answer), default_label=category or "Span")
        except (ValueError, RecursionError) as exc:
            problems.report(f"column {answer_col!r} does not hold JSON spans: {str(exc)[:80]}", source=src, line=line)
            continue
        if aid:
            seen_assignment[aid] = line
        seen_pair[doc_id, worker] = line
        found.add(doc_id, text, [worker], spans_at(triples, doc_id, worker, source=src, line=line), source=src,
                  line=line)
    return found.corpus(scheme=scheme)


def _categorical(
    answers: list[tuple[int, dict[str, str], str]],
    *,
    id_col: str,
    answer_col: str,
    role: str,
    problems: ProblemLog,
    src: str,
) -> Corpus:
    """Plain answers: one one-token document per item, as :mod:`crowdqa.ingest.categorical` builds them."""
    documents: dict[str, list[str]] = {}
    labels: list[tuple[str, str, list[str]]] = []
    sources: list[tuple[str, int]] = []
    seen_assignment: dict[str, int] = {}
    for line, r, answer in answers:
        aid = r.get("AssignmentId", "").strip()
        if _repeated(aid, line, seen_assignment, src=src, problems=problems):
            continue
        if not answer:
            problems.report(f"empty answer in column {answer_col!r}", source=src, line=line)
            continue
        if aid:
            seen_assignment[aid] = line
        item = r[id_col].strip()
        documents.setdefault(item, [item])
        labels.append((item, f"mturk:{r['WorkerId'].strip()}", [answer]))
        sources.append((src, line))
    classes = tuple(sorted({lab for _, _, (lab,) in labels}, key=natural_key))
    return corpus_from_token_labels(
        documents=documents,
        labels=labels,
        roles={w: role for _, w, _ in labels},
        class_names=classes,
        problems=problems,
        sources=sources,
    )
