"""CoNLL files in per-worker folders: how Rodrigues et al. (2014) distribute their CoNLL-2003 crowd data.

F. Rodrigues, F. Pereira, B. Ribeiro (2014), "Sequence labeling with multiple annotators", Machine
Learning 95(2), 165-181, doi:10.1007/s10994-013-5411-2. Their release (also in the HMM-Crowd authors'
``task1.zip``) is a folder (or a zip of one)::

    ground_truth/<HIT>.txt                    the expert (CoNLL-2003) tags of one HIT's sentences
    mturk_train_data/<worker>/<HIT>.txt       one Mechanical Turk worker's tags of the same sentences

Every file is ``token TAG`` lines with a blank line after each sentence; a line whose token is blank
(`` B-PER``: the release has some) has the token ``_``. Each sentence is one document, ``<HIT>:<n>``
(``n`` from 1 in file order), as :mod:`crowdqa.ingest.conll` makes one document per sentence. The
tokens are the ground truth's (else the first worker's, by folder name); a worker's sentence is read
position by position, so one of another length (the release tokenises some workers' sentences
differently: about one in ten) cannot be aligned and is left out, with a note counting them. The
ground truth is the expert ``gold``; workers are ``mturk:<worker>`` (their role is ``role``, so
``role=expert`` is refused: the experts are the ground truth's).
"""

from __future__ import annotations

import os
from pathlib import PurePosixPath

from crowdqa.aggregation.corpus import Corpus
from crowdqa.ingest._common import reader_log
from crowdqa.ingest._io import open_tree
from crowdqa.ingest.build import corpus_from_token_labels
from crowdqa.ingest.errors import IngestError, ProblemLog

__all__ = ["read_conll_folders"]

GOLD_FOLDER = "ground_truth"
GOLD_ANNOTATOR = "gold"

Sentence = tuple[int, list[str], list[str]]  # first line, tokens, tags


def read_conll_folders(path: str | os.PathLike, *, role: str = "crowd", problems: ProblemLog | None = None) -> Corpus:
    """Read the per-worker CoNLL folders of Rodrigues et al. (2014) from a folder or a zip.

    Parameters
    ----------
    path : str or PathLike
        The folder holding ``ground_truth/`` and the worker folders (``mturk_train_data/<worker>/``),
        or a zip or tar archive of it.
    role, problems
        The keywords every reader takes (:func:`crowdqa.ingest._common.reader_log`); ``role`` is the
        workers' (``crowd``). A malformed line skips its file's sentence under ``on_error="skip"``.

    Returns
    -------
    Corpus
    """
    problems = reader_log(role, problems)
    if role == "expert":
        raise IngestError("role=expert: the experts of conll-folders are its ground_truth folder", source=str(path))
    gold: dict[str, str] = {}
    workers: dict[str, dict[str, str]] = {}
    with open_tree(path) as tree:
        for name in tree.iter_files(".txt"):
            parts = PurePosixPath(name).parts
            if len(parts) == 2 and parts[0] == GOLD_FOLDER:
                gold[PurePosixPath(name).stem] = name
            elif len(parts) >= 3 and parts[0] != GOLD_FOLDER:
                workers.setdefault(parts[-2], {})[PurePosixPath(name).stem] = name
        if not workers:
            raise IngestError("no worker files found: expected <folder>/<worker>/<HIT>.txt "
                              "(mturk_train_data/<worker>/<HIT>.txt) beside ground_truth/<HIT>.txt", source=str(path))
        files = [(GOLD_ANNOTATOR, hit, n) for hit, n in sorted(gold.items())]
        files += [(f"mturk:{w}", hit, n) for w in sorted(workers) for hit, n in sorted(workers[w].items())]
        read = {(who, hit): (tree.source(n), _sentences(tree.read_text(n), tree.source(n), problems))
                for who, hit, n in files}

    documents: dict[str, list[str]] = {}
    labels: list[tuple[str, str, list[str]]] = []
    sources: list[tuple[str, int | None]] = []
    unaligned: list[str] = []
    for (who, hit), (src, sentences) in read.items():  # the ground truth first, so its tokens are the documents'
        for n, (line, tokens, tags) in enumerate(sentences, 1):
            if tokens is None:
                continue  # a malformed sentence, already reported and skipped
            doc_id = f"{hit}:{n}"
            known = documents.setdefault(doc_id, tokens)
            if len(known) != len(tokens):
                unaligned.append(f"{src}:{line}")
                continue
            labels.append((doc_id, who, tags))
            sources.append((src, line))
    if unaligned:
        problems.note(f"{len(unaligned)} worker sentence(s) have another number of tokens than the same sentence "
                      f"of {GOLD_FOLDER} (or of the first worker) and are left out; the first: {unaligned[0]}")
    roles = {who: "expert" if who == GOLD_ANNOTATOR else role for _, who, _ in labels}
    return corpus_from_token_labels(documents=documents, labels=labels, roles=roles, problems=problems,
                                    sources=sources)


def _sentences(text: str, source: str, problems: ProblemLog) -> list[tuple[int, list[str] | None, list[str]]]:
    """A file's sentences as (first line, tokens, tags); tokens ``None`` for one with a line that is not
    ``token TAG`` (reported to ``problems``)."""
    out: list[tuple[int, list[str] | None, list[str]]] = []
    tokens: list[str] = []
    tags: list[str] = []
    first, bad = 0, False
    for lineno, raw in enumerate([*text.splitlines(), ""], 1):
        if raw.strip():
            if not tokens:
                first = lineno
            fields = raw.split()
            if len(fields) == 1 and raw[0].isspace():
                fields = ["_", *fields]  # a blank token
            if len(fields) != 2:
                problems.report(f"expected 'token TAG', found {raw.strip()!r}", source=source, line=lineno)
                bad = True
            tokens.append(fields[0])
            tags.append(fields[-1])
        elif tokens:
            out.append((first, None if bad else tokens, tags))
            tokens, tags, bad = [], [], False
    return out
