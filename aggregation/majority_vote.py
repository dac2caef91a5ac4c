"""Majority vote per token, with optional annotator weights and an explicit tie rule.

The counting and the tie rule are the shared vote kernel (:mod:`crowdqa.aggregation._votes`): the vote
is ``np.bincount`` over ``label * n_tokens + token``, block by block; ties are resolved by a documented,
deterministic rule (:data:`TIE_RULES`) rather than by whichever label happens to be seen first.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

import numpy as np
from numpy.typing import NDArray

from crowdqa.aggregation._base import BaseAggregator, ProgressCallback, one_blas_thread
from crowdqa.aggregation._params import Check, InstanceOf, Options
from crowdqa.aggregation._votes import TIE_RULES, vote_fit
from crowdqa.aggregation.corpus import Corpus

__all__ = ["MajorityVote", "TIE_RULES"]

#: Per-annotator weights as a sequence of numbers (their length is checked against the corpus in fit).
WEIGHT_ARRAY = Check(lambda v: not isinstance(v, str | bytes | Mapping) and np.asarray(v, dtype=np.float64).ndim == 1,
                     "an array of shape (n_workers,)")


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
        Vote fractions (weighted); one-hot on ``true_labels`` tokens; ``class_prior_`` on
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

    ``true_labels`` tokens take their known class, and the empirical confusion matrices are
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

    @one_blas_thread
    def fit(
        self, corpus: Corpus, *, true_labels: NDArray | None = None, callback: ProgressCallback | None = None
    ) -> MajorityVote:
        """Count the votes of every token.

        Parameters
        ----------
        corpus : Corpus
        true_labels : ndarray of shape (n_tokens,), optional
            Known class index of a token, -1 = unknown; overrides the vote there.
        callback : callable, optional
            Accepted for the common interface; never called (there are no iterations).

        Returns
        -------
        self : MajorityVote
        """
        known = self._start_fit(corpus, true_labels)
        self.labels_, self.proba_, self.class_prior_, self.worker_confusion_ = vote_fit(
            corpus, _worker_weights(self.weights, corpus), tie_break=self.tie_break, known=known)
        self.n_iter_ = 0
        self.log_likelihood_: list[float] = []
        self.converged_ = True
        return self
