"""Build an aggregator from a method name and a parameter dict (the CLI's and the API's entry point)."""

from __future__ import annotations

import importlib
import inspect

from aggregation._base import BaseAggregator

__all__ = ["METHODS", "make_aggregator"]

#: method name -> (module, class). Modules are imported on first use, so a method whose
#: module is missing or broken fails only when it is asked for.
METHODS: dict[str, tuple[str, str]] = {
    "mv": ("aggregation.majority_vote", "MajorityVote"),
    "ds": ("aggregation.dawid_skene", "DawidSkene"),
    "hmm-crowd": ("aggregation.hmm_crowd", "HMMCrowd"),
}


def make_aggregator(method: str, params: dict | None = None) -> BaseAggregator:
    """Return an unfitted aggregator for ``method`` built with keyword ``params``.

    Parameters
    ----------
    method : {"mv", "ds", "hmm-crowd"}
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
    DawidSkene(max_iter=50, tol=1e-06, alpha=0.01, model='full', init='vote', random_state=None)
    """
    if method not in METHODS:
        raise ValueError(f"method must be one of {sorted(METHODS)}, found {method!r}")
    params = dict(params or {})
    module, name = METHODS[method]
    cls = getattr(importlib.import_module(module), name)
    accepted = [p for p in inspect.signature(cls.__init__).parameters if p != "self"]
    unknown = sorted(set(params) - set(accepted))
    if unknown:
        raise ValueError(f"method {method!r} takes parameters {accepted}, found unknown parameter {unknown[0]!r}")
    return cls(**params)
