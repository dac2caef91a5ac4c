"""The comparison page in a real browser: a compare job's table, forest plot and recommendation, and the button
that starts the recommended method's job (issue 29 item 5)."""

from __future__ import annotations

import httpx

from tests.dashboard.test_browser import _sample_dataset


def test_compare_then_start_the_recommended_method(server, page_of):
    w = page_of()
    page = w.page
    _sample_dataset(w, server, "compare")
    page.select_option("#method", "compare")
    page.click("#job-form button[type=submit]")
    page.wait_for_selector("#progress, #comparison")  # the running job's page, then the finished one's
    page.wait_for_selector("#comparison, #failure", timeout=120_000)  # the page reloads itself when the job ends
    job_id = page.url.split("/jobs/", 1)[1].split("?")[0]
    api = httpx.get(f"{server.url}/api/v1/jobs/{job_id}/comparison",
                    headers={"Authorization": f"Bearer {server.keys['a']}"}).json()
    methods = [m["method"] for m in api["methods"]]
    assert page.locator("#comparison-table tbody tr").evaluate_all(
        "rows => rows.map(r => r.dataset.method)") == methods  # best first, as the API
    assert page.locator("#forest .forest-row").evaluate_all("gs => gs.map(g => g.dataset.method)") == methods
    drawn = page.locator("#forest .forest-row .est").count()
    assert drawn == sum(m["value"] is not None for m in api["methods"]) and drawn >= 10
    assert page.locator("#forest .forest-row.recommended").get_attribute("data-method") == api["recommended"]
    assert page.inner_text("#recommended-method") == api["recommended"]
    assert api["reason"] in page.inner_text("#recommendation")
    first = page.locator("#comparison-table tbody tr").first.locator("td").first.inner_text()
    assert first == f"{api['methods'][0]['value']:.3f}"
    w.shot("comparison")
    assert not w.errors, w.errors

    page.click("#start-recommended button[type=submit]")
    page.wait_for_selector("#report, #failure", timeout=120_000)
    assert page.locator("#report").count() == 1
    new_job = page.url.split("/jobs/", 1)[1].split("?")[0]
    assert new_job != job_id and api["recommended"] in page.inner_text("h1")


def test_an_auto_job_from_the_form_says_whether_it_clamped_the_experts(server, page_of):
    """Issue 46: the job form's experts choice defaults to letting method auto decide; the finished job's page says
    what the fit did, as the API's row, report and comparison do."""
    w = page_of()
    page = w.page
    _sample_dataset(w, server, "auto decides")
    assert page.locator("#use-experts option:checked").inner_text().startswith("method auto decides")
    page.select_option("#method", "auto")
    w.shot("job-form-experts-choice")
    page.click("#job-form button[type=submit]")
    page.wait_for_selector("#report, #failure", timeout=120_000)
    job_id = page.url.split("/jobs/", 1)[1].split("?")[0]
    headers = {"Authorization": f"Bearer {server.keys['a']}"}
    row = httpx.get(f"{server.url}/api/v1/jobs/{job_id}", headers=headers).json()
    report = httpx.get(f"{server.url}/api/v1/jobs/{job_id}/report", headers=headers).json()
    assert row["params"] == {"expert_variants": True}
    assert row["use_experts"] is report["experts_used_in_fit"] is report["comparison"]["recommended_use_experts"]
    said = "experts used in the fit" if row["use_experts"] else "experts not used in the fit"
    assert said in page.inner_text("body")
    assert (
        "each method on the crowd alone and with the experts clamped (+experts, scored by cross-fitting)"
        in page.inner_text("body"))
    w.shot("auto-job-experts")
    assert not w.errors, w.errors
