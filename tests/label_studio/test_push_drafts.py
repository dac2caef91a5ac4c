"""A push drafts the tasks nobody annotated with the job's model, on a real Label Studio 1.23 server (issue 43).

Oracle: ``crowdqa aggregate --from-model MODEL --frozen --predict DOCS`` (the command line's pre-annotation, from the
model ``GET /jobs/{id}/model`` serves) on Label Studio's own JSON export of the same unannotated tasks: the drafts the
push wrote must be its spans, task by task. Label Studio's own records (its tasks' predictions and
``GET /api/projects/<id>/model-versions/``) say what the push wrote and that a second push adds none.
"""

from __future__ import annotations

import json

import pytest
from sqlmodel import Session

from crowdqa.api.cli import main
from crowdqa.store import crud
from crowdqa.store.db import get_engine
from tests.label_studio.conftest import CROWD, NER_CONFIG, NER_TASKS, _span_result, annotation, crowd_spans
from tests.utils.factories import auth, project_with_key

#: Annotated tasks besides NER_TASKS: the tagger learns the names and places of all of them.
MORE_TASKS = [
    ("Grace met Frank in Oslo.", [(0, 5, "PER"), (10, 15, "PER"), (19, 23, "LOC")]),
    ("Dan flew to Madrid with Eve.", [(0, 3, "PER"), (12, 18, "LOC"), (24, 27, "PER")]),
    ("Bob lives in Rome.", [(0, 3, "PER"), (13, 17, "LOC")]),
]
#: Tasks nobody annotated: known names and places in new sentences, and one with none.
UNANNOTATED = ["Alice met Carol in Berlin.", "Frank lives in Paris.", "The weather was mild.",
               "Eve flew to Rome with Bob."]


@pytest.fixture(scope="module")
def drafted(ls):
    """A span project of its own (the session's are shared): eight tasks annotated by the three crowd workers,
    four that nobody annotated."""
    server = ls.server
    project = server.api("POST", "/api/projects", json={"title": "drafts", "label_config": NER_CONFIG}).json()["id"]
    tasks = [{"data": {"text": text}, "annotations": [
        annotation(e, _span_result(crowd_spans(k, w, truth), text)) for w, e in enumerate(CROWD)]}
        for k, (text, truth) in enumerate([*NER_TASKS, *MORE_TASKS])]
    tasks += [{"data": {"text": text}} for text in UNANNOTATED]
    server.api("POST", f"/api/projects/{project}/import", json=tasks)
    return project


def _tasks(ls, project):
    return ls.server.api("GET", "/api/tasks", params={"project": project, "fields": "all",
                                                      "page_size": 100}).json()["tasks"]


def _pull_and_run(ls, client, key, project, dataset, method):
    r = client.post("/api/v1/label-studio/pulls", headers=auth(key), json={
        "url": ls.server.url, "token": ls.server.legacy_token, "project": project, "dataset": dataset})
    assert r.status_code == 200, r.text
    from tests.label_studio.test_pull_push import _run_job

    return _run_job(client, key, r.json()["dataset_id"], method)


def _notes(err: str) -> list[str]:
    """The command's notes (its first line says which data directory it works on)."""
    return [line for line in err.splitlines() if line.startswith("crowdqa: note: ")]


def _spans(prediction) -> list[tuple[int, int, str]]:
    return sorted((r["value"]["start"], r["value"]["end"], r["value"]["labels"][0]) for r in prediction["result"])


def test_a_push_drafts_the_unannotated_tasks_as_the_saved_model_labels_them(ls, drafted, settings, client, capsys,
                                                                           tmp_path):
    """Pull, an hmm-crowd-tagger job, push: each of the four tasks nobody annotated carries one prediction in the
    job's model version, without a score, whose spans are what ``crowdqa aggregate --from-model --predict`` gives
    for Label Studio's export of the same tasks (the oracle); the annotated tasks carry the aggregate, scored. A
    second push (through the API) and a third (the dashboard's button) leave one prediction a task: Label Studio
    counts twelve in the version, not twenty-four."""
    with Session(get_engine(settings)) as s:
        _, key = project_with_key(s, "default")
    job_id = _pull_and_run(ls, client, key, drafted, "drafts", "hmm-crowd-tagger")
    version = f"crowdqa-hmm-crowd-tagger-job-{job_id}"
    capsys.readouterr()
    assert main(["label-studio", "push", "--job", job_id]) == 0
    out = capsys.readouterr().out
    assert "8 predictions written" in out and "4 drafts of the job's model written on tasks nobody annotated" in out

    tasks = _tasks(ls, drafted)
    assert len(tasks) == 12
    drafts = {}
    for task in tasks:
        mine = [p for p in task["predictions"] if p["model_version"] == version]
        assert len(mine) == 1, task["predictions"]
        if task["annotations"]:
            assert 0 < mine[0]["score"] <= 1
        else:
            assert mine[0]["score"] is None
            drafts[task["id"]] = _spans(mine[0])
    assert sorted(t["data"]["text"] for t in tasks if t["id"] in drafts) == sorted(UNANNOTATED)
    assert any(drafts.values())  # the model found spans in the new sentences: the comparison is not of empties

    # The oracle: the job's model (as the API serves it) on Label Studio's own export of the unannotated tasks.
    model = client.get(f"/api/v1/jobs/{job_id}/model", headers=auth(key))
    assert model.status_code == 200, model.text
    (tmp_path / "model.npz").write_bytes(model.content)
    export = ls.server.api("GET", f"/api/projects/{drafted}/export", params={"exportType": "JSON",
                                                                           "download_all_tasks": "true"}).json()
    emails = {u["id"]: u["email"] for u in ls.server.api("GET", "/api/users/").json()}
    crowd = [{**t, "annotations": [{**a, "completed_by": emails[a["completed_by"]]} for a in t["annotations"]]}
             for t in export if t["annotations"]]
    unannotated = [t for t in export if not t["annotations"]]
    assert sorted(t["id"] for t in unannotated) == sorted(drafts)
    (tmp_path / "crowd.json").write_text(json.dumps(crowd))
    (tmp_path / "docs.json").write_text(json.dumps(unannotated))
    assert main(["aggregate", str(tmp_path / "crowd.json"), "--format", "label-studio", "--method",
                 "hmm-crowd-tagger", "--from-model", str(tmp_path / "model.npz"), "--frozen", "--output",
                 str(tmp_path / "aggregate.jsonl"), "--predict", str(tmp_path / "docs.json"), "--predictions",
                 str(tmp_path / "drafts.jsonl"), "--quiet"]) == 0
    expected: dict[int, list] = {task: [] for task in drafts}
    for line in (tmp_path / "drafts.jsonl").read_text().splitlines():
        span = json.loads(line)
        expected[int(span["doc_id"])].append((span["start"], span["end"], span["label"]))
    assert drafts == {task: sorted(spans) for task, spans in expected.items()}

    r = client.post(f"/api/v1/jobs/{job_id}/label-studio", headers=auth(key))  # again, through the API
    assert r.status_code == 200, r.text
    assert (r.json()["predictions"], r.json()["pre_annotated"], r.json()["notes"]) == (8, 4, [])
    counts = ls.server.api("GET", f"/api/projects/{drafted}/model-versions/").json()
    assert counts == {version: 12}
    again = {t["id"]: [_spans(p) for p in t["predictions"]] for t in _tasks(ls, drafted) if t["id"] in drafts}
    assert again == {task: [spans] for task, spans in drafts.items()}

    from tests.dashboard.test_pages import sign_in  # and once more from the job's page in the dashboard

    r = client.post(f"/ui/jobs/{job_id}/label-studio", data={"csrf": sign_in(client, key)}, follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"].endswith("?pushed=8&skipped=0&drafted=4"), r.text
    notice = client.get(r.headers["location"]).text.split('id="label-studio-pushed">', 1)[1].split("</p>", 1)[0]
    assert "8 predictions written" in notice and "; 4 tasks nobody annotated got a draft of the job's model." in notice
    assert ls.server.api("GET", f"/api/projects/{drafted}/model-versions/").json() == {version: 12}


def test_a_method_that_cannot_pre_annotate_says_so_and_still_pushes(ls, drafted, settings, client, capsys):
    """A Dawid-Skene job's model reads no text: its push writes the eight annotated tasks' aggregate, and one note
    (a CLI line, the API's ``notes``) counts the four tasks left without a draft and names why; asked for drafts
    (``pre_annotate=true``) it is refused, a 422 problem, before anything is written; ``--no-pre-annotate`` of a
    tagger's job writes the aggregate alone, and no note."""
    with Session(get_engine(settings)) as s:
        _, key = project_with_key(s, "default")
    job_id = _pull_and_run(ls, client, key, drafted, "drafts by ds", "ds")
    capsys.readouterr()
    assert main(["label-studio", "push", "--job", job_id]) == 0
    captured = capsys.readouterr()
    assert "8 predictions written" in captured.out and "drafts" not in captured.out
    assert _notes(captured.err) == [
        "crowdqa: note: no draft for the 4 tasks of the project without annotation: ds labels only what annotators "
        "labelled (its model reads no text); a job of hmm-crowd-tagger pre-annotates them"]
    counts = ls.server.api("GET", f"/api/projects/{drafted}/model-versions/").json()
    assert counts == {f"crowdqa-ds-job-{job_id}": 8}

    r = client.post(f"/api/v1/jobs/{job_id}/label-studio", headers=auth(key))
    assert r.status_code == 200 and r.json()["pre_annotated"] == 0, r.text
    assert r.json()["notes"] == [captured.err.split("note: ", 1)[1].strip()]
    r = client.post(f"/api/v1/jobs/{job_id}/label-studio", headers=auth(key), params={"pre_annotate": "true"})
    assert r.status_code == 422 and r.headers["content-type"] == "application/problem+json", r.text
    assert r.json()["detail"].startswith(f"job {job_id} cannot pre-annotate the tasks nobody annotated: ds labels")
    assert ls.server.api("GET", f"/api/projects/{drafted}/model-versions/").json() == counts

    tagger = _pull_and_run(ls, client, key, drafted, "drafts by ds", "hmm-crowd-tagger")
    capsys.readouterr()
    assert main(["label-studio", "push", "--job", tagger, "--no-pre-annotate"]) == 0
    captured = capsys.readouterr()
    assert "8 predictions written" in captured.out and "drafts" not in captured.out and _notes(captured.err) == []
    assert ls.server.api("GET", f"/api/projects/{drafted}/model-versions/").json() == {
        f"crowdqa-hmm-crowd-tagger-job-{tagger}": 8}
    with Session(get_engine(settings)) as s:
        assert crud.load_job(session=s, job_id=tagger).method == "hmm-crowd-tagger"


def test_a_push_cut_while_it_reads_the_unannotated_tasks_changes_no_prediction(ls, drafted, settings, client,
                                                                              monkeypatch):
    """The connection drops whenever the push asks for the texts of the tasks nobody annotated (the GET sent again
    on a new connection too): the push is a 422 problem naming the failure, and Label Studio holds the predictions
    it held before, none removed (the drafts are read before anything is removed or written)."""
    import functools

    import httpx

    from crowdqa.ingest.label_studio_api import LabelStudio

    with Session(get_engine(settings)) as s:
        _, key = project_with_key(s, "default")
    job_id = _pull_and_run(ls, client, key, drafted, "drafts cut", "hmm-crowd-tagger")
    assert client.post(f"/api/v1/jobs/{job_id}/label-studio", headers=auth(key)).status_code == 200
    before = ls.server.api("GET", f"/api/projects/{drafted}/model-versions/").json()
    assert before == {f"crowdqa-hmm-crowd-tagger-job-{job_id}": 12}  # what the cut push must not remove
    real, asked = httpx.HTTPTransport(), []

    class Cut(httpx.BaseTransport):
        def handle_request(self, request):
            if request.url.path == "/api/tasks" and request.url.params.get("include") == "id,data":
                asked.append(request.url.params["page"])
                raise httpx.ReadError("connection reset by peer")
            return real.handle_request(request)

    monkeypatch.setattr(LabelStudio, "__init__", functools.partialmethod(LabelStudio.__init__, transport=Cut()))
    r = client.post(f"/api/v1/jobs/{job_id}/label-studio", headers=auth(key))
    assert r.status_code == 422 and r.headers["content-type"] == "application/problem+json", r.text
    assert "cannot reach Label Studio" in r.json()["detail"] and "connection reset" in r.json()["detail"]
    assert asked == ["1", "1"]
    assert ls.server.api("GET", f"/api/projects/{drafted}/model-versions/").json() == before


def test_an_auto_job_drafts_with_the_model_of_the_method_it_chose(ls, drafted, settings, client):
    """``auto`` on typed spans without experts chooses the tagger's method (its report says which): the push drafts
    with that fit's model, in the job's own model version (``crowdqa-auto-job-<id>``)."""
    with Session(get_engine(settings)) as s:
        _, key = project_with_key(s, "default")
    job_id = _pull_and_run(ls, client, key, drafted, "drafts by auto", "auto")
    report = client.get(f"/api/v1/jobs/{job_id}/report", headers=auth(key)).json()
    assert report["method"] == "hmm-crowd-tagger", report.get("method_choice")
    r = client.post(f"/api/v1/jobs/{job_id}/label-studio", headers=auth(key))
    assert r.status_code == 200, r.text
    assert (r.json()["predictions"], r.json()["pre_annotated"], r.json()["notes"]) == (8, 4, [])
    assert ls.server.api("GET", f"/api/projects/{drafted}/model-versions/").json() == {
        f"crowdqa-auto-job-{job_id}": 12}
