"""HMM-Crowd with a tagger in the loop: a model of the words that votes as one more annotator."""

from __future__ import annotations

import dataclasses
import warnings
from typing import ClassVar

import numpy as np
from numpy.typing import NDArray

from crowdqa.aggregation._base import ConvergenceWarning, ProgressCallback, one_blas_thread
from crowdqa.aggregation._params import Interval, Options
from crowdqa.aggregation._sequences import token_text
from crowdqa.aggregation._tagger import (
    TaggerWeights,
    cross_fit_proba,
    document_folds,
    fit_tagger,
    tagger_features,
    tagger_proba,
    tagger_votes,
)
from crowdqa.aggregation.corpus import Corpus
from crowdqa.aggregation.hmm_crowd import HMMCrowd

__all__ = ["HMMCrowdTagger"]

_TAGGER_CONFUSION = ("full", "uniform")
_TAGGER_VOTE = ("hard", "soft")


class HMMCrowdTagger(HMMCrowd):
    r"""HMM-Crowd whose crowd includes a tagger trained on the aggregate, the two fitted in turn.

    Round 0 is :class:`~crowdqa.aggregation.hmm_crowd.HMMCrowd` on the crowd's labels. Each later round
    trains a token tagger (:mod:`crowdqa.aggregation._tagger`: a logistic regression over the word, its
    lower case, its shape, the neighbouring words and shapes, and with ``affixes`` its prefixes and suffixes) on the
    previous round's posteriors, and fits HMM-Crowd again with the tagger's answers (its most probable class, or with
    ``tagger_vote="soft"`` its class probabilities) as those of one more annotator, who has a full confusion matrix
    of its own, learned by the same EM. Rounds stop when the
    labels change on fewer than ``round_tol`` of the labelled tokens, or after ``max_rounds``.

    **Cross-fitting.** The documents are split into ``n_folds`` random folds; a fold's tokens get the votes
    of a tagger trained on the other folds only, so the tagger's vote on a document never comes from that
    document's own aggregate: it is an annotator independent of the crowd on that document, as the model
    assumes, and its confusion matrix measures how it does on text it has not seen. ``n_folds=1`` trains
    one tagger on everything and lets it vote on what it learned from (it then largely copies the aggregate).

    Parameters
    ----------
    n_folds : int, default=2
        Folds of documents for cross-fitting the tagger's votes (1: no cross-fitting).
    max_rounds : int, default=5
        Tagger-and-crowd-model rounds after round 0.
    round_tol : float, default=0.001
        Stop when the share of labelled tokens whose label changed in a round is at most this.
    tagger_c : float, default=1.0
        Inverse L2 strength of the tagger's logistic regression (scikit-learn's ``C``).
    tagger_iter : int, default=50
        L-BFGS iterations of each tagger fit (warm-started from the same fold's tagger of the round before).
    affixes : int, default=0
        Prefixes and suffixes of lengths 1 to ``affixes`` are features (0: none). The default is the
        protocol's choice (``benchmarks/tagger.py``): on PICO's real text the affixes changed nothing measurable,
        on conll_val's pseudo-words they are noise.
    min_count : int, default=2
        A tagger feature is kept if at least this many tokens have it.
    tagger_vote : {"hard", "soft"}, default="hard"
        How the tagger answers: its most probable class (``"hard"``, as an annotator does; its confusion matrix
        then says how far to trust each answer), or its class probabilities as fractional answers (``"soft"``,
        which weighs an unsure answer down twice: by its probability and by the confusion learned from it). The
        default is the protocol's choice (``benchmarks/tagger.py``).
    tagger_confusion : {"full", "uniform"}, default="full"
        The tagger's confusion matrix: learned (``"full"``), or fixed uniform, which makes its vote a constant
        factor, so the fit is HMM-Crowd's (an ablation).
    random_state : int or None, default=0
        Seed of the folds.
    decode, worker_model, max_iter, tol, pseudo_count, worker_smoothing, init_rounds, init_diagonal, \
features, lowercase, sequences, shape_emission, wrong_mass, start_smoothing, init_smoothing, warm_start
        The crowd model's, as :class:`~crowdqa.aggregation.hmm_crowd.HMMCrowd` (each round's EM).

    Attributes
    ----------
    labels_, proba_, worker_confusion_, class_prior_, start_, transition_, log_likelihood_, n_iter_, converged_
        As :class:`~crowdqa.aggregation.hmm_crowd.HMMCrowd`, of the last round (``worker_confusion_`` holds the
        crowd's annotators only; ``log_likelihood_`` and ``n_iter_`` are the last round's EM).
    tagger_confusion_ : ndarray of shape (n_classes, n_classes)
        ``[k, o]`` = P(the tagger says o | true class k), learned in the last round.
    tagger_proba_ : ndarray of shape (n_tokens, n_classes)
        The tagger's (cross-fitted) class probabilities of the last round; zeros on unlabelled documents. Its
        answers are these (``tagger_vote="soft"``) or their most probable class (``"hard"``).
    tagger_coef_ : ndarray of shape (n_classes, n_tagger_features)
    tagger_intercept_ : ndarray of shape (n_classes,)
        The tagger trained on every labelled document's final aggregate: what labels new documents.
    tagger_vocabulary_ : tuple of str
        Its feature names (the columns of ``tagger_coef_``).
    n_rounds_ : int
        Rounds run after round 0.
    round_changes_ : list of float
        Share of labelled tokens whose label changed in each round.
    rounds_converged_ : bool

    Notes
    -----
    The model of a document is HMM-Crowd's (:math:`\pi, A, B, C^{(j)}`) times one more annotator factor
    :math:`\prod_t \prod_o T_{h_t, o}^{\,q_t(o)}`, where :math:`q_t` is the tagger's answer at token :math:`t`:
    one-hot at its most probable class (``tagger_vote="hard"``, an annotator's label), or its class distribution
    (``"soft"``, a fractional answer) and
    :math:`T` = ``tagger_confusion_`` its confusion matrix, a MAP estimate from
    :math:`\sum_t \gamma_t(k) q_t(o)` with the annotators' smoothing. Between rounds the tagger is refitted
    to the posteriors :math:`\gamma` (the expected log loss under them), which is the alternation of
    Simpson & Gurevych (2019, sec. 3.3) with a maximum-entropy tagger in place of their neural one, and of
    LSTM-Crowd (Nguyen et al. 2017, sec. 4) and Rodrigues & Pereira (2018) in spirit, with the crowd model
    kept generative. Labels of documents nobody labelled come from the HMM with the final tagger's vote as
    the only answer (pre-annotation).

    References
    ----------
    .. [1] E. Simpson, I. Gurevych (2019). A Bayesian approach for sequence tagging with crowds. EMNLP-IJCNLP
       2019, 1093-1104. doi:10.18653/v1/D19-1101
    .. [2] A. T. Nguyen, B. C. Wallace, J. J. Li, A. Nenkova, M. Lease (2017). Aggregating and predicting
       sequence labels from crowd annotations. ACL 2017, 299-309. doi:10.18653/v1/P17-1028
    .. [3] F. Rodrigues, F. C. Pereira (2018). Deep learning from crowds. AAAI 2018, 1611-1618.
       doi:10.1609/aaai.v32i1.11506
    .. [4] A. Ratnaparkhi (1996). A maximum entropy model for part-of-speech tagging. EMNLP 1996.

    Examples
    --------
    >>> import numpy as np
    >>> c = Corpus.from_arrays(token=np.repeat(np.arange(4), 3), worker=np.tile(np.arange(3), 4),
    ...     label=[0, 0, 0, 1, 1, 0, 1, 1, 1, 0, 0, 1], doc_lengths=[4], token_start=[0, 2, 4, 6],
    ...     token_end=[1, 3, 5, 7], doc_ids=["d"], texts=["a b c d"], worker_ids=["x", "y", "z"],
    ...     worker_roles=["crowd"] * 3, class_names=["O", "P"])
    >>> HMMCrowdTagger(n_folds=1).fit(c).labels_
    array([0, 1, 1, 0])
    """

    #: The fitted model labels documents nobody annotated (:mod:`crowdqa.jobs.preannotate`): its tagger reads any text.
    labels_unannotated: ClassVar[bool] = True
    _carried_attributes: ClassVar[tuple[str, ...]] = (*HMMCrowd._carried_attributes, "tagger_confusion_",
                                                      "tagger_coef_", "tagger_intercept_", "tagger_vocabulary_")
    _parameter_constraints: ClassVar[dict[str, list]] = {
        **HMMCrowd._parameter_constraints,
        "n_folds": [Interval(int, 1, 20)], "max_rounds": [Interval(int, 0, 50)],
        "round_tol": [Interval(float, 0, 1)], "tagger_c": [Interval(float, 0, None, closed="neither")],
        "tagger_iter": [Interval(int, 1, 10_000)], "affixes": [Interval(int, 0, 6)],
        "min_count": [Interval(int, 1, None)], "tagger_vote": [Options(_TAGGER_VOTE)],
        "tagger_confusion": [Options(_TAGGER_CONFUSION)],
        "random_state": [Interval(int, 0, None), None],
    }

    def __init__(self, *, n_folds: int = 2, max_rounds: int = 5, round_tol: float = 0.001, tagger_c: float = 1.0,
                 tagger_iter: int = 50, affixes: int = 0, min_count: int = 2, tagger_vote: str = "hard",
                 tagger_confusion: str = "full",
                 random_state: int | None = 0, decode: str = "viterbi", worker_model: str = "two-param",
                 max_iter: int | str = "auto", tol: float | None = None, pseudo_count: float = 0.1,
                 worker_smoothing: float = 0.001, init_rounds: int = 5, init_diagonal: float = 0.9,
                 features: tuple[str, ...] = ("word", "capitalised", "digit"), lowercase: bool = False,
                 sequences: str = "document", shape_emission: str = "bernoulli", wrong_mass: str = "auto",
                 start_smoothing: float | None = 0.001, init_smoothing: float | None = 0.001,
                 warm_start: bool = False) -> None:
        super().__init__(decode=decode, worker_model=worker_model, max_iter=max_iter, tol=tol,
                         pseudo_count=pseudo_count, worker_smoothing=worker_smoothing, init_rounds=init_rounds,
                         init_diagonal=init_diagonal, features=features, lowercase=lowercase, sequences=sequences,
                         shape_emission=shape_emission, wrong_mass=wrong_mass, start_smoothing=start_smoothing,
                         init_smoothing=init_smoothing, warm_start=warm_start)
        self.n_folds = n_folds
        self.max_rounds = max_rounds
        self.round_tol = round_tol
        self.tagger_c = tagger_c
        self.tagger_iter = tagger_iter
        self.affixes = affixes
        self.min_count = min_count
        self.tagger_vote = tagger_vote
        self.tagger_confusion = tagger_confusion
        self.random_state = random_state

    def _em_options(self, corpus: Corpus) -> dict:
        return {**super()._em_options(corpus), "tagger_model": self.tagger_confusion}

    @one_blas_thread
    def fit(self, corpus: Corpus, *, true_labels: NDArray | None = None, callback: ProgressCallback | None = None
            ) -> HMMCrowdTagger:
        """Fit HMM-Crowd, then alternate tagger and crowd model until the labels settle.

        Parameters
        ----------
        corpus : Corpus
        true_labels : ndarray of shape (n_tokens,), optional
            Class of tokens whose true label is known (-1 = unknown); clamped in every E-step (and so in the
            tagger's training labels).
        callback : callable, optional
            ``callback(iteration, objective)`` after each EM iteration of every round, iterations counted
            across rounds.

        Returns
        -------
        self
        """
        known = self._start_fit(corpus, true_labels)
        design = self._design(corpus, known)
        tokens = token_text(corpus)
        features, vocabulary = tagger_features(tokens, seq_first=design.seq_first, affixes=self.affixes,
                                               min_count=self.min_count)
        folds = document_folds(corpus.doc_ids, n_folds=self.n_folds, rng=np.random.default_rng(self.random_state))
        token_fold = folds[corpus.token_doc]
        done = 0

        def counted(iteration: int, value: float) -> None:
            if callback is not None:
                callback(done + iteration, value)

        monitor = self._monitor(counted)
        params, post, converged = self._run_em(corpus, design, monitor=monitor)
        labels = self._labels(corpus, design, params, post)
        changes: list[float] = []
        votes = np.zeros_like(post)
        weights: list[TaggerWeights] | None = None
        n_active = max(int(design.active.sum()), 1)
        for _ in range(self.max_rounds):
            votes, weights = cross_fit_proba(features, post, token_fold=token_fold, train=design.active,
                                             n_folds=self.n_folds, c=self.tagger_c, max_iter=self.tagger_iter,
                                             warm=weights)
            votes[~design.active] = 0.0
            with_tagger = dataclasses.replace(design, tagger=tagger_votes(votes, kind=self.tagger_vote))
            done += len(monitor.history)
            monitor = self._monitor(counted)
            params, post, converged = self._run_em(corpus, with_tagger, monitor=monitor, warm=False)
            new = self._labels(corpus, with_tagger, params, post)
            changes.append(float((new != labels)[design.active].sum() / n_active))
            labels = new
            if changes[-1] <= self.round_tol:
                break
        self.n_rounds_, self.round_changes_ = len(changes), changes
        self.rounds_converged_ = bool(changes) and changes[-1] <= self.round_tol or self.max_rounds == 0
        if not self.rounds_converged_:
            warnings.warn(f"HMMCrowdTagger stopped after max_rounds={self.max_rounds} rounds with {changes[-1]:.2%} "
                          f"of the labels still changing (round_tol={self.round_tol}); raise max_rounds to let the "
                          "tagger and the crowd model settle.", ConvergenceWarning, stacklevel=2)
        self._record_run(monitor.history, converged,
                         max_iter=self.resolved_max_iter(corpus.n_classes, tags=corpus.scheme == "tags"))
        final = fit_tagger(features, post, rows=np.flatnonzero(design.active), c=self.tagger_c,
                           max_iter=self.tagger_iter, warm=None if weights is None else weights[0])
        self.tagger_coef_, self.tagger_intercept_ = final.coef, final.intercept
        self.tagger_vocabulary_ = vocabulary
        self.tagger_proba_ = votes
        k = corpus.n_classes
        self.tagger_confusion_ = (params.tagger_confusion if params.tagger_confusion is not None
                                  else np.full((k, k), 1.0 / k))
        self._set_fitted(corpus, design, params, post)
        if not design.active.all():  # documents nobody labelled: the final tagger's vote alone
            new_labels, new_post = self._predict_batch(corpus, features=features)
            rest = ~design.active
            self.labels_ = np.where(rest, new_labels, self.labels_)
            self.proba_[rest] = new_post[rest]
        return self

    def _labels(self, corpus: Corpus, design, params, post: NDArray[np.float64]) -> NDArray[np.int64]:
        """The round's decoded labels (documents without evidence filled with the most likely class)."""
        active = design.active
        prior = post[active].sum(axis=0) + (0.0 if active.any() else 1.0)
        return self._decode(corpus, design, params, post, fill=int(prior.argmax()))

    def _carried(self, corpus: Corpus, design):
        """HMM-Crowd's carried factors, and the tagger's confusion matrix."""
        return dataclasses.replace(super()._carried(corpus, design), tagger_confusion=self.tagger_confusion_)

    def _predict_batch(self, corpus: Corpus, *, features=None) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
        """Labels and posteriors of every document of ``corpus`` under the fitted factors, the fitted tagger voting
        on every token (a document nobody labelled gets its labels from the tagger and the HMM alone)."""
        # every document active: the tagger gives evidence on each, labelled or not
        design = self._design(corpus, None, every_document=True)
        if features is None:
            features, _ = tagger_features(token_text(corpus), seq_first=design.seq_first, affixes=self.affixes,
                                          vocabulary=self.tagger_vocabulary_)
        votes = tagger_proba(features, TaggerWeights(self.tagger_coef_, self.tagger_intercept_))
        design = dataclasses.replace(design, tagger=tagger_votes(votes, kind=self.tagger_vote))
        params = self._carried(corpus, design)
        post = self._token_posteriors(params, design)
        return self._decode(corpus, design, params, post, fill=int(self.class_prior_.argmax())), post
