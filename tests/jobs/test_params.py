"""Tests for crowdqa.jobs.params: a job's method parameters checked when it is asked for, in a request's words.

The routes and the CLI test that a bad parameter becomes a 422 / one line; here the function's own contract:
which field it names, what it returns, and each method's defaults against its class's signature.
"""

from __future__ import annotations

import importlib
import inspect

import pytest

from crowdqa.jobs.errors import JobParamsError
from crowdqa.jobs.params import METHODS, data_kind, method_defaults, validate_params


@pytest.mark.parametrize(("summary", "kind"), [
    (None, {}),
    ({"labels": []}, {}),
    ({"labels": ["O", "B-PER", "I-PER"]}, {"n_classes": 3}),  # sizes unknown: no word on categorical
    ({"labels": ["O", "B-PER", "I-PER"], "documents": 3, "tokens": 30}, {"n_classes": 3, "categorical": False}),
    ({"labels": ["yes", "no"], "documents": 5, "tokens": 5}, {"n_classes": 2, "categorical": True}),
    ({"labels": ["O", "spam"], "documents": 5, "tokens": 5}, {"n_classes": 2, "categorical": False}),  # has O
    ({"labels": ["yes", "no"], "documents": 5, "tokens": 9}, {"n_classes": 2, "categorical": False}),
])
def test_data_kind_reads_classes_and_categorical_from_the_parse_summary(summary, kind):
    assert data_kind(summary) == kind


def test_valid_params_come_back_as_a_copy():
    given = {"max_iter": 5}
    out = validate_params("ds", given)
    assert out == given and out is not given
    assert validate_params("mv", None) == {}


@pytest.mark.parametrize(("method", "params", "field", "words"), [
    ("ds", {"max_iter": "ten"}, "max_iter", "max_iter must be an integer"),
    ("ds", {"max_iter": 5, "nope": 1}, "nope", "unknown parameter 'nope'"),
    ("nope", {}, "method", "method must be one of"),
])
def test_a_refused_parameter_names_its_field(method, params, field, words):
    with pytest.raises(JobParamsError, match=words) as caught:
        validate_params(method, params)
    assert caught.value.field == field
    if field != "method":
        assert str(caught.value).startswith(f"params.{field}: ")


def test_method_defaults_are_each_aggregators_signature():
    defaults = method_defaults()
    assert set(defaults) == set(METHODS)
    for method, entry in METHODS.items():
        cls = getattr(importlib.import_module(entry.module), entry.name)
        signature = {name: p.default for name, p in inspect.signature(cls.__init__).parameters.items()
                     if name != "self"}
        assert defaults[method] == signature, method
