"""A token tagger learned from an aggregate: word features and a soft-label logistic regression.

The tagger is a maximum-entropy token classifier (Ratnaparkhi 1996) over the features NER taggers
have used since (Ratinov & Roth 2009): the word as written and lower-cased, its shape, its prefixes
and suffixes, and the neighbouring words and shapes. It is trained on the *soft* labels of the
current aggregate: every token contributes one weighted row per class its posterior gives a
probability of at least ``min_share`` (weights the renormalised posterior), so scikit-learn's
:class:`~sklearn.linear_model.LogisticRegression` minimises the expected log loss under the
aggregate's posterior. The sequence structure is the crowd model's (the HMM's transitions); the
tagger's context is its window of neighbouring features.

Features are built once per corpus, vectorised: the features of a word (identity, lower case, shape,
affixes) are computed once per distinct token string and gathered; the neighbour features shift the
lower-cased word and shape ids across the token axis, with a boundary marker at a sequence's edge.
"""

from __future__ import annotations

import re
import warnings
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray

__all__ = ["TaggerWeights", "cross_fit_proba", "document_folds", "fit_tagger", "tagger_features", "tagger_proba",
           "tagger_votes"]

#: Offsets of the neighbouring tokens whose lower-cased word and shape are features.
WINDOW = (-2, -1, 1, 2)
_BOUNDARY = "<s>"  # the word and shape of a position before a sequence's first or after its last token


def _shape(word: str) -> str:
    """``Xxxx-99`` -> ``Xx-d``: upper ``X``, lower ``x``, digit ``d``, other characters kept; runs collapsed."""
    s = re.sub(r"[A-Z]", "X", word)
    s = re.sub(r"[a-z]", "x", s)
    s = re.sub(r"[0-9]", "d", s)
    s = re.sub(r"[^\x00-\x7f]", "u", s)  # letters outside ASCII
    return re.sub(r"(.)\1+", r"\1", s)


def _word_features(word: str, *, affixes: int) -> list[str]:
    """The features of one token string (its position aside)."""
    lower = word.lower()
    out = [f"w={word}", f"lw={lower}", f"sh={_shape(word)}", f"len={min(len(word), 8)}"]
    if word[:1].isupper():
        out.append("cap")
    if word.isupper():
        out.append("allcap")
    if any(c.isdigit() for c in word):
        out.append("digit")
    for n in range(1, affixes + 1):
        if len(lower) > n:
            out += [f"pre{n}={lower[:n]}", f"suf{n}={lower[-n:]}"]
    return out


def tagger_features(tokens: list[str], *, seq_first: NDArray[np.bool_], affixes: int = 3, min_count: int = 2,
                    vocabulary: tuple[str, ...] | None = None) -> tuple[sp.csr_array, tuple[str, ...]]:
    """The tagger's feature matrix of every token.

    Parameters
    ----------
    tokens : list of str, length n_tokens
        Token texts, documents concatenated.
    seq_first : ndarray of shape (n_tokens,) of bool
        True at the first token of each sequence (a neighbour never crosses into another sequence).
    affixes : int, default=3
        Prefixes and suffixes of the lower-cased word of lengths 1 to ``affixes``.
    min_count : int, default=2
        Keep a feature only if at least this many tokens have it (when ``vocabulary`` is None).
    vocabulary : tuple of str, optional
        The feature names of an earlier fit: columns follow it and features not in it are dropped.

    Returns
    -------
    features : sparse array of shape (n_tokens, n_features)
        0/1 entries.
    vocabulary : tuple of str, length n_features
    """
    n = len(tokens)
    index: dict[str, int] = {}
    ids = np.fromiter((index.setdefault(t, len(index)) for t in tokens), dtype=np.int64, count=n)
    distinct = list(index)
    names: dict[str, int] = {}
    rows: list[int] = []
    cols: list[int] = []
    for i, word in enumerate(distinct):  # once per distinct string, not per token
        for f in _word_features(word, affixes=affixes):
            rows.append(i)
            cols.append(names.setdefault(f, len(names)))
    per_type = sp.csr_array((np.ones(len(rows)), (rows, cols)), shape=(len(distinct), len(names)))
    token_rows, token_cols = per_type[ids].tocoo().coords if n else (np.zeros(0, int), np.zeros(0, int))
    parts_r, parts_c = [token_rows], [token_cols]
    # The neighbours' lower-cased words and shapes, as ids of distinct strings, shifted across the token axis.
    lower = [w.lower() for w in distinct] + [_BOUNDARY]
    shape = [_shape(w) for w in distinct] + [_BOUNDARY]
    last = np.append(seq_first[1:], True) if n else np.zeros(0, bool)
    for off in WINDOW:
        src = np.arange(n) + off
        valid = (src >= 0) & (src < n)
        # crossing a sequence's edge: any first (looking back) or last (looking forward) token on the way
        edge = seq_first if off < 0 else last
        crossed = np.zeros(n, bool)
        for step in range(abs(off)):  # |off| <= 2: a shift per step, vectorised over tokens
            at = np.arange(n) - step if off < 0 else np.arange(n) + step
            ok = (at >= 0) & (at < n)
            crossed |= ~ok | edge[np.clip(at, 0, max(n - 1, 0))]
        src_type = np.where(valid & ~crossed, ids[np.clip(src, 0, max(n - 1, 0))], len(distinct))
        for kind, table in (("lw", lower), ("sh", shape)):
            strings = [f"{kind}[{off:+d}]={v}" for v in table]
            col = np.fromiter((names.setdefault(s, len(names)) for s in strings), dtype=np.int64,
                              count=len(strings))
            parts_r.append(np.arange(n))
            parts_c.append(col[src_type])
    parts_r.append(np.arange(n))
    parts_c.append(np.full(n, names.setdefault("bias", len(names)), dtype=np.int64))
    r, c = np.concatenate(parts_r), np.concatenate(parts_c)
    all_names = np.array(list(names), dtype=object)
    if vocabulary is None:
        counts = np.bincount(c, minlength=len(names))
        keep = np.flatnonzero(counts >= min_count)
        vocabulary = tuple(all_names[keep].tolist())
        new_col = np.full(len(names), -1, dtype=np.int64)
        new_col[keep] = np.arange(keep.size)
    else:
        where = {f: j for j, f in enumerate(vocabulary)}
        new_col = np.fromiter((where.get(f, -1) for f in all_names), dtype=np.int64, count=len(names))
    c = new_col[c]
    ok = c >= 0
    x = sp.csr_array((np.ones(int(ok.sum())), (r[ok], c[ok])), shape=(n, len(vocabulary)))
    x.sum_duplicates()
    x.data[:] = 1.0
    return x, vocabulary


@dataclass(frozen=True)
class TaggerWeights:
    """A fitted tagger: ``log p(class | token) = x @ coef.T + intercept`` normalised (``coef``: (n_classes,
    n_features)); a class the training labels never gave has ``-inf`` intercept."""

    coef: NDArray[np.float64]
    intercept: NDArray[np.float64]


def fit_tagger(features: sp.csr_array, target: NDArray[np.float64], *, rows: NDArray[np.int64], c: float,
               max_iter: int, min_share: float = 0.01, warm: TaggerWeights | None = None) -> TaggerWeights:
    """Train the tagger on the soft labels ``target[rows]`` (scikit-learn's multinomial logistic regression).

    Parameters
    ----------
    features : sparse array of shape (n_tokens, n_features)
    target : ndarray of shape (n_tokens, n_classes)
        The aggregate's posterior of every token (rows sum to 1).
    rows : ndarray of shape (n_train,)
        The tokens trained on.
    c : float
        Inverse L2 strength (``LogisticRegression(C=c)``); the loss is a sum over tokens.
    max_iter : int
        L-BFGS iterations.
    min_share : float, default=0.01
        Classes below this posterior share of a token are left out of its rows (the rest renormalised).
    warm : TaggerWeights, optional
        Start L-BFGS from these weights (the previous round's tagger).

    Returns
    -------
    TaggerWeights
    """
    from sklearn.exceptions import ConvergenceWarning as SklearnConvergenceWarning
    from sklearn.linear_model import LogisticRegression

    n_classes = target.shape[1]
    p = target[rows]
    p = np.where(p >= min_share, p, 0.0)
    p /= p.sum(axis=1, keepdims=True)
    tok, cls = np.nonzero(p)
    weight = p[tok, cls]
    present = np.unique(cls)
    coef = np.zeros((n_classes, features.shape[1]))
    intercept = np.full(n_classes, -np.inf)
    if present.size == 1:  # one class only: the tagger always says it
        intercept[present[0]] = 0.0
        return TaggerWeights(coef, intercept)
    model = LogisticRegression(C=c, max_iter=max_iter, tol=1e-4, warm_start=warm is not None)
    if warm is not None and np.isfinite(warm.intercept[present]).all():
        if present.size == 2:
            model.coef_ = (warm.coef[present[1]] - warm.coef[present[0]])[None]
            model.intercept_ = np.array([warm.intercept[present[1]] - warm.intercept[present[0]]])
        else:
            model.coef_, model.intercept_ = warm.coef[present].copy(), warm.intercept[present].copy()
    with warnings.catch_warnings():
        # L-BFGS stopped at max_iter: the next round starts from these weights (a fixed budget per round)
        warnings.simplefilter("ignore", SklearnConvergenceWarning)
        model.fit(features[rows[tok]], cls, sample_weight=weight)
    if present.size == 2:  # scikit-learn's binary model: one weight vector for the second class
        coef[present[1]], intercept[present[1]] = model.coef_[0], model.intercept_[0]
        intercept[present[0]] = 0.0
    else:
        coef[present], intercept[present] = model.coef_, model.intercept_
    return TaggerWeights(coef, intercept)


def tagger_proba(features: sp.csr_array, weights: TaggerWeights) -> NDArray[np.float64]:
    """The tagger's class probabilities of every token, ndarray of shape (n_tokens, n_classes)."""
    from scipy.special import softmax

    with np.errstate(invalid="ignore"):  # -inf intercepts of absent classes give probability 0
        logits = np.asarray(features @ weights.coef.T) + weights.intercept
    return softmax(logits, axis=1)


def tagger_votes(proba: NDArray[np.float64], *, kind: str) -> NDArray[np.float64]:
    """The tagger's answers as the crowd model reads them, ndarray of shape (n_tokens, n_classes).

    ``kind="soft"``: the class probabilities themselves (a fractional answer of every class). ``kind="hard"``: the
    most probable class, one-hot (ties to the lowest class index), as an annotator answers; its learned confusion
    matrix then weighs each answer in full, where a soft answer of 0.6 carries 0.6 of the evidence. A row of zeros
    (a token the tagger did not vote on) stays zeros.
    """
    if kind == "soft":
        return proba
    votes = np.zeros_like(proba)
    voted = proba.any(axis=1)
    votes[np.flatnonzero(voted), proba[voted].argmax(axis=1)] = 1.0
    return votes


def document_folds(doc_ids: tuple[str, ...] | list[str], *, n_folds: int, rng: np.random.Generator
                   ) -> NDArray[np.int64]:
    """A fold in ``range(n_folds)`` for every document, at random with folds as even as possible.

    The draw is made over the documents sorted by id, so a document's fold depends on the ids and the seed, not on
    the order the documents come in.
    """
    n_docs = len(doc_ids)
    by_id = np.argsort(np.asarray(doc_ids, dtype=str), kind="stable")
    folds = np.empty(n_docs, dtype=np.int64)
    folds[by_id] = rng.permutation(np.arange(n_docs) % n_folds)
    return folds


def cross_fit_proba(features: sp.csr_array, target: NDArray[np.float64], *, token_fold: NDArray[np.int64],
                    train: NDArray[np.bool_], n_folds: int, c: float, max_iter: int,
                    warm: list[TaggerWeights] | None = None) -> tuple[NDArray[np.float64], list[TaggerWeights]]:
    """The tagger's probabilities of every token, each from a tagger that never trained on its document.

    With ``n_folds >= 2``, fold ``f``'s tokens are predicted by a tagger trained on the ``train`` tokens of
    the other folds (cross-fitting); with ``n_folds = 1`` one tagger trains on every ``train`` token and
    predicts them all (in-sample: its vote on a token was learned from that token's own aggregate).

    Returns
    -------
    proba : ndarray of shape (n_tokens, n_classes)
    weights : list of TaggerWeights, one per fold (the next round's warm start)
    """
    proba = np.zeros(target.shape)
    out = []
    for f in range(n_folds):
        own = token_fold == f
        rows = np.flatnonzero(train & ~own) if n_folds > 1 else np.flatnonzero(train)
        weights = fit_tagger(features, target, rows=rows, c=c, max_iter=max_iter,
                             warm=None if warm is None else warm[f])
        target_rows = np.flatnonzero(own) if n_folds > 1 else np.arange(target.shape[0])
        proba[target_rows] = tagger_proba(features[target_rows], weights)
        out.append(weights)
    return proba, out
