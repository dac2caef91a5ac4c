"""Issue 48's Label Studio edges on the httpx fake of Label Studio (test_pull_guards.py) with the push endpoints:
a push replaces every earlier crowdqa prediction by default (or keeps other jobs' with keep_earlier), ``--view``
makes the project's tab once, the command line runs a job on a pulled dataset and pushes it, and the dashboard's
pull takes a dataset name and shows what the pull did and noticed.

Oracle: the fake's own record of the predictions it holds per model version and of the views made (Label Studio
1.23's answers, read from its source: ``GET /api/projects/<id>/model-versions/`` is ``{version: count}``, ``GET
/api/dm/views?project=<id>`` a list of views with their ``data``)."""

from __future__ import annotations

import functools
import json

import httpx
import pytest

from crowdqa.api.cli import main
from crowdqa.ingest.label_studio_api import LabelStudio
from tests.api.conftest import wait_job
from tests.dashboard.test_pages import sign_in
from tests.label_studio.conftest import CHOICE_CONFIG
from tests.label_studio.test_pull_guards import CROWD, PROJECT, TOKEN, URL, FakeLabelStudio, choice_tasks
from tests.utils.factories import auth


class PushedLabelStudio(FakeLabelStudio):
    """The fake with predictions (by model version) and data manager views."""

    def __init__(self, *args) -> None:
        super().__init__(*args)
        self.predictions: dict[str, int] = {"someone-elses-model": 4}
        self.views: list[dict] = []
        self.model_version: str | None = None

    def __call__(self, request: httpx.Request) -> httpx.Response:
        path, method = request.url.path, request.method
        if path == f"/api/projects/{PROJECT}/model-versions/":
            if method == "GET":
                return httpx.Response(200, json=dict(self.predictions))
            gone = self.predictions.pop(json.loads(request.content)["model_version"], 0)
            return httpx.Response(200, json=gone)
        if path == f"/api/projects/{PROJECT}/import/predictions":
            for row in json.loads(request.content):
                self.predictions[row["model_version"]] = self.predictions.get(row["model_version"], 0) + 1
            return httpx.Response(201, json={"created": 1})
        if path == f"/api/projects/{PROJECT}" and method == "PATCH":
            self.model_version = json.loads(request.content)["model_version"]
            return httpx.Response(200, json={"id": PROJECT})
        if path == "/api/dm/views":
            if method == "GET":
                assert request.url.params["project"] == str(PROJECT)
                return httpx.Response(200, json=self.views)
            made = {"id": len(self.views) + 1, **json.loads(request.content)}
            self.views.append(made)
            return httpx.Response(201, json=made)
        return super().__call__(request)


@pytest.fixture
def key(settings) -> str:
    """A key of project "a" (the command line's --crowdqa-project)."""
    from sqlmodel import Session

    from crowdqa.store.db import get_engine
    from tests.utils.factories import project_with_key

    with Session(get_engine(settings)) as s:
        return project_with_key(s, "a")[1]


@pytest.fixture
def fake(monkeypatch) -> PushedLabelStudio:
    server = PushedLabelStudio(CHOICE_CONFIG, choice_tasks(CROWD))
    monkeypatch.setattr(LabelStudio, "__init__",
                        functools.partialmethod(LabelStudio.__init__, transport=httpx.MockTransport(server)))
    return server


def _pull(client, key: str, **body):
    return client.post("/api/v1/label-studio/pulls", headers=auth(key),
                       json={"url": URL, "token": TOKEN, "project": PROJECT, "dataset": "ls", **body})


def _job(client, key: str, dataset: str, method: str) -> str:
    r = client.post(f"/api/v1/datasets/{dataset}/jobs", headers=auth(key), json={"method": method})
    assert r.status_code == 202, r.text
    assert wait_job(client, r.json()["id"], key)["status"] == "finished"
    return r.json()["id"]


def test_a_push_replaces_every_earlier_crowdqa_prediction_unless_told_to_keep_them(client, key, fake):
    dataset = _pull(client, key).json()["dataset_id"]
    first, second, third = (_job(client, key, dataset, m) for m in ("mv", "ds", "mv"))
    r = client.post(f"/api/v1/jobs/{first}/label-studio", headers=auth(key))
    assert r.status_code == 200 and r.json()["replaced"] == [], r.text
    r = client.post(f"/api/v1/jobs/{second}/label-studio", headers=auth(key))
    v1, v2 = f"crowdqa-mv-job-{first}", f"crowdqa-ds-job-{second}"
    assert r.json()["replaced"] == [v1]
    assert fake.predictions == {"someone-elses-model": 4, v2: 4} and fake.model_version == v2
    r = client.post(f"/api/v1/jobs/{third}/label-studio?keep_earlier=true", headers=auth(key))
    v3 = f"crowdqa-mv-job-{third}"
    assert r.json()["replaced"] == []
    assert fake.predictions == {"someone-elses-model": 4, v2: 4, v3: 4} and fake.model_version == v3
    client.post(f"/api/v1/jobs/{third}/label-studio", headers=auth(key))  # again: its own replaced, not doubled
    assert fake.predictions == {"someone-elses-model": 4, v3: 4}


def test_the_command_line_runs_a_job_on_a_pulled_dataset_and_pushes_it_with_one_view(client, key, fake, capsys):
    assert main(["label-studio", "pull", "--url", URL, "--token", TOKEN, "--project", str(PROJECT), "--dataset",
                 "ls", "--crowdqa-project", "a"]) == 0
    captured = capsys.readouterr()
    dataset = client.get("/api/v1/datasets", headers=auth(key)).json()["data"][0]["id"]
    assert f"crowdqa label-studio job --dataset {dataset} --method auto --push" in captured.err
    for _ in range(2):
        assert main(["label-studio", "job", "--dataset", dataset, "--method", "mv", "--push", "--view"]) == 0
    out = capsys.readouterr().out.splitlines()
    jobs = [line.split()[1] for line in out if line.startswith("job ")]
    assert len(jobs) == 2 and all(f"finished on dataset {dataset}" in line for line in out if line.startswith("job "))
    assert f"earlier crowdqa predictions removed: crowdqa-mv-job-{jobs[0]}" in out
    assert [line for line in out if line.startswith("view ")] == [
        "view 1 ('crowdqa: disputed first'): the project's tasks by prediction score, lowest (most disputed) first"] * 2
    assert len(fake.views) == 1 and fake.views[0]["data"]["ordering"] == ["tasks:predictions_score"]
    assert fake.predictions == {"someone-elses-model": 4, f"crowdqa-mv-job-{jobs[1]}": 4}
    listed = client.get(f"/api/v1/datasets/{dataset}/jobs", headers=auth(key)).json()["data"]
    assert sorted(j["id"] for j in listed) == sorted(jobs) and {j["status"] for j in listed} == {"finished"}


def test_the_command_line_job_of_an_unknown_dataset_is_one_line(client, key, capsys):
    assert main(["label-studio", "job", "--dataset", "nope", "--method", "mv"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1] == ("crowdqa: error: no dataset 'nope' in this data directory (crowdqa label-studio pull prints "
                       "its id)")


def test_the_dashboards_pull_takes_a_name_and_shows_what_it_did_and_noticed(client, key, fake):
    csrf = sign_in(client, key)
    form = client.get("/ui/").text
    assert 'name="dataset"' in form.split('id="label-studio"', 1)[1].split("</form>", 1)[0]
    r = client.post("/ui/label-studio", data={"url": URL, "token": TOKEN, "project": str(PROJECT),
                                               "dataset": "my pull", "experts": "ex@exmaple.com", "csrf": csrf},
                    follow_redirects=False)
    assert r.status_code == 303, r.text  # to the dataset's page: reloading it pulls nothing again
    page = client.get(r.headers["location"]).text
    assert '<h1 id="dataset-name">my pull</h1>' in page
    notice = page.split('id="label-studio-pulled">', 1)[1].split("</div>", 1)[0]
    assert f"Pulled from Label Studio project {PROJECT}: 4 tasks read (all)" in notice
    assert "0 removed (deleted in Label Studio), 4 held." in notice
    assert "Note: expert &#39;ex@exmaple.com&#39; annotated none of the project&#39;s tasks" in notice
    again = client.post("/ui/label-studio", data={"url": URL, "token": TOKEN, "project": str(PROJECT),
                                                   "dataset": "my pull", "csrf": csrf})
    assert "nothing changed since the last pull (4 tasks held)" in again.text
    assert 'id="label-studio-pulled"' not in client.get(r.headers["location"].split("?")[0]).text
