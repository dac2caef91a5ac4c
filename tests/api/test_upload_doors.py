"""Both doors take the upload options of crowdqa.ingest.formats: the CLI's flags and the API's form are made
from the table, so a row added there shows in ``--help``, the form and the OpenAPI document alike."""

from __future__ import annotations

import argparse

import pytest

from crowdqa.api.commands._uploads import add_upload_arguments, upload_options
from crowdqa.api.forms import UPLOAD_FIELDS, UploadForm
from crowdqa.ingest.formats import READ_FORMATS, ROLES, UPLOAD_OPTIONS


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser()
    add_upload_arguments(p, path_help="x")
    return p


def test_cli_flags_are_the_table():
    """Oracle: the table row by row (flag name, choices, default, help)."""
    actions = {a.dest: a for a in _parser()._actions}
    for o in UPLOAD_OPTIONS:
        a = actions[o.name]
        assert a.option_strings == ["--" + o.name.replace("_", "-")]
        assert a.default == o.default and o.help in a.help
        assert tuple(a.choices or ()) == o.choices
    assert tuple(actions["role"].choices) == ROLES and tuple(actions["format"].choices) == READ_FORMATS
    args = _parser().parse_args(["f", "-f", "conll", "--on-error", "skip", "--keep-rejected"])
    assert upload_options(args) == {o.name: o.default for o in UPLOAD_OPTIONS} | {"on_error": "skip",
                                                                                 "keep_rejected": True}


def test_cli_refuses_a_value_outside_the_choices(capsys):
    with pytest.raises(SystemExit) as exc:
        _parser().parse_args(["f", "-f", "conll", "--scheme", "bilou"])
    assert exc.value.code == 2 and "invalid choice: 'bilou'" in capsys.readouterr().err


def test_api_form_and_openapi_are_the_table():
    from crowdqa.api.main import app

    client_options = [o for o in UPLOAD_OPTIONS if o.client]
    assert UPLOAD_FIELDS == ("file", "format", "role", "docs", *(o.name for o in client_options))
    doc = app.openapi()
    body = doc["paths"]["/api/v1/datasets/{dataset_id}/uploads"]["post"]["requestBody"]["content"]
    schema = doc["components"]["schemas"][body["multipart/form-data"]["schema"]["$ref"].rsplit("/", 1)[1]]
    assert list(schema["properties"]) == list(UploadForm.model_fields)
    assert schema["additionalProperties"] is False and schema["properties"]["format"]["enum"] == list(READ_FORMATS)
    for o in client_options:
        prop = schema["properties"][o.name]
        assert prop.get("default") == o.default and o.help[1:] in prop["description"]
        if o.choices:
            assert prop["enum"] == list(o.choices)
    assert "docs" in schema["properties"] and schema["properties"]["docs"]["anyOf"][0]["contentMediaType"]
