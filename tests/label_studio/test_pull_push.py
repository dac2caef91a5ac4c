"""Pull from, and push to, a real Label Studio 1.23 server (issue 33)."""

from __future__ import annotations

import io
import json

import httpx
import numpy as np
import pytest
from sqlmodel import Session

from crowdqa.api.cli import main
from crowdqa.jobs import label_studio as ls_jobs
from crowdqa.jobs.uploads import add_upload, job_corpus
from crowdqa.store import crud
from crowdqa.store.artifacts import ArtifactStore
from crowdqa.store.db import get_engine
from crowdqa.store.models import DatasetCreate
from tests.api.conftest import wait_job
from tests.label_studio.conftest import CROWD, EXPERT
from tests.utils.factories import auth, project_with_key


def _pull(ls, token, *extra) -> int:
    return main(["label-studio", "pull", "--url", ls.server.url, "--token", token, *extra])


def _dataset(settings, name):
    with Session(get_engine(settings)) as s:
        project = crud.find_project(session=s, name="default")
        return crud.find_dataset(session=s, project_id=project.id, name=name)


def _corpus(settings, dataset):
    corpus, _ = job_corpus(ArtifactStore(settings.data_dir), dataset.corpus_sha256)
    return corpus


def test_pull_stores_what_uploading_the_export_stores(ls, settings, capsys):
    """A pull of the span project is the dataset that uploading Label Studio's own JSON export gives (crowd
    and expert files, annotators named by e-mail): same corpus, same summary."""
    assert _pull(ls, ls.server.personal_token, "--project", str(ls.ner), "--dataset", "pulled",
                 "--expert", EXPERT) == 0
    out = capsys.readouterr().out
    assert "5 tasks read (all)" in out and "label-studio" in out
    pulled = _dataset(settings, "pulled")

    export = ls.server.api("GET", f"/api/projects/{ls.ner}/export", params={"exportType": "JSON"}).json()
    emails = {u["id"]: u["email"] for u in ls.server.api("GET", "/api/users/").json()}
    files = {"crowd": [], "expert": []}
    for task in export:
        for role in files:
            anns = [{**a, "completed_by": emails[a["completed_by"]]} for a in task["annotations"]
                    if (emails[a["completed_by"]] == EXPERT) == (role == "expert")]
            if anns:
                files[role].append({**task, "annotations": anns})
    with Session(get_engine(settings)) as s:
        project = crud.find_project(session=s, name="default")
        uploaded = crud.create_dataset(session=s, project_id=project.id, dataset_in=DatasetCreate(name="uploaded"))
        for role, tasks in files.items():
            add_upload(session=s, settings=settings, dataset=uploaded, stream=io.BytesIO(json.dumps(tasks).encode()),
                       filename=f"export-{role}.json", format="label-studio", role=role, options={})
        s.refresh(uploaded)
    assert pulled.summary == uploaded.summary
    a, b = _corpus(settings, pulled), _corpus(settings, uploaded)
    assert a.doc_ids == b.doc_ids and a.texts == b.texts and a.class_names == b.class_names
    assert a.worker_ids == b.worker_ids and list(a.worker_roles) == list(b.worker_roles)
    for name in ("token", "worker", "label", "token_start", "token_end"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name))
    assert sorted(a.worker_ids) == sorted([*CROWD, EXPERT])
    assert dict(zip(a.worker_ids, a.worker_roles, strict=True))[EXPERT] == "expert"
    assert pulled.summary["annotators"] == {"crowd": 3, "expert": 1}


def _tasks(ls, project):
    return ls.server.api("GET", "/api/tasks", params={"project": project, "fields": "all",
                                                      "page_size": 100}).json()["tasks"]


def test_second_pull_reads_only_what_changed(ls, settings, capsys, monkeypatch):
    """Paged (two tasks a page here), then incremental: an annotation changed in Label Studio is the one task a
    second pull reads (besides one page of the project's task ids), and the dataset holds the change; a third pull
    reads nothing and writes nothing."""
    monkeypatch.setattr("crowdqa.ingest.label_studio_api.PAGE_SIZE", 2)
    seen = []
    real = httpx.HTTPTransport()

    class Counting(httpx.BaseTransport):
        def handle_request(self, request):
            ids = "?include=id" if request.url.params.get("include") == "id" else ""
            seen.append(request.url.path + ids)
            return real.handle_request(request)

    def pull():
        with ls_jobs.LabelStudio(ls.server.url, ls.server.legacy_token, transport=Counting()) as client, \
                Session(get_engine(settings)) as s:
            return ls_jobs.pull(session=s, settings=settings, client=client, ls_project=ls.ner,
                                project_name="default", dataset_name="incremental", experts=[EXPERT])

    first = pull()
    assert (first.fetched, first.tasks, first.changed) == (5, 5, True)
    assert seen.count("/api/tasks") == 3  # pages of 2, 2 and 1
    before = _dataset(settings, "incremental")

    task = _tasks(ls, ls.ner)[2]  # "Nobody went anywhere.": w1 now marks "Nobody" as a PER
    ann = next(a for a in task["annotations"] if a["completed_by"] != 5)
    ls.server.api("PATCH", f"/api/annotations/{ann['id']}", json={"result": [
        {"from_name": "label", "to_name": "text", "type": "labels",
         "value": {"start": 0, "end": 6, "text": "Nobody", "labels": ["PER"]}}]})
    seen.clear()
    second = pull()
    assert (second.fetched, second.tasks, second.changed) == (1, 5, True)
    assert seen.count("/api/tasks") == 1 and seen.count("/api/tasks?include=id") == 1  # one page of ids
    after = _dataset(settings, "incremental")
    assert after.n_uploads == before.n_uploads == 2
    assert after.corpus_sha256 != before.corpus_sha256
    corpus = _corpus(settings, after)
    d = corpus.doc_ids.index(str(task["id"]))
    first_token = int(np.asarray(corpus.doc_lengths)[:d].sum())
    who = [corpus.worker_ids[w] for w, t, lab in zip(corpus.worker, corpus.token, corpus.label, strict=True)
           if t == first_token and lab != 0]
    assert len(who) == 1 and who[0] in CROWD

    third = pull()
    assert (third.fetched, third.changed) == (0, False)
    assert _dataset(settings, "incremental").corpus_sha256 == after.corpus_sha256


def _choice_project(ls, title: str) -> int:
    """A choice project of its own (the session's are shared): four tasks, each labelled right by the three crowd
    workers and the expert."""
    from tests.label_studio.conftest import CHOICE_CONFIG, CHOICE_TASKS, _choice_result, annotation

    project = ls.server.api("POST", "/api/projects", json={"title": title, "label_config": CHOICE_CONFIG}).json()["id"]
    ls.server.api("POST", f"/api/projects/{project}/import", json=[
        {"data": {"text": text}, "annotations": [annotation(e, _choice_result(truth)) for e in (*CROWD, EXPERT)]}
        for text, truth in CHOICE_TASKS[:4]])
    return project


def test_incremental_pull_drops_a_task_deleted_in_label_studio(ls, settings, client):
    """A task deleted in Label Studio between two incremental pulls leaves the dataset: the second pull reads no
    task, lists the project's task ids (``include=id``), removes the deleted one, and the dataset's items and a
    job's report count one fewer; a third pull is "unchanged". Its own project: the session's are shared."""
    project = _choice_project(ls, "deletions")
    with Session(get_engine(settings)) as s:
        _, key = project_with_key(s, "deletions")

    def pull():
        r = client.post("/api/v1/label-studio/pulls", headers=auth(key), json={
            "url": ls.server.url, "token": ls.server.legacy_token, "project": project, "dataset": "deletions",
            "experts": [EXPERT]})
        assert r.status_code == 200, r.text
        return r.json()

    def documents(dataset_id):
        ds = client.get(f"/api/v1/datasets/{dataset_id}", headers=auth(key)).json()
        job = _run_job(client, key, dataset_id, "mv")
        report = client.get(f"/api/v1/jobs/{job}/report", headers=auth(key)).json()
        return ds["summary"]["documents"], report["counts"]["documents"], report["counts"]["expert_documents"]

    first = pull()
    assert (first["fetched"], first["removed"], first["tasks"]) == (4, 0, 4)
    assert documents(first["dataset_id"]) == (4, 4, 4)
    gone = _tasks(ls, project)[1]["id"]
    ls.server.api("DELETE", f"/api/tasks/{gone}/")
    second = pull()
    assert (second["fetched"], second["removed"], second["tasks"], second["changed"]) == (0, 1, 3, True)
    assert documents(second["dataset_id"]) == (3, 3, 3)
    third = pull()
    assert (third["fetched"], third["removed"], third["changed"]) == (0, 0, False)


def test_a_pull_after_every_task_was_deleted_empties_the_pulled_uploads(ls, settings, client):
    """Every task of a pulled project deleted in Label Studio: the next pull reads none, removes them all and the
    pulled uploads with them (the dataset is empty), and the one after is "unchanged"; a first pull of the empty
    project into another dataset is refused (422). Its own project: the session's are shared."""
    from tests.label_studio.conftest import CHOICE_CONFIG, CHOICE_TASKS, _choice_result, annotation

    project = ls.server.api("POST", "/api/projects", json={"title": "emptied",
                                                           "label_config": CHOICE_CONFIG}).json()["id"]
    ls.server.api("POST", f"/api/projects/{project}/import", json=[
        {"data": {"text": text}, "annotations": [annotation(e, _choice_result(truth)) for e in CROWD]}
        for text, truth in CHOICE_TASKS[:3]])
    with Session(get_engine(settings)) as s:
        _, key = project_with_key(s, "emptied")

    def pull(dataset="emptied"):
        return client.post("/api/v1/label-studio/pulls", headers=auth(key), json={
            "url": ls.server.url, "token": ls.server.legacy_token, "project": project, "dataset": dataset})

    first = pull().json()
    assert (first["fetched"], first["tasks"], len(first["uploads"])) == (3, 3, 1)
    for task in _tasks(ls, project):
        ls.server.api("DELETE", f"/api/tasks/{task['id']}/")
    assert _tasks(ls, project) == []
    r = pull()
    assert r.status_code == 200, r.text
    second = r.json()
    assert (second["fetched"], second["removed"], second["tasks"], second["changed"], second["uploads"]) == (
        0, 3, 0, True, [])
    uploads = client.get(f"/api/v1/datasets/{first['dataset_id']}/uploads", headers=auth(key)).json()["data"]
    assert uploads == []
    third = pull().json()
    assert (third["fetched"], third["removed"], third["changed"]) == (0, 0, False)
    r = pull("another")
    assert r.status_code == 422 and "has no annotations to pull" in r.json()["detail"]


def test_pull_cut_halfway_leaves_the_dataset_as_it_was(ls, settings, monkeypatch):
    """The connection drops from the second page of a full pull on (the page sent again is lost too): the error is
    one line, and the dataset (its uploads, corpus, summary and the link's cursor) is what it was."""
    monkeypatch.setattr("crowdqa.ingest.label_studio_api.PAGE_SIZE", 2)
    with ls_jobs.LabelStudio(ls.server.url, ls.server.legacy_token) as client, Session(get_engine(settings)) as s:
        ls_jobs.pull(session=s, settings=settings, client=client, ls_project=ls.ner, project_name="default",
                     dataset_name="cut", experts=[EXPERT])
    before = _dataset(settings, "cut")
    real = httpx.HTTPTransport()
    pages = []

    class Cut(httpx.BaseTransport):
        def handle_request(self, request):
            if request.url.path == "/api/tasks":
                pages.append(request.url.params["page"])
                if len(pages) >= 2:
                    raise httpx.ReadError("connection reset by peer")
            return real.handle_request(request)

    with ls_jobs.LabelStudio(ls.server.url, ls.server.legacy_token, transport=Cut()) as client, \
            Session(get_engine(settings)) as s:
        with pytest.raises(ls_jobs.LabelStudioError, match="cannot reach Label Studio .*connection reset"):
            ls_jobs.pull(session=s, settings=settings, client=client, ls_project=ls.ner, project_name="default",
                         dataset_name="cut", experts=["w1@example.com"], full=True)
    assert pages == ["1", "2", "2"]  # the lost page was asked for once more
    after = _dataset(settings, "cut")
    assert (after.corpus_sha256, after.summary, after.n_uploads) == (before.corpus_sha256, before.summary,
                                                                    before.n_uploads)
    with Session(get_engine(settings)) as s:
        link = crud.get_label_studio_link(session=s, dataset_id=after.id)
        assert link.experts == [EXPERT] and len(link.tasks) == 5


def _run_job(client, key, dataset_id, method):
    r = client.post(f"/api/v1/datasets/{dataset_id}/jobs", headers=auth(key), json={"method": method})
    assert r.status_code == 202, r.text
    body = wait_job(client, r.json()["id"], key, timeout=120)
    assert body["status"] == "finished", body
    return body["id"]


@pytest.mark.parametrize("kind", ["ner", "choice"])
def test_pull_aggregate_push_and_read_the_predictions_back(ls, settings, client, capsys, kind):
    """The whole loop: pull, a job, push; Label Studio then holds one prediction per task, named after the method
    and the job, with the aggregate's labels and a confidence score in (0, 1]."""
    with Session(get_engine(settings)) as s:
        _, key = project_with_key(s, "default")
    project = getattr(ls, kind)
    assert _pull(ls, ls.server.personal_token, "--project", str(project), "--dataset", kind,
                 "--expert", EXPERT) == 0
    dataset = _dataset(settings, kind)
    job_id = _run_job(client, key, dataset.id, "ds")
    capsys.readouterr()
    assert main(["label-studio", "push", "--job", job_id]) == 0  # the token kept, sealed, at the pull
    out = capsys.readouterr().out
    version = f"crowdqa-ds-job-{job_id}"
    assert f"predictions written to project {project}" in out and version in out

    tasks = _tasks(ls, project)
    for task in tasks:
        preds = [p for p in task["predictions"] if p["model_version"] == version]
        assert len(preds) == 1, task["predictions"]
        assert 0 < preds[0]["score"] <= 1
    if kind == "choice":
        from tests.label_studio.conftest import CHOICE_TASKS
        got = {t["data"]["text"]: t["predictions"][-1]["result"][0]["value"]["choices"][0] for t in tasks}
        assert got == dict(CHOICE_TASKS)
    else:
        from tests.label_studio.conftest import NER_TASKS
        truth = dict(NER_TASKS)
        for t in tasks:
            pred = next(p for p in t["predictions"] if p["model_version"] == version)
            spans = sorted((r["value"]["start"], r["value"]["end"], r["value"]["labels"][0]) for r in pred["result"])
            assert spans == truth[t["data"]["text"]] or t["data"]["text"].startswith("Nobody"), (t["data"], spans)
        scores = [p["score"] for t in tasks for p in t["predictions"] if p["model_version"] == version]
        assert min(scores) < max(scores)  # tasks the crowd disputed score lower


def test_a_push_again_replaces_and_skips_the_tasks_deleted_since(ls, settings, client, capsys):
    """Pushing a job twice leaves one prediction of it per task, not two (the second replaces the first); a task
    of the job's snapshot deleted in Label Studio since gets none, and the others still get theirs (Label Studio
    refuses a whole import naming a task it no longer holds). Its own project: the session's are shared."""
    project = _choice_project(ls, "pushed twice")
    with Session(get_engine(settings)) as s:
        _, key = project_with_key(s, "default")
    assert _pull(ls, ls.server.legacy_token, "--project", str(project), "--dataset", "pushed twice",
                 "--expert", EXPERT) == 0
    job_id = _run_job(client, key, _dataset(settings, "pushed twice").id, "mv")
    version = f"crowdqa-mv-job-{job_id}"

    def pushed() -> list[int]:
        return sorted(sum(p["model_version"] == version for p in t["predictions"]) for t in _tasks(ls, project))

    for _ in range(2):
        assert main(["label-studio", "push", "--job", job_id]) == 0
        assert pushed() == [1, 1, 1, 1]
    gone = _tasks(ls, project)[0]["id"]
    ls.server.api("DELETE", f"/api/tasks/{gone}/")
    capsys.readouterr()
    assert main(["label-studio", "push", "--job", job_id]) == 0
    out = capsys.readouterr().out
    assert "3 predictions written" in out and "1 task of the job deleted in Label Studio since was skipped" in out
    assert pushed() == [1, 1, 1]
    r = client.post(f"/api/v1/jobs/{job_id}/label-studio", headers=auth(key))
    assert r.status_code == 200 and (r.json()["predictions"], r.json()["skipped"]) == (3, 1), r.text
    assert pushed() == [1, 1, 1]


def test_a_pull_leaving_the_crowd_nothing_is_refused(ls, settings, client, capsys):
    """Label Studio flags every annotation of an import that does not say ``"ground_truth": false`` (its editor
    keeps one flagged annotation a task at most): taking ground truth for expert there leaves the crowd nothing.
    The pull is refused before anything is written (one line saying why, a 422 problem), where it used to make an
    expert-only dataset whose every job failed; naming the expert pulls the same project."""
    from tests.label_studio.conftest import CHOICE_CONFIG, CHOICE_TASKS, _choice_result

    project = ls.server.api("POST", "/api/projects", json={"title": "imported",
                                                           "label_config": CHOICE_CONFIG}).json()["id"]
    ls.server.api("POST", f"/api/projects/{project}/import", json=[
        {"data": {"text": text}, "annotations": [{"completed_by": {"email": e}, "result": _choice_result(truth)}
                                                 for e in (*CROWD, EXPERT)]} for text, truth in CHOICE_TASKS[:3]])
    assert all(a["ground_truth"] for t in _tasks(ls, project) for a in t["annotations"])  # Label Studio's default
    capsys.readouterr()
    assert _pull(ls, ls.server.legacy_token, "--project", str(project), "--dataset", "imported",
                 "--ground-truth") == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("crowdqa: error: ") and "the crowd has none to aggregate" in err[-1], err
    assert "all 12 are flagged ground truth" in err[-1] and "name the experts" in err[-1], err
    assert _dataset(settings, "imported") is None
    with Session(get_engine(settings)) as s:
        _, key = project_with_key(s, "imports")
    r = client.post("/api/v1/label-studio/pulls", headers=auth(key), json={
        "url": ls.server.url, "token": ls.server.legacy_token, "project": project, "ground_truth": True})
    assert r.status_code == 422 and r.headers["content-type"] == "application/problem+json", r.text
    assert "the crowd has none to aggregate" in r.json()["detail"]
    assert _pull(ls, ls.server.legacy_token, "--project", str(project), "--dataset", "imported",
                 "--expert", EXPERT) == 0
    assert _dataset(settings, "imported").summary["annotators"] == {"crowd": 3, "expert": 1}


def test_modern_and_legacy_tokens(ls, settings, capsys):
    """A personal access token works whether legacy tokens are enabled or not; a legacy token works while they
    are enabled and is refused, in one line naming it, once the organization disables them (1.23's default)."""
    try:
        ls.server.set_legacy_tokens(False)
        assert _pull(ls, ls.server.personal_token, "--project", str(ls.choice), "--dataset", "modern") == 0
        capsys.readouterr()
        assert _pull(ls, ls.server.legacy_token, "--project", str(ls.choice), "--dataset", "legacy") == 2
        err = capsys.readouterr().err.strip().splitlines()[-1]
        assert err.startswith("crowdqa: error: ") and "refused the legacy token" in err
        with ls_jobs.LabelStudio(ls.server.url, ls.server.personal_token) as c:
            assert c.project(ls.ner)["id"] == ls.ner
            expired = c._access[:-4] + "AAAA"  # an access token the server no longer takes
            c._access = expired
            assert [t["id"] for t in c.tasks(ls.ner)] and c._access not in (None, expired)  # exchanged again
    finally:
        ls.server.set_legacy_tokens(True)
    assert _pull(ls, ls.server.legacy_token, "--project", str(ls.choice), "--dataset", "legacy") == 0


@pytest.mark.parametrize("case", ["wrong url", "wrong token", "wrong personal token", "no such project",
                                  "polygons"])
def test_errors_are_one_line(ls, settings, capsys, case):
    from tests.utils.services import free_port

    url, token, project = ls.server.url, ls.server.legacy_token, ls.ner
    expected = {"wrong url": "cannot reach Label Studio at http://127.0.0.1:",
                "wrong token": "refused the legacy token",
                "wrong personal token": "refused the personal access token",
                "no such project": "has no project 999",
                "polygons": "no <Labels> or <Choices> on a text, which is what crowdqa reads; it holds "
                            "<Image>, <PolygonLabels>"}[case]
    if case == "wrong url":
        url = f"http://127.0.0.1:{free_port()}"
    elif case == "wrong token":
        token = "0" * 40
    elif case == "wrong personal token":
        token = ls.server.personal_token[:-4] + "AAAA"
    elif case == "no such project":
        project = 999
    else:
        project = ls.polygon
    code = main(["label-studio", "pull", "--url", url, "--token", token, "--project", str(project)])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and err[-1].startswith("crowdqa: error: ") and expected in err[-1], err
    assert not any("Traceback" in line for line in err) and token not in "\n".join(err)
    with Session(get_engine(settings)) as s:
        project_row = crud.find_project(session=s, name="default")
        assert project_row is None or crud.list_datasets(session=s, project_id=project_row.id)[1] == 0


def test_api_pull_and_push_keep_the_token_sealed(ls, settings, client, caplog):
    """Through the API: the pull answers without the token, the database and the log hold it only sealed, the
    push uses the kept token; a wrong token is a 422 problem naming it (and not echoing it)."""
    import logging

    caplog.set_level(logging.DEBUG)
    with Session(get_engine(settings)) as s:
        _, key = project_with_key(s, "api")
    token = ls.server.personal_token
    r = client.post("/api/v1/label-studio/pulls", headers=auth(key), json={
        "url": ls.server.url, "token": token, "project": ls.ner, "dataset": "from the api", "experts": [EXPERT]})
    assert r.status_code == 200, r.text
    body = r.json()
    assert (body["fetched"], body["tasks"], body["kind"], len(body["uploads"])) == (5, 5, "spans", 2)
    assert token not in r.text
    db = (settings.data_dir / "crowdqa.db").read_bytes()
    assert token.encode() not in db and token.split(".")[1].encode() not in db
    job_id = _run_job(client, key, body["dataset_id"], "mv")
    r = client.post(f"/api/v1/jobs/{job_id}/label-studio", headers=auth(key), params={"view": "true"})
    assert r.status_code == 200, r.text
    assert r.json()["predictions"] == 5 and r.json()["model_version"] == f"crowdqa-mv-job-{job_id}"
    view = r.json()["view"]
    views = {v["id"]: v for v in ls.server.api("GET", "/api/dm/views", params={"project": ls.ner}).json()}
    assert views[view]["data"]["ordering"] == ["tasks:predictions_score"]
    listed = ls.server.api("GET", "/api/tasks", params={"project": ls.ner, "view": view, "fields": "all"}).json()
    scores = [t["predictions_score"] for t in listed["tasks"]]
    assert len(scores) == 5 and scores == sorted(scores)  # most disputed first
    assert token not in caplog.text and token.split(".")[1] not in caplog.text

    wrong = token[:-4] + "AAAA"
    r = client.post("/api/v1/label-studio/pulls", headers=auth(key), json={
        "url": ls.server.url, "token": wrong, "project": ls.ner, "dataset": "wrong"})
    assert r.status_code == 422 and r.headers["content-type"] == "application/problem+json"
    assert "refused the personal access token" in r.json()["detail"] and wrong not in r.text
    r = client.post("/api/v1/label-studio/pulls", headers=auth(key), json={
        "url": ls.server.url, "token": token, "project": ls.polygon})
    assert r.status_code == 422 and "<PolygonLabels>" in r.json()["detail"]


def test_dashboard_connects_a_project_and_pushes_a_job(ls, settings, client, caplog):
    """The dashboard's "connect a Label Studio project" form pulls into a dataset (the token a password field,
    never rendered again), the finished job's page offers the push, and a bad token is shown as one message."""
    import logging

    from tests.dashboard.test_pages import sign_in

    caplog.set_level(logging.DEBUG)
    with Session(get_engine(settings)) as s:
        _, key = project_with_key(s, "dash")
    csrf = sign_in(client, key)
    page = client.get("/ui/").text
    assert 'id="label-studio"' in page and 'name="token" type="password"' in page
    token = ls.server.personal_token
    r = client.post("/ui/label-studio", data={"csrf": csrf, "url": ls.server.url, "token": token,
                                              "project": str(ls.choice), "experts": EXPERT},
                    follow_redirects=False)
    assert r.status_code == 303, r.text
    dataset_id = r.headers["location"].split("?")[0].rsplit("/", 1)[1]
    shown = client.get(r.headers["location"]).text
    assert "categorical" in shown and token not in shown
    job_id = _run_job(client, key, dataset_id, "mv")
    job_page = client.get(f"/ui/jobs/{job_id}").text
    assert 'id="label-studio-push"' in job_page
    r = client.post(f"/ui/jobs/{job_id}/label-studio", data={"csrf": csrf}, follow_redirects=False)
    assert r.status_code == 303, r.text
    assert r.headers["location"].endswith(f"/jobs/{job_id}?pushed=6&skipped=0&drafted=0"), r.headers["location"]
    preds = [p for t in _tasks(ls, ls.choice) for p in t["predictions"] if p["model_version"].endswith(job_id)]
    assert len(preds) == 6
    assert token not in caplog.text and token.split(".")[1] not in caplog.text
    shown = client.get(r.headers["location"]).text  # the job's page says what the push wrote
    assert 'id="label-studio-pushed"' in shown and "6 predictions written to Label Studio" in shown
    assert f"crowdqa-mv-job-{job_id}" in shown and "skipped" not in shown
    assert 'id="label-studio-pushed"' not in client.get(f"/ui/jobs/{job_id}").text
    with Session(get_engine(settings)) as s:  # no token kept: the push fails, on the job's page
        link = crud.get_label_studio_link(session=s, dataset_id=dataset_id)
        link.token_sealed = None
        s.add(link)
        s.commit()
    r = client.post(f"/ui/jobs/{job_id}/label-studio", data={"csrf": csrf}, follow_redirects=False)
    assert r.status_code == 422 and "no Label Studio token is kept for this dataset" in r.text
    assert 'id="label-studio-push"' in r.text and 'id="form-error"' in r.text  # the job's page, not the datasets'

    r = client.post("/ui/label-studio", data={"csrf": csrf, "url": ls.server.url, "token": "0" * 40,
                                              "project": str(ls.choice)})
    assert r.status_code == 422 and "refused the legacy token" in r.text and "0" * 40 not in r.text
