"""Upper bounds on the work one fit may be asked for: EM iterations, restarts, inner steps.

A job's ``params`` come from any key holder, and a fit holds a worker until it ends: ``{"max_iter":
1000000000, "tol": null}`` would hold it for days. Every iteration, restart and inner-step count in the
aggregators' parameter tables (``_parameter_constraints``) is bounded by these numbers, so such a request
is refused when it is made (422 naming ``params.max_iter``; one line from ``crowdqa aggregate``). The
bounds are far above what any method needs (the largest default, MMSR's ``max_iter``, is 10,000 cheap
power iterations); the job's CPU-time budget (``CROWDQA_JOB_CPU_SECONDS``) bounds the rest.

This module imports nothing, so ``crowdqa aggregate --help`` can quote it without loading numpy.
"""

from __future__ import annotations

__all__ = ["MAX_ITER", "MAX_RESTARTS", "MAX_INNER_ITER", "describe_bounds"]

#: EM (or message-passing, gradient, power) iterations of one fit: ``max_iter``, HMM-Crowd's ``init_rounds``.
MAX_ITER = 10_000
#: Random restarts of one fit (MACE's ``n_restarts``): each is a whole EM run.
MAX_RESTARTS = 100
#: Iterations of an optimiser inside one M-step (GLAD's ``m_step_max_iter``).
MAX_INNER_ITER = 1_000


def describe_bounds() -> str:
    """The bounds in one sentence (for ``--help``, the OpenAPI document and the README)."""
    return (f"max_iter and init_rounds <= {MAX_ITER:,}, n_restarts <= {MAX_RESTARTS}, m_step_max_iter <= "
            f"{MAX_INNER_ITER:,}; tol null (or 0) runs every one of the max_iter iterations")
