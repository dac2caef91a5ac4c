r"""Majority votes weighted by a skill per worker: Wawa, ZeroBasedSkill and GoldMajorityVote.

Each estimates one number per annotator, its *skill* (the share of its answers that
agree with a reference labelling), and then takes the vote of every token weighted by
those skills (:class:`~crowdqa.aggregation.majority_vote.MajorityVote` with ``weights``). They
differ in the reference: the plain majority vote (Wawa), the weighted vote itself,
approached by gradient steps (ZeroBasedSkill), or known true labels (GoldMajorityVote).
They are crowd-kit's small aggregators (Ustalov et al. 2024), rebuilt on the
corpus's COO arrays: a skill is two ``np.bincount`` calls over all annotations, a vote
one more.

References
----------
.. [1] D. Ustalov, N. Pavlichenko, B. Tseitlin (2024). Learning from crowds with
   crowd-kit. JOSS 9(96), 6227. doi:10.21105/joss.06227
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np
from numpy.typing import NDArray

from crowdqa.aggregation._base import BaseAggregator, ProgressCallback
from crowdqa.aggregation._params import ITERATIONS, Interval, Options
from crowdqa.aggregation._votes import TIE_RULES, vote_fit, vote_labels
from crowdqa.aggregation.corpus import Corpus, run_indices

__all__ = ["GoldMajorityVote", "Wawa", "ZeroBasedSkill", "agreement_rate"]


def agreement_rate(corpus: Corpus, reference: NDArray[np.int64]) -> NDArray[np.float64]:
    """The share of each annotator's answers equal to ``reference`` on the tokens it has.

    Parameters
    ----------
    corpus : Corpus
    reference : ndarray of shape (n_tokens,)
        A class index per token, or -1 where there is none (those answers are not counted).

    Returns
    -------
    skills : ndarray of shape (n_workers,)
        NaN for an annotator with no answer on a referenced token.
    """
    has_ref = reference >= 0
    if has_ref.all():  # the reference in the labels' dtype: a quarter of the bytes gathered per annotation
        ref = reference.astype(corpus.label.dtype).take(corpus.token)
        right = np.bincount(corpus.worker[corpus.label == ref], minlength=corpus.n_workers)
        seen = corpus.worker_answers
    else:  # the referenced tokens' answers alone (gold: often a small share), each token's run of annotations
        tokens = np.flatnonzero(has_ref)
        first = corpus.token_obs_start.take(tokens)
        length = corpus.token_obs_start.take(tokens + 1) - first
        obs = run_indices(first, length)
        worker = corpus.worker.take(obs)
        right = np.bincount(worker[corpus.label.take(obs) == np.repeat(reference.take(tokens), length)],
                            minlength=corpus.n_workers)
        seen = np.bincount(worker, minlength=corpus.n_workers)
    with np.errstate(invalid="ignore"):  # 0/0 for annotators without referenced answers -> NaN, as documented
        return right / seen


def _vote(corpus: Corpus, weights: NDArray[np.float64], *, tie_break: str, known: NDArray | None) -> NDArray[np.int64]:
    """Weighted vote of every token with the tie rule of :class:`MajorityVote`; known tokens keep their class."""
    labels = vote_labels(corpus, np.nan_to_num(weights), tie_break=tie_break)
    if known is not None:
        labels = np.where(known >= 0, known, labels)
    return labels


class _SkillVote(BaseAggregator):
    """Shared ending: the weighted vote with the fitted skills, and the fitted attributes."""

    _parameter_constraints: ClassVar[dict[str, list]] = {"tie_break": [Options(TIE_RULES)]}

    def _finish(self, corpus: Corpus, skills: NDArray[np.float64], known: NDArray | None, *, n_iter: int,
                converged: bool) -> None:
        self.labels_, self.proba_, self.class_prior_, self.worker_confusion_ = vote_fit(
            corpus, np.nan_to_num(skills), tie_break=self.tie_break, known=known)
        self.skills_ = skills
        self.n_iter_ = n_iter
        self.log_likelihood_: list[float] = []
        self.converged_ = converged


class Wawa(_SkillVote):
    r"""Worker Agreement With Aggregate: a majority vote weighted by each worker's agreement with the majority.

    1. :math:`\hat y_i` = the majority vote of token :math:`i`;
    2. :math:`s_w = \frac{1}{|I_w|}\sum_{i \in I_w} [y_{iw} = \hat y_i]` over the tokens
       :math:`I_w` worker :math:`w` labelled;
    3. :math:`y_i = \arg\max_k \sum_{w} s_w [y_{iw} = k]`.

    Parameters
    ----------
    tie_break : {"entity", "lowest"}, default="entity"
        Tie rule of both votes (see :class:`MajorityVote`); categorical ties always go to
        the lowest class index.

    Attributes
    ----------
    labels_ : ndarray of shape (n_tokens,)
    proba_ : ndarray of shape (n_tokens, n_classes)
        Skill-weighted vote fractions; one-hot on ``known`` tokens.
    skills_ : ndarray of shape (n_workers,)
        :math:`s_w`, the worker's agreement with the majority vote (NaN: no labels).
    worker_confusion_ : ndarray of shape (n_workers, n_classes, n_classes)
        Each worker's answers tallied against ``labels_`` (as :class:`MajorityVote`).
    class_prior_ : ndarray of shape (n_classes,)
    n_iter_ : int
        Always 1.
    log_likelihood_ : list of float
        Always empty (no likelihood).
    converged_ : bool
        Always True.

    Notes
    -----
    With ``known``, the known tokens take their class in the first vote, so the skills
    measure agreement with the experts there, and keep it in the output.

    crowd-kit 1.4.2's ``Wawa`` computes the same skills; its ``predict`` fails with
    scikit-learn >= 1.6 (``__sklearn_tags__``), and its majority vote (with pandas 3.1)
    breaks a tie towards the tied label that appears first in the rows, so a re-export
    of the same answers in another row order can change its labels; this one breaks
    ties by :data:`TIE_RULES`, whatever the row order.

    References
    ----------
    .. [1] ``crowdkit.aggregation.Wawa`` (Ustalov et al., JOSS 2024, doi:10.21105/joss.06227).

    Examples
    --------
    >>> from crowdqa.aggregation.corpus import Corpus
    >>> c = Corpus.from_arrays(token=[0, 0, 0, 1, 1, 1, 2, 2], worker=[0, 1, 2, 0, 1, 2, 0, 2],
    ...     label=[1, 1, 0, 0, 0, 1, 1, 0], doc_lengths=[1, 1, 1], token_start=[0, 0, 0],
    ...     token_end=[1, 1, 1], doc_ids=["a", "b", "c"], texts=["a", "b", "c"],
    ...     worker_ids=["u", "v", "w"], worker_roles=["crowd"] * 3, class_names=["no", "yes"])
    >>> model = Wawa().fit(c)
    >>> model.skills_.round(3)  # agreement with the majority (token 2 is a tie: class 0)
    array([0.667, 1.   , 0.333])
    >>> model.labels_  # the tie on token 2 goes to u, the more skilled of the two
    array([1, 0, 1])
    """

    skill_description: ClassVar[str | None] = "share of answers equal to the majority vote"

    def __init__(self, *, tie_break: str = "entity") -> None:
        self.tie_break = tie_break

    def fit(self, corpus: Corpus, *, known: NDArray | None = None, callback: ProgressCallback | None = None) -> Wawa:
        """Vote, measure every worker against the vote, vote again weighted by those skills.

        ``known`` (class or -1 per token) replaces the first vote there and is kept in the output;
        ``callback`` is never called (no iterations). Parameters and return value:
        :meth:`BaseAggregator.fit <crowdqa.aggregation._base.BaseAggregator.fit>`.
        """
        known = self._start_fit(corpus, known)
        majority = _vote(corpus, np.ones(corpus.n_workers), tie_break=self.tie_break, known=known)
        self._finish(corpus, agreement_rate(corpus, majority), known, n_iter=1, converged=True)
        return self


class ZeroBasedSkill(_SkillVote):
    r"""Skills moved by gradient steps towards each worker's agreement with the skill-weighted vote.

    Every worker starts at chance, :math:`s_w^{(0)} = 1/K`. Iteration :math:`t` takes the
    weighted vote :math:`\hat y^{(t)}_i = \arg\max_k \sum_w s^{(t-1)}_w [y_{iw} = k]` and
    one gradient step on :math:`\tfrac12 (s_w - a_w)^2`, where :math:`a_w` is the
    worker's agreement with :math:`\hat y^{(t)}`:

    .. math:: s^{(t)}_w = s^{(t-1)}_w + \eta_t\,(a_w(\hat y^{(t)}) - s^{(t-1)}_w),

    with :math:`\eta_t = \eta_0 \cdot \rho^{\lfloor t / m \rfloor}` (``lr_init``,
    ``lr_reduce_factor``, ``lr_steps_to_reduce``). The labels are the vote weighted by the
    final skills.

    Parameters
    ----------
    max_iter : int, default=100
        Number of iterations (crowd-kit's ``n_iter``).
    tol : float or None, default=None
        Stop when no skill moves by more than ``tol``; None runs ``max_iter``
        iterations, as crowd-kit does.
    lr_init : float, default=1.0
        :math:`\eta_0`, in (0, 1] so that every skill stays in [0, 1].
    lr_steps_to_reduce : int, default=20
        :math:`m`: the step size is multiplied by ``lr_reduce_factor`` at iterations
        :math:`m, 2m, \dots`
    lr_reduce_factor : float, default=0.5
        :math:`\rho`.
    tie_break : {"entity", "lowest"}, default="entity"
        Tie rule of the votes (see :class:`MajorityVote`).

    Attributes
    ----------
    labels_ : ndarray of shape (n_tokens,)
    proba_ : ndarray of shape (n_tokens, n_classes)
        Skill-weighted vote fractions.
    skills_ : ndarray of shape (n_workers,)
        Final :math:`s_w` (NaN: no labels).
    worker_confusion_ : ndarray of shape (n_workers, n_classes, n_classes)
    class_prior_ : ndarray of shape (n_classes,)
    n_iter_ : int
    log_likelihood_ : list of float
        Always empty (no likelihood).
    converged_ : bool
        True if ``tol`` stopped the iterations.

    Notes
    -----
    With the default :math:`\eta_0 = 1`, the first step sets each skill to its
    agreement with the plain majority vote (Wawa's skills), so the starting value only
    matters for smaller :math:`\eta_0`. crowd-kit 1.4.2 starts at :math:`1/K + 10^{-5}`
    (its ``eps``), with :math:`K` the number of distinct answers; here :math:`K` is the
    corpus's number of classes. Its ``predict`` fails with scikit-learn >= 1.6.

    References
    ----------
    .. [1] ``crowdkit.aggregation.ZeroBasedSkill`` (Ustalov et al., JOSS 2024, doi:10.21105/joss.06227).

    Examples
    --------
    >>> from crowdqa.aggregation.corpus import Corpus
    >>> c = Corpus.from_arrays(token=[0, 0, 0, 1, 1, 1, 2, 2], worker=[0, 1, 2, 0, 1, 2, 0, 2],
    ...     label=[1, 1, 0, 0, 0, 1, 1, 0], doc_lengths=[1, 1, 1], token_start=[0, 0, 0],
    ...     token_end=[1, 1, 1], doc_ids=["a", "b", "c"], texts=["a", "b", "c"],
    ...     worker_ids=["u", "v", "w"], worker_roles=["crowd"] * 3, class_names=["no", "yes"])
    >>> ZeroBasedSkill().fit(c).labels_
    array([1, 0, 1])
    """

    skill_description: ClassVar[str | None] = "agreement with the skill-weighted vote, approached by gradient steps"

    _parameter_constraints: ClassVar[dict[str, list]] = {
        **_SkillVote._parameter_constraints,
        "max_iter": [ITERATIONS],
        "tol": [Interval(float, 0, None), None],
        "lr_init": [Interval(float, 0, 1, closed="right")],
        "lr_steps_to_reduce": [Interval(int, 1, None)],
        "lr_reduce_factor": [Interval(float, 0, 1, closed="right")],
    }

    def __init__(self, *, max_iter: int = 100, tol: float | None = None, lr_init: float = 1.0,
                 lr_steps_to_reduce: int = 20, lr_reduce_factor: float = 0.5, tie_break: str = "entity") -> None:
        self.max_iter = max_iter
        self.tol = tol
        self.lr_init = lr_init
        self.lr_steps_to_reduce = lr_steps_to_reduce
        self.lr_reduce_factor = lr_reduce_factor
        self.tie_break = tie_break

    def fit(self, corpus: Corpus, *, known: NDArray | None = None,
            callback: ProgressCallback | None = None) -> ZeroBasedSkill:
        """Alternate weighted votes and skill steps.

        ``known`` (class or -1 per token): fixed in every vote. ``callback(iteration, -max_skill_change)``
        after every iteration. Parameters and return value: :meth:`BaseAggregator.fit
        <crowdqa.aggregation._base.BaseAggregator.fit>`.
        """
        known = self._start_fit(corpus, known)
        present = corpus.worker_answers > 0
        skills = np.where(present, 1.0 / corpus.n_classes, np.nan)
        lr = float(self.lr_init)
        converged = False
        it = 0
        for it in range(1, int(self.max_iter) + 1):
            if it % int(self.lr_steps_to_reduce) == 0:
                lr *= float(self.lr_reduce_factor)
            labels = _vote(corpus, skills, tie_break=self.tie_break, known=known)
            step = lr * (agreement_rate(corpus, labels) - skills)
            skills = skills + step
            change = float(np.nanmax(np.abs(step), initial=0.0))
            if callback is not None:
                callback(it, -change)
            if self.tol is not None and change < self.tol:
                converged = True
                break
        self._finish(corpus, skills, known, n_iter=it, converged=converged)
        return self


class GoldMajorityVote(_SkillVote):
    r"""A majority vote weighted by each worker's accuracy on tokens with a known true label.

    :math:`s_w` is the share of worker :math:`w`'s answers on the known tokens that equal
    the known class; the label of every token is :math:`\arg\max_k \sum_w s_w [y_{iw} = k]`,
    and known tokens keep their class.

    The true labels are ``known`` when given (in a job: ``use_experts``); otherwise the
    labels of the corpus's annotators with role ``"expert"`` (their vote where several
    label a token, ties to the lowest class index), and then only the crowd votes.

    Parameters
    ----------
    tie_break : {"entity", "lowest"}, default="entity"
        Tie rule of the vote (see :class:`MajorityVote`).

    Attributes
    ----------
    labels_ : ndarray of shape (n_tokens,)
    proba_ : ndarray of shape (n_tokens, n_classes)
    skills_ : ndarray of shape (n_workers,)
        :math:`s_w` as used in the vote: workers without a known token get the mean
        skill of those with one; NaN for annotators who do not vote.
    worker_confusion_ : ndarray of shape (n_workers, n_classes, n_classes)
    class_prior_ : ndarray of shape (n_classes,)
    n_iter_ : int
        Always 1.
    log_likelihood_ : list of float
        Always empty.
    converged_ : bool
        Always True.

    Notes
    -----
    crowd-kit 1.4.2's ``GoldMajorityVote`` raises an error for a worker without a gold
    task (its default ``on_missing_skill="error"``); this one gives such workers the
    crowd's mean skill (crowd-kit's ``MajorityVote(on_missing_skill="value",
    default_skill=...)`` does the same when asked). Its ``predict`` fails with
    scikit-learn >= 1.6.

    References
    ----------
    .. [1] ``crowdkit.aggregation.GoldMajorityVote`` (Ustalov et al., JOSS 2024, doi:10.21105/joss.06227).

    Examples
    --------
    >>> import numpy as np
    >>> from crowdqa.aggregation.corpus import Corpus
    >>> c = Corpus.from_arrays(token=[0, 0, 0, 1, 1, 1], worker=[0, 1, 2, 0, 1, 2],
    ...     label=[0, 0, 1, 1, 0, 1], doc_lengths=[1, 1], token_start=[0, 0], token_end=[1, 1],
    ...     doc_ids=["t1", "t2"], texts=["a", "b"], worker_ids=["p1", "p2", "p3"],
    ...     worker_roles=["crowd"] * 3, class_names=["0", "1"])
    >>> model = GoldMajorityVote().fit(c, known=np.array([0, -1]))
    >>> model.skills_
    array([1., 1., 0.])
    >>> model.labels_
    array([0, 0])
    """

    skill_description: ClassVar[str | None] = "share of answers equal to the known labels (crowd mean where none)"

    def __init__(self, *, tie_break: str = "entity") -> None:
        self.tie_break = tie_break

    def fit(self, corpus: Corpus, *, known: NDArray | None = None,
            callback: ProgressCallback | None = None) -> GoldMajorityVote:
        """Measure every worker on the known tokens, then take the weighted vote.

        ``known`` (class or -1 per token) defaults to the expert annotators' labels; ``callback`` is
        never called (no iterations). Parameters and return value: :meth:`BaseAggregator.fit
        <crowdqa.aggregation._base.BaseAggregator.fit>`.

        Raises
        ------
        ValueError
            If no voting annotator labelled a token with a known class.
        """
        known = self._start_fit(corpus, known)
        voters = corpus
        if known is None:
            experts = corpus.select_role("expert")
            known = _vote(experts, np.ones(corpus.n_workers), tie_break="lowest", known=None)
            known[np.diff(experts.token_obs_start) == 0] = -1  # tokens no expert labelled
            voters = corpus.select_role("crowd")
        skills = agreement_rate(voters, known)
        rated = ~np.isnan(skills)
        if not rated.any():
            raise ValueError(
                "GoldMajorityVote needs true labels for some tokens the voters labelled: pass known= "
                "(a job: use_experts=true; the command line: --use-experts) or fit a corpus whose expert annotators "
                "labelled some of the same tokens"
            )
        if not rated.all():  # annotators without a known token: the crowd's mean skill, if they vote at all
            present = voters.worker_answers > 0
            skills = np.where(rated, skills, np.where(present, np.mean(skills[rated]), np.nan))
        self._finish(voters, skills, known, n_iter=1, converged=True)
        return self
