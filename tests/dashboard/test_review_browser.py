"""The review page and the block list in a real browser against ``crowdqa serve`` (screenshots kept)."""

from __future__ import annotations

import httpx

from tests.dashboard.conftest import sign_in
from tests.jobs.review_data import batch_bytes, batch_rows


def test_review_a_batch_download_it_and_block_the_spammer(server, page_of, tmp_path):
    batch = tmp_path / "Batch_9_batch_results.csv"
    batch.write_bytes(batch_bytes(batch_rows()))
    w = page_of()
    page = w.page
    sign_in(w, server, "a")
    page.fill("#create-dataset input[name=name]", "batch 9")
    page.click("#create-dataset button[type=submit]")
    page.wait_for_selector("#upload-form")
    page.set_input_files("#upload-form input[name=file]", str(batch))
    page.select_option("#format", "mturk-csv")
    page.click("#upload-form button[type=submit]")
    page.wait_for_load_state()
    page.select_option("#method", "ds")
    page.click("#job-form button[type=submit]")
    page.wait_for_selector("#report", timeout=90_000)
    job = page.url.split("/jobs/", 1)[1].split("?")[0]
    page.click("#review-link")
    page.wait_for_selector("#review-form")
    page.fill("#review-form input[name=reject_below]", "0.5")
    page.fill("#review-form input[name=bonus]", "0.50")
    page.fill("#review-form input[name=bonus_above]", "0.9")
    page.click("#review-form button[type=submit]")
    page.wait_for_selector("#review-summary")
    assert "24 rejected" in " ".join(page.inner_text("#review-counts").split())
    assert page.locator("#review-decisions tbody tr.verdict-reject").count() == 2
    w.shot("review")
    with page.expect_download() as info:
        page.click("#download-reviewed")
    reviewed = info.value.path().read_bytes()
    api = httpx.post(f"{server.url}/api/v1/jobs/{job}/review/batch",
                     headers={"Authorization": f"Bearer {server.keys['a']}"},
                     json={"reject_below": 0.5, "bonus": "0.50", "bonus_above": 0.9})
    assert reviewed == api.content and reviewed.startswith(b"\xef\xbb\xbf")
    # Block the spammer from its row; the page comes back with it marked, and the block list has it.
    page.locator("#review-decisions tr", has_text="ASPAM5").locator("button").click()
    page.wait_for_selector("#review-summary")
    assert "blocked" in page.locator("#review-decisions tr", has_text="ASPAM5").inner_text()
    page.click("header nav a[href='/ui/blocked']")
    page.wait_for_selector("#blocked")
    assert "mturk:ASPAM5" in page.inner_text("#blocked")
    w.shot("blocked")
    assert w.errors == [] and w.dialogs == []
