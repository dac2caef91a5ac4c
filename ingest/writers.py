"""Write aggregated token labels back out in the formats users bring.

``labels`` is one class index per token of the corpus (an aggregator's ``labels_``);
``MISSING`` (-1) counts as ``O``. Spans are decoded by
:func:`crowdqa.aggregation.spans.decode_spans`, the one decoder reports use too.

Formats
-------
``spans-jsonl``
    One JSON object per aggregated span: ``{"doc_id", "start", "end", "label", "text", "score"}``,
    character offsets into the document text (end exclusive), label = entity type, text = the
    span's characters, score = the probability that the span is exactly right (type and both boundaries;
    :mod:`crowdqa.aggregation.confidence`), present when scores are given. For formats that carry tokens only
    (CoNLL, EBM-NLP) the document text is the tokens joined by single spaces, so the offsets count in that text.
``conll``
    Per document a ``-DOCSTART- <doc_id>`` line and a blank line, then its tokens, one per line
    with a BIO tag (``B-``/``I-`` + entity type, ``O``; inside/outside schemes are written as BIO,
    adjacent spans of one type becoming one), and a blank line.
``ebm-nlp``
    A folder with one ``<doc_id>.AGGREGATED.ann`` per document: one integer per token
    line, the entity-type index (0 = outside, 1.. = the corpus entity types in order),
    as EBM-NLP's aggregated files.
``tokens-csv``, ``tokens-jsonl``
    The token table (:mod:`crowdqa.ingest.token_table`): one row per token, annotator ``aggregate``, the
    class name as label (``?`` for ``MISSING``). Under the ``tags`` scheme the CoNLL writer, too, writes each
    token's class name as it is, and ``?`` for ``MISSING`` (a tag set has no outside class to stand for it).
``categorical-csv``
    ``item,label`` rows, one per document, for one-token documents (categorical data);
    an item with no label (``MISSING``) gets an empty label; with scores, a third column ``score`` (the
    probability that the label is right). Cells are escaped against
    CSV (formula) injection by :func:`csv_escape`; :func:`csv_unescape` undoes it.
``token-scores``
    The marginal export: one CSV row per token, ``doc_id,token,text,label,score`` and one column
    ``p:<class>`` per class (the calibrated posterior of each class; ``score`` is that of ``label``).
    Needs scores.
"""

from __future__ import annotations

import csv
import json
import os
import re
from dataclasses import dataclass
from itertools import chain
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from crowdqa.aggregation.corpus import MISSING, Corpus
from crowdqa.aggregation.spans import decode_spans
from crowdqa.ingest.formats import WRITE_FORMATS

__all__ = ["LabelScores", "write_labels", "csv_escape", "csv_unescape"]


@dataclass(frozen=True)
class LabelScores:
    """Calibrated scores of an aggregate, as the writers take them.

    Attributes
    ----------
    token : ndarray of shape (n_tokens,)
        Probability that each token's (item's) label is right.
    span : ndarray of shape (n_spans,)
        Probability that each span of ``decode_spans(labels)`` is exactly right (empty for categorical answers).
    proba : ndarray of shape (n_tokens, n_classes)
        Calibrated posterior of every class at each token.
    """

    token: NDArray[np.float64]
    span: NDArray[np.float64]
    proba: NDArray[np.float64]


#: First characters that make a spreadsheet run a cell as a formula (OWASP, "CSV Injection").
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
#: First characters of cells that csv_escape may change.
_ESCAPED_START = frozenset(_FORMULA_START) | {"'"}
#: Rows written at once by the categorical writer (bounds its memory).
_CHUNK = 1 << 16
_NUMBER = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")


def csv_escape(cell: str) -> str:
    """``cell`` made safe to open in a spreadsheet: a leading ``'`` before a formula start.

    Ids and labels are the user's data and are kept as given everywhere else; only CSV we
    write is escaped. A cell starting with ``=``, ``+``, ``-``, ``@``, a tab or a carriage
    return (OWASP's CSV-injection list) gets a leading single quote, which spreadsheets show
    as text; so does a cell that already starts with ``'``, which makes the escape
    reversible (:func:`csv_unescape`). Plain numbers (``-1``, ``+2.5``) are left alone: a
    spreadsheet reads them as numbers, never as formulas.

    Parameters
    ----------
    cell : str

    Returns
    -------
    str
    """
    if cell.startswith("'") or (cell.startswith(_FORMULA_START) and not _NUMBER.fullmatch(cell)):
        return "'" + cell
    return cell


def csv_unescape(cell: str) -> str:
    """Undo :func:`csv_escape` (drop one leading ``'``)."""
    return cell[1:] if cell.startswith("'") else cell


def _check(labels: NDArray, corpus: Corpus) -> NDArray[np.int64]:
    labels = np.asarray(labels)
    if labels.shape != (corpus.n_tokens,):
        raise ValueError(f"labels must have shape ({corpus.n_tokens},), found {labels.shape}")
    if labels.size and not np.issubdtype(labels.dtype, np.integer):
        raise ValueError(f"labels must be integer class indices, found dtype {labels.dtype}")
    bad = (labels < MISSING) | (labels >= corpus.n_classes)
    if np.any(bad):
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(f"labels must be in [-1, {corpus.n_classes}), found {int(labels[i])} at token {i}")
    return np.where(labels == MISSING, 0, labels).astype(np.int64)


def write_labels(labels: NDArray, corpus: Corpus, path: str | os.PathLike, *, format: str,
                 scores: LabelScores | None = None) -> None:
    """Write one label per token in ``format``.

    Parameters
    ----------
    labels : ndarray of shape (n_tokens,)
        Class indices; ``MISSING`` (-1) is written as ``O``.
    corpus : Corpus
    path : str or PathLike
        A file, or a folder for ``ebm-nlp`` (created if absent).
    format : {"spans-jsonl", "conll", "tokens-csv", "tokens-jsonl", "ebm-nlp", "categorical-csv", "token-scores"}
    scores : LabelScores, optional
        The aggregate's calibrated scores: written by spans-jsonl, categorical-csv and token-scores.

    Raises
    ------
    ValueError
        Unknown format, labels of the wrong shape or range, or (``categorical-csv``)
        documents of more than one token.
    """
    if format not in WRITE_FORMATS:
        raise ValueError(f"format must be one of {', '.join(WRITE_FORMATS)}, found {format!r}")
    lab = _check(labels, corpus)
    path = Path(path)
    if corpus.scheme == "tags" and format in ("spans-jsonl", "ebm-nlp"):
        raise ValueError(f"{format} writes spans, and tag labels (scheme tags) have none: use conll, tokens-csv "
                         "or tokens-jsonl")
    if format == "token-scores":
        if scores is None:
            raise ValueError("token-scores writes the aggregate's scores, and none were given (a job stored before "
                             "scores were kept has none: run it again)")
        _write_token_scores(lab, corpus, path, scores)
    elif format in ("tokens-csv", "tokens-jsonl"):
        from crowdqa.ingest.token_table import write_token_table

        write_token_table(np.asarray(labels, dtype=np.int64), corpus, path, jsonl=format == "tokens-jsonl")
    elif format == "conll" and corpus.scheme == "tags":
        _write_conll(np.asarray(labels, dtype=np.int64), corpus, path)
    elif format == "spans-jsonl":
        _write_spans_jsonl(lab, corpus, path, None if scores is None else scores.span)
    elif format == "conll":
        _write_conll(lab, corpus, path)
    elif format == "ebm-nlp":
        _write_ebm_nlp(lab, corpus, path)
    else:
        # An item nobody labelled has no answer: written empty, unless class 0 is an outside class.
        raw = np.asarray(labels, dtype=np.int64)
        _write_categorical(lab if corpus.has_outside else raw, corpus, path,
                           None if scores is None else scores.token)


def _write_spans_jsonl(lab: NDArray, corpus: Corpus, path: Path, span_scores: NDArray | None) -> None:
    spans = decode_spans(lab, corpus)
    types = corpus.entity_types
    if span_scores is not None and span_scores.shape != (len(spans),):
        raise ValueError(f"span scores must have shape ({len(spans)},), found {span_scores.shape}")
    scores = [None] * len(spans) if span_scores is None else np.round(span_scores, 6).tolist()
    with open(path, "w", encoding="utf-8", newline="\n") as fh:
        for d, s, e, t, p in zip(spans.doc.tolist(), spans.start.tolist(), spans.end.tolist(), spans.type.tolist(),
                                 scores, strict=True):
            obj = {"doc_id": corpus.doc_ids[d], "start": s, "end": e, "label": types[t - 1],
                   "text": corpus.texts[d][s:e]}
            if p is not None:
                obj["score"] = p
            fh.write(json.dumps(obj, ensure_ascii=False) + "\n")


def _write_token_scores(lab: NDArray, corpus: Corpus, path: Path, scores: LabelScores) -> None:
    k = corpus.n_classes
    if scores.token.shape != (corpus.n_tokens,) or scores.proba.shape != (corpus.n_tokens, k):
        raise ValueError(f"token scores must have shapes ({corpus.n_tokens},) and ({corpus.n_tokens}, {k}), found "
                         f"{scores.token.shape} and {scores.proba.shape}")
    names = np.asarray(corpus.class_names, dtype=object)
    with open(path, "w", encoding="utf-8", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["doc_id", "token", "text", "label", "score", *(csv_escape(f"p:{n}") for n in corpus.class_names)])
        for d in range(corpus.n_docs):  # one write per document, its tokens' rows at once
            a, b = int(corpus.doc_start[d]), int(corpus.doc_start[d + 1])
            doc_id, texts = csv_escape(corpus.doc_ids[d]), corpus.doc_tokens(d)
            probs = np.round(scores.proba[a:b], 6).tolist()
            w.writerows([doc_id, i, csv_escape(t), csv_escape(str(n)), round(float(p), 6), *row]
                        for i, (t, n, p, row) in enumerate(zip(texts, names[lab[a:b]].tolist(),
                                                               scores.token[a:b].tolist(), probs, strict=True)))


def bio_tags(lab: NDArray, corpus: Corpus) -> NDArray:
    """The BIO tag of every token: class names under BIO; under IO, ``B-`` where a run of a type starts; under
    ``tags`` (and for categorical answers) the class names, ``?`` for ``MISSING``."""
    names = np.asarray([*corpus.class_names, "?"], dtype=object)  # index MISSING (-1), the last: unlabelled
    if corpus.scheme == "bio" or not corpus.has_outside:
        return names[lab]
    starts = np.ones(lab.shape[0], dtype=bool)
    starts[1:] = lab[1:] != lab[:-1]
    starts[corpus.doc_start[:-1][corpus.doc_lengths > 0]] = True
    prefixed = np.where(starts, "B-", "I-").astype(object) + names[lab]
    return np.where(lab == 0, "O", prefixed)


def _write_conll(lab: NDArray, corpus: Corpus, path: Path) -> None:
    tags = bio_tags(lab, corpus)
    with open(path, "w", encoding="utf-8", newline="\n") as fh:
        for d in range(corpus.n_docs):
            a, b = int(corpus.doc_start[d]), int(corpus.doc_start[d + 1])
            toks = corpus.doc_tokens(d)
            fh.write(f"-DOCSTART- {corpus.doc_ids[d]}\n\n")
            fh.write("".join(f"{t}\t{n}\n" for t, n in zip(toks, tags[a:b].tolist(), strict=True)))
            fh.write("\n")


def _write_ebm_nlp(lab: NDArray, corpus: Corpus, path: Path) -> None:
    path.mkdir(parents=True, exist_ok=True)
    etype = corpus.class_entity[lab]
    for d, doc_id in enumerate(corpus.doc_ids):
        a, b = int(corpus.doc_start[d]), int(corpus.doc_start[d + 1])
        name = f"{doc_id}.AGGREGATED.ann"
        if "/" in doc_id or "\\" in doc_id or doc_id.startswith("."):
            raise ValueError(f"document id {doc_id!r} cannot be a file name")
        (path / name).write_text("".join(f"{v}\n" for v in etype[a:b].tolist()), encoding="utf-8")


def _plain_cells(cells) -> bool:
    """True when csv_escape leaves every cell alone and csv.writer would not quote any (no ``,``, quote or line
    break; no escaped first character): one substring scan per character over the joined cells, not a scan per
    cell. A NUL inside a cell may give a false False, never a false True."""
    joined = "\x00" + "\x00".join(cells)
    return not any(ch in joined for ch in ',"\r\n') and not any("\x00" + ch in joined for ch in _ESCAPED_START)


def _write_categorical(lab: NDArray, corpus: Corpus, path: Path, item_scores: NDArray | None = None) -> None:
    if corpus.n_docs and np.any(corpus.doc_lengths != 1):
        d = int(np.flatnonzero(corpus.doc_lengths != 1)[0])
        raise ValueError(
            f"categorical-csv needs one-token documents, found {int(corpus.doc_lengths[d])} tokens in "
            f"document {corpus.doc_ids[d]!r}"
        )
    # Label cells: one escape per class, not per row. Item cells: the few that need an escape or CSV quoting go
    # through csv.writer; the rest are written as they are (what csv.writer writes for them), in chunks.
    names = [csv_escape(n) for n in corpus.class_names] + [""]  # index -1 (MISSING): an empty label
    tails = [f",{n}\r\n" for n in names]  # a row is its item cell, then one of these
    if item_scores is not None:
        if item_scores.shape != (corpus.n_docs,):
            raise ValueError(f"item scores must have shape ({corpus.n_docs},), found {item_scores.shape}")
        with open(path, "w", encoding="utf-8", newline="") as fh:
            w = csv.writer(fh)
            w.writerow(["item", "label", "score"])
            for a in range(0, corpus.n_docs, _CHUNK):
                w.writerows([csv_escape(d), names[k], p] for d, k, p in zip(
                    corpus.doc_ids[a:a + _CHUNK], lab[a:a + _CHUNK].tolist(),
                    np.round(item_scores[a:a + _CHUNK], 6).tolist(), strict=True))
        return
    with open(path, "w", encoding="utf-8", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["item", "label"])
        plain_names = _plain_cells(names)
        for a in range(0, corpus.n_docs, _CHUNK):
            ids = corpus.doc_ids[a:a + _CHUNK]
            codes = lab[a:a + _CHUNK].tolist()
            if plain_names and _plain_cells(ids):
                fh.write("".join(chain.from_iterable(zip(ids, [tails[k] for k in codes], strict=True))))
            else:
                cells = [names[k] for k in codes]
                w.writerows([csv_escape(d), c] for d, c in zip(ids, cells, strict=True))
