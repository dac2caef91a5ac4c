"""Errors at a dashboard address are HTML pages in the dashboard's style, the request gate's refusals too; every
API path keeps problem+json. And the job pages' breadcrumb names the dataset."""

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


def test_the_job_pages_name_the_dataset_in_their_breadcrumb(client, keys):
    """Datasets / <the dataset> / job <id> /, each a link: the worker, document, review and routing pages (the
    review and routing pages skipped the dataset)."""
    dataset, job_url, job_id = finished_job(client, keys["a"])
    worker = client.get(f"/api/v1/jobs/{job_id}/report", headers=auth(keys["a"])).json()["workers"][0]["annotator"]
    crumbs = (f'<p class="crumbs" id="crumbs"><a href="/ui/">Datasets</a> / <a href="/ui/datasets/{dataset}">sample'
              f'</a> / <a href="/ui/jobs/{job_id}">job {job_id[:8]}</a> /</p>')
    for page in (f"{job_url}/worker?id={worker}", f"{job_url}/documents/0", f"{job_url}/review",
                 f"{job_url}/routing"):
        r = client.get(page)
        assert r.status_code == 200 and crumbs in r.text, page


def test_the_gate_refuses_a_dashboard_address_with_a_page(client, keys, monkeypatch):
    """The request gate answers before the app's handlers: a ``Content-Length`` over the limit at /ui (an upload,
    or a form that is not one) is a 413 page naming the limit; the same at /api/v1 is problem+json, as are the
    gate's 401s there. A body cut off past the limit (no ``Content-Length``) reaches the app's handlers: a page
    too. A /ui form posted without a session is sent to sign in (the gate answers /ui no 401)."""
    from crowdqa.jobs import uploads

    small = uploads.UploadLimits(file=1000, request=1000 + uploads.FORM_OVERHEAD, texts=4000)
    monkeypatch.setattr(uploads.UploadLimits, "of", classmethod(lambda cls, settings: small))
    key = keys["a"]
    ds = client.post("/api/v1/datasets", headers=auth(key), json={"name": "d"}).json()["id"]
    r = client.post(f"/ui/datasets/{ds}/jobs", content=b"x", headers={"Content-Type": "text/plain"},
                    follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"] == "/ui/signin"
    csrf = sign_in(client, key)
    form = {"Content-Type": "multipart/form-data; boundary=b"}
    text = _is_page(client.post(f"/ui/datasets/{ds}/uploads", headers=form, content=b"x" * (small.request + 1)), 413)
    assert "<h1>413 Content Too Large</h1>" in text or "<h1>413 Request Entity Too Large</h1>" in text
    assert "the upload exceeds the limit of 1000 bytes (CROWDQA_MAX_UPLOAD_BYTES)" in text
    big = b"csrf=" + csrf.encode() + b"&name=" + b"x" * (1 << 20)
    text = _is_page(client.post("/ui/datasets", content=big,
                                headers={"Content-Type": "application/x-www-form-urlencoded"}), 413)
    assert "the request body exceeds the limit of 1048576 bytes (CROWDQA_MAX_BODY_BYTES)" in text
    text = _is_page(client.post(f"/ui/datasets/{ds}/uploads", headers=form,
                                content=iter([b"x" * 4096] * (small.request // 4096 + 2))), 413)
    assert "exceeds the limit of 1000 bytes" in text
    r = client.post(f"/api/v1/datasets/{ds}/uploads", headers={**auth(key), **form}, content=b"x" * (small.request + 1))
    assert r.status_code == 413 and r.headers["content-type"] == PROBLEM
    assert r.json()["detail"] == "the upload exceeds the limit of 1000 bytes (CROWDQA_MAX_UPLOAD_BYTES)"
    r = client.post(f"/api/v1/datasets/{ds}/uploads", headers={"Authorization": "Bearer nope", **form}, content=b"x")
    assert r.status_code == 401 and r.headers["content-type"] == PROBLEM
    assert client.get(f"/api/v1/datasets/{ds}", headers=auth(key)).json()["n_uploads"] == 0
