"""A Label Studio pull is an upload: it meets every guard an upload meets (crowdqa.jobs.uploads), checked here on a
fake of Label Studio's HTTP API at the httpx transport (the real server's tests, test_pull_push.py, cover the
happy path)."""

from __future__ import annotations

import functools
import json
from pathlib import Path

import httpx
import pytest

from crowdqa.api.cli import main
from crowdqa.ingest.label_studio_api import LabelStudio
from crowdqa.jobs.uploads import UploadLimits
from tests.label_studio.conftest import CHOICE_CONFIG
from tests.utils.factories import auth

URL = "http://label-studio.test:8080"
TOKEN = "0123456789abcdef0123456789abcdef01234567"  # a legacy token: no exchange at /api/token/refresh/
PROJECT = 7
EMAILS = {1: "w1@example.com", 2: "w2@example.com", 3: "w3@example.com", 4: "ex@example.com"}
PROBLEM = "application/problem+json"


def _choice(choice: str, name: str = "sentiment") -> list[dict]:
    return [{"from_name": name, "to_name": "text", "type": "choices", "value": {"choices": [choice]}}]


def choice_tasks(answers: dict[int, dict[int, str]]) -> list[dict]:
    """Tasks of ``GET /api/tasks``: task id -> {user id: choice}."""
    return [{"id": k, "updated_at": f"2026-01-01T00:00:{k:02d}Z", "data": {"text": f"item {k}"},
             "annotations": [{"completed_by": u, "ground_truth": False, "result": _choice(c)}
                             for u, c in by_user.items()]} for k, by_user in answers.items()]


#: Three crowd workers on tasks 1-4.
CROWD = {k: {1: "pos" if k % 2 else "neg", 2: "pos" if k % 2 else "neg", 3: "pos"} for k in range(1, 5)}


class FakeLabelStudio:
    """Label Studio's API as a pull reads it: one project (config, tasks: all, those updated after a time, or only
    their ids with ``include=id``), the members' e-mails; it counts the requests for tasks and for ids.
    ``total_extra`` makes the id listing announce more tasks than it lists."""

    def __init__(self, config: str, tasks: list[dict]) -> None:
        self.config, self.tasks, self.task_reads, self.id_reads, self.total_extra = config, tasks, 0, 0, 0

    def __call__(self, request: httpx.Request) -> httpx.Response:
        path, params = request.url.path, request.url.params
        if path == f"/api/projects/{PROJECT}":
            return httpx.Response(200, json={"id": PROJECT, "title": "fake", "label_config": self.config})
        if path == "/api/users/":
            return httpx.Response(200, json=[{"id": i, "email": e} for i, e in EMAILS.items()])
        if path == "/api/tasks" and params.get("include") == "id":
            self.id_reads += 1
            return httpx.Response(200, json={"tasks": [{"id": t["id"]} for t in self.tasks],
                                             "total": len(self.tasks) + self.total_extra})
        if path == "/api/tasks":
            self.task_reads += 1
            tasks = self.tasks
            if "query" in params:  # the incremental pull's filter: updated_at greater than a time
                (item,) = json.loads(params["query"])["filters"]["items"]
                tasks = [t for t in tasks if t["updated_at"] > item["value"]]
            return httpx.Response(200, json={"tasks": tasks, "total": len(tasks)})
        return httpx.Response(404, json={"detail": "Not found."})


@pytest.fixture
def fake(monkeypatch) -> FakeLabelStudio:
    """The fake server behind every LabelStudio client made during the test (the class itself is patched: a module
    that imported the name keeps the real class once the test is over)."""
    server = FakeLabelStudio(CHOICE_CONFIG, choice_tasks(CROWD))
    monkeypatch.setattr(LabelStudio, "__init__",
                        functools.partialmethod(LabelStudio.__init__, transport=httpx.MockTransport(server)))
    return server


@pytest.fixture
def key(settings):
    from sqlmodel import Session

    from crowdqa.store.db import get_engine
    from tests.utils.factories import project_with_key

    with Session(get_engine(settings)) as s:
        return project_with_key(s, "a")[1]


def _pull(client, key: str, **body):
    return client.post("/api/v1/label-studio/pulls", headers=auth(key),
                       json={"url": URL, "token": TOKEN, "project": PROJECT, "dataset": "ls", **body})


def _datasets(client, key: str) -> list[dict]:
    return client.get("/api/v1/datasets", headers=auth(key)).json()["data"]


def _kept_files(settings) -> list[Path]:
    folder = Path(settings.data_dir) / "uploads"
    return sorted(p for p in folder.rglob("*") if p.is_file()) if folder.exists() else []


def _upload(client, key: str, dataset_id: str, name: str, text: str, role: str):
    return client.post(f"/api/v1/datasets/{dataset_id}/uploads", headers=auth(key),
                       files={"file": (name, text.encode(), "text/csv")}, data={"format": "categorical", "role": role})


def test_experts_matching_no_crowd_task_are_refused_as_an_upload_is(settings, fake, client, key):
    """Issue 30's guard: the expert annotated only tasks no crowd worker did; the pull is refused (422), as
    uploading the same rows is, and leaves neither a dataset nor a file."""
    fake.tasks = choice_tasks({**CROWD, 5: {4: "pos"}, 6: {4: "neg"}})
    r = _pull(client, key, experts=["ex@example.com"])
    assert r.status_code == 422, r.text
    assert r.headers["content-type"] == PROBLEM
    detail = r.json()["detail"]
    assert detail.startswith(f"label-studio-{PROJECT}-expert.csv: none of the dataset's 2 expert documents (items) "
                             "matches a crowd document by id")
    assert _datasets(client, key) == [] and _kept_files(settings) == []
    # The same rows uploaded as files: the same refusal.
    made = client.post("/api/v1/datasets", headers=auth(key), json={"name": "files"}).json()
    crowd = "item,annotator,label\n" + "".join(f"{k},{EMAILS[u]},{c}\n"
                                               for k, by in CROWD.items() for u, c in by.items())
    assert _upload(client, key, made["id"], "crowd.csv", crowd, "crowd").status_code == 201
    r = _upload(client, key, made["id"], f"label-studio-{PROJECT}-expert.csv",
                "item,annotator,label\n5,ex@example.com,pos\n6,ex@example.com,neg\n", "expert")
    assert (r.status_code, r.json()["detail"]) == (422, detail)


def _dataset_with_a_file(client, key, fake) -> dict:
    """A dataset pulled from the fake's pos/neg project, with an expert file uploaded beside the pull."""
    assert _pull(client, key).status_code == 200
    (ds,) = _datasets(client, key)
    truth = "item,annotator,label\n" + "".join(f"{k},expert,{'pos' if k % 2 else 'neg'}\n" for k in CROWD)
    assert _upload(client, key, ds["id"], "truth.csv", truth, "expert").status_code == 201
    # The project's labels change to another scheme: a full pull now conflicts with the uploaded file.
    fake.config = CHOICE_CONFIG.replace('"pos"', '"yes"').replace('"neg"', '"no"')
    fake.tasks = choice_tasks({k: {u: {"pos": "yes", "neg": "no"}[c] for u, c in by.items()}
                               for k, by in CROWD.items()})
    return ds


def _uploads(client, key, dataset_id) -> list[str]:
    return [u["id"] for u in client.get(f"/api/v1/datasets/{dataset_id}/uploads", headers=auth(key)).json()["data"]]


def test_a_pull_of_another_kind_is_the_uploads_conflict(settings, fake, client, key, capsys):
    """Labels sharing no class with the dataset's: the upload's 409 through the API, one line through the command
    line, and the dataset as it was."""
    ds = _dataset_with_a_file(client, key, fake)
    before = _uploads(client, key, ds["id"])
    r = _pull(client, key, full=True)
    assert r.status_code == 409, r.text
    assert r.headers["content-type"] == PROBLEM
    detail = r.json()["detail"]
    assert detail.startswith(f"label-studio-{PROJECT}-crowd.csv: this file's answers (") and "share no label" in detail
    # The same file uploaded is refused with the same status and words.
    rows = "item,annotator,label\n" + "".join(f"{t['id']},w1@example.com,yes\n" for t in fake.tasks)
    up = _upload(client, key, ds["id"], f"label-studio-{PROJECT}-crowd.csv", rows, "crowd")
    assert up.status_code == 409 and up.json()["detail"].split(" (")[0] == detail.split(" (")[0]
    capsys.readouterr()
    code = main(["label-studio", "pull", "--url", URL, "--token", TOKEN, "--project", str(PROJECT), "--dataset", "ls",
                 "--crowdqa-project", "a", "--full"])
    err = capsys.readouterr().err.strip().splitlines()  # (the first line names the data directory)
    assert code == 2 and [line for line in err if "error" in line] == err[-1:] and "Traceback" not in str(err)
    assert err[-1] == f"crowdqa: error: {detail}"
    assert _uploads(client, key, ds["id"]) == before


@pytest.fixture
def one_upload_an_hour(monkeypatch):
    monkeypatch.setenv("CROWDQA_MAX_UPLOADS_PER_HOUR", "1")


def test_a_pull_counts_against_the_upload_rate(one_upload_an_hour, settings, fake, client, key):
    """A pull is an upload request: past CROWDQA_MAX_UPLOADS_PER_HOUR it is refused (429, Retry-After) before a
    task is read, and so is an upload after it."""
    assert settings.max_uploads_per_hour == 1
    assert _pull(client, key).status_code == 200
    reads = fake.task_reads
    r = _pull(client, key, full=True)
    assert r.status_code == 429, r.text
    assert r.headers["content-type"] == PROBLEM and int(r.headers["retry-after"]) > 0
    assert "uploads in the last hour" in r.json()["detail"]
    assert fake.task_reads == reads
    (ds,) = _datasets(client, key)
    assert _upload(client, key, ds["id"], "more.csv", "item,annotator,label\n1,w9,pos\n", "crowd").status_code == 429


def test_a_pull_past_the_file_limit_is_refused(settings, fake, client, key, monkeypatch):
    """The file limit is UploadLimits.file (issue 32: every size limit made in one place), for a pull as for an
    upload: 413, no dataset, no file kept."""
    small = UploadLimits(file=64, request=64 * 1024, texts=256)
    monkeypatch.setattr(UploadLimits, "of", classmethod(lambda cls, settings: small))
    r = _pull(client, key)
    assert r.status_code == 413, r.text
    assert r.headers["content-type"] == PROBLEM
    assert r.json()["detail"] == "the upload exceeds the limit of 64 bytes (CROWDQA_MAX_UPLOAD_BYTES)"
    assert _datasets(client, key) == [] and _kept_files(settings) == []


def _documents(client, key: str) -> int:
    (ds,) = _datasets(client, key)
    return ds["summary"]["documents"]


def test_an_incremental_pull_drops_the_tasks_deleted_in_label_studio(settings, fake, client, key, capsys):
    """A task deleted in Label Studio leaves the dataset at the next (incremental) pull, which lists the
    project's task ids besides reading the tasks changed since; the API and the command line say how many went,
    and a pull with nothing changed and nothing deleted is still "unchanged"."""
    assert _pull(client, key).json()["fetched"] == 4 and _documents(client, key) == 4
    fake.tasks = [t for t in fake.tasks if t["id"] != 2]
    r = _pull(client, key)
    assert r.status_code == 200, r.text
    body = r.json()
    assert (body["fetched"], body["removed"], body["tasks"], body["changed"]) == (0, 1, 3, True)
    assert _documents(client, key) == 3
    # Task 3 deleted and task 4 changed: the command line says both.
    fake.tasks = [t for t in fake.tasks if t["id"] != 3]
    fake.tasks[-1] = {**fake.tasks[-1], "updated_at": "2026-01-02T00:00:00Z"}
    capsys.readouterr()
    assert main(["label-studio", "pull", "--url", URL, "--token", TOKEN, "--project", str(PROJECT), "--dataset",
                 "ls", "--crowdqa-project", "a"]) == 0
    assert ("1 tasks read (changed since the last pull), 1 removed (deleted in Label Studio), 2 held, choices"
            in capsys.readouterr().out)
    assert _documents(client, key) == 2
    reads = fake.id_reads
    body = _pull(client, key).json()
    assert (body["fetched"], body["removed"], body["tasks"], body["changed"]) == (0, 0, 2, False)
    assert fake.id_reads == reads + 1


def test_an_id_listing_short_of_its_total_deletes_nothing(settings, fake, client, key):
    """Label Studio lists fewer ids than the total it announces (tasks changing while it is read): the pull is
    refused (422, one line) and the dataset keeps its tasks; it is never taken for a deletion."""
    assert _pull(client, key).status_code == 200
    fake.tasks, fake.total_extra = fake.tasks[:2], 2
    r = _pull(client, key)
    assert r.status_code == 422, r.text
    assert r.headers["content-type"] == PROBLEM
    assert r.json()["detail"] == (f"{URL} listed 2 task ids of project {PROJECT}, not the 4 it announced (were "
                                  "tasks added or deleted meanwhile?): pull again")
    assert _documents(client, key) == 4


def _sizes(client, key, dataset_id) -> list[int]:
    return [u["size"] for u in client.get(f"/api/v1/datasets/{dataset_id}/uploads", headers=auth(key)).json()["data"]]


def _kept_bytes(client, key, dataset_id) -> int:
    return sum(_sizes(client, key, dataset_id))


#: The crowd of CROWD and an expert (user 4) on every task: a pull of two uploads.
WITH_EXPERT = {k: {**by, 4: "pos" if k % 2 else "neg"} for k, by in CROWD.items()}


def _at_the_limit(settings, fake, client, key, monkeypatch, slack: int = 0, **pull) -> dict:
    """A dataset pulled from the fake, and CROWDQA_MAX_PROJECT_BYTES set to the bytes it keeps (plus ``slack``)."""
    assert _pull(client, key, **pull).status_code == 200
    (ds,) = _datasets(client, key)
    monkeypatch.setattr(settings, "max_project_bytes", _kept_bytes(client, key, ds["id"]) + slack)
    return ds


@pytest.mark.parametrize("slack", [0, 10])
@pytest.mark.parametrize("experts", [[], ["ex@example.com"]])
def test_a_refresh_at_the_bytes_limit_counts_the_uploads_it_replaces_as_freed(settings, fake, client, key,
                                                                              monkeypatch, slack, experts):
    """The project keeps CROWDQA_MAX_PROJECT_BYTES (or 10 bytes less), all of them this pull's uploads (one, or a
    crowd and an expert one): a re-pull whose new uploads replace them and fit is allowed (the old bytes are freed
    by the swap), through an incremental and a full pull alike; the new uploads keep the project in its limit."""
    if experts:
        fake.tasks = choice_tasks(WITH_EXPERT)
    ds = _at_the_limit(settings, fake, client, key, monkeypatch, slack, experts=experts)
    assert len(_uploads(client, key, ds["id"])) == 1 + len(experts)
    before = _uploads(client, key, ds["id"])
    fake.tasks[0] = {**fake.tasks[0], "updated_at": "2026-01-02T00:00:00Z",
                     "annotations": [{**a, "result": _choice("neg")} for a in fake.tasks[0]["annotations"]]}
    r = _pull(client, key)
    assert r.status_code == 200, r.text
    assert (r.json()["fetched"], r.json()["changed"]) == (1, True)
    after = _uploads(client, key, ds["id"])
    assert after != before and _kept_bytes(client, key, ds["id"]) <= settings.max_project_bytes
    r = _pull(client, key, full=True)
    assert r.status_code == 200, r.text


def test_a_refresh_past_the_bytes_limit_is_refused_and_keeps_the_dataset(settings, fake, client, key, monkeypatch):
    """At the limit, a re-pull whose new uploads would not fit even with the old ones freed is refused (429, as
    now), and the dataset keeps its uploads and files; a file upload at the limit is refused as before."""
    ds = _at_the_limit(settings, fake, client, key, monkeypatch)
    before, files = _uploads(client, key, ds["id"]), _kept_files(settings)
    fake.tasks = choice_tasks({**CROWD, 5: {1: "pos", 2: "pos", 3: "neg"}})  # a task more: more bytes
    r = _pull(client, key, full=True)
    assert r.status_code == 429, r.text
    assert r.headers["content-type"] == PROBLEM and "CROWDQA_MAX_PROJECT_BYTES" in r.json()["detail"]
    assert _uploads(client, key, ds["id"]) == before and _kept_files(settings) == files
    r = _upload(client, key, ds["id"], "more.csv", "item,annotator,label\n1,w9,pos\n", "crowd")
    assert r.status_code == 429 and "CROWDQA_MAX_PROJECT_BYTES" in r.json()["detail"]


def test_the_files_of_one_pull_count_together_against_the_bytes_limit(settings, fake, client, key, monkeypatch):
    """A pull of a crowd and an expert upload whose files fit the limit one by one but not together is refused
    (429): each file's check counts the files the pull stored before it. Nothing is kept."""
    fake.tasks = choice_tasks(WITH_EXPERT)
    assert _pull(client, key, dataset="probe", experts=["ex@example.com"]).status_code == 200
    (probe,) = _datasets(client, key)
    sizes = _sizes(client, key, probe["id"])
    assert client.delete(f"/api/v1/datasets/{probe['id']}", headers=auth(key)).status_code == 204
    monkeypatch.setattr(settings, "max_project_bytes", sum(sizes) - 1)
    assert max(sizes) <= settings.max_project_bytes
    r = _pull(client, key, experts=["ex@example.com"])
    assert r.status_code == 429, r.text
    assert "CROWDQA_MAX_PROJECT_BYTES" in r.json()["detail"]
    assert _datasets(client, key) == []
    monkeypatch.setattr(settings, "max_project_bytes", sum(sizes))
    assert _pull(client, key, experts=["ex@example.com"]).status_code == 200


def test_a_pull_after_every_task_was_deleted_removes_the_pulled_uploads(settings, fake, client, key, capsys):
    """Every task of a linked project deleted in Label Studio: the pull removes the pulled upload ("0 read, 4
    removed", 0 held) and keeps the file uploaded beside it; the next pull is "unchanged", and tasks made again
    are pulled again."""
    assert _pull(client, key).status_code == 200
    (ds,) = _datasets(client, key)
    truth = "item,annotator,label\n" + "".join(f"{k},expert,{'pos' if k % 2 else 'neg'}\n" for k in CROWD)
    up = _upload(client, key, ds["id"], "truth.csv", truth, "expert")
    assert up.status_code == 201, up.text
    pulled = [u for u in _uploads(client, key, ds["id"]) if u != up.json()["id"]]
    assert len(pulled) == 1
    fake.tasks = []
    capsys.readouterr()
    assert main(["label-studio", "pull", "--url", URL, "--token", TOKEN, "--project", str(PROJECT), "--dataset",
                 "ls", "--crowdqa-project", "a"]) == 0
    out = capsys.readouterr().out
    assert "0 tasks read (changed since the last pull), 4 removed (deleted in Label Studio), 0 held" in out
    assert f"no annotation left in project {PROJECT}" in out
    assert _uploads(client, key, ds["id"]) == [up.json()["id"]]
    (after,) = _datasets(client, key)
    assert after["summary"]["documents"] == 4 and after["summary"]["annotators"]["crowd"] == 0
    body = _pull(client, key).json()
    assert (body["fetched"], body["removed"], body["tasks"], body["changed"]) == (0, 0, 0, False)
    fake.tasks = [{**t, "id": t["id"] + 10, "updated_at": "2026-01-03T00:00:00Z"} for t in choice_tasks(CROWD)]
    body = _pull(client, key).json()
    assert (body["fetched"], body["removed"], body["tasks"], body["changed"]) == (4, 0, 4, True)
    assert len(body["uploads"]) == 1 and len(_uploads(client, key, ds["id"])) == 2


def test_a_pull_after_every_annotation_was_deleted_empties_the_dataset(settings, fake, client, key):
    """The tasks stay but their annotations are deleted (Label Studio moves their ``updated_at``): the pull reads
    them, keeps no upload, and the dataset is empty; through the API, one 200."""
    assert _pull(client, key).status_code == 200
    (ds,) = _datasets(client, key)
    fake.tasks = [{**t, "updated_at": "2026-01-02T00:00:00Z", "annotations": []} for t in fake.tasks]
    r = _pull(client, key)
    assert r.status_code == 200, r.text
    body = r.json()
    assert (body["fetched"], body["removed"], body["tasks"], body["changed"], body["uploads"]) == (4, 0, 4, True, [])
    assert _uploads(client, key, ds["id"]) == []
    (after,) = _datasets(client, key)
    assert after["summary"] is None


def test_a_first_pull_of_an_empty_project_is_refused(settings, fake, client, key):
    """Nothing to make a dataset of: 422, one line, no dataset and no file."""
    fake.tasks = []
    r = _pull(client, key)
    assert r.status_code == 422, r.text
    assert r.headers["content-type"] == PROBLEM
    assert f"project {PROJECT} has no annotations to pull" in r.json()["detail"]
    assert _datasets(client, key) == [] and _kept_files(settings) == []


def _stored_files(settings) -> set[Path]:
    """Every file of the data directory but the database's (uploads, corpora, indexes, snapshots, ...)."""
    root = Path(settings.data_dir)
    return {p for p in root.rglob("*") if p.is_file() and not p.name.startswith("crowdqa.")
            and p.suffix not in (".db", ".sqlite", ".lock")}


def _pulls_refused(settings, fake, client, key, monkeypatch):
    """Four refused re-pulls of a dataset pulled with a crowd and an expert upload: past the bytes limit by its
    second file (429), past the file limit (413), labels of another kind (409), experts matching no crowd task
    (422); each yields (status, the files it left)."""
    fake.tasks = choice_tasks(WITH_EXPERT)
    assert _pull(client, key, experts=["ex@example.com"]).status_code == 200
    (ds,) = _datasets(client, key)
    kept = _kept_bytes(client, key, ds["id"])
    bigger = choice_tasks({**WITH_EXPERT, 5: {1: "pos", 2: "neg", 3: "pos", 4: "pos"}})

    def refused(expected: int, tasks: list[dict], **body) -> set[Path]:
        before = _stored_files(settings)
        fake.tasks = tasks
        r = _pull(client, key, experts=["ex@example.com"], full=True, **body)
        assert r.status_code == expected, r.text
        return _stored_files(settings) - before

    monkeypatch.setattr(settings, "max_project_bytes", kept + 5)  # the crowd file of 5 tasks fits, not both
    yield 429, refused(429, bigger)
    monkeypatch.setattr(settings, "max_project_bytes", 10**9)
    small = UploadLimits(file=max(_sizes(client, key, ds["id"])) + 1, request=10**6, texts=10**6)
    limits = UploadLimits.__dict__["of"]
    monkeypatch.setattr(UploadLimits, "of", classmethod(lambda cls, settings: small))
    yield 413, refused(413, bigger)
    monkeypatch.setattr(UploadLimits, "of", limits)
    fake.config = CHOICE_CONFIG.replace('"pos"', '"yes"').replace('"neg"', '"no"')
    truth = "item,annotator,label\n" + "".join(f"{k},expert,pos\n" for k in CROWD)
    assert _upload(client, key, ds["id"], "truth.csv", truth, "expert").status_code == 201
    yield 409, refused(409, choice_tasks({k: {u: {"pos": "yes", "neg": "no"}[c] for u, c in by.items()}
                                          for k, by in WITH_EXPERT.items()}))
    fake.config = CHOICE_CONFIG
    yield 422, refused(422, choice_tasks({**CROWD, 15: {4: "pos"}, 16: {4: "neg"}}), dataset="other")


def test_a_refused_pull_leaves_nothing_new_on_disk(settings, fake, client, key, monkeypatch):
    """A pull is checked (sizes, the bytes the project keeps) before a file of it is stored, and a pull refused
    later (its labels do not merge) removes what it stored: whatever refused it, no file is new on disk."""
    seen = [(status, sorted(p.relative_to(settings.data_dir).as_posix() for p in left))
            for status, left in _pulls_refused(settings, fake, client, key, monkeypatch)]
    assert seen == [(429, []), (413, []), (409, []), (422, [])]


def test_an_expert_who_annotated_nothing_is_noted(settings, fake, client, key, capsys):
    """An expert named by a misspelt e-mail (or a user id no annotation has) matches no annotator: the pull goes
    on, the annotator meant for the expert staying crowd as before, and says so (the API's ``notes``, a ``note:``
    line of the command) with the project's annotators, where it used to say nothing."""
    fake.tasks = choice_tasks({k: {**by, 4: by[1]} for k, by in CROWD.items()})
    r = _pull(client, key, experts=["ex@exmaple.com", "4"])
    assert r.status_code == 200, r.text
    assert r.json()["notes"] == ["expert 'ex@exmaple.com' annotated none of the project's tasks (its annotators: "
                                 "ex@example.com, w1@example.com, w2@example.com, w3@example.com)"]
    capsys.readouterr()
    assert main(["label-studio", "pull", "--url", URL, "--token", TOKEN, "--project", str(PROJECT), "--dataset",
                 "cli", "--expert", "ex@exmaple.com"]) == 0
    err = capsys.readouterr().err
    assert "crowdqa: note: expert 'ex@exmaple.com' annotated none of the project's tasks" in err, err
