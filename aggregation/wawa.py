r"""Wawa (Worker Agreement With Aggregate): a majority vote weighted by each worker's agreement with the majority,
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

__all__ = ["Wawa"]


class Wawa(SkillVote):
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
        Skill-weighted vote fractions; one-hot on ``true_labels`` tokens.
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
    With ``true_labels``, the known tokens take their class in the first vote, so the skills
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

    @one_blas_thread
    def fit(self, corpus: Corpus, *, true_labels: NDArray | None = None,
            callback: ProgressCallback | None = None) -> Wawa:
        """Vote, measure every worker against the vote, vote again weighted by those skills.

        ``true_labels`` (class or -1 per token) replaces the first vote there and is kept in the output;
        ``callback`` is never called (no iterations). Parameters and return value:
        :meth:`BaseAggregator.fit <crowdqa.aggregation._base.BaseAggregator.fit>`.
        """
        known = self._start_fit(corpus, true_labels)
        majority = skill_vote(corpus, np.ones(corpus.n_workers), tie_break=self.tie_break, known=known)
        self._finish(corpus, agreement_rate(corpus, majority), known)
        self._record_one_pass()
        return self
