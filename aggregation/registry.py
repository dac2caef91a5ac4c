"""The aggregation methods by id, and an aggregator built from an id and a parameter dict.

:data:`METHODS` is the one list of method ids: the job model's ``Method`` enum, the CLI's
``--method`` choices, the dashboard and the package's exports are made from it. It is the
CLI's and the API's entry point to the estimators.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the method table imports without numpy (crowdqa aggregate --help)
    from crowdqa.aggregation._base import BaseAggregator

__all__ = ["METHODS", "aggregator_class", "make_aggregator", "validate_params", "check_memory"]

#: method id -> (module, class). A module is imported when its method is first asked for:
#: the estimators bring scipy's optimisers, sparse and special functions, which a
#: command that fits one method (or none, like ``--help``) should not pay for.
METHODS: dict[str, tuple[str, str]] = {
    "mv": ("crowdqa.aggregation.majority_vote", "MajorityVote"),
    "ds": ("crowdqa.aggregation.dawid_skene", "DawidSkene"),
    "hmm-crowd": ("crowdqa.aggregation.hmm_crowd", "HMMCrowd"),
    "bsc-seq": ("crowdqa.aggregation.bsc_seq", "BayesianSequenceCombination"),
    "wawa": ("crowdqa.aggregation.weighted_vote", "Wawa"),
    "zbs": ("crowdqa.aggregation.weighted_vote", "ZeroBasedSkill"),
    "gold-mv": ("crowdqa.aggregation.weighted_vote", "GoldMajorityVote"),
    "glad": ("crowdqa.aggregation.glad", "GLAD"),
    "mace": ("crowdqa.aggregation.mace", "MACE"),
    "kos": ("crowdqa.aggregation.kos", "KOS"),
    "mmsr": ("crowdqa.aggregation.mmsr", "MMSR"),
    "ibcc": ("crowdqa.aggregation.ibcc", "IBCC"),
}


def check_memory(method: str | None, shape, *, report: bool = True) -> int:
    """Refuse, before anything is allocated, a fit of ``method`` (and its report) whose estimated memory on a
    corpus of ``shape`` exceeds ``CROWDQA_MAX_MEMORY``: the hook both doors call; each method's estimate is
    in :mod:`crowdqa.aggregation.memory` (``FIT_ARRAYS``). Returns the estimate in bytes."""
    from crowdqa.aggregation.memory import check_memory as check

    return check(method, shape, report=report)


def aggregator_class(method: str) -> type[BaseAggregator]:
    """The estimator class of ``method`` (a key of :data:`METHODS`); ValueError for an unknown id."""
    if method not in METHODS:
        raise ValueError(f"method must be one of {sorted(METHODS)}, found {method!r}")
    module, name = METHODS[method]
    return getattr(importlib.import_module(module), name)


def validate_params(method: str, params: dict | None = None) -> None:
    """Check a method name and its parameters without building or fitting anything.

    The same check ``fit`` runs (the aggregator's ``_parameter_constraints``), for use at
    request time: a job or command with a bad parameter is refused before data is read.

    Parameters
    ----------
    method : str
        A key of :data:`METHODS`.
    params : dict, optional
        Keyword arguments of the aggregator's ``__init__`` (as decoded from JSON).

    Raises
    ------
    ValueError
        Naming the unknown method, the unknown parameter, or the parameter whose value
        is not allowed and what it may be.

    Examples
    --------
    >>> validate_params("ds", {"max_iter": 50})
    >>> validate_params("ds", {"max_iter": 0})
    Traceback (most recent call last):
    ...
    ValueError: max_iter must be an integer >= 1, found 0
    """
    make_aggregator(method, params)._validate_params()


def make_aggregator(method: str, params: dict | None = None) -> BaseAggregator:
    """Return an unfitted aggregator for ``method`` built with keyword ``params``.

    Parameter values are stored as given and checked when ``fit`` starts (scikit-learn's
    convention); :func:`validate_params` checks them now.

    Parameters
    ----------
    method : str
        A key of :data:`METHODS`.
    params : dict, optional
        Keyword arguments of the aggregator's ``__init__``.

    Returns
    -------
    BaseAggregator

    Raises
    ------
    ValueError
        If the method is unknown or a parameter is not one the aggregator takes.

    Examples
    --------
    >>> make_aggregator("ds", {"max_iter": 50})
    DawidSkene(max_iter=50, tol=1e-06, alpha=0.01, model='full', init='vote', random_state=None, warm_start=False)
    """
    cls = aggregator_class(method)
    params = dict(params or {})
    accepted = cls._get_param_names()
    unknown = sorted(set(params) - set(accepted))
    if unknown:
        raise ValueError(f"method {method!r} takes parameters {accepted}, found unknown parameter {unknown[0]!r}")
    return cls(**params)
