r"""ZeroBasedSkill: skills moved by gradient steps towards each worker's agreement with the skill-weighted vote,
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
from crowdqa.aggregation._params import ITERATIONS, Interval
from crowdqa.aggregation._skill_vote import SkillVote, agreement_rate, skill_vote
from crowdqa.aggregation.corpus import Corpus

__all__ = ["ZeroBasedSkill"]


class ZeroBasedSkill(SkillVote):
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
        Minus the largest skill move :math:`\max_w |s^{(t)}_w - s^{(t-1)}_w|` per iteration
        (no likelihood; recorded so progress can be followed).
    converged_ : bool
        True if ``tol`` stopped the iterations; with a ``tol``, stopping at ``max_iter``
        instead warns :class:`~crowdqa.aggregation.ConvergenceWarning`.

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
        **SkillVote._parameter_constraints,
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

    @one_blas_thread
    def fit(self, corpus: Corpus, *, true_labels: NDArray | None = None,
            callback: ProgressCallback | None = None) -> ZeroBasedSkill:
        """Alternate weighted votes and skill steps.

        ``true_labels`` (class or -1 per token): fixed in every vote. ``callback(iteration, -max_skill_change)``
        after every iteration. Parameters and return value: :meth:`BaseAggregator.fit
        <crowdqa.aggregation._base.BaseAggregator.fit>`.
        """
        known = self._start_fit(corpus, true_labels)
        present = corpus.worker_answers > 0
        skills = np.where(present, 1.0 / corpus.n_classes, np.nan)
        lr = float(self.lr_init)
        converged = False
        history: list[float] = []  # minus the largest skill move of each iteration
        for it in range(1, int(self.max_iter) + 1):
            if it % int(self.lr_steps_to_reduce) == 0:
                lr *= float(self.lr_reduce_factor)
            labels = skill_vote(corpus, skills, tie_break=self.tie_break, known=known)
            step = lr * (agreement_rate(corpus, labels) - skills)
            skills = skills + step
            change = float(np.nanmax(np.abs(step), initial=0.0))
            history.append(-change)
            if callback is not None:
                callback(it, -change)
            if self.tol is not None and change < self.tol:
                converged = True
                break
        self._finish(corpus, skills, known)
        # warns when a tol was given and max_iter came first
        self._record_run(history, converged, last_change=f"the last of them still moved a skill by "
                         f"{-history[-1]:.1e} (tol={self.tol})")
        return self
