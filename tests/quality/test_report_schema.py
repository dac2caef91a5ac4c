"""Tests for crowdqa.quality.report_schema: the report models' fields as read from their source (no pydantic)
are pydantic's own, and the records built from them follow the models."""

from __future__ import annotations

import json

import pytest
from pydantic import BaseModel

from crowdqa.quality import report_model
from crowdqa.quality.report_schema import REQUIRED, field_names, fields, record, records

MODELS = sorted(name for name, value in vars(report_model).items() if isinstance(value, type)
                and issubclass(value, BaseModel) and value.__module__ == report_model.__name__)


@pytest.mark.parametrize("name", MODELS)
def test_fields_are_the_models_own(name):
    """Oracle: pydantic's ``model_fields``: the names in order, which are required, and every default."""
    model = getattr(report_model, name)
    assert field_names(name) == tuple(model.model_fields)
    for key, default in fields(name).items():
        info = model.model_fields[key]
        assert (default is REQUIRED) == info.is_required(), key
        if default is not REQUIRED:
            assert default() == info.get_default(call_default_factory=True), key


def test_every_model_is_read():
    assert set(MODELS) >= {"QualityReport", "Score", "WorkerReport", "FitRecord", "CrowdPair"} and len(MODELS) > 15


def test_record_is_the_model_dumped():
    """Oracle: ``model_validate(...).model_dump(mode="json")``, as JSON text (key order, defaults)."""
    values = {"fn": 1, "tp": 2, "fp": 0, "precision": 1.0, "recall": 2 / 3, "f1": 0.8, "precision_ci": [0.2, 1.0],
              "recall_ci": None, "f1_ci": None, "documents": 1}
    want = report_model.Score.model_validate(values).model_dump(mode="json")
    assert json.dumps(record("Score", values)) == json.dumps(want)


def test_record_refuses_a_missing_field_and_an_unknown_key():
    with pytest.raises(ValueError, match="Accuracy needs compared"):
        record("Accuracy", {"value": None, "correct": 0, "ci": None})
    with pytest.raises(ValueError, match="KappaSummary has no field medain"):
        record("KappaSummary", {"min_documents": 3, "pairs": 0, "median": None, "mean": None, "medain": 1})
    fit = record("FitRecord", {"iterations": 1, "converged": None, "seconds": 0.5, "log_likelihood": [],
                               "start": "x"}, extra=True)
    assert list(fit)[-1] == "start" and fit["warnings"] == []
    fit["warnings"].append("w")  # a fresh default each time
    assert record("FitRecord", {**fit, "warnings": []}, extra=True)["params"] == {} and fields("FitRecord")[
        "warnings"]() == []


def test_records_are_one_record_per_row():
    cols = {"b": ["y", "z"], "a": ["x", "x"], "documents": [3, 4], "tokens": [9, 10], "kappa": [None, 0.5]}
    assert records("CrowdPair", cols) == [record("CrowdPair", {k: v[i] for k, v in cols.items()}) for i in range(2)]
    assert list(records("CrowdPair", cols)[0]) == ["a", "b", "documents", "tokens", "kappa"]
    with pytest.raises(ValueError, match="CrowdPair rows need the columns"):
        records("CrowdPair", {"a": ["x"]})
