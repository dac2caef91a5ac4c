"""Label Studio full JSON export (labelstud.io/guide/export#Label-Studio-JSON-format).

The export is a JSON list of tasks::

    [{"id": 7, "data": {"text": "..."},
      "annotations": [{"completed_by": 3, "was_cancelled": false,
                       "result": [{"type": "labels",
                                   "value": {"start": 0, "end": 5, "labels": ["PER"]}}]}]}]

Each entry of ``annotations[]`` is one annotator's assignment; the annotator is
``completed_by`` (a user id, or the ``email`` / ``id`` of a user object in older
exports), kept as written. Cancelled annotations (``was_cancelled``) are skipped;
``predictions`` are not read. Only results whose ``value`` has ``start``, ``end`` and a
``labels`` list are spans (one span per label); other results (choices, ratings) are
ignored. The text is ``data[text_column]``, else ``data["text"]``, else the only string
in ``data``; the document id is ``data[id_column]`` if given, else the task ``id``.

A problem names the line where its task starts in the file (for a bad annotation or result: where that
annotation or result starts). The top-level list is decoded task by task (``json.JSONDecoder.raw_decode``),
so each task's offset is known without a second parse; the offset of a bad result is looked up only when
one is reported, by stepping over the members of its task.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

from crowdqa.aggregation.corpus import Corpus
from crowdqa.ingest._common import SpanCollector, as_offset, reader_log
from crowdqa.ingest._io import read_text
from crowdqa.ingest.build import Span
from crowdqa.ingest.errors import IngestError, ProblemLog

__all__ = ["read_label_studio"]

_WS = re.compile(r"[ \t\n\r]*")  # JSON's whitespace
_DECODER = json.JSONDecoder()


def _annotator(value: Any) -> str | None:
    if isinstance(value, dict):
        value = value.get("email", value.get("id"))
    if isinstance(value, bool) or value is None or value == "":
        return None
    return str(value) if isinstance(value, int | str) else None


def read_label_studio(path: str | os.PathLike, *, role: str = "crowd", problems: ProblemLog | None = None,
                      text_column: str | None = None, id_column: str | None = None, category: str | None = None,
                      scheme: str = "auto") -> Corpus:
    """Read a Label Studio JSON export of a span labelling project.

    Parameters
    ----------
    path : str or PathLike
    role, problems
        The keywords every reader takes (:func:`crowdqa.ingest._common.reader_log`).
        A bad task is named by the line where it (or its bad annotation or result) starts.
    text_column, id_column, category, scheme
        Upload options (:data:`crowdqa.ingest.formats.UPLOAD_OPTIONS`); the columns are keys of ``data``.

    Returns
    -------
    Corpus
    """
    problems = reader_log(role, problems)
    src = str(Path(path))
    content = read_text(path)  # an IngestError naming file and line for bytes that are not text
    try:
        tasks, starts, lines = _tasks(content)
    except ValueError as exc:
        raise IngestError(f"not JSON: {exc}", source=src) from None
    if tasks is None:
        raise IngestError("expected a JSON list of tasks", source=src)

    found = SpanCollector(role=role, problems=problems, category=category)
    seen: set[tuple[str, str]] = set()
    for task, start, k in zip(tasks, starts, lines, strict=True):
        if not isinstance(task, dict) or not isinstance(task.get("data"), dict):
            problems.report("task must be an object with a 'data' object", source=src, line=k)
            continue
        data = task["data"]
        text = _text(data, text_column)
        doc_key = data.get(id_column) if id_column is not None else task.get("id")
        if text is None:
            problems.report(f"task has no text (data keys: {sorted(data)}); name the key with text_column",
                            source=src, line=k)
            continue
        if doc_key is None or isinstance(doc_key, dict | list):
            problems.report(f"task has no usable id ({id_column or 'id'})", source=src, line=k)
            continue
        doc_id = str(doc_key)
        if found.other_text(doc_id, text) is not None:
            problems.report(f"document {doc_id!r} appears twice with different texts", source=src, line=k)
            continue
        task_spans: list[Span] = []
        task_assign: list[str] = []
        bad, where = None, ()
        for i, ann in enumerate(task.get("annotations") or []):
            where = ("annotations", i)
            if not isinstance(ann, dict):
                bad = "annotation must be an object"
                break
            if ann.get("was_cancelled"):
                continue
            who = _annotator(ann.get("completed_by"))
            if who is None:
                bad = "annotation without completed_by"
                break
            if (doc_id, who) in seen or who in task_assign:
                bad = f"duplicate assignment: {who!r} annotated document {doc_id!r} twice"
                break
            task_assign.append(who)
            try:
                task_spans.extend(_spans(ann.get("result") or [], doc_id, who, src, k))
            except _BadResult as exc:
                bad, where = f"bad result of {who!r}: {exc.error}", (*where, "result", exc.index)
                break
            except (ValueError, TypeError, AttributeError) as exc:
                bad, where = f"bad result of {who!r}: {exc}", (*where, "result")
                break
        if bad:
            problems.report(bad, source=src, line=k + content.count("\n", start, _offset(content, start, where)))
            continue
        seen.update((doc_id, who) for who in task_assign)
        found.add(doc_id, text, task_assign, task_spans, source=src, line=k)
    return found.corpus(scheme=scheme)


def _text(data: dict, text_column: str | None) -> str | None:
    if text_column is not None:
        v = data.get(text_column)
        return v if isinstance(v, str) else None
    if isinstance(data.get("text"), str):
        return data["text"]
    strings = [v for v in data.values() if isinstance(v, str)]
    return strings[0] if len(strings) == 1 else None


class _BadResult(Exception):
    """Result ``index`` of an annotation is not a span result that can be read (``error`` says why)."""

    def __init__(self, index: int, error: Exception) -> None:
        super().__init__(str(error))
        self.index, self.error = index, error


def _spans(results: list, doc_id: str, who: str, src: str, k: int) -> list[Span]:
    out = []
    for j, r in enumerate(results):
        value = r.get("value") if isinstance(r, dict) else None
        if not isinstance(value, dict) or "start" not in value or "end" not in value:
            continue
        labels = value.get("labels")
        try:
            if not isinstance(labels, list) or not labels:
                raise ValueError(f"span result without labels: {json.dumps(value)[:60]}")
            s, e = as_offset(value["start"]), as_offset(value["end"])
            for lab in labels:
                if not isinstance(lab, str):
                    raise ValueError(f"label must be a string, found {lab!r}")
                out.append(Span(doc_id, who, s, e, lab, source=src, line=k))
        except (ValueError, TypeError) as exc:
            raise _BadResult(j, exc) from None
    return out


def _tasks(text: str) -> tuple[list | None, list[int], list[int]]:
    """The tasks of an export, the offset where each starts and its line; ``None`` tasks if the JSON is
    neither a list nor one task object. Raises ValueError (naming line and column) if it is not JSON."""
    pos = _WS.match(text).end()
    if not text.startswith("[", pos):
        value = json.loads(text)
        return ([value] if isinstance(value, dict) else None), [pos], [1 + text.count("\n", 0, pos)]
    tasks, starts, lines = [], [], []
    line, seen = 1, 0
    pos = _WS.match(text, pos + 1).end()
    while not (text.startswith("]", pos) and not tasks):
        task, end = _DECODER.raw_decode(text, pos)
        line += text.count("\n", seen, pos)
        seen = pos
        tasks.append(task)
        starts.append(pos)
        lines.append(line)
        pos = _WS.match(text, end).end()
        if not text.startswith(",", pos):
            break
        pos = _WS.match(text, pos + 1).end()
    if not text.startswith("]", pos) or _WS.match(text, pos + 1).end() != len(text):
        json.loads(text)  # raises the decoder's own message, naming line and column
        raise ValueError(f"unexpected text at offset {pos}")
    return tasks, starts, lines


def _offset(text: str, pos: int, path: tuple[str | int, ...]) -> int:
    """Where the value reached from the JSON value at ``pos`` by ``path`` (member names and list indices)
    starts in ``text``; as far as the path can be followed. Only called for a reported problem."""
    for step in path:
        opener, closer = ("{", "}") if isinstance(step, str) else ("[", "]")
        if not text.startswith(opener, pos):
            return pos
        cur, found, index = _WS.match(text, pos + 1).end(), None, 0
        while not text.startswith(closer, cur):
            if opener == "{":
                key, cur = _DECODER.raw_decode(text, cur)
                cur = _WS.match(text, _WS.match(text, cur).end() + 1).end()  # past the colon
                found = cur if key == step else found  # the last of duplicate names wins, as in json.loads
            elif index == step:
                found = cur
                break
            index += 1
            _, cur = _DECODER.raw_decode(text, cur)
            cur = _WS.match(text, cur).end()
            cur = _WS.match(text, cur + 1).end() if text.startswith(",", cur) else cur
        if found is None:
            return pos
        pos = found
    return pos
