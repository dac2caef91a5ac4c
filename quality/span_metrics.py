"""Span-level scores: NLP Sandbox instance scores, nervaluate schemes, seqeval, Azure's entity/model level.

Spans are any object with int64 arrays ``doc``, ``start``, ``end`` (character
offsets, end exclusive) and ``type`` of one length, such as
:class:`crowdqa.aggregation.spans.SpanArray` or :class:`CharSpans`. Every score is built
from keys and ``searchsorted``; nothing loops over spans except the text tokenizer
of the NLP Sandbox adapter.

NLP Sandbox (nlpsandbox-client @e51720b, ``nlpsandboxclient/evaluation.py``)
-------------------------------------------------------------------------------
* instance key = (document, start); a later annotation with the same key replaces
  an earlier one (the reference builds a dict); :func:`dedupe_by_start` applies it;
* **strict**: a prediction is a true positive if the reference has the same start
  and the same length; **relaxed**: the same start and lengths within +-2
  characters; **type** (location-and-type): the same start, length and type;
* **token**: the tokens inside annotations, keyed (document, absolute start,
  length), matched as sets (:func:`token_set_counts`);
* micro over documents. The reference rounds precision and recall to two places
  and computes F1 from the rounded values; crowdqa reports unrounded values, and
  "no prediction" or "no reference" gives ``nan`` (the reference returns 0).

The report names these by what they compare (issue 30): ``strict`` is **location** (start and length,
any type), ``relaxed`` **location, relaxed** and ``type`` **location and type**, which on spans decoded
from BIO labels is conlleval's exact chunk match (CoNLL-2000 shared task, ``conlleval.pl``; seqeval's
default mode). :func:`overlap_counts` adds the **overlap** ("partial") match and :func:`per_type_counts`
conlleval's per-type scores.

nervaluate (1.2.1) and seqeval (1.2.2) rules are stated in their functions.

References
----------
.. [1] NLP Sandbox, https://github.com/nlpsandbox/nlpsandbox-client (Apache-2.0).
.. [2] I. Segura-Bedmar, P. Martinez, M. Herrero-Zazo (2013). SemEval-2013 Task 9:
   extraction of drug-drug interactions. SemEval 2013 (the schemes nervaluate implements).
.. [3] H. Nakayama (2018). seqeval: a Python framework for sequence labeling evaluation.
.. [4] Microsoft, Custom Text Analytics for health: evaluation metrics (entity-level and
   model-level scores; confusion matrix with rows = predicted, columns = actual).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from crowdqa.quality.metrics import PRF, make_prf, prf_from_counts

__all__ = [
    "LEGACY_SPAN_KEYS",
    "CharSpans",
    "dedupe_by_start",
    "instance_match",
    "instance_counts",
    "instance_prf",
    "overlap_counts",
    "per_type_counts",
    "annotation_tokens",
    "token_set_counts",
    "nervaluate_scores",
    "seqeval_prf",
    "confusion_from_pairs",
    "span_confusion",
    "entity_level_scores",
    "model_level_scores",
]

INSTANCE_MODES = ("strict", "relaxed", "type")
#: The report's names of the instance scores before issue 30 (``strict`` and ``relaxed`` ignore the type),
#: mapped to their names now; stored reports keep the old keys and are read through this.
LEGACY_SPAN_KEYS = {"span_strict": "span_location", "span_relaxed": "span_location_relaxed",
                    "span_type": "span_location_and_type"}


@dataclass(frozen=True)
class CharSpans:
    """Character spans: ``doc``, ``start``, ``end``, ``type`` arrays of shape (n_spans,)."""

    doc: NDArray[np.int64]
    start: NDArray[np.int64]
    end: NDArray[np.int64]
    type: NDArray[np.int64]

    @classmethod
    def from_lists(cls, doc, start, end, type=None) -> CharSpans:  # noqa: A002 - mirrors SpanArray.type
        doc = np.asarray(doc, dtype=np.int64)
        return cls(
            doc=doc,
            start=np.asarray(start, dtype=np.int64),
            end=np.asarray(end, dtype=np.int64),
            type=np.zeros_like(doc) if type is None else np.asarray(type, dtype=np.int64),
        )

    def __len__(self) -> int:
        return int(self.doc.shape[0])


def _key(doc: NDArray, pos: NDArray) -> NDArray[np.int64]:
    return np.asarray(doc, dtype=np.int64) * (1 << 32) + np.asarray(pos, dtype=np.int64)


def dedupe_by_start(spans) -> CharSpans:
    """Keep the last span of each (document, start) key, in key order (the NLP Sandbox rule)."""
    key = _key(spans.doc, spans.start)
    n = key.shape[0]
    _, first_in_reversed = np.unique(key[::-1], return_index=True)
    keep = np.sort(n - 1 - first_in_reversed)
    return CharSpans(doc=np.asarray(spans.doc)[keep], start=np.asarray(spans.start)[keep],
                     end=np.asarray(spans.end)[keep], type=np.asarray(spans.type)[keep])


def instance_match(gold, pred, *, mode: str = "strict", tolerance: int = 2) -> NDArray[np.bool_]:
    """Which predictions match a reference instance (spans already deduplicated by start).

    Parameters
    ----------
    gold, pred : spans
    mode : {"strict", "relaxed", "type"}
    tolerance : int, default=2
        Largest length difference in characters for ``"relaxed"``.

    Returns
    -------
    ndarray of shape (n_pred,) of bool
    """
    if mode not in INSTANCE_MODES:
        raise ValueError(f"mode must be one of {INSTANCE_MODES}, found {mode!r}")
    gk = _key(gold.doc, gold.start)
    pk = _key(pred.doc, pred.start)
    if np.unique(gk).shape[0] != gk.shape[0] or np.unique(pk).shape[0] != pk.shape[0]:
        raise ValueError("spans must have unique (doc, start) keys; apply dedupe_by_start first")
    order = np.argsort(gk, kind="stable")
    gk_sorted = gk[order]
    pos = np.minimum(np.searchsorted(gk_sorted, pk), max(gk.shape[0] - 1, 0))
    if gk.shape[0] == 0:
        return np.zeros(pk.shape[0], dtype=bool)
    g = order[pos]
    same_start = gk_sorted[pos] == pk
    g_len = np.asarray(gold.end - gold.start)[g]
    p_len = np.asarray(pred.end - pred.start)
    if mode == "relaxed":
        ok = np.abs(g_len - p_len) <= tolerance
    else:
        ok = g_len == p_len
    if mode == "type":
        ok &= np.asarray(gold.type)[g] == np.asarray(pred.type)
    return same_start & ok


def instance_counts(gold, pred, *, mode: str = "strict", n_docs: int, tolerance: int = 2) -> NDArray[np.int64]:
    """Per-document tp, fp, fn of instance-level matching.

    Returns
    -------
    ndarray of shape (n_docs, 3)
    """
    gold, pred = dedupe_by_start(gold), dedupe_by_start(pred)
    hit = instance_match(gold, pred, mode=mode, tolerance=tolerance)
    tp = np.bincount(pred.doc[hit], minlength=n_docs)
    n_pred = np.bincount(pred.doc, minlength=n_docs)
    n_gold = np.bincount(gold.doc, minlength=n_docs)
    return np.stack([tp, n_pred - tp, n_gold - tp], axis=1).astype(np.int64)


def instance_prf(gold, pred, *, mode: str = "strict", tolerance: int = 2) -> PRF:
    """Micro instance-level scores (NLP Sandbox strict / relaxed / type).

    Examples
    --------
    >>> g = CharSpans.from_lists([0, 0], [0, 10], [5, 14])
    >>> p = CharSpans.from_lists([0, 0], [0, 10], [5, 16])
    >>> instance_prf(g, p).tp, instance_prf(g, p, mode="relaxed").tp
    (1, 2)
    """
    n_docs = int(max(np.max(gold.doc, initial=-1), np.max(pred.doc, initial=-1))) + 1
    c = instance_counts(gold, pred, mode=mode, n_docs=n_docs, tolerance=tolerance).sum(axis=0)
    return make_prf(*c)


def _overlapped(spans, other) -> NDArray[np.bool_]:
    """Which of ``spans`` overlap (share a character with) some span of ``other`` in the same document.

    ``other`` must be disjoint within each document (spans decoded from one label per token are): the span of
    ``other`` that starts last before a span's end then has the largest end of those, so one
    ``searchsorted`` decides.
    """
    if len(other) == 0 or len(spans) == 0:
        return np.zeros(len(spans), dtype=bool)
    ok = _key(other.doc, other.start)
    order = np.argsort(ok, kind="stable")
    j = np.searchsorted(ok[order], _key(spans.doc, spans.end), side="left") - 1
    jj = order[np.maximum(j, 0)]
    return (j >= 0) & (np.asarray(other.doc)[jj] == np.asarray(spans.doc)) & (
        np.asarray(other.end)[jj] > np.asarray(spans.start))


def overlap_counts(gold, pred, *, n_docs: int) -> NDArray[np.int64]:
    """Per-document tp, fp, fn of the overlap ("partial") match, location only.

    A predicted span is found if it shares a character with a reference span, of any type; a reference
    span is found if a prediction shares one with it. Each span counts once however many it overlaps:
    ``tp`` is the smaller of the predictions found and the references found in the document, so one long
    prediction over two reference spans is one hit and one miss. Spans within each side must be disjoint
    (decoded from one label per token).

    Returns
    -------
    ndarray of shape (n_docs, 3)

    Examples
    --------
    >>> g = CharSpans.from_lists([0, 0, 0], [0, 10, 20], [5, 14, 24])
    >>> p = CharSpans.from_lists([0, 0], [2, 9], [4, 30])
    >>> overlap_counts(g, p, n_docs=1).tolist()
    [[2, 0, 1]]
    """
    found_pred = np.bincount(np.asarray(pred.doc)[_overlapped(pred, gold)], minlength=n_docs)
    found_gold = np.bincount(np.asarray(gold.doc)[_overlapped(gold, pred)], minlength=n_docs)
    tp = np.minimum(found_pred, found_gold)
    n_pred = np.bincount(np.asarray(pred.doc), minlength=n_docs)
    n_gold = np.bincount(np.asarray(gold.doc), minlength=n_docs)
    return np.stack([tp, n_pred - tp, n_gold - tp], axis=1).astype(np.int64)


def per_type_counts(gold, pred, *, n_types: int) -> NDArray[np.int64]:
    """tp, fp, fn of each entity type under the location-and-type match (conlleval's per-type lines).

    Parameters
    ----------
    gold, pred : spans
        ``type`` in ``[0, n_types)``.
    n_types : int

    Returns
    -------
    ndarray of shape (n_types, 3)
        A prediction of type t is a tp of t when the reference has a span of type t with its start and
        length, else an fp of t; a reference span of type t not found so is an fn of t.

    Examples
    --------
    >>> g = CharSpans.from_lists([0, 0], [0, 10], [5, 14], [1, 2])
    >>> p = CharSpans.from_lists([0, 0], [0, 10], [5, 14], [1, 1])
    >>> per_type_counts(g, p, n_types=3).tolist()
    [[0, 0, 0], [1, 1, 0], [0, 0, 1]]
    """
    gold, pred = dedupe_by_start(gold), dedupe_by_start(pred)
    hit = instance_match(gold, pred, mode="type")
    tp = np.bincount(pred.type[hit], minlength=n_types)
    n_pred = np.bincount(pred.type, minlength=n_types)
    n_gold = np.bincount(gold.type, minlength=n_types)
    return np.stack([tp, n_pred - tp, n_gold - tp], axis=1).astype(np.int64)


_TREEBANK_LEAD = re.compile(r"^[\(\[\{\"'`]+")
_TREEBANK_TRAIL = re.compile(r"[,;:!?\)\]\}\"']+$")


def annotation_tokens(doc: int, start: int, text: str, *, style: str = "treebank") -> list[tuple[int, int, int]]:
    """Tokens of one annotation's text as (doc, absolute start, length) keys.

    Parameters
    ----------
    doc, start : int
    text : str
    style : {"treebank", "whitespace"}
        ``"whitespace"`` splits on whitespace (the NLP Sandbox before afc1745);
        ``"treebank"`` also splits leading brackets/quotes, trailing ``, ; : ! ?``,
        brackets and quotes, and a period at the very end of the text, which is how
        NLTK's Treebank tokenizer (the current reference) treats annotation texts;
        it is an approximation of that tokenizer, not a copy.
    """
    if style not in ("treebank", "whitespace"):
        raise ValueError(f"style must be 'treebank' or 'whitespace', found {style!r}")
    out = []
    words = list(re.finditer(r"\S+", text))
    for n, m in enumerate(words):
        s, w = m.start(), m.group()
        if style == "whitespace":
            out.append((doc, start + s, len(w)))
            continue
        pieces: list[tuple[int, str]] = []
        lead = _TREEBANK_LEAD.match(w)
        if lead:
            pieces.extend((s + i, ch) for i, ch in enumerate(lead.group()))
            s, w = s + lead.end(), w[lead.end():]
        tail: list[tuple[int, str]] = []
        if n == len(words) - 1 and w.endswith(".") and len(w) > 1:
            tail.append((s + len(w) - 1, "."))
            w = w[:-1]
        trail = _TREEBANK_TRAIL.search(w)
        if trail and trail.start() > 0:
            tail = [(s + trail.start() + i, ch) for i, ch in enumerate(trail.group())] + tail
            w = w[: trail.start()]
        if w:
            pieces.append((s, w))
        pieces.extend(tail)
        out.extend((doc, start + ps, len(pw)) for ps, pw in pieces)
    return out


def token_set_counts(gold_keys: NDArray, pred_keys: NDArray) -> tuple[int, int, int]:
    """tp, fp, fn of two sets of token keys (rows of (doc, start, length)), as the NLP Sandbox token score."""
    g = np.unique(np.asarray(gold_keys, dtype=np.int64).reshape(-1, 3), axis=0)
    p = np.unique(np.asarray(pred_keys, dtype=np.int64).reshape(-1, 3), axis=0)
    if g.shape[0] == 0 or p.shape[0] == 0:
        return 0, int(p.shape[0]), int(g.shape[0])
    both = np.concatenate([g, p])
    _, counts = np.unique(both, axis=0, return_counts=True)
    tp = int(np.count_nonzero(counts == 2))
    return tp, int(p.shape[0]) - tp, int(g.shape[0]) - tp


def nervaluate_scores(true, pred) -> dict[str, dict]:
    """The four nervaluate schemes (strict, exact, partial, ent_type) over token spans.

    Parameters
    ----------
    true, pred : SpanArray
        Spans with global token bounds ``first``/``last`` (last exclusive) and ``type``;
        ``true`` spans must not overlap each other (as decoded spans never do).

    Returns
    -------
    dict
        scheme -> ``{correct, incorrect, partial, missed, spurious, possible, actual,
        precision, recall, f1}``.

    Notes
    -----
    As nervaluate 1.2.1: a prediction equal to a true entity (bounds and type) is
    correct in every scheme. Otherwise it is compared with the first true entity it
    overlaps: same bounds, other type -> strict/ent_type incorrect, exact/partial
    correct; overlap, same type -> strict/exact incorrect, ent_type correct, partial
    partial; overlap, other type -> incorrect, partial partial. No overlap -> spurious
    everywhere. A true entity no prediction overlapped is missed. ``possible =
    correct + incorrect + partial + missed``, ``actual = correct + incorrect + partial +
    spurious``; precision = ``(correct + partial / 2) / actual`` for partial and
    ent_type, ``correct / actual`` otherwise (recall likewise over ``possible``);
    ``nan`` where the denominator is 0 (nervaluate returns 0).
    """
    tf, tl, tt = (np.asarray(x, dtype=np.int64) for x in (true.first, true.last, true.type))
    pf, pl, pt = (np.asarray(x, dtype=np.int64) for x in (pred.first, pred.last, pred.type))
    order = np.argsort(tf, kind="stable")
    tf, tl, tt = tf[order], tl[order], tt[order]
    if tf.shape[0] > 1 and np.any(tf[1:] < tl[:-1]):
        raise ValueError("true spans must not overlap each other")
    n_true = tf.shape[0]
    # First true span ending after the prediction starts; it overlaps if it starts before the prediction ends.
    if n_true == 0:  # pad with one empty span that overlaps nothing, so the indexing below stays valid
        tf, tl, tt = np.array([-1]), np.array([-1]), np.array([-1])
    idx = np.searchsorted(tl, pf, side="right")
    has = idx < n_true
    j = np.minimum(idx, max(n_true - 1, 0))
    overlap = has & (tf[j] < pl)
    same_bounds = overlap & (tf[j] == pf) & (tl[j] == pl)
    same_type = overlap & (tt[j] == pt)
    exact = same_bounds & same_type
    bound_only = same_bounds & ~same_type
    overlap_same = overlap & ~same_bounds & same_type
    overlap_other = overlap & ~same_bounds & ~same_type
    spurious = int(np.count_nonzero(~overlap))
    touched = np.zeros(max(n_true, 1), dtype=bool)[:n_true]
    touched[j[overlap]] = True
    missed = int(np.count_nonzero(~touched))
    c = {k: int(np.count_nonzero(v)) for k, v in
         (("exact", exact), ("bound", bound_only), ("osame", overlap_same), ("oother", overlap_other))}
    table = {
        "strict": (c["exact"], c["bound"] + c["osame"] + c["oother"], 0),
        "exact": (c["exact"] + c["bound"], c["osame"] + c["oother"], 0),
        "partial": (c["exact"] + c["bound"], 0, c["osame"] + c["oother"]),
        "ent_type": (c["exact"] + c["osame"], c["bound"] + c["oother"], 0),
    }
    out = {}
    for scheme, (correct, incorrect, partial) in table.items():
        possible = correct + incorrect + partial + missed
        actual = correct + incorrect + partial + spurious
        num = correct + 0.5 * partial if scheme in ("partial", "ent_type") else correct
        p = float(num / actual) if actual else float("nan")
        r = float(num / possible) if possible else float("nan")
        if not (np.isfinite(p) and np.isfinite(r)):
            f = float("nan")
        else:
            f = float(2 * p * r / (p + r)) if p + r > 0 else 0.0
        out[scheme] = {"correct": correct, "incorrect": incorrect, "partial": partial, "missed": missed,
                       "spurious": spurious, "possible": possible, "actual": actual,
                       "precision": p, "recall": r, "f1": f}
    return out


# ----------------------------------------------------------------------------- seqeval
_PREFIX = {"O": 0, "B": 1, "I": 2, "E": 3, "S": 4}


def _parse_tags(seqs: list[list[str]]) -> tuple[NDArray, NDArray, NDArray]:
    """Flatten tag sequences into prefix codes, type codes and a sentence-start flag (vectorised via unique)."""
    flat = np.array([t for s in seqs for t in s], dtype=object)
    sent_first = np.zeros(flat.shape[0], dtype=bool)
    lengths = np.array([len(s) for s in seqs], dtype=np.int64)
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])[lengths > 0] if len(seqs) else np.zeros(0, np.int64)
    sent_first[starts] = True
    uniq, inv = np.unique(flat.astype(str), return_inverse=True)
    pre = np.array([_PREFIX.get(u.split("-", 1)[0], -1) if u != "O" else 0 for u in uniq], dtype=np.int64)
    if np.any(pre < 0):
        raise ValueError(f"tags must be O or start with B-, I-, E- or S-, found {str(uniq[pre < 0][0])!r}")
    typ_names = [u.split("-", 1)[1] if "-" in u else "" for u in uniq]
    _, typ = np.unique(np.array(typ_names, dtype=str), return_inverse=True)
    return pre[inv], typ[inv].astype(np.int64), sent_first


def _chunks(seqs: list[list[str]], *, mode: str | None, scheme: str) -> set[tuple[int, int, int]]:
    pre, typ, sent_first = _parse_tags(seqs)
    n = pre.shape[0]
    if n == 0:
        return set()
    O, B, I, E, S = 0, 1, 2, 3, 4  # noqa: N806, E741 - tag prefixes
    prev_pre = np.concatenate([[O], pre[:-1]])
    prev_typ = np.concatenate([[-1], typ[:-1]])
    prev_pre[sent_first] = O
    prev_typ[sent_first] = -1
    if mode is None:
        # conlleval's start_of_chunk; a chunk runs until the next start or O.
        start = (pre == B) | (pre == S)
        start |= np.isin(prev_pre, (E, S, O)) & np.isin(pre, (E, I))
        start |= (pre != O) & (prev_pre != O) & (prev_typ != typ)
        start &= pre != O
        brk = start | (pre == O)
        valid_first = start
    else:
        allowed = {"IOB2": (O, B, I), "IOBES": (O, B, I, E, S)}[scheme]
        cont_tags = (I,) if scheme == "IOB2" else (I, E)
        cont = np.isin(pre, cont_tags) & np.isin(prev_pre, (B, I)) & (prev_typ == typ)
        brk = ~cont
        valid_first = (pre == B) | ((pre == S) if scheme == "IOBES" else False)
        valid_first &= np.isin(pre, allowed)
    first = np.flatnonzero(brk)
    last = np.concatenate([first[1:], [n]])
    keep = valid_first[first] & (pre[first] != O)
    if mode is not None and scheme == "IOBES":
        ends_ok = np.where(pre[first] == S, last - first == 1, (pre[last - 1] == E) & (last - first >= 2))
        keep &= ends_ok
    return set(zip(first[keep].tolist(), last[keep].tolist(), typ[first[keep]].tolist(), strict=True))


def seqeval_prf(
    true: list[list[str]], pred: list[list[str]], *, mode: str | None = None, scheme: str = "IOB2"
) -> PRF:
    """Entity-level micro scores on tag sequences, as seqeval 1.2.2 computes them.

    Parameters
    ----------
    true, pred : list of list of str
        Tag sequences (``"O"``, ``"B-PER"``, ...) of matching lengths.
    mode : {None, "strict"}
        ``None``: conlleval chunking (an ``I-X`` after ``O`` starts a chunk).
        ``"strict"``: only well-formed chunks of ``scheme`` count (``B-X I-X*`` in IOB2;
        ``S-X`` or ``B-X I-X* E-X`` in IOBES); ill-formed ones are dropped.
    scheme : {"IOB2", "IOBES"}

    Returns
    -------
    PRF
        An entity is correct when its type and bounds both match.
    """
    if mode not in (None, "strict"):
        raise ValueError(f"mode must be None or 'strict', found {mode!r}")
    if scheme not in ("IOB2", "IOBES"):
        raise ValueError(f"scheme must be 'IOB2' or 'IOBES', found {scheme!r}")
    if [len(s) for s in true] != [len(s) for s in pred]:
        raise ValueError("true and pred must have sequences of the same lengths")
    # Type codes must agree between the two sides: parse them together.
    both = _chunks(list(true) + list(pred), mode=mode, scheme=scheme)
    n_true = sum(len(s) for s in true)
    t = {(a, b, c) for a, b, c in both if a < n_true}
    p = {(a - n_true, b - n_true, c) for a, b, c in both if a >= n_true}
    tp = len(t & p)
    return make_prf(tp, len(p) - tp, len(t) - tp)


# ----------------------------------------------------------------------------- Azure entity/model level
def confusion_from_pairs(predicted: NDArray, actual: NDArray, *, n_types: int) -> NDArray[np.int64]:
    """Confusion matrix with rows = predicted type, columns = actual type (Azure's layout).

    Parameters
    ----------
    predicted, actual : ndarray of shape (n_pairs,) of int in [0, n_types)
    n_types : int

    Returns
    -------
    ndarray of shape (n_types, n_types)
    """
    predicted = np.asarray(predicted, dtype=np.int64)
    actual = np.asarray(actual, dtype=np.int64)
    if predicted.shape != actual.shape:
        raise ValueError(f"predicted and actual must have one shape, found {predicted.shape} and {actual.shape}")
    return np.bincount(predicted * n_types + actual, minlength=n_types * n_types).reshape(n_types, n_types)


def span_confusion(gold, pred, *, n_types: int) -> NDArray[np.int64]:
    """Span confusion matrix: predictions paired with reference spans of the same bounds.

    Parameters
    ----------
    gold, pred : spans with ``type`` in [1, n_types]
    n_types : int

    Returns
    -------
    ndarray of shape (n_types + 1, n_types + 1)
        Rows = predicted type, columns = actual type; index 0 = no entity (an
        unmatched prediction is counted in column 0, a missed reference span in row 0).
    """
    gk = np.stack([np.asarray(gold.doc), np.asarray(gold.start), np.asarray(gold.end)], axis=1)
    pk = np.stack([np.asarray(pred.doc), np.asarray(pred.start), np.asarray(pred.end)], axis=1)
    keys, inv = np.unique(np.concatenate([gk, pk]).reshape(-1, 3), axis=0, return_inverse=True)
    inv = inv.reshape(-1)
    g_type = np.zeros(keys.shape[0], dtype=np.int64)
    p_type = np.zeros(keys.shape[0], dtype=np.int64)
    g_type[inv[: gk.shape[0]]] = np.asarray(gold.type)
    p_type[inv[gk.shape[0]:]] = np.asarray(pred.type)
    return confusion_from_pairs(p_type, g_type, n_types=n_types + 1)


def entity_level_scores(confusion: NDArray, *, skip_none: bool = True) -> dict[str, NDArray]:
    """Per-type tp/fp/fn and scores from a rows = predicted, columns = actual confusion matrix.

    Returns
    -------
    dict of ndarray of shape (n_types,)
        ``tp = M[t, t]``, ``fp = row sum - tp``, ``fn = column sum - tp``; with
        ``skip_none`` type 0 (no entity) is left out.
    """
    m = np.asarray(confusion, dtype=np.int64)
    tp = np.diag(m).copy()
    fp = m.sum(axis=1) - tp
    fn = m.sum(axis=0) - tp
    if skip_none:
        tp, fp, fn = tp[1:], fp[1:], fn[1:]
    p, r, f = prf_from_counts(tp, fp, fn)
    return {"tp": tp, "fp": fp, "fn": fn, "precision": p, "recall": r, "f1": f}


def model_level_scores(confusion: NDArray, *, skip_none: bool = True) -> PRF:
    """Model-level (micro) scores: the entity-level counts summed over types."""
    e = entity_level_scores(confusion, skip_none=skip_none)
    return make_prf(int(e["tp"].sum()), int(e["fp"].sum()), int(e["fn"].sum()))
