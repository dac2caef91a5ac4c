"""Check a method's parameters when a job is asked for, not when it runs.

The aggregator's ``__init__`` signature is the one table of what a method takes: its names and
type hints become a strict pydantic model (JSON in, no coercion of ``"10"`` into ``10``), and the
values are then tried on the aggregator itself, fitted on a two-token corpus, so its own range
and choice checks (``max_iter >= 1``, ``model`` in its list, ...) answer before a job is queued.
Parameters whose meaning depends on the data (mappings and lists, such as per-annotator
``weights``) are checked for their type only.
"""

from __future__ import annotations

import inspect
import json
import typing
import warnings
from collections.abc import Mapping
from functools import lru_cache
from typing import Any

import numpy as np
from pydantic import ConfigDict, ValidationError, create_model

from jobs.errors import JobParamsError

__all__ = ["validate_params", "method_parameters"]


def _json_type(annotation: Any) -> Any:
    """The JSON-side type of a parameter hint: arrays are lists of numbers, mappings are dicts, and
    what JSON cannot carry (a numpy Generator) is left out of a union."""
    origin = typing.get_origin(annotation)
    if annotation is np.random.Generator:
        return None
    if annotation is np.ndarray or origin is np.ndarray or "NDArray" in str(annotation):
        return list[float]
    if origin in (typing.Union, getattr(__import__("types"), "UnionType", None)):
        args = [a for a in (_json_type(x) for x in typing.get_args(annotation)) if a is not None]
        return typing.Union[tuple(args)] if args else Any  # noqa: UP007 - built from a list
    if origin is Mapping or origin is dict or annotation is Mapping:
        key, value = (typing.get_args(annotation) or (str, Any))
        return dict[key, _json_type(value)]
    return annotation


@lru_cache(maxsize=16)
def method_parameters(method: str) -> tuple[type, dict[str, Any]]:
    """The aggregator class of ``method`` and its parameters' defaults (the ``__init__`` signature)."""
    import importlib

    from aggregation.registry import METHODS

    if method not in METHODS:
        raise JobParamsError(f"method must be one of {sorted(METHODS)}, found {method!r}", field="method")
    module, name = METHODS[method]
    cls = getattr(importlib.import_module(module), name)
    signature = inspect.signature(cls.__init__)
    return cls, {n: p.default for n, p in signature.parameters.items() if n != "self"}


@lru_cache(maxsize=16)
def _model(method: str):
    cls, defaults = method_parameters(method)
    hints = typing.get_type_hints(cls.__init__, vars(inspect.getmodule(cls)))
    fields = {n: (_json_type(hints.get(n, Any)), default) for n, default in defaults.items()}
    return create_model(f"{cls.__name__}Params", __config__=ConfigDict(extra="forbid", strict=True), **fields)


@lru_cache(maxsize=1)
def _tiny_corpus():
    from aggregation.corpus import Corpus

    return Corpus.from_arrays(token=[0, 0, 1, 1], worker=[0, 1, 0, 1], label=[1, 1, 0, 1], doc_lengths=[2],
                              token_start=[0, 2], token_end=[1, 3], doc_ids=["d"], texts=["a b"],
                              worker_ids=["w1", "w2"], worker_roles=["crowd", "crowd"], class_names=["O", "X"])


def validate_params(method: str, params: dict[str, Any] | None) -> dict[str, Any]:
    """Return ``params`` if ``method``'s aggregator takes them; raise :class:`JobParamsError` naming the field.

    Raises
    ------
    JobParamsError
        An unknown method or parameter, a value of the wrong JSON type, or a value the aggregator
        refuses (its own message).
    """
    params = dict(params or {})
    cls, defaults = method_parameters(method)
    unknown = sorted(set(params) - set(defaults))
    if unknown:
        raise JobParamsError(f"params.{unknown[0]}: method {method!r} takes no parameter {unknown[0]!r}; it takes "
                             f"{', '.join(defaults)}", field=unknown[0])
    try:
        _model(method).model_validate_json(json.dumps(params))
    except ValidationError as exc:
        first = exc.errors()[0]
        field = str(first["loc"][0]) if first.get("loc") else next(iter(params), "params")
        raise JobParamsError(f"params.{field}: {first['msg']}, found {params.get(field)!r}", field=field) from None
    scalars = {k: v for k, v in params.items() if not isinstance(v, dict | list)}
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            cls(**scalars).fit(_tiny_corpus())
    except (ValueError, TypeError) as exc:
        message = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        field = next((k for k in scalars if message.startswith(k)), next(iter(scalars), "params"))
        raise JobParamsError(f"params.{field}: {message}", field=field) from None
    return params
