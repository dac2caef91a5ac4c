"""CoNLL with one tag column per annotator (Rodrigues, Pereira, Ribeiro 2014).

The layout of the CoNLL-2003 Mechanical Turk release of F. Rodrigues et al. (2014),
"Sequence labeling with multiple annotators", Machine Learning 95(2), 165-181,
doi:10.1007/s10994-013-5411-2::

    # annotators: alice bob carol        (optional first line)
    EU      B-ORG  ?  B-ORG
    rejects O      ?  O

Fields are separated by whitespace: the token, then one IOB/BIO tag per annotator.
``?`` means that annotator did not label the sentence: a column must be all ``?`` or
all tags within a sentence. A blank line ends a sentence; each sentence is one
document, with id ``"1"``, ``"2"``, ... in file order. ``-DOCSTART-`` lines are
skipped. Without the header the annotator columns are named ``"<role>:1"``,
``"<role>:2"``, ... (``crowd:1`` in a crowd upload, ``expert:1`` in a gold file).
Tags are kept as written (IOB1 ``I-X`` after ``O`` is an entity start by the
conlleval rule of :mod:`aggregation.spans`); the schema is ``O`` then ``B-``/``I-``
of every type seen.
"""

from __future__ import annotations

import os
from pathlib import Path

from aggregation.corpus import Corpus
from ingest._common import check_role
from ingest._io import read_text
from ingest.build import corpus_from_token_labels
from ingest.errors import IngestError, ProblemLog

__all__ = ["read_conll"]

_MISSING = "?"


def read_conll(
    path: str | os.PathLike,
    *,
    role: str = "crowd",
    problems: ProblemLog | None = None,
) -> Corpus:
    """Read a multi-annotator CoNLL file.

    Parameters
    ----------
    path : str or PathLike
    role : {"crowd", "expert"}, default="crowd"
    problems : ProblemLog, optional
        A bad sentence is skipped whole under ``on_error="skip"``.

    Returns
    -------
    Corpus
    """
    check_role(role)
    problems = problems or ProblemLog("fail")
    src = str(Path(path))
    lines = read_text(path).splitlines()
    names: list[str] | None = None
    first = 0
    if lines and lines[0].lstrip().lower().startswith("# annotators:"):
        names = lines[0].split(":", 1)[1].split()
        if len(set(names)) != len(names) or not names:
            raise IngestError("'# annotators:' must list distinct names", source=src, line=1)
        first = 1

    documents: dict[str, list[str]] = {}
    labels: list[tuple[str, str, list[str]]] = []
    sources: list[tuple[str, int]] = []
    sentence: list[tuple[int, list[str]]] = []
    counter = [0]  # sentence number, counting skipped sentences too, so ids follow the file

    def flush() -> None:
        nonlocal names
        if not sentence:
            return
        counter[0] += 1
        rows = list(sentence)
        sentence.clear()
        line0 = rows[0][0]
        width = len(rows[0][1])
        if names is None:
            # Unnamed columns are numbered per role, so a crowd file and an expert (gold) file
            # of the same sentences merge without their column numbers colliding.
            names = [f"{role}:{i}" for i in range(1, width)]
        bad = next(((ln, f) for ln, f in rows if len(f) != len(names) + 1), None)
        if bad is not None:
            problems.report(
                f"expected a token and {len(names)} annotator columns, found {len(bad[1])} fields",
                source=src, line=bad[0],
            )
            return
        doc_id = str(counter[0])
        cols = list(zip(*(f for _, f in rows), strict=True))
        entries = []
        for k, name in enumerate(names):
            tags = list(cols[k + 1])
            missing = [t == _MISSING for t in tags]
            if all(missing):
                continue
            if any(missing):
                ln = rows[missing.index(True) if not missing[0] else missing.index(False)][0]
                problems.report(f"annotator {name!r} labels only part of the sentence ('?' mixed with tags)",
                                source=src, line=ln)
                return
            entries.append((doc_id, name, tags))
        documents[doc_id] = list(cols[0])
        labels.extend(entries)
        sources.extend((src, line0) for _ in entries)

    for lineno, raw in enumerate(lines[first:], start=first + 1):
        fields = raw.split()
        if not fields:
            flush()
        elif fields[0] == "-DOCSTART-":
            flush()
        else:
            sentence.append((lineno, fields))
    flush()
    if not documents:
        raise IngestError("no sentences found", source=src)
    roles = {name: role for _, name, _ in labels}
    return corpus_from_token_labels(documents=documents, labels=labels, roles=roles, problems=problems, sources=sources)
