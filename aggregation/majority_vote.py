"""Majority vote per token, with optional annotator weights and an explicit tie rule.

The vote is ``np.bincount`` over ``label * n_tokens + token``, block by block (see :func:`_votes`);
ties are resolved by a documented, deterministic rule
(:func:`_break_ties`) rather than by whichever label happens to be seen first.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import ClassVar

import numpy as np
from numpy.typing import NDArray

from crowdqa.aggregation._base import BaseAggregator, ProgressCallback, one_hot_columns
from crowdqa.aggregation._params import Check, InstanceOf, Options
from crowdqa.aggregation.corpus import BLOCK_OBS, Corpus

__all__ = ["MajorityVote", "TIE_RULES"]

#: ``"lowest"``: the lowest class index among the tied classes (``O`` wins an
#: ``O``/entity tie). ``"entity"``: a tie between ``O`` and one or more non-``O``
#: classes goes to the lowest tied non-``O`` class; ties without ``O`` are as "lowest".
TIE_RULES = ("entity", "lowest")

#: Per-annotator weights as a sequence of numbers (their length is checked against the corpus in fit).
WEIGHT_ARRAY = Check(lambda v: not isinstance(v, str | bytes | Mapping) and np.asarray(v, dtype=np.float64).ndim == 1,
                     "an array of shape (n_workers,)")


def _token_blocks(corpus: Corpus) -> list[tuple[int, int, int, int]]:
    """Blocks of whole tokens of about :data:`BLOCK_OBS` annotations each (the corpus is sorted by token).

    Returns
    -------
    blocks : list of (first token, end token, first annotation, end annotation)
        Together they cover every token, the unlabelled ones included.
    """
    cuts = np.concatenate(([0], corpus.token[BLOCK_OBS::BLOCK_OBS], [corpus.n_tokens]))
    obs = np.searchsorted(corpus.token, cuts)
    return [b for b in zip(cuts[:-1].tolist(), cuts[1:].tolist(), obs[:-1].tolist(), obs[1:].tolist(), strict=True)
            if b[0] < b[1]]


def _vote_blocks(
    corpus: Corpus, weights: NDArray[np.float64] | None, *, tie_break: str
) -> Iterator[tuple[int, int, NDArray[np.float64], NDArray[np.int64]]]:
    """The class-major (weighted) label counts and the winning classes, block by block of whole tokens.

    :meth:`Corpus.vote_counts` transposed, built as such: the vote and its tie rule then
    run along contiguous rows (one elementwise operation per class), where reductions over
    the short last axis of an (n_tokens, n_classes) array are many times slower. Counted and
    decided block by block (:func:`_token_blocks`; why: :data:`~crowdqa.aggregation.corpus.BLOCK_OBS`),
    one ``np.bincount`` each, so that what a caller keeps of a block (the counts, their fractions,
    only the winners) is taken while the block is in cache.

    Yields
    ------
    t0, t1 : int
        The block's first and end token; the blocks cover every token, in order.
    votes : ndarray of shape (n_classes, t1 - t0)
    labels : ndarray of shape (t1 - t0,)
        :func:`_break_ties` of ``votes`` under ``tie_break``; on categorical answers (no outside class
        to avoid) every tie goes to the lowest index.
    """
    n_classes = corpus.n_classes
    tie_break = tie_break if corpus.has_outside else "lowest"
    w = None if weights is None else np.asarray(weights, dtype=np.float64)
    for t0, t1, o0, o1 in _token_blocks(corpus):
        width = t1 - t0
        cell = np.multiply(corpus.label[o0:o1], width, dtype=np.intp)  # label * width + token - t0, in place
        cell += corpus.token[o0:o1]
        cell -= t0
        block = np.bincount(cell, weights=None if w is None else w.take(corpus.worker[o0:o1]),
                            minlength=n_classes * width).reshape(n_classes, width)
        yield t0, t1, block, _break_ties(block, tie_break=tie_break)


def _votes(
    corpus: Corpus, weights: NDArray[np.float64] | None = None, *, tie_break: str = "lowest"
) -> tuple[NDArray[np.float64], NDArray[np.int64]]:
    """Per-token (weighted) label counts, class-major, and the winning class of each token (:func:`_vote_blocks`).

    Returns
    -------
    votes : ndarray of shape (n_classes, n_tokens)
    labels : ndarray of shape (n_tokens,)
    """
    votes = np.empty((corpus.n_classes, corpus.n_tokens))
    labels = np.empty(corpus.n_tokens, dtype=np.int64)
    for t0, t1, block, winners in _vote_blocks(corpus, weights, tie_break=tie_break):
        votes[:, t0:t1] = block
        labels[t0:t1] = winners
    return votes, labels


def _vote_labels(
    corpus: Corpus, weights: NDArray[np.float64] | None = None, *, tie_break: str = "lowest"
) -> NDArray[np.int64]:
    """The winning class of each token alone: no (n_classes, n_tokens) table is built (:func:`_vote_blocks`)."""
    labels = np.empty(corpus.n_tokens, dtype=np.int64)
    for t0, t1, _, winners in _vote_blocks(corpus, weights, tie_break=tie_break):
        labels[t0:t1] = winners
    return labels


def _break_ties(votes: NDArray[np.float64], *, tie_break: str) -> NDArray[np.int64]:
    """The winning class of each column of class-major ``votes`` under the tie rule.

    Parameters
    ----------
    votes : ndarray of shape (n_classes, n_tokens)
        (Weighted) vote counts (see :func:`_votes`).
    tie_break : {"entity", "lowest"}
        See :data:`TIE_RULES`.

    Returns
    -------
    labels : ndarray of shape (n_tokens,)
        Columns with no votes get class 0.
    """
    n_classes, n_tokens = votes.shape
    if n_classes == 0:
        return np.zeros(n_tokens, dtype=np.int64)
    top = votes.max(axis=0)
    # Weighted votes are float sums of weights >= 0; classes within a few ulps of the top count are tied.
    floor = top - 16 * np.finfo(np.float64).eps * np.maximum(top, 1.0)
    # The lowest tied class from `first` on wins ("entity": first = 1; "lowest": first = 0). Counting, class
    # by class, the columns whose classes first..k are all below the top gives that index minus `first`
    # without a boolean-mask assignment per class (those cost 20x an elementwise operation).
    first = 1 if tie_break == "entity" and n_classes > 1 else 0
    below = votes[first] < floor
    labels = below.astype(np.int64)
    for k in range(first + 1, n_classes - 1):  # one pass per class, each over all tokens
        below &= votes[k] < floor
        labels += below
    labels += first
    if first:  # "entity" with no tied class after O: O is the only top class
        below &= votes[n_classes - 1] < floor
        labels *= ~below
    return labels


def _worker_weights(weights: NDArray | Mapping[str, float] | None, corpus: Corpus) -> NDArray[np.float64] | None:
    """Resolve ``weights`` to ndarray of shape (n_workers,); annotators missing from a dict weigh 1."""
    if weights is None:
        return None
    if isinstance(weights, Mapping):
        index = {w: i for i, w in enumerate(corpus.worker_ids)}
        unknown = [w for w in weights if w not in index]
        if unknown:
            raise ValueError(f"weights name annotators of the corpus, found unknown annotator {unknown[0]!r}")
        out = np.ones(corpus.n_workers)
        for w, v in weights.items():
            out[index[w]] = float(v)
    else:
        out = np.asarray(weights, dtype=np.float64)
        if out.shape != (corpus.n_workers,):
            raise ValueError(f"weights must have shape ({corpus.n_workers},), found {out.shape}")
    if not np.all(np.isfinite(out)) or np.any(out < 0):
        raise ValueError("weights must be finite and >= 0, found a negative or non-finite weight")
    return out


def _empirical_confusion(corpus: Corpus, labels: NDArray[np.int64]) -> NDArray[np.float64]:
    """Each annotator's answers tallied against ``labels``: ndarray of shape (n_workers, n_classes, n_classes).

    ``[w, t, o]`` is the fraction of the tokens labelled ``t`` on which ``w`` answered ``o``;
    a row with no tokens is uniform.
    """
    n_workers, n_classes = corpus.n_workers, corpus.n_classes
    size = n_workers * n_classes * n_classes
    counts = np.zeros(size, dtype=np.int64)
    step = max(BLOCK_OBS, size)  # blocks no smaller than the table, so adding up the tables costs less than the keys
    for o0 in range(0, corpus.n_obs, step):
        key = corpus.worker[o0:o0 + step].astype(np.intp)  # ((worker * K) + label_t) * K + label_o, in place
        key *= n_classes
        key += labels.take(corpus.token[o0:o0 + step])
        key *= n_classes
        key += corpus.label[o0:o0 + step]
        counts += np.bincount(key, minlength=size)
    return _confusion_rows(counts.reshape(n_workers, n_classes, n_classes).astype(np.float64))


def _confusion_rows(counts: NDArray[np.float64]) -> NDArray[np.float64]:
    """Confusion counts, ndarray of shape (n_workers, n_classes, n_classes), as rows that sum to 1 (empty: uniform)."""
    rows = counts.sum(axis=2, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):  # empty rows are replaced on the same line
        return np.where(rows > 0, counts / rows, 1.0 / counts.shape[2])


def _vote_fit(
    corpus: Corpus, weights: NDArray[np.float64] | None, *, tie_break: str, known: NDArray[np.int64] | None
) -> tuple[NDArray[np.int64], NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """What :class:`MajorityVote` fits, for checked ``weights`` and ``known``; the skill-weighted votes end with it.

    Returns
    -------
    labels : ndarray of shape (n_tokens,)
    proba : ndarray of shape (n_tokens, n_classes)
    class_prior : ndarray of shape (n_classes,)
    worker_confusion : ndarray of shape (n_workers, n_classes, n_classes)
    """
    n_tokens, n_classes = corpus.n_tokens, corpus.n_classes
    proba = np.empty((n_classes, n_tokens))  # class-major; the vote fractions, block by block
    labels = np.empty(n_tokens, dtype=np.int64)
    informed = np.empty(n_tokens, dtype=bool)
    with np.errstate(invalid="ignore"):  # 0/0 in tokens nobody voted on, replaced below
        for t0, t1, block, winners in _vote_blocks(corpus, weights, tie_break=tie_break):
            labels[t0:t1] = winners
            total = block.sum(axis=0)
            np.greater(total, 0, out=informed[t0:t1])
            np.divide(block, total, out=proba[:, t0:t1])
    if known is not None:
        idx = np.flatnonzero(known >= 0)
        one_hot_columns(proba, idx, known[idx])
        labels[idx] = known[idx]
        informed[idx] = True
    n_informed = int(np.count_nonzero(informed))
    blank = np.flatnonzero(~informed) if n_informed < n_tokens else np.empty(0, dtype=np.intp)  # a scan saved
    if blank.size:
        proba[:, blank] = 0.0
    prior = proba.sum(axis=1) / n_informed if n_informed else np.full(n_classes, 1.0 / n_classes)
    proba[:, blank] = prior[:, None]
    labels[blank] = int(np.argmax(prior))  # lowest index on ties
    # proba.T: (n_tokens, n_classes), a view of the class-major buffer
    return labels, proba.T, prior, _empirical_confusion(corpus, labels)


class MajorityVote(BaseAggregator):
    """Per-token (weighted) majority vote over the annotators who labelled the token.

    Parameters
    ----------
    weights : ndarray of shape (n_workers,) or dict of str to float, optional
        Weight of each annotator's vote (a dict maps worker ids to weights; the
        annotators it leaves out weigh 1). Default: every vote weighs 1.
    tie_break : {"entity", "lowest"}, default="entity"
        ``"entity"``: a tie between ``O`` and entity classes goes to the lowest tied
        entity class; ties among entity classes go to the lowest index (``B-X`` before
        ``I-X``). ``"lowest"``: the lowest tied class index wins, so ``O`` (class 0)
        wins every ``O``/entity tie (crowd-kit's ``MajorityVote`` does this in effect,
        undocumented). Both are deterministic and independent of the input order; on
        categorical data (no ``O`` answers) they coincide.

    Attributes
    ----------
    labels_ : ndarray of shape (n_tokens,)
    proba_ : ndarray of shape (n_tokens, n_classes)
        Vote fractions (weighted); one-hot on ``known`` tokens; ``class_prior_`` on
        tokens nobody labelled.
    worker_confusion_ : ndarray of shape (n_workers, n_classes, n_classes)
        ``[w, t, o]``: fraction of the tokens whose fitted label is ``t`` that
        annotator ``w`` labelled ``o`` (rows with no tokens are uniform).
    class_prior_ : ndarray of shape (n_classes,)
        Mean of ``proba_`` over the labelled (or known) tokens.
    n_iter_ : int
        Always 0 (no iterations).
    log_likelihood_ : list of float
        Always empty.
    converged_ : bool
        Always True.

    Notes
    -----
    The default ``"entity"`` is the rule with the higher strict span F1 on development
    data: the CoNLL-2003 crowd of conll_val (Rodrigues et al. 2014) against its gold
    labels, where no README table reports majority vote (a rule written here, checked by
    ``tests/aggregation/test_majority_vote.py``); the PICO documents with expert labels
    are the study's evaluation set and are not used to choose.

    ``known`` tokens take their known class, and the empirical confusion matrices are
    tallied against the final labels (known ones included).

    Examples
    --------
    >>> from crowdqa.aggregation.corpus import Corpus
    >>> c = Corpus.from_arrays(token=[0, 0, 1, 1], worker=[0, 1, 0, 1], label=[1, 1, 0, 1],
    ...     doc_lengths=[2], token_start=[0, 2], token_end=[1, 3], doc_ids=["d"], texts=["a b"],
    ...     worker_ids=["u", "v"], worker_roles=["crowd"] * 2, class_names=["O", "X"])
    >>> MajorityVote().fit(c).labels_
    array([1, 1])
    >>> MajorityVote(tie_break="lowest").fit(c).labels_
    array([1, 0])
    """

    _parameter_constraints: ClassVar[dict[str, list]] = {
        "weights": [None, InstanceOf((Mapping,), "a dict of annotator id to weight"), WEIGHT_ARRAY],
        "tie_break": [Options(TIE_RULES)],
    }

    def __init__(self, *, weights: NDArray | Mapping[str, float] | None = None, tie_break: str = "entity") -> None:
        self.weights = weights
        self.tie_break = tie_break

    def fit(
        self, corpus: Corpus, *, known: NDArray | None = None, callback: ProgressCallback | None = None
    ) -> MajorityVote:
        """Count the votes of every token.

        Parameters
        ----------
        corpus : Corpus
        known : ndarray of shape (n_tokens,), optional
            Known class index of a token, -1 = unknown; overrides the vote there.
        callback : callable, optional
            Accepted for the common interface; never called (there are no iterations).

        Returns
        -------
        self : MajorityVote
        """
        known = self._start_fit(corpus, known)
        self.labels_, self.proba_, self.class_prior_, self.worker_confusion_ = _vote_fit(
            corpus, _worker_weights(self.weights, corpus), tie_break=self.tie_break, known=known)
        self.n_iter_ = 0
        self.log_likelihood_: list[float] = []
        self.converged_ = True
        return self
