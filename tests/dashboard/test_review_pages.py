"""The dashboard's review page and block list without a browser: counts, downloads, Block buttons, CSRF.

Oracle: the API's review action on the same job (same use case), and the batch of
:mod:`tests.jobs.review_data` whose workers are known by construction.
"""

from __future__ import annotations

import re

from tests.api.conftest import auth, upload, wait_job
from tests.dashboard.test_pages import sign_in
from tests.jobs.review_data import batch_bytes, batch_rows


def _job(client, key, tmp_path, rows=None) -> str:
    path = tmp_path / "Batch_3_batch_results.csv"
    path.write_bytes(batch_bytes(rows or batch_rows()))
    ds = client.post("/api/v1/datasets", headers=auth(key), json={"name": "batch"}).json()["id"]
    assert upload(client, key, ds, path, format="mturk-csv").status_code == 201
    job = client.post(f"/api/v1/datasets/{ds}/jobs", headers=auth(key), json={"method": "mv"}).json()["id"]
    assert wait_job(client, job, key)["status"] == "finished"
    return job


def test_review_page_shows_the_summary_and_downloads_what_the_api_gives(client, keys, tmp_path):
    key = keys["a"]
    job = _job(client, key, tmp_path)
    csrf = sign_in(client, key)
    page = client.get(f"/ui/jobs/{job}").text
    assert f'href="/ui/jobs/{job}/review"' in page
    form = client.get(f"/ui/jobs/{job}/review")
    assert form.status_code == 200 and 'id="review-form"' in form.text and "review-summary" not in form.text
    query = "reject_below=0.5&min_tokens=50&bonus=0.50&bonus_above=0.9"
    r = client.get(f"/ui/jobs/{job}/review?{query}")
    counts = re.sub(r"\s+", " ", re.search(r'<p id="review-counts">(.*?)</p>', r.text, re.S).group(1))
    assert "<strong>36</strong> assignments approved, <strong>24</strong> rejected" in counts
    assert "workers: 3 approved, 2 rejected" in counts
    api = client.post(f"/api/v1/jobs/{job}/review/batch", headers=auth(key),
                      json={"reject_below": 0.5, "min_tokens": 50, "bonus": "0.50", "bonus_above": 0.9})
    download = client.get(f"/ui/jobs/{job}/review.csv?{query}")
    assert download.status_code == 200 and download.content == api.content
    assert "attachment" in download.headers["content-disposition"]
    bonuses = client.get(f"/ui/jobs/{job}/review.csv?{query}&output=bonuses")
    assert bonuses.text.splitlines()[1].startswith("AGOOD1,AS11AGOOD1,0.50,")
    # Block the spammer from its row: CSRF needed, then the page marks it and the block list has it.
    assert client.post("/ui/blocked", data={"annotator": "mturk:ASPAM5"}).status_code == 403
    r = client.post("/ui/blocked", data={"annotator": "mturk:ASPAM5", "reason": "spam", "csrf": csrf,
                                         "next": f"/jobs/{job}/review?{query}"}, follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"] == f"/ui/jobs/{job}/review?{query}"
    assert client.get("/api/v1/blocked-workers", headers=auth(key)).json()["data"][0]["annotator"] == "mturk:ASPAM5"
    assert '<span class="status">blocked</span>' in client.get(f"/ui/jobs/{job}/review?{query}").text
    listed = client.get("/ui/blocked").text
    assert "mturk:ASPAM5" in listed and "unblock-form" in listed
    r = client.post("/ui/blocked/remove", data={"annotator": "mturk:ASPAM5", "csrf": csrf}, follow_redirects=False)
    assert r.status_code == 303 and client.get("/api/v1/blocked-workers", headers=auth(key)).json()["count"] == 0
    # A redirect target off the dashboard is not followed.
    r = client.post("/ui/blocked", data={"annotator": "mturk:X", "csrf": csrf, "next": "//evil.example/"},
                    follow_redirects=False)
    assert r.headers["location"] == "/ui/blocked"


def test_bad_rules_and_other_projects_show_errors(client, keys, tmp_path):
    job = _job(client, keys["a"], tmp_path)
    csrf = sign_in(client, keys["a"])
    r = client.get(f"/ui/jobs/{job}/review?reject_below=2")
    assert r.status_code == 422 and "review not made: reject_below: Input should be less than or equal to 1" in r.text
    r = client.get(f"/ui/jobs/{job}/review?reject_below=0.2&bonus=1")
    assert r.status_code == 422 and "bonus and bonus_above go together" in r.text
    assert client.get(f"/ui/jobs/{job}/review.csv?reject_below=-1").status_code == 422
    # The page and the download refuse an unknown upload alike (one place decides the status and the words).
    for path in ("review", "review.csv"):
        r = client.get(f"/ui/jobs/{job}/{path}?reject_below=0.2&upload_id=nope")
        assert r.status_code == 404 and "review not made: " in r.text, path
    r = client.post("/ui/blocked", data={"annotator": "", "csrf": csrf})
    assert r.status_code == 422 and "not blocked" in r.text
    client.cookies.clear()
    sign_in(client, keys["b"])
    assert client.get(f"/ui/jobs/{job}/review?reject_below=0.2").status_code == 404


def test_worker_ids_from_the_file_are_escaped(client, keys, tmp_path):
    rows = [(*r[:2], r[2].replace("ASPAM5", "X<b>"), r[3].replace("ASPAM5", "<b>bold</b>"), *r[4:])
            for r in batch_rows()]
    job = _job(client, keys["a"], tmp_path, rows)
    sign_in(client, keys["a"])
    page = client.get(f"/ui/jobs/{job}/review?reject_below=0.2").text
    assert "&lt;b&gt;bold&lt;/b&gt;" in page and "<b>bold</b>" not in page


def test_a_categorical_job_is_reviewed_worker_by_worker_and_its_block_list_applied(client, keys, tmp_path):
    """No batch file: the page decides every crowd worker, shows the report's verdict and spammer score, offers the
    decisions and the block list (the API's bytes) and a button that blocks the list's workers (CSRF needed). The
    job page's worker table shows the verdicts too."""
    import numpy as np

    from tests.jobs.test_review_formats import _categorical

    key = keys["a"]
    path = tmp_path / "answers.csv"
    _categorical(path, np.random.default_rng(7))
    ds = client.post("/api/v1/datasets", headers=auth(key), json={"name": "answers"}).json()["id"]
    assert upload(client, key, ds, path, format="categorical").status_code == 201
    job = client.post(f"/api/v1/datasets/{ds}/jobs", headers=auth(key), json={"method": "ds"}).json()["id"]
    assert wait_job(client, job, key)["status"] == "finished"
    csrf = sign_in(client, key)
    table = client.get(f"/ui/jobs/{job}").text.split('id="workers"', 1)[1].split("</table>", 1)[0]
    assert re.search(r'<td class="verdict verdict-block" title="answers do not depend[^"]*">block</td>', table)
    assert table.count("verdict-keep") == 3 and 'id="verdict-rules"' in client.get(f"/ui/jobs/{job}").text
    query = "reject_below=0.5&min_tokens=20"
    page = client.get(f"/ui/jobs/{job}/review?{query}").text
    assert "Review the workers" in page and "block list: <strong>1</strong> workers" in page
    assert 'id="download-reviewed"' not in page and 'id="apply-block-list"' in page
    api = client.post(f"/api/v1/jobs/{job}/review/decisions", headers=auth(key),
                      json={"reject_below": 0.5, "min_tokens": 20})
    assert client.get(f"/ui/jobs/{job}/review.csv?{query}&output=decisions").content == api.content
    assert client.get(f"/ui/jobs/{job}/review.csv?{query}").status_code == 409  # no batch to write back
    assert client.post(f"/ui/jobs/{job}/review/block?{query}").status_code == 403
    r = client.post(f"/ui/jobs/{job}/review/block?{query}", data={"csrf": csrf}, follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"] == "/ui/blocked"
    assert [b["annotator"] for b in client.get("/api/v1/blocked-workers", headers=auth(key)).json()["data"]] == [
        "spam"]
