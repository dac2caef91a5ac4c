"""A new batch from an earlier job's model through the dashboard's job form, in a real browser.

Oracle: the API's own view of what the form started (the job's ``from_job`` and ``frozen``, and the report's
``fit.start``), and the API's 422 message for a model of another method, shown on the page.
"""

from __future__ import annotations

import httpx

from tests.api.test_batches import _halves
from tests.dashboard.conftest import sign_in
from tests.dashboard.test_browser import SAMPLE, _new_dataset, _run_job, _upload


def test_start_a_new_batch_from_an_earlier_job_frozen(server, page_of, tmp_path):
    one, two = _halves(tmp_path)
    api = {"Authorization": f"Bearer {server.keys['a']}"}
    w = page_of()
    page = w.page
    sign_in(w, server, "a")
    _new_dataset(page, "batch 1")
    _upload(page, one, "crowd")
    assert page.locator("#from-job option").count() == 1  # nothing to start from yet: "none" only
    first = _run_job(page, "ds")

    page.goto(server.url + "/ui/")
    second_ds = _new_dataset(page, "batch 2")
    _upload(page, two, "crowd")
    _upload(page, SAMPLE / "expert.jsonl", "expert")
    offered = page.locator("#from-job option").evaluate_all("els => els.map(e => [e.value, e.textContent])")
    assert [v for v, _ in offered] == ["", first] and "ds · batch 1" in offered[1][1]
    w.shot("new-batch-form")

    # A model starts only its own method: the page says why, keeps the choices, and starts nothing.
    page.select_option("#method", "hmm-crowd")
    page.select_option("#from-job", first)
    page.check("#frozen")
    page.click("#job-form button[type=submit]")
    page.wait_for_selector("#form-error")
    assert f"from_job: job {first} was fitted by ds" in page.inner_text("#form-error")
    assert page.input_value("#from-job") == first and page.is_checked("#frozen")
    jobs = httpx.get(f"{server.url}/api/v1/datasets/{second_ds}/jobs", headers=api).json()
    assert jobs["count"] == 0

    page.select_option("#method", "ds")
    page.click("#job-form button[type=submit]")
    page.wait_for_selector("#report, #failure", timeout=90_000)
    job = page.url.split("/jobs/", 1)[1].split("?")[0]
    assert "frozen" in page.inner_text("#started-from")
    assert page.locator(f"#started-from a[href='/ui/jobs/{first}']").count() == 1
    w.shot("new-batch-job")
    row = httpx.get(f"{server.url}/api/v1/jobs/{job}", headers=api).json()
    assert row["status"] == "finished" and row["from_job"] == first and row["frozen"] is True
    start = httpx.get(f"{server.url}/api/v1/jobs/{job}/report", headers=api).json()["fit"]["start"]
    assert start["mode"] == "frozen" and start["workers_seen_before"] == 10
    # The refused form came back as a 422 page (the browser logs its status); nothing else went wrong.
    assert w.errors == ["Failed to load resource: the server responded with a status of 422 (Unprocessable Entity)"]
    assert w.dialogs == []
