"""The routing page in a real browser: from a finished job's report to the ranked list and its downloads."""

from __future__ import annotations

import csv
import io

import httpx

from tests.dashboard.conftest import sign_in
from tests.dashboard.test_browser import SAMPLE, _new_dataset, _run_job, _upload


def test_route_the_next_documents_from_a_finished_job(server, page_of):
    w = page_of()
    page = w.page
    sign_in(w, server, "a")
    _new_dataset(page, "routing")
    _upload(page, SAMPLE / "crowd.jsonl", "crowd")
    _upload(page, SAMPLE / "expert.jsonl", "expert")
    job_id = _run_job(page, "ds")
    page.click("#routing-link")
    page.wait_for_selector("#routing")
    api = httpx.get(f"{server.url}/api/v1/jobs/{job_id}/routing?budget=20",
                    headers={"Authorization": f"Bearer {server.keys['a']}"}).json()
    shown = [a.inner_text() for a in page.locator("#routing a.doc-link").all()]
    assert shown == [row["doc_id"] for row in api["data"]] and len(shown) == 20  # every candidate, API's order
    assert page.inner_text("#crumbs") == f"Datasets / routing / job {job_id[:8]} /"
    w.shot("routing")

    page.fill("#routing-form input[name=budget]", "5")
    page.click("#routing-form button[type=submit]")
    page.wait_for_selector("#routing")
    assert page.locator("#routing tbody tr").count() == 5
    hrefs = page.locator("#routing-downloads a").evaluate_all("els => els.map(e => e.getAttribute('href'))")
    assert len(hrefs) == 4
    for href in hrefs:
        assert page.request.get(server.url + href).status == 200, href
    task_csv = page.request.get(server.url + hrefs[0]).text()
    assert [r["doc_id"] for r in csv.DictReader(io.StringIO(task_csv))] == shown[:5]
    page.locator("#routing a.doc-link").first.click()
    page.wait_for_selector("#viewer")
    assert page.inner_text("#doc-name") == shown[0]

    page.goto(f"{server.url}/ui/jobs/{job_id}/routing?budget=0")
    assert "budget must be a whole number of documents" in page.content()
    page.goto(f"{server.url}/ui/jobs/{job_id}/routing?budget=2.5")
    assert "budget must be a whole number of documents" in page.content()
    assert w.errors == [] or all("422" in e for e in w.errors)
    assert w.dialogs == []
