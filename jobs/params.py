"""Check a method's parameters, and that the data suits it, when a job is asked for, not when it runs.

The aggregator's parameter table (``_parameter_constraints``, checked by
:func:`crowdqa.aggregation.registry.validate_params` without fitting) is the one list of what a method
takes; this module only puts its answer in the words of a request: a :class:`JobParamsError`
whose message starts with ``params.<name>`` and whose ``field`` names the parameter.
"""

from __future__ import annotations

import math
import re
from typing import Any

from crowdqa.aggregation.registry import (
    EXAMPLE_METHOD,
    METHODS,
    MethodEntry,
    check_data_kind,
    default_method,
    describe_bounds,
    load_entry_points,
    methods_by_cost,
)
from crowdqa.aggregation.registry import validate_params as check
from crowdqa.jobs.errors import JobParamsError

__all__ = ["EXAMPLE_METHOD", "METHODS", "check_data_kind", "data_kind", "default_method", "describe_bounds",
           "load_entry_points", "methods_by_cost", "registered_methods", "validate_params", "method_defaults"]

def registered_methods() -> dict[str, MethodEntry]:
    """:data:`~crowdqa.aggregation.registry.METHODS` with the methods installed packages declare (registered now by
    :func:`~crowdqa.aggregation.registry.load_entry_points`): what a command offers as its choices."""
    load_entry_points()
    return METHODS


_UNKNOWN = re.compile(r"found unknown parameter '([^']+)'")


def data_kind(summary: dict | None) -> dict[str, Any]:
    """``n_classes`` and ``categorical`` of a dataset from its parse summary, for :func:`check_data_kind` (an empty
    dict when there is no summary yet). Categorical answers are one-token items without the outside class ``O``."""
    summary = summary or {}
    labels, docs, tokens = summary.get("labels"), summary.get("documents"), summary.get("tokens")
    if not isinstance(labels, list) or not labels:
        return {}
    kind: dict[str, Any] = {"n_classes": len(labels)}
    if isinstance(docs, int) and isinstance(tokens, int):
        kind["categorical"] = labels[0] != "O" and docs == tokens
    return kind


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
    >>> validate_params(EXAMPLE_METHOD, {"max_iter": 5})
    {'max_iter': 5}
    >>> validate_params(EXAMPLE_METHOD, {"max_iter": "ten"})
    Traceback (most recent call last):
    ...
    crowdqa.jobs.errors.JobParamsError: params.max_iter: max_iter must be an integer in [1, 10000], found 'ten'
    """
    params = dict(params or {})
    for name, value in params.items():  # NaN and the infinities pass many a bound (NaN compares false)
        where = _non_finite(value)
        if where is not None:
            raise JobParamsError(f"params.{name}{where}: {_value_word(value, where)} is not a finite number",
                                 field=name)
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


def _non_finite(value: Any, at: str = "") -> str | None:
    """Where in ``value`` (``""`` itself, ``"[2]"``, ``".O"``) a float is NaN or infinite; None if nowhere."""
    if isinstance(value, float):
        return None if math.isfinite(value) else at
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list | tuple) else ()
    for key, item in items:
        found = _non_finite(item, f"{at}[{key}]" if isinstance(key, int) else f"{at}.{key}")
        if found is not None:
            return found
    return None


def _value_word(value: Any, where: str) -> str:
    for part in re.findall(r"\[(\d+)\]|\.([^.\[]+)", where):
        value = value[int(part[0])] if part[0] else value[part[1]]
    return repr(value)


def method_defaults() -> dict[str, dict[str, Any]]:
    """Every method's parameters with their defaults (what a job form shows beside the method)."""
    from crowdqa.aggregation import make_aggregator  # the aggregators' modules load only here

    return {method: make_aggregator(method).get_params() for method in METHODS}
