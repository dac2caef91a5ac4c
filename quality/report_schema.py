"""The report's field names and defaults, read from :mod:`crowdqa.quality.report_model` without pydantic.

The typed models of :mod:`~crowdqa.quality.report_model` are the report's one schema. The command line
builds and writes reports as plain JSON data and never imports pydantic (half of its start-up), so this
module reads the models' fields from that module's *source* with :mod:`ast`: each class's annotated
fields in order (a base class's first, as pydantic orders them) with their defaults (``= value``,
``Field(default=...)``, ``Field(default_factory=dict)``). :func:`record` builds one JSON object in a model's
shape from named values, :func:`records` many from named columns; the report builders, the JSON writer
(which writes keys in the order given) and the store's score columns all follow the model from here.
``tests/quality/test_report_schema.py`` holds every model's fields and defaults to pydantic's own.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Sequence
from functools import cache
from pathlib import Path
from typing import Any

__all__ = ["ACCURACY_KINDS", "REQUIRED", "fields", "field_names", "record", "records"]

#: The report kinds scored per item by accuracy (no positive class): categorical answers, and tags (each token
#: an item). Everything that words or sorts a report by its kind reads this tuple.
ACCURACY_KINDS = ("categorical", "tags")

#: The default of a field without one.
REQUIRED = object()

_SOURCE = Path(__file__).with_name("report_model.py")

#: The factories ``Field(default_factory=...)`` names in the report models.
_FACTORIES: dict[str, Callable[[], Any]] = {"dict": dict, "list": list}


def _default(value: ast.expr | None) -> Callable[[], Any] | object:
    """A factory of the default an annotated field's right-hand side gives, or :data:`REQUIRED`."""
    if value is None:
        return REQUIRED
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == "Field":
        keywords = {k.arg: k.value for k in value.keywords}
        if "default_factory" in keywords:
            return _FACTORIES[ast.unparse(keywords["default_factory"])]
        if "default" not in keywords:
            return REQUIRED
        value = keywords["default"]
    constant = ast.literal_eval(value)
    return lambda: constant


@cache
def _models() -> dict[str, dict[str, Callable[[], Any] | object]]:
    """Every model class of ``report_model.py``: its fields in order, each with its default's factory."""
    models: dict[str, dict[str, Callable[[], Any] | object]] = {}
    for node in ast.parse(_SOURCE.read_text(encoding="utf-8")).body:
        if not isinstance(node, ast.ClassDef):
            continue
        own: dict[str, Callable[[], Any] | object] = {}
        for base in node.bases:  # the base's fields first, as pydantic orders them
            if isinstance(base, ast.Name) and base.id in models:
                own.update(models[base.id])
        for stmt in node.body:
            if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
                own[stmt.target.id] = _default(stmt.value)
        models[node.name] = own
    return models


def fields(model: str) -> dict[str, Callable[[], Any] | object]:
    """The fields of the report model named ``model`` in its order, each with a factory of its default (or
    :data:`REQUIRED`)."""
    return _models()[model]


@cache
def field_names(model: str) -> tuple[str, ...]:
    """The field names of the report model named ``model``, in its order."""
    return tuple(fields(model))


def record(model: str, values: dict[str, Any], *, extra: bool = False) -> dict[str, Any]:
    """``values`` as a JSON object of ``model``: its fields in the model's order, defaults where not given.

    Raises
    ------
    ValueError
        A required field is not given, or (unless ``extra``, as a model that allows more keys) a key is not
        one of the model's; keys past the model's fields come last, in the order given.
    """
    out: dict[str, Any] = {}
    for name, default in fields(model).items():
        if name in values:
            out[name] = values[name]
        elif default is REQUIRED:
            raise ValueError(f"{model} needs {name}, found keys {sorted(values)}")
        else:
            out[name] = default()
    unknown = [k for k in values if k not in out]
    if unknown and not extra:
        raise ValueError(f"{model} has no field {', '.join(unknown)}")
    out.update((k, values[k]) for k in unknown)
    return out


def records(model: str, columns: dict[str, Sequence[Any]]) -> list[dict[str, Any]]:
    """One JSON object of ``model`` per row of ``columns`` (one sequence of values per field, every field
    given), its keys in the model's order: for the long lists (workers, crowd pairs) without a call per row."""
    names = field_names(model)
    if set(columns) != set(names):
        raise ValueError(f"{model} rows need the columns {', '.join(names)}, found {', '.join(columns)}")
    return [dict(zip(names, row, strict=True)) for row in zip(*(columns[n] for n in names), strict=True)]
