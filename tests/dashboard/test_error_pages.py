"""Errors at a dashboard address are HTML pages in the dashboard's style; every API path keeps problem+json.
And the worker and document pages' breadcrumb names the dataset."""

from __future__ import annotations

import logging
import re

from crowdqa.store import crud
from tests.dashboard.test_pages import finished_job, sign_in
from tests.utils.factories import auth

PROBLEM = "application/problem+json"


def _is_page(r, status: int) -> str:
    assert r.status_code == status, r.text
    assert r.headers["content-type"].startswith("text/html")
    assert "default-src 'none'" in r.headers["content-security-policy"]
    assert 'href="/ui/static/dashboard.css"' in r.text and 'href="/ui/" id="home"' in r.text
    return r.text


def test_a_mistyped_dashboard_address_is_a_page_and_an_api_one_a_problem(client, keys):
    """404 at /ui/...: "No such page", the address, a link home (signed in or not); a method the page does not
    serve: a 405 page that keeps Allow; a bad query: a 422 page naming it. The same at /api/v1: problem+json."""
    for signed_in in (False, True):
        if signed_in:
            sign_in(client, keys["a"])
        text = _is_page(client.get("/ui/datsets/x"), 404)
        assert "<h1>No such page</h1>" in text and "<code>/ui/datsets/x</code>" in text
    page = client.put("/ui/signin")
    assert "<h1>405 Method Not Allowed</h1>" in _is_page(page, 405) and "GET" in page.headers["allow"]
    text = _is_page(client.get("/ui/jobs/x?offset=-1"), 422)
    assert "<h1>422 Unprocessable Content</h1>" in text or "<h1>422 Unprocessable Entity</h1>" in text
    assert "offset" in text
    # A page's own 404 (a dataset of no project of this session) keeps its words.
    assert "no such dataset" in _is_page(client.get("/ui/datasets/nope"), 404).lower()
    for r in (client.get("/api/v1/datsets", headers=auth(keys["a"])), client.get("/api/v1/jobs/x?limit=-1"),
              client.put("/api/v1/datasets", headers=auth(keys["a"]))):
        assert r.status_code in (401, 404, 405, 422) and r.headers["content-type"] == PROBLEM, r.text
        assert r.json()["status"] == r.status_code


def test_an_unexpected_error_is_a_page_with_the_request_id_the_log_names(client, keys, monkeypatch, caplog):
    """A dashboard page that raises: a 500 page with an apology and the request id, the traceback logged once
    with that id; the same error at an API path is still the problem+json 500."""
    sign_in(client, keys["a"])

    def broken(**_):
        raise RuntimeError("kaboom")

    monkeypatch.setattr(crud, "list_datasets", broken)
    with caplog.at_level(logging.ERROR):
        text = _is_page(client.get("/ui/"), 500)
    assert "Sorry, something went wrong" in text and "kaboom" not in text
    request_id = re.search(r'<code id="request-id">([0-9a-f]{12})</code>', text).group(1)
    logged = [rec for rec in caplog.records if rec.exc_info and "kaboom" in str(rec.exc_info[1])]
    assert len(logged) == 1 and f"request id {request_id}" in logged[0].getMessage()
    r = client.get("/api/v1/datasets", headers=auth(keys["a"]))
    assert r.status_code == 500 and r.headers["content-type"] == PROBLEM
    assert r.json()["detail"] == "internal error; the server log has the details"


def test_worker_and_document_pages_name_the_dataset_in_their_breadcrumb(client, keys):
    """Datasets / <the dataset> / job <id> /, each a link."""
    dataset, job_url, job_id = finished_job(client, keys["a"])
    worker = client.get(f"/api/v1/jobs/{job_id}/report", headers=auth(keys["a"])).json()["workers"][0]["annotator"]
    crumbs = (f'<p class="crumbs" id="crumbs"><a href="/ui/">Datasets</a> / <a href="/ui/datasets/{dataset}">sample'
              f'</a> / <a href="/ui/jobs/{job_id}">job {job_id[:8]}</a> /</p>')
    for page in (f"{job_url}/worker?id={worker}", f"{job_url}/documents/0"):
        r = client.get(page)
        assert r.status_code == 200 and crumbs in r.text, page
