"""One real Label Studio server per test session, with a span project and a choice project annotated by three
crowd workers and one expert (through Label Studio's own import API), and crowdqa in a temp data dir."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from tests.api.conftest import client, settings  # noqa: F401 - the API's fixtures: embedded, temp data dir
from tests.utils.label_studio import LabelStudioServer, label_studio_server

CROWD = ("w1@example.com", "w2@example.com", "w3@example.com")
EXPERT = "ex@example.com"

NER_CONFIG = """<View>
  <Labels name="label" toName="text">
    <Label value="PER"/><Label value="LOC"/>
  </Labels>
  <Text name="text" value="$text"/>
</View>"""

CHOICE_CONFIG = """<View>
  <Text name="text" value="$text"/>
  <Choices name="sentiment" toName="text" choice="single">
    <Choice value="pos"/><Choice value="neg"/>
  </Choices>
</View>"""

POLYGON_CONFIG = """<View>
  <Image name="image" value="$image"/>
  <PolygonLabels name="poly" toName="image"><Label value="car"/></PolygonLabels>
</View>"""

#: (text, the true spans) of the span project's tasks.
NER_TASKS = [
    ("Alice met Bob in Paris.", [(0, 5, "PER"), (10, 13, "PER"), (17, 22, "LOC")]),
    ("Carol flew to Rome with Dan.", [(0, 5, "PER"), (14, 18, "LOC"), (24, 27, "PER")]),
    ("Nobody went anywhere.", []),
    ("Eve lives in Berlin and Oslo.", [(0, 3, "PER"), (13, 19, "LOC"), (24, 28, "LOC")]),
    ("Frank called Grace from Madrid.", [(0, 5, "PER"), (13, 18, "PER"), (24, 30, "LOC")]),
]
#: (text, the true choice) of the choice project's tasks.
CHOICE_TASKS = [("great film", "pos"), ("awful plot", "neg"), ("loved it", "pos"), ("boring", "neg"),
                ("superb acting", "pos"), ("a waste of time", "neg")]


def _span_result(spans, text):
    return [{"from_name": "label", "to_name": "text", "type": "labels",
             "value": {"start": s, "end": e, "text": text[s:e], "labels": [lab]}} for s, e, lab in spans]


def _choice_result(choice):
    return [{"from_name": "sentiment", "to_name": "text", "type": "choices", "value": {"choices": [choice]}}]


def crowd_spans(k: int, w: int, truth):
    """Worker ``w``'s spans on task ``k``: the truth, except that worker 2 misses a span on even tasks and worker
    3 calls the last span a PER on task 1."""
    spans = list(truth)
    if w == 1 and k % 2 == 0 and spans:
        spans = spans[:-1]
    if w == 2 and k == 1 and spans:
        spans = spans[:-1] + [(spans[-1][0], spans[-1][1], "PER" if spans[-1][2] == "LOC" else "LOC")]
    return spans


def annotation(email: str, result: list, *, expert: bool = False) -> dict:
    return {"completed_by": {"email": email}, "ground_truth": expert, "result": result}


@dataclass
class Projects:
    server: LabelStudioServer
    ner: int
    choice: int
    polygon: int


@pytest.fixture(scope="session")
def ls() -> Projects:
    """The server and its three projects (ids)."""
    with label_studio_server() as server:
        for email in (*CROWD, EXPERT):
            server.api("POST", "/api/users/", json={"email": email, "username": email.split("@")[0]})
        ner = server.api("POST", "/api/projects", json={"title": "people and places",
                                                       "label_config": NER_CONFIG}).json()["id"]
        tasks = []
        for k, (text, truth) in enumerate(NER_TASKS):
            anns = [annotation(e, _span_result(crowd_spans(k, w, truth), text)) for w, e in enumerate(CROWD)]
            if k < 4:  # the expert labelled four of the five
                anns.append(annotation(EXPERT, _span_result(truth, text), expert=True))
            tasks.append({"data": {"text": text}, "annotations": anns})
        server.api("POST", f"/api/projects/{ner}/import", json=tasks)
        choice = server.api("POST", "/api/projects", json={"title": "sentiment",
                                                          "label_config": CHOICE_CONFIG}).json()["id"]
        tasks = []
        for k, (text, truth) in enumerate(CHOICE_TASKS):
            wrong = "neg" if truth == "pos" else "pos"
            anns = [annotation(e, _choice_result(wrong if (w == 2 and k % 2) else truth)) for w, e in enumerate(CROWD)]
            anns.append(annotation(EXPERT, _choice_result(truth), expert=True))
            tasks.append({"data": {"text": text}, "annotations": anns})
        server.api("POST", f"/api/projects/{choice}/import", json=tasks)
        polygon = server.api("POST", "/api/projects", json={"title": "cars",
                                                           "label_config": POLYGON_CONFIG}).json()["id"]
        yield Projects(server=server, ner=ner, choice=choice, polygon=polygon)


@pytest.fixture(autouse=True)
def _no_label_studio_env(monkeypatch):
    """No LABEL_STUDIO_URL or _TOKEN of the caller's shell reaches the command line under test."""
    monkeypatch.delenv("LABEL_STUDIO_TOKEN", raising=False)
    monkeypatch.delenv("LABEL_STUDIO_URL", raising=False)
