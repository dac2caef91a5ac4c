r"""What the skill-weighted majority votes share: a skill per worker, and the vote weighted by it.

:class:`~crowdqa.aggregation.wawa.Wawa`, :class:`~crowdqa.aggregation.zero_based_skill.ZeroBasedSkill`
and :class:`~crowdqa.aggregation.gold_majority_vote.GoldMajorityVote` each estimate one number per
annotator, its *skill* (the share of its answers that agree with a reference labelling, :func:`agreement_rate`),
and then take the vote of every token weighted by those skills
(:class:`~crowdqa.aggregation.majority_vote.MajorityVote` with ``weights``). They differ in the reference:
the plain majority vote (Wawa), the weighted vote itself, approached by gradient steps (ZeroBasedSkill), or
known true labels (GoldMajorityVote). They are crowd-kit's small aggregators (Ustalov et al. 2024), rebuilt
on the corpus's COO arrays: a skill is two ``np.bincount`` calls over all annotations, a vote one more
(:mod:`crowdqa.aggregation._votes`).

References
----------
.. [1] D. Ustalov, N. Pavlichenko, B. Tseitlin (2024). Learning from crowds with
   crowd-kit. JOSS 9(96), 6227. doi:10.21105/joss.06227
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np
from numpy.typing import NDArray

from crowdqa.aggregation._base import BaseAggregator
from crowdqa.aggregation._params import Options
from crowdqa.aggregation._votes import TIE_RULES, vote_fit, vote_labels
from crowdqa.aggregation.corpus import Corpus, run_indices

__all__ = ["SkillVote", "agreement_rate", "skill_vote"]


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


def skill_vote(corpus: Corpus, weights: NDArray[np.float64], *, tie_break: str,
               known: NDArray | None) -> NDArray[np.int64]:
    """Weighted vote of every token with the tie rule of :class:`MajorityVote`; known tokens keep their class."""
    labels = vote_labels(corpus, np.nan_to_num(weights), tie_break=tie_break)
    if known is not None:
        labels = np.where(known >= 0, known, labels)
    return labels


class SkillVote(BaseAggregator):
    """The skill-weighted votes' base: the ``tie_break`` parameter, and the shared ending (the vote weighted by
    the fitted skills, and the fitted attributes)."""

    _parameter_constraints: ClassVar[dict[str, list]] = {"tie_break": [Options(TIE_RULES)]}

    def _finish(self, corpus: Corpus, skills: NDArray[np.float64], known: NDArray | None) -> None:
        """Set ``skills_`` and the vote weighted by them (``labels_``, ``proba_`` and the tallies)."""
        self.labels_, self.proba_, self.class_prior_, self.worker_confusion_ = vote_fit(
            corpus, np.nan_to_num(skills), tie_break=self.tie_break, known=known)
        self.skills_ = skills

    def _record_one_pass(self) -> None:
        """The run record of a fit made in one pass: one iteration, nothing left to converge, no objective."""
        self.n_iter_ = 1
        self.log_likelihood_: list[float] = []
        self.converged_ = True
