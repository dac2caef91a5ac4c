"""The parts of the Label Studio link that need no server: tokens, labeling configs, the sealed token."""

from __future__ import annotations

import base64
import json

import pytest

from crowdqa.ingest.label_studio_api import (
    LabelStudio,
    LabelStudioError,
    read_label_config,
    token_kind,
    upload_bytes,
)
from crowdqa.store.private import server_secret
from crowdqa.store.sealed import SealError, seal, unseal
from tests.label_studio.conftest import CHOICE_CONFIG, NER_CONFIG, POLYGON_CONFIG


def _jwt(kind: str) -> str:
    part = base64.urlsafe_b64encode(json.dumps({"token_type": kind, "user_id": "1"}).encode()).decode().rstrip("=")
    return f"eyJhbGciOiJIUzI1NiJ9.{part}.c2ln"


def test_token_kinds():
    assert token_kind(_jwt("refresh")) == "personal"
    assert token_kind(_jwt("access")) == "access"
    assert token_kind("0123456789abcdef0123456789abcdef01234567") == "legacy"
    assert token_kind("a.b.c") == "legacy"


def test_label_configs():
    ner = read_label_config(NER_CONFIG)
    assert (ner.kind, ner.from_name, ner.to_name, ner.text_key, ner.labels) == ("spans", "label", "text", "text",
                                                                              ("PER", "LOC"))
    choice = read_label_config(CHOICE_CONFIG)
    assert (choice.kind, choice.from_name, choice.labels) == ("choices", "sentiment", ("pos", "neg"))
    with pytest.raises(LabelStudioError, match=r"it holds <Image>, <PolygonLabels>$"):
        read_label_config(POLYGON_CONFIG)
    audio = '<View><Audio name="a" value="$audio"/><Labels name="l" toName="a"><Label value="x"/></Labels></View>'
    with pytest.raises(LabelStudioError, match=r"it holds <Audio>, Labels on <Audio>$"):
        read_label_config(audio)
    with pytest.raises(LabelStudioError, match="not XML"):
        read_label_config("<View>")


@pytest.mark.parametrize("url", ["localhost:8080", "ftp://host", ""])
def test_url_must_be_http(url):
    with pytest.raises(LabelStudioError, match="must start with http"):
        LabelStudio(url, "token")


def test_sealed_token_opens_only_with_its_secret(tmp_path):
    token = _jwt("refresh")
    sealed = seal(tmp_path / "a", token)
    assert token not in sealed and sealed.startswith("v2.")
    assert seal(tmp_path / "a", token) != sealed  # a fresh nonce each time
    assert unseal(tmp_path / "a", sealed) == token
    server_secret(tmp_path / "b")
    with pytest.raises(SealError, match="does not open"):
        unseal(tmp_path / "b", sealed)
    altered = sealed[:-6] + ("A" if sealed[-6] != "A" else "B") + sealed[-5:]
    with pytest.raises(SealError):
        unseal(tmp_path / "a", altered)


def test_a_refused_request_names_label_studios_reason():
    """Label Studio 1.23 answers a refused import with ``detail: "Validation error"`` and the why in
    ``validation_errors`` (its body here is the one it gave for a prediction naming a deleted task); the error
    carries both, not the bare "Validation error"."""
    import httpx

    why = ("{'task': 3, 'score': 0.5} contains invalid \"task\" field: corresponding task ID couldn't be retrieved "
           "from project people and places (id=1) tasks")
    body = {"status_code": 400, "version": "1.23.2", "detail": "Validation error", "exc_info": None,
            "validation_errors": {"non_field_errors": [why]}}
    transport = httpx.MockTransport(lambda request: httpx.Response(400, json=body))
    with LabelStudio("http://label-studio.test", "0" * 40, transport=transport) as client:
        with pytest.raises(LabelStudioError, match=r"HTTP 400: Validation error: .*corresponding task ID couldn't"):
            client.request("POST", "/api/projects/1/import/predictions", json=[])


def test_several_answers_of_one_annotator_are_named_as_such():
    """A ``<Choices choice="multiple">`` project where an annotator ticked two answers on a task: the pull says so
    (task, annotator, answers), where it used to report a duplicate row on line 3 of a CSV the user never made;
    one answer each (whatever the config allows) reads as before."""
    config = read_label_config(CHOICE_CONFIG.replace('choice="single"', 'choice="multiple"'))

    def task(*answers):
        return {"id": 11, "data": {"text": "x"}, "annotations": [
            {"completed_by": who, "result": [{"from_name": "sentiment", "to_name": "text", "type": "choices",
                                              "value": {"choices": list(chosen)}}]}
            for who, chosen in zip(("w1@example.com", "w2@example.com"), answers, strict=False)]}

    data, fmt, _ = upload_bytes([task(["pos"], ["neg"])], config)
    assert (fmt, data) == ("categorical", b"item,annotator,label\n11,w1@example.com,pos\n11,w2@example.com,neg\n")
    with pytest.raises(LabelStudioError, match=r"^task 11: w2@example.com chose 2 answers \('pos', 'neg'\) in "
                                               r'<Choices name="sentiment">; crowdqa aggregates one answer per '):
        upload_bytes([task(["pos"], ["pos", "neg"])], config)
