"""doccano sequence-labelling export: one ``<user>.jsonl`` per annotator.

Each line is one document: ``{"id": 3, "text": "...", "label": [[start, end, "LABEL"], ...]}``
(doccano >= 1.6 writes ``label``; older versions and the ``entities`` variant
``[{"start_offset": 0, "end_offset": 5, "label": "PER"}]`` are read too). The upload is
a folder or a zip archive of ``<user>.jsonl`` files (``admin.jsonl``, ``alice.jsonl``,
...), or one ``.jsonl`` file; the annotator is the file name without ``.jsonl``. Every
line is an assignment (an empty ``label`` list means "labelled, nothing found").
The document id is ``line[id_column]``, else ``line["id"]``, else the line number; the
text is ``line[text_column]`` (default ``"text"``). Documents shared by several users
must have the same text. ``category`` keeps one label.
"""

from __future__ import annotations

import os
from pathlib import Path

from crowdqa.aggregation.corpus import Corpus
from crowdqa.ingest._common import SpanCollector, json_lines, parse_span_list, reader_log, spans_at
from crowdqa.ingest._io import Tree, read_text
from crowdqa.ingest.errors import IngestError, ProblemLog

__all__ = ["read_doccano"]


def read_doccano(path: str | os.PathLike, *, role: str = "crowd", problems: ProblemLog | None = None,
                 text_column: str | None = None, id_column: str | None = None, category: str | None = None,
                 scheme: str = "auto") -> Corpus:
    """Read doccano JSONL exports, one file per user.

    The annotator of a file is its name without ``.jsonl``; every line is one document they labelled.

    Parameters
    ----------
    path : str or PathLike
        A folder or ``.zip`` of ``<user>.jsonl``, or one ``<user>.jsonl``.
    role, problems
        The keywords every reader takes (:func:`crowdqa.ingest._common.reader_log`).
    text_column, id_column, category, scheme
        Upload options (:data:`crowdqa.ingest.formats.UPLOAD_OPTIONS`); the columns are keys of each line.

    Returns
    -------
    Corpus
    """
    problems = reader_log(role, problems)
    p = Path(path)
    if p.is_file() and p.suffix.lower() == ".jsonl":
        files = [(p.stem, str(p), read_text(p))]
    else:
        with Tree(p) as tree:
            names = list(tree.iter_files(".jsonl"))
            if not names:
                raise IngestError("no <user>.jsonl files found", source=str(p))
            files = [(Path(n).stem, tree.source(n), tree.read_text(n)) for n in names]
    users = [u for u, _, _ in files]
    if len(set(users)) != len(users):
        dup = next(u for u in users if users.count(u) > 1)
        raise IngestError(f"two files for user {dup!r}", source=str(p))

    text_key = text_column or "text"
    found = SpanCollector(role=role, problems=problems, category=category)
    for user, src, content in files:
        seen: dict[str, int] = {}
        for lineno, rec in json_lines(content, source=src, problems=problems):
            if not isinstance(rec, dict) or not isinstance(rec.get(text_key), str):
                problems.report(f"expected a JSON object with a string {text_key!r}", source=src, line=lineno)
                continue
            key = rec.get(id_column) if id_column is not None else rec.get("id", lineno)
            if key is None or isinstance(key, dict | list):
                problems.report(f"no usable document id ({id_column})", source=src, line=lineno)
                continue
            doc_id, text = str(key), rec[text_key]
            if doc_id in seen:
                problems.report(f"duplicate assignment: document {doc_id!r} also on line {seen[doc_id]}",
                                source=src, line=lineno)
                continue
            earlier = found.other_text(doc_id, text)
            if earlier is not None:
                problems.report(f"text of document {doc_id!r} differs from {earlier}", source=src, line=lineno)
                continue
            raw_spans = rec.get("label", rec.get("labels", rec.get("entities", [])))
            try:
                triples = parse_span_list(raw_spans or [], default_label=None)
            except (ValueError, RecursionError) as exc:
                problems.report(f"bad spans: {exc}", source=src, line=lineno)
                continue
            seen[doc_id] = lineno
            found.add(doc_id, text, [user], spans_at(triples, doc_id, user, source=src, line=lineno),
                      text_source=f"{src}:{lineno}", source=src, line=lineno)
    return found.corpus(scheme=scheme)
