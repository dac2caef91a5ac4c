"""Check a method's parameters when a job is asked for, not when it runs.

The aggregator's parameter table (``_parameter_constraints``, checked by
:func:`crowdqa.aggregation.registry.validate_params` without fitting) is the one list of what a method
takes; this module only puts its answer in the words of a request: a :class:`JobParamsError`
whose message starts with ``params.<name>`` and whose ``field`` names the parameter.
"""

from __future__ import annotations

import re
from typing import Any

from crowdqa.aggregation.registry import METHODS, describe_bounds
from crowdqa.aggregation.registry import validate_params as check
from crowdqa.jobs.errors import JobParamsError

__all__ = ["METHODS", "NEEDS_EXPERTS", "describe_bounds", "check_uses_experts", "validate_params", "method_defaults"]

_UNKNOWN = re.compile(r"found unknown parameter '([^']+)'")

#: Methods that learn only from true labels (GoldMajorityVote's skills are each worker's accuracy on them). A job
#: or command fits the crowd alone unless ``use_experts`` clamps the experts' labels, so without it they have
#: nothing to learn from.
NEEDS_EXPERTS: frozenset[str] = frozenset({"gold-mv"})


def check_uses_experts(method: str, *, use_experts: bool) -> None:
    """ValueError when ``method`` learns from the experts' labels only and ``use_experts`` is off: refused when a
    job or command is asked for, before any data is read, instead of failing in the fit."""
    if method in NEEDS_EXPERTS and not use_experts:
        raise ValueError(f"{method} learns each worker's skill from the experts' labels, and without use_experts "
                         f"the fit sees the crowd alone: run it with use_experts (a job: \"use_experts\": true; the "
                         f"command line: --use-experts)")


def validate_params(method: str, params: dict[str, Any] | None) -> dict[str, Any]:
    """Return ``params`` if ``method``'s aggregator takes them; raise :class:`JobParamsError` naming the field.

    Parameters
    ----------
    method : str
        A key of :data:`crowdqa.aggregation.registry.METHODS`.
    params : dict or None
        The job's ``params`` as decoded from JSON.

    Returns
    -------
    dict
        ``params`` (a copy; ``{}`` for None).

    Raises
    ------
    JobParamsError
        An unknown method or parameter, or a value the aggregator's table refuses (its own message).

    Examples
    --------
    >>> validate_params("ds", {"max_iter": 5})
    {'max_iter': 5}
    >>> validate_params("ds", {"max_iter": "ten"})
    Traceback (most recent call last):
    ...
    crowdqa.jobs.errors.JobParamsError: params.max_iter: max_iter must be an integer in [1, 10000], found 'ten'
    """
    params = dict(params or {})
    if method not in METHODS:
        raise JobParamsError(f"method must be one of {sorted(METHODS)}, found {method!r}", field="method")
    try:
        check(method, params)
    except (ValueError, TypeError) as exc:
        message = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        unknown = _UNKNOWN.search(message)
        field = unknown.group(1) if unknown else next(
            (k for k in sorted(params, key=len, reverse=True) if message.startswith(k)), next(iter(params), "params"))
        raise JobParamsError(f"params.{field}: {message}", field=field) from None
    return params


def method_defaults() -> dict[str, dict[str, Any]]:
    """Every method's parameters with their defaults (what a job form shows beside the method)."""
    from crowdqa.aggregation import make_aggregator  # the aggregators' modules load only here

    return {method: make_aggregator(method).get_params() for method in METHODS}
