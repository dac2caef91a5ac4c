"""Pre-annotation through the dashboard, in a real browser: the job page of a finished hmm-crowd-tagger job takes a
file of documents without labels, lists the pre-annotation while the queue labels it, and offers its labels.

Oracle: the API's own labels of the same pre-annotation (``GET /api/v1/predictions/{id}/labels``), which
tests/api/test_predictions.py checks against ``crowdqa aggregate --from-model --predict``; and a job of a method that
cannot pre-annotate shows no form.
"""

from __future__ import annotations

import json

import httpx

from tests.dashboard.conftest import sign_in
from tests.dashboard.test_browser import SAMPLE, _new_dataset, _run_job, _upload


def test_pre_annotate_documents_from_the_job_page(server, page_of, tmp_path):
    api = {"Authorization": f"Bearer {server.keys['a']}"}
    texts = [json.loads(line) for line in (SAMPLE / "expert.jsonl").read_text().splitlines()]
    docs = tmp_path / "next-batch.conll"
    docs.write_text("\n\n".join("\n".join(t["text"].split()) for t in texts) + "\n")
    w = page_of()
    page = w.page
    sign_in(w, server, "a")
    _new_dataset(page, "pre-annotation")
    _upload(page, SAMPLE / "crowd.jsonl", "crowd")
    mv = _run_job(page, "mv")
    assert page.locator("#pre-annotation").count() == 0  # majority vote's model reads no text
    dataset = httpx.get(f"{server.url}/api/v1/jobs/{mv}", headers=api).json()["dataset_id"]
    page.goto(server.url + f"/ui/datasets/{dataset}")
    job = _run_job(page, "hmm-crowd-tagger")
    page.wait_for_selector("#pre-annotation-form")

    # A file that holds no document: the page says so, and nothing is queued.
    empty = tmp_path / "empty.conll"
    empty.write_text("\n\n")
    page.set_input_files("#pre-annotation-form input[name=file]", str(empty))
    page.select_option("#pre-annotation-format", "conll")
    page.click("#pre-annotation-form button[type=submit]")
    page.wait_for_selector("#form-error")
    assert "pre-annotation refused: empty.conll: no sentences found" in page.inner_text("#form-error")
    assert httpx.get(f"{server.url}/api/v1/jobs/{job}/predictions", headers=api).json()["count"] == 0

    page.goto(server.url + f"/ui/jobs/{job}")
    page.set_input_files("#pre-annotation-form input[name=file]", str(docs))
    page.select_option("#pre-annotation-format", "conll")
    page.click("#pre-annotation-form button[type=submit]")
    page.wait_for_selector("#predictions a.prediction-download", timeout=60_000)  # the page reloads when done
    w.shot("pre-annotation")
    listed = httpx.get(f"{server.url}/api/v1/jobs/{job}/predictions", headers=api).json()
    assert listed["count"] == 1 and listed["data"][0]["status"] == "finished"
    prediction = listed["data"][0]["id"]
    row = page.locator(f"#predictions tr[data-prediction='{prediction}']")
    assert row.locator("td").nth(1).inner_text() == "20" and "finished" in row.inner_text()
    formats = row.locator("a.prediction-download").evaluate_all("els => els.map(e => e.dataset.format)")
    assert "spans-jsonl" in formats and "conll" in formats
    with page.expect_download() as caught:
        row.locator("a.prediction-download[data-format='spans-jsonl']").click()
    downloaded = caught.value
    got = open(downloaded.path(), encoding="utf-8").read()
    expected = httpx.get(f"{server.url}/api/v1/predictions/{prediction}/labels?format=spans-jsonl", headers=api).text
    assert got == expected and got.count("\n") > 0
    assert downloaded.suggested_filename == f"{prediction}-predictions.jsonl"
    # The refused form came back as a 422 page (the browser logs its status); nothing else went wrong.
    assert w.errors == ["Failed to load resource: the server responded with a status of 422 (Unprocessable Entity)"]
    assert w.dialogs == []
