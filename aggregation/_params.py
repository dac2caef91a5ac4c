"""Declarative parameter constraints: the one path every aggregator's parameters are checked by.

Each aggregator lists, in a class attribute ``_parameter_constraints``, the values each
``__init__`` parameter may take (scikit-learn's ``_parameter_constraints`` idea, with
this project's messages). :func:`check_params` checks a parameter dict against such a
table; :meth:`BaseAggregator._validate_params` runs it at the start of ``fit``, and
:func:`crowdqa.aggregation.registry.validate_params` runs it at request time, before any data
is read. A failed check raises ``ValueError`` naming the parameter, what it may be and
what was found: ``max_iter must be an integer in [1, 10000], found 0``.

A parameter is valid if any one of its constraints accepts it; ``None`` in a list
accepts ``None``. No constraint accepts a ``bool`` as a number (JSON ``true`` is not 1).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from numbers import Integral, Real
from typing import Any

import numpy as np

from crowdqa.aggregation.limits import MAX_INNER_ITER, MAX_ITER, MAX_RESTARTS

__all__ = ["Check", "InstanceOf", "Interval", "Options", "RANDOM_STATE", "ITERATIONS", "RESTARTS", "INNER_ITERATIONS",
           "check_params"]


class _Constraint:
    """A set of accepted values, and how to name it in an error message."""

    def accepts(self, value: Any) -> bool:
        raise NotImplementedError

    def describe(self) -> str:
        raise NotImplementedError

    def found(self, value: Any) -> str:
        """What to quote as found when no constraint accepts ``value``."""
        return repr(value)


def _is_number(value: Any, kind: type) -> bool:
    if isinstance(value, bool | np.bool_):
        return False
    return isinstance(value, Integral) if kind is int else isinstance(value, Real)


@dataclass(frozen=True)
class Interval(_Constraint):
    """Numbers of ``kind`` (``int`` or ``float``; a float interval also takes integers) between bounds.

    ``closed`` says which finite bounds belong to the interval: "both", "left", "right" or "neither".
    """

    kind: type
    low: float | None = None
    high: float | None = None
    closed: str = "both"

    def accepts(self, value: Any) -> bool:
        if not _is_number(value, self.kind) or (self.kind is float and math.isnan(float(value))):
            return False
        left = self.closed in ("both", "left")
        right = self.closed in ("both", "right")
        if self.low is not None and not (value >= self.low if left else value > self.low):
            return False
        return self.high is None or (value <= self.high if right else value < self.high)

    def describe(self) -> str:
        lo, hi = (None if b is None else f"{b:g}" for b in (self.low, self.high))
        left = self.closed in ("both", "left")
        right = self.closed in ("both", "right")
        if lo is not None and hi is not None:
            text = f"in {'[' if left else '('}{lo}, {hi}{']' if right else ')'}"
        elif lo is not None:
            text = f"{'>=' if left else '>'} {lo}"
        elif hi is not None:
            text = f"{'<=' if right else '<'} {hi}"
        else:
            text = "a number" if self.kind is float else ""
        return f"an integer {text}".rstrip() if self.kind is int else text


@dataclass(frozen=True)
class Options(_Constraint):
    """One of a fixed tuple of strings."""

    values: tuple[str, ...]

    def accepts(self, value: Any) -> bool:
        return isinstance(value, str) and value in self.values

    def describe(self) -> str:
        return f"one of {self.values!r}"


@dataclass(frozen=True)
class InstanceOf(_Constraint):
    """An instance of one of ``types``, named ``description`` in messages."""

    types: tuple[type, ...]
    description: str

    def accepts(self, value: Any) -> bool:
        return isinstance(value, self.types)

    def describe(self) -> str:
        return self.description


@dataclass(frozen=True)
class Check(_Constraint):
    """Any value ``predicate`` accepts; ``offending(value)``, if given, picks what to quote as found."""

    predicate: Callable[[Any], bool]
    description: str
    offending: Callable[[Any], Any] | None = None

    def accepts(self, value: Any) -> bool:
        try:
            return bool(self.predicate(value))
        except (TypeError, ValueError):
            return False

    def describe(self) -> str:
        return self.description

    def found(self, value: Any) -> str:
        return repr(value) if self.offending is None else repr(self.offending(value))


#: ``random_state``: what ``numpy.random.default_rng`` takes.
RANDOM_STATE: list = [
    Interval(int, 0, None),
    InstanceOf((np.random.Generator, np.random.BitGenerator, np.random.SeedSequence), "a numpy.random.Generator"),
    None,
]


#: ``max_iter`` and the like: at least one iteration, at most :data:`~crowdqa.aggregation.limits.MAX_ITER`.
ITERATIONS = Interval(int, 1, MAX_ITER)
#: ``n_restarts``: at least one run, at most :data:`~crowdqa.aggregation.limits.MAX_RESTARTS`.
RESTARTS = Interval(int, 1, MAX_RESTARTS)
#: An optimiser's iterations inside one M-step, at most :data:`~crowdqa.aggregation.limits.MAX_INNER_ITER`.
INNER_ITERATIONS = Interval(int, 1, MAX_INNER_ITER)


def _describe(constraint: Any) -> str:
    return "None" if constraint is None else constraint.describe()


def check_params(constraints: Mapping[str, list], params: Mapping[str, Any]) -> None:
    """Check every parameter in ``params`` against its list of ``constraints``.

    Parameters
    ----------
    constraints : mapping of str to list
        Parameter name -> accepted kinds of value (:class:`Interval`, :class:`Options`,
        :class:`InstanceOf`, :class:`Check` or ``None``).
    params : mapping of str to object
        Parameter name -> value; names without constraints are not checked.

    Raises
    ------
    ValueError
        Naming the first parameter no constraint accepts, e.g.
        ``tol must be >= 0 or None, found -1.0``.

    Examples
    --------
    >>> check_params({"tol": [Interval(float, 0, None), None]}, {"tol": None})
    >>> check_params({"tol": [Interval(float, 0, None), None]}, {"tol": -1.0})
    Traceback (most recent call last):
    ...
    ValueError: tol must be >= 0 or None, found -1.0
    """
    for name, value in params.items():
        allowed = constraints.get(name)
        if allowed is None:
            continue
        if any(value is None if c is None else c.accepts(value) for c in allowed):
            continue
        found = next((c.found(value) for c in allowed if isinstance(c, Check)), repr(value))
        raise ValueError(f"{name} must be {' or '.join(_describe(c) for c in allowed)}, found {found}")
