r"""GoldMajorityVote: a majority vote weighted by each worker's accuracy on tokens with a known true label,
crowd-kit's aggregator (Ustalov et al. 2024) on the corpus's COO arrays (:mod:`crowdqa.aggregation._skill_vote`).

References
----------
.. [1] D. Ustalov, N. Pavlichenko, B. Tseitlin (2024). Learning from crowds with
   crowd-kit. JOSS 9(96), 6227. doi:10.21105/joss.06227
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np
from numpy.typing import NDArray

from crowdqa.aggregation._base import ProgressCallback, one_blas_thread
from crowdqa.aggregation._skill_vote import SkillVote, agreement_rate, skill_vote
from crowdqa.aggregation.corpus import Corpus

__all__ = ["GoldMajorityVote"]


class GoldMajorityVote(SkillVote):
    r"""A majority vote weighted by each worker's accuracy on tokens with a known true label.

    :math:`s_w` is the share of worker :math:`w`'s answers on the known tokens that equal
    the known class; the label of every token is :math:`\arg\max_k \sum_w s_w [y_{iw} = k]`,
    and known tokens keep their class.

    The true labels are ``true_labels`` when given (in a job: ``use_experts``); otherwise the
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
    >>> model = GoldMajorityVote().fit(c, true_labels=np.array([0, -1]))
    >>> model.skills_
    array([1., 1., 0.])
    >>> model.labels_
    array([0, 0])
    """

    skill_description: ClassVar[str | None] = "share of answers equal to the known labels (crowd mean where none)"

    def __init__(self, *, tie_break: str = "entity") -> None:
        self.tie_break = tie_break

    @one_blas_thread
    def fit(self, corpus: Corpus, *, true_labels: NDArray | None = None,
            callback: ProgressCallback | None = None) -> GoldMajorityVote:
        """Measure every worker on the known tokens, then take the weighted vote.

        ``true_labels`` (class or -1 per token) defaults to the expert annotators' labels; ``callback`` is
        never called (no iterations). Parameters and return value: :meth:`BaseAggregator.fit
        <crowdqa.aggregation._base.BaseAggregator.fit>`.

        Raises
        ------
        ValueError
            If no voting annotator labelled a token with a known class.
        """
        known = self._start_fit(corpus, true_labels)
        voters = corpus
        if known is None:
            experts = corpus.select_role("expert")
            known = skill_vote(experts, np.ones(corpus.n_workers), tie_break="lowest", known=None)
            known[np.diff(experts.token_obs_start) == 0] = -1  # tokens no expert labelled
            voters = corpus.select_role("crowd")
        skills = agreement_rate(voters, known)
        rated = ~np.isnan(skills)
        if not rated.any():
            raise ValueError(
                "GoldMajorityVote needs true labels for some tokens the voters labelled: pass true_labels= "
                "(a job: use_experts=true; the command line: --use-experts) or fit a corpus whose expert annotators "
                "labelled some of the same tokens"
            )
        if not rated.all():  # annotators without a known token: the crowd's mean skill, if they vote at all
            present = voters.worker_answers > 0
            skills = np.where(rated, skills, np.where(present, np.mean(skills[rated]), np.nan))
        self._finish(voters, skills, known)
        self._record_one_pass()
        return self
