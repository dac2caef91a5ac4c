"""The CLI and the API both take the upload options of crowdqa.ingest.formats: the CLI's flags and the API's form
are made from the table, so a row added there shows in ``--help``, the form and the OpenAPI document alike."""

from __future__ import annotations

import argparse

import pytest

from crowdqa.api.commands._uploads import add_upload_arguments, upload_options
from crowdqa.api.forms import UPLOAD_FIELDS, UploadForm
from crowdqa.ingest.formats import READ_FORMATS, ROLES, UPLOAD_OPTIONS
from tests.api.conftest import SAMPLE, upload
from tests.utils.factories import auth


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
    """The flag's value goes through the readers' check (issue 32: argparse's own "invalid choice" before)."""
    with pytest.raises(SystemExit) as exc:
        _parser().parse_args(["f", "-f", "conll", "--scheme", "bilou"])
    assert exc.value.code == 2
    assert "argument --scheme: scheme must be 'auto', 'io', 'bio' or 'tags', found 'bilou'" in capsys.readouterr().err


def _through_every_door(client, key: str, capsys, field: str, value: str) -> tuple[str, str, str]:
    """The error of an upload with ``field=value`` through the API, the dashboard and (for an option with a flag)
    the command line; nothing is stored through the first two."""
    from markupsafe import escape

    from crowdqa.api.cli import main
    from tests.dashboard.test_pages import sign_in

    ds = client.post("/api/v1/datasets", headers=auth(key), json={"name": "d"}).json()["id"]
    r = upload(client, key, ds, SAMPLE / "crowd.jsonl", **{field: value})
    assert r.status_code == 422 and r.headers["content-type"] == "application/problem+json", r.text
    api = r.json()["detail"]
    csrf = sign_in(client, key)
    with open(SAMPLE / "crowd.jsonl", "rb") as fh:
        r = client.post(f"/ui/datasets/{ds}/uploads", data={"format": "spans-jsonl", "role": "crowd", "csrf": csrf,
                                                             field: value}, files={"file": ("crowd.jsonl", fh)})
    assert r.status_code == 422 and "upload refused" in r.text
    page = r.text
    assert client.get(f"/api/v1/datasets/{ds}", headers=auth(key)).json()["n_uploads"] == 0
    cli = ""
    if field in {o.name for o in UPLOAD_OPTIONS}:
        with pytest.raises(SystemExit) as exc:
            main(["ingest", str(SAMPLE / "crowd.jsonl"), "-f", "spans-jsonl", "--" + field.replace("_", "-"), value])
        assert exc.value.code == 2
        cli = capsys.readouterr().err
    return api, str(escape(api)) if str(escape(api)) in page else page, cli


@pytest.mark.parametrize("field, value, message", [
    ("scheme", "bilou", "scheme must be 'auto', 'io', 'bio' or 'tags', found 'bilou'"),
    ("on_error", "ignore", "on_error must be 'fail' or 'skip', found 'ignore'"),
])
def test_a_bad_option_value_gets_one_message_at_every_door(client, keys, capsys, field, value, message):
    """Issue 32: API, dashboard and command line check an upload's options by one function
    (crowdqa.ingest.formats.check_upload), so the same bad value gets the same message at each (before: pydantic's
    "Input should be ...", the reader's text after the file was stored, argparse's "invalid choice")."""
    from markupsafe import escape

    api, page, cli = _through_every_door(client, keys["a"], capsys, field, value)
    assert api == message and page == str(escape(message))
    assert f"argument --{field.replace('_', '-')}: {message}" in cli


@pytest.mark.parametrize("field, hint", [("text_colum", "text_column"), ("fromat", "format"), ("docs_path", "docs")])
def test_an_unknown_field_gets_one_message_at_api_and_dashboard(client, keys, capsys, field, hint):
    """Issue 32: an unknown field is refused by the same check in both forms (API and dashboard), naming the closest
    field (before: the API said "unknown form field" by its own check, the dashboard ignored it and stored the upload).
    The command line's flags are the table itself: argparse refuses an unknown flag."""
    from markupsafe import escape

    api, page, _ = _through_every_door(client, keys["a"], capsys, field, "x")
    assert api.startswith(f"unknown upload option {field!r}; did you mean {hint!r}? (options: file, format, role, "
                          "docs, ")
    assert page == str(escape(api))


def test_a_malformed_file_names_its_file_and_line_in_the_dashboard_as_in_the_api(client, keys, tmp_path):
    """Found walking the README: the dashboard showed a reader's message without the file and line the API
    names ("upload refused: offset must be ..."), so the user could not find the bad row."""
    from markupsafe import escape

    from tests.dashboard.test_pages import sign_in

    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"doc_id": "d", "annotator": "a", "start": 0, "end": 3, "label": "X", "text": "abc d"}\n'
                   '{"doc_id": "d", "annotator": "b", "start": 0, "end": "x", "label": "X", "text": "abc d"}\n')
    key = keys["a"]
    ds = client.post("/api/v1/datasets", headers=auth(key), json={"name": "d"}).json()["id"]
    r = upload(client, key, ds, bad)
    assert r.status_code == 422
    assert r.json()["detail"] == "bad.jsonl:2: offset must be a non-negative integer, found 'x'"
    csrf = sign_in(client, key)
    with open(bad, "rb") as fh:
        page = client.post(f"/ui/datasets/{ds}/uploads", data={"format": "spans-jsonl", "role": "crowd", "csrf": csrf},
                           files={"file": ("bad.jsonl", fh)})
    assert page.status_code == 422
    assert f"upload refused: {escape(r.json()['detail'])}" in page.text


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


def test_every_upload_size_limit_is_made_in_one_place(client, keys, monkeypatch):
    """Issue 32: the request gate's body limit, the stored file's and the docs zip's were each made from
    CROWDQA_MAX_UPLOAD_BYTES where they were used; now all come from ``jobs.uploads.UploadLimits``."""
    from crowdqa.jobs import uploads

    size = (SAMPLE / "crowd.jsonl").stat().st_size
    small = uploads.UploadLimits(file=size - 1, request=size - 1 + uploads.FORM_OVERHEAD, texts=4 * (size - 1))
    monkeypatch.setattr(uploads.UploadLimits, "of", classmethod(lambda cls, settings: small))
    key = keys["a"]
    ds = client.post("/api/v1/datasets", headers=auth(key), json={"name": "d"}).json()["id"]
    r = upload(client, key, ds, SAMPLE / "crowd.jsonl")  # within the request's limit, one byte over the file's
    assert r.status_code == 413 and r.json()["detail"] == (
        f"the upload exceeds the limit of {size - 1} bytes (CROWDQA_MAX_UPLOAD_BYTES)")
    r = client.post(f"/api/v1/datasets/{ds}/uploads", headers={**auth(key), "Content-Type": "multipart/form-data; "
                    "boundary=b"}, content=b"x" * (small.request + 1))  # refused by the gate, unread
    assert r.status_code == 413 and f"the limit of {size - 1} bytes" in r.json()["detail"]
    assert client.get(f"/api/v1/datasets/{ds}", headers=auth(key)).json()["n_uploads"] == 0
