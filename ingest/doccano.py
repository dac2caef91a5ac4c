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

import json
import os
from pathlib import Path

from crowdqa.aggregation.corpus import Corpus
from crowdqa.ingest._common import check_role, parse_span_list
from crowdqa.ingest._io import Tree, read_text
from crowdqa.ingest.build import Span, corpus_from_spans
from crowdqa.ingest.errors import IngestError, ProblemLog

__all__ = ["read_doccano"]


def read_doccano(
    path: str | os.PathLike,
    *,
    role: str = "crowd",
    problems: ProblemLog | None = None,
    text_column: str | None = None,
    id_column: str | None = None,
    category: str | None = None,
    scheme: str = "auto",
) -> Corpus:
    """Read doccano JSONL exports, one file per user.

    Parameters
    ----------
    path : str or PathLike
        A folder or ``.zip`` of ``<user>.jsonl``, or one ``<user>.jsonl``.
    role : {"crowd", "expert"}, default="crowd"
    problems : ProblemLog, optional
    text_column, id_column : str, optional
    category : str, optional
    scheme : {"auto", "io", "bio"}

    Returns
    -------
    Corpus
    """
    check_role(role)
    problems = problems or ProblemLog("fail")
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
    documents: dict[str, str] = {}
    text_source: dict[str, str] = {}
    assignments: list[tuple[str, str]] = []
    spans: list[Span] = []
    for user, src, content in files:
        seen: dict[str, int] = {}
        for lineno, raw in enumerate(content.splitlines(), start=1):
            if not raw.strip():
                continue
            try:
                rec = json.loads(raw)
            except ValueError as exc:
                problems.report(f"not a JSON object: {exc}", source=src, line=lineno)
                continue
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
            if doc_id in documents and documents[doc_id] != text:
                problems.report(f"text of document {doc_id!r} differs from {text_source[doc_id]}",
                                source=src, line=lineno)
                continue
            raw_spans = rec.get("label", rec.get("labels", rec.get("entities", [])))
            try:
                found = parse_span_list(raw_spans or [], default_label=None)
            except (ValueError, RecursionError) as exc:
                problems.report(f"bad spans: {exc}", source=src, line=lineno)
                continue
            seen[doc_id] = lineno
            if doc_id not in documents:
                documents[doc_id] = text
                text_source[doc_id] = f"{src}:{lineno}"
            assignments.append((doc_id, user))
            spans.extend(
                Span(doc_id, user, s, e, lab, source=src, line=lineno)
                for s, e, lab in found
                if category is None or lab == category
            )
    roles = {u: role for _, u in assignments}
    return corpus_from_spans(
        documents=documents, assignments=assignments, spans=spans, roles=roles, scheme=scheme, problems=problems
    )
