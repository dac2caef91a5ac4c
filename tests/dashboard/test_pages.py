"""The dashboard's server side without a browser: sessions, CSRF, headers, escaping, projects kept apart."""

from __future__ import annotations

import hashlib
import hmac
import re
import time
from datetime import timedelta

import pytest
from sqlmodel import Session, select

from crowdqa.api.dashboard.auth import SESSION_COOKIE, SESSION_SECONDS, end_session, new_session_cookie, read_session
from crowdqa.store import crud
from crowdqa.store.db import get_engine
from crowdqa.store.models import DatasetCreate, WebSession, utcnow
from crowdqa.store.settings import get_settings
from tests.api.conftest import SAMPLE, wait_job
from tests.utils.factories import auth


def _token(html: str, name: str) -> str:
    return re.search(rf'name="{name}" value="([^"]+)"', html).group(1)


def sign_in(client, key: str) -> str:
    """Sign in through the form; return the CSRF token of the session."""
    form = client.get("/ui/signin")
    r = client.post("/ui/signin", data={"key": key, "login_token": _token(form.text, "login_token")},
                    follow_redirects=False)
    assert r.status_code == 303, r.text
    return _token(client.get("/ui/").text, "csrf")


def finished_job(client, key: str) -> tuple[str, str, str]:
    """Signed in with ``key``, the bundled sample as a dataset and an MV job on it started from its page, finished:
    (the dataset's id, the job's page, the job's id)."""
    from tests.api.conftest import sample_dataset

    csrf = sign_in(client, key)
    dataset = sample_dataset(client, key)
    job_url = client.post(f"/ui/datasets/{dataset}/jobs", data={"method": "mv", "csrf": csrf},
                          follow_redirects=False).headers["location"]
    job_id = job_url.rsplit("/", 1)[-1]
    assert wait_job(client, job_id, key)["status"] == "finished"
    return dataset, job_url, job_id


def test_browsers_get_the_dashboard_api_clients_do_not(client):
    r = client.get("/", headers={"Accept": "text/html,application/xhtml+xml,*/*;q=0.8"}, follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"] == "/ui/"
    assert client.get("/", headers={"Accept": "application/json"}, follow_redirects=False).status_code != 303
    assert client.get("/ui/", follow_redirects=False).headers["location"] == "/ui/signin"


def test_pages_send_a_strict_csp_and_the_session_cookie_is_locked_down(client, keys):
    r = client.get("/ui/signin")
    csp = r.headers["content-security-policy"]
    assert "default-src 'none'" in csp and "script-src 'self'" in csp and "unsafe-inline" not in csp
    assert "frame-ancestors 'none'" in csp and r.headers["x-content-type-options"] == "nosniff"
    assert client.get("/ui/static/dashboard.css").headers["content-security-policy"] == csp
    login = client.post("/ui/signin", data={"key": keys["a"], "login_token": _token(r.text, "login_token")},
                        follow_redirects=False)
    cookie = next(c for c in login.headers.get_list("set-cookie") if c.startswith(SESSION_COOKIE))
    flags = cookie.lower()
    assert "httponly" in flags and "samesite=strict" in flags and "path=/ui" in flags
    assert keys["a"] not in cookie  # the key itself never goes into the cookie
    # The cookie is not an API credential: /api/v1 still wants the Bearer key.
    assert client.get("/api/v1/datasets").status_code == 401


def test_sign_in_refuses_unknown_keys_and_forms_without_their_token(client, keys):
    form = client.get("/ui/signin")
    r = client.post("/ui/signin", data={"key": "cqa_nope_nope", "login_token": _token(form.text, "login_token")})
    assert r.status_code == 401 and "unknown API key" in r.text
    r = client.post("/ui/signin", data={"key": keys["a"], "login_token": "forged"}, follow_redirects=False)
    assert r.status_code == 403 and SESSION_COOKIE not in r.headers.get("set-cookie", "")


def test_every_form_needs_the_sessions_csrf_token_and_this_origin(client, keys):
    csrf = sign_in(client, keys["a"])
    assert client.post("/ui/datasets", data={"name": "x"}).status_code == 403
    assert client.post("/ui/datasets", data={"name": "x", "csrf": csrf + "0"}).status_code == 403
    r = client.post("/ui/datasets", data={"name": "x", "csrf": csrf}, headers={"Origin": "http://evil.example"})
    assert r.status_code == 403
    assert "x" not in [a for a in re.findall(r'class="dataset-link">([^<]*)<', client.get("/ui/").text)]
    r = client.post("/ui/datasets", data={"name": "x", "csrf": csrf}, headers={"Origin": "http://testserver"},
                    follow_redirects=False)
    assert r.status_code == 303


def test_a_cookie_opens_only_its_own_projects_rows(client, keys, settings):
    csrf = sign_in(client, keys["a"])
    made = client.post("/ui/datasets", data={"name": "secret of a", "csrf": csrf}, follow_redirects=False)
    url = made.headers["location"]
    dataset_id = url.rsplit("/", 1)[-1]
    client.cookies.clear()
    csrf_b = sign_in(client, keys["b"])
    assert "secret of a" not in client.get("/ui/").text
    assert client.get(url).status_code == 404
    r = client.post(f"{url}/delete", data={"csrf": csrf_b})
    assert r.status_code == 404
    # B's session with A's form token is refused too (tokens are per session).
    r = client.post(f"{url}/delete", data={"csrf": csrf})
    assert r.status_code == 403
    client.cookies.clear()
    sign_in(client, keys["a"])
    assert client.get(f"/ui/datasets/{dataset_id}").status_code == 200


def test_sessions_expire_and_cannot_be_forged(settings, keys):
    with Session(get_engine(settings)) as s:
        cookie, project = new_session_cookie(session=s, key=keys["a"])
        assert read_session(session=s, cookie=cookie).project.id == project.id
        assert read_session(session=s, cookie=cookie, now=time.time() + SESSION_SECONDS + 1) is None
        version, token, mac = cookie.split(".")
        other = new_session_cookie(session=s, key=keys["b"])[0].split(".")
        for forged in (f"{version}.{token}.{'0' * 64}", f"{version}.{other[1]}.{mac}", f"{version}.{token}x.{mac}",
                       f"v1.{token}.{mac}", "garbage", f"{version}.{token}.{mac[:-1]}\u00e9"):
            assert read_session(session=s, cookie=forged) is None, forged
        assert read_session(session=s, cookie=cookie).project.id == project.id


def _old_scheme_cookie(row, *, expires: int) -> str:
    """A cookie as main signed them before issue 35: HMAC under the key's stored sha256, in every apikey row."""
    nonce = "n" * 24
    mac = hmac.new(row.key_hash.encode("ascii"), "|".join(("session", row.prefix, str(expires), nonce)).encode(),
                   hashlib.sha256).hexdigest()
    return ".".join(("v1", row.prefix, str(expires), nonce, mac))


def test_a_cookie_forged_from_a_copy_of_the_apikey_row_is_refused(client, keys, settings):
    """Issue 35 item 5: reading only the apikey row of crowdqa.db was enough to build a session cookie.

    The forger has the row (prefix, sha256) and even the session table's hashes; the server secret
    is in neither, and no stored value is a cookie's token."""
    sign_in(client, keys["a"])  # a live session of A, whose stored row the forger also reads
    client.cookies.clear()
    with Session(get_engine(settings)) as s:
        row = crud.get_api_key(session=s, prefix=keys["a"].split("_")[1])
        stored = s.exec(select(WebSession)).one()
    later = int(time.time()) + 3600
    mac = hmac.new(row.key_hash.encode(), f"session|{stored.token_hash}".encode(), hashlib.sha256).hexdigest()
    forged = [_old_scheme_cookie(row, expires=later), f"v2.{stored.token_hash}.{mac}"]
    for cookie in forged:
        client.cookies.set(SESSION_COOKIE, cookie, path="/ui")
        r = client.get("/ui/", follow_redirects=False)
        assert r.status_code == 303 and r.headers["location"] == "/ui/signin", cookie
        client.cookies.clear()


def test_a_cookie_replayed_after_sign_out_is_refused(client, keys):
    """Issue 35 item 6: sign-out only deleted the cookie, so a copy of it stayed valid for 8 hours."""
    csrf = sign_in(client, keys["a"])
    cookie = client.cookies.get(SESSION_COOKIE)
    assert client.get("/ui/", follow_redirects=False).status_code == 200
    r = client.post("/ui/signout", data={"csrf": csrf}, follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"] == "/ui/signin"
    client.cookies.clear()
    client.cookies.set(SESSION_COOKIE, cookie, path="/ui")
    r = client.get("/ui/", follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"] == "/ui/signin"


def test_revoking_or_expiring_the_key_ends_its_sessions(client, keys, settings):
    sign_in(client, keys["a"])
    assert client.get("/ui/", follow_redirects=False).status_code == 200
    other = client.post("/api/v1/keys", headers=auth(keys["a"]), json={"expires_in_days": 1}).json()
    assert client.delete(f"/api/v1/keys/{keys['a'].split('_')[1]}", headers=auth(keys["a"])).status_code == 204
    assert client.get("/ui/", follow_redirects=False).status_code == 303
    client.cookies.clear()
    sign_in(client, other["key"])
    assert client.get("/ui/", follow_redirects=False).status_code == 200
    with Session(get_engine(settings)) as s:  # the key's day is over
        row = crud.get_api_key(session=s, prefix=other["prefix"])
        row.expires_at = utcnow() - timedelta(seconds=1)
        s.add(row)
        s.commit()
    assert client.get("/ui/", follow_redirects=False).status_code == 303
    client.cookies.clear()
    form = client.get("/ui/signin")
    r = client.post("/ui/signin", data={"key": other["key"], "login_token": _token(form.text, "login_token")})
    assert r.status_code == 401 and "expired at" in r.text


@pytest.mark.postgres
def test_sign_out_and_revocation_end_sessions_on_postgres(pg_settings):
    """The session rows on a real PostgreSQL: sign-out deletes one, revoking the key deletes the rest (cascade)."""
    from crowdqa.jobs import keys as key_cases

    with Session(get_engine(pg_settings)) as s:
        made = key_cases.create_key(session=s, project_name="pg")
        first, project = new_session_cookie(session=s, key=made.key)
        second, _ = new_session_cookie(session=s, key=made.key)
        assert read_session(session=s, cookie=first).project.id == project.id
        assert end_session(session=s, cookie=first) and read_session(session=s, cookie=first) is None
        assert read_session(session=s, cookie=second) is not None
        assert key_cases.revoke_key(session=s, prefix=made.prefix)
        assert read_session(session=s, cookie=second) is None
        assert s.exec(select(WebSession)).all() == []


def test_failed_sign_ins_are_throttled_per_address(client, keys, monkeypatch):
    monkeypatch.setenv("CROWDQA_AUTH_FAILURE_BURST", "3")
    get_settings.cache_clear()
    client.app.state.auth_throttle = None  # made again from the settings above
    page, codes = client.get("/ui/signin"), []
    for _ in range(4):  # each refusal hands out a new form token
        page = client.post("/ui/signin", data={"key": "cqa_nope_nope", "login_token": _token(page.text, "login_token")})
        codes.append(page.status_code)
    assert codes == [401, 401, 401, 429]
    r = client.post("/ui/signin", data={"key": keys["a"], "login_token": _token(page.text, "login_token")},
                    follow_redirects=False)
    assert r.status_code == 429 and int(r.headers["retry-after"]) >= 1 and "too many failed sign-ins" in r.text
    assert SESSION_COOKIE not in r.headers.get("set-cookie", "")


def test_cookies_are_secure_when_forced_or_forwarded_as_https(client, keys, monkeypatch):
    """Issue 35 item 6: cookies got Secure only when the server itself saw https."""
    def flags() -> str:
        r = client.get("/ui/signin")
        return r.headers["set-cookie"].lower()

    assert "secure" not in flags()
    monkeypatch.setenv("CROWDQA_COOKIE_SECURE", "true")
    get_settings.cache_clear()
    assert "; secure" in flags()


@pytest.mark.parametrize("name", ["<script>alert(1)</script>", "\"' onmouseover=alert(1) x='"])
def test_names_from_users_are_escaped(client, keys, name):
    csrf = sign_in(client, keys["a"])
    url = client.post("/ui/datasets", data={"name": name, "csrf": csrf}, follow_redirects=False).headers["location"]
    for page in (client.get("/ui/").text, client.get(url).text):
        assert name not in page
        assert "&lt;script&gt;" in page or "&#34;&#39; onmouseover" in page


def test_upload_errors_and_bad_job_settings_show_on_the_page(client, keys, tmp_path):
    csrf = sign_in(client, keys["a"])
    url = client.post("/ui/datasets", data={"name": "d", "csrf": csrf}, follow_redirects=False).headers["location"]
    bad = tmp_path / "bad.jsonl"
    bad.write_text("{not json\n")
    with open(bad, "rb") as fh:
        r = client.post(f"{url}/uploads", data={"format": "spans-jsonl", "role": "crowd", "csrf": csrf},
                        files={"file": ("bad<1>.jsonl", fh)})
    assert r.status_code == 422 and "upload refused" in r.text and "bad<1>" not in r.text
    r = client.post(f"{url}/jobs", data={"method": "ds", "params": "{}", "csrf": csrf})
    assert r.status_code == 409 and "no uploads yet" in r.text
    with open(SAMPLE / "crowd.jsonl", "rb") as fh:
        client.post(f"{url}/uploads", data={"format": "spans-jsonl", "role": "crowd", "csrf": csrf},
                    files={"file": ("crowd.jsonl", fh)})
    r = client.post(f"{url}/jobs", data={"method": "ds", "params": "[1]", "csrf": csrf})
    assert r.status_code == 422 and "JSON object" in r.text
    r = client.post(f"{url}/jobs", data={"method": "ds", "params": '{"nope": 1}', "csrf": csrf})
    assert r.status_code == 422 and "nope" in r.text


def test_failed_job_shows_its_reason_and_reruns(client, keys, settings):
    """A job whose input turns out bad fails with its reason; the page offers a re-run."""
    from crowdqa.store import crud
    from crowdqa.store.models import JobStatus

    csrf = sign_in(client, keys["a"])
    url = client.post("/ui/datasets", data={"name": "d", "csrf": csrf}, follow_redirects=False).headers["location"]
    with open(SAMPLE / "crowd.jsonl", "rb") as fh:
        client.post(f"{url}/uploads", data={"format": "spans-jsonl", "role": "crowd", "csrf": csrf},
                    files={"file": ("crowd.jsonl", fh)})
    made = client.post(f"{url}/jobs", data={"method": "mv", "csrf": csrf}, follow_redirects=False)
    job_url = made.headers["location"]
    job_id = job_url.rsplit("/", 1)[-1]
    assert wait_job(client, job_id, keys["a"])["status"] == "finished"
    with Session(get_engine(settings)) as s:  # as if it had failed: the page must say why
        crud.update_job(session=s, job_id=job_id, status=JobStatus.failed, error="ValueError: <b>boom</b>")
    page = client.get(job_url).text
    assert "ValueError: &lt;b&gt;boom&lt;/b&gt;" in page and 'id="rerun-form"' in page
    r = client.post(f"{job_url}/rerun", data={"csrf": csrf}, follow_redirects=False)
    assert r.status_code == 303
    assert wait_job(client, job_id, keys["a"])["status"] == "finished"
    assert client.get(f"{job_url}/progress").json()["status"] == "finished"


def test_workers_csv_defuses_spreadsheet_formulas(client, keys, tmp_path):
    import csv
    import io
    import json

    csrf = sign_in(client, keys["a"])
    url = client.post("/ui/datasets", data={"name": "d", "csrf": csrf}, follow_redirects=False).headers["location"]
    rows = [{"doc_id": f"d{i}", "annotator": a, "start": 0, "end": 3, "label": "P", "text": "abc def"}
            for i in range(3) for a in ("=HYPERLINK(\"http://x\")", "plain")]
    path = tmp_path / "f.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    with open(path, "rb") as fh:
        assert client.post(f"{url}/uploads", data={"format": "spans-jsonl", "role": "crowd", "csrf": csrf},
                           files={"file": ("f.jsonl", fh)}, follow_redirects=False).status_code == 303
    job_url = client.post(f"{url}/jobs", data={"method": "mv", "csrf": csrf},
                          follow_redirects=False).headers["location"]
    assert wait_job(client, job_url.rsplit("/", 1)[-1], keys["a"])["status"] == "finished"
    table = list(csv.DictReader(io.StringIO(client.get(f"{job_url}/workers.csv").text)))
    assert sorted(r["annotator"] for r in table) == ["'=HYPERLINK(\"http://x\")", "plain"]


def test_downloads_are_the_apis_and_refuse_a_job_that_is_not_finished(client, keys, settings):
    """Oracle: the API's own report and labels routes, byte for byte; once the job is not finished, every
    download (and the document viewer) is the page's 409 naming its status."""
    from crowdqa.store import crud
    from crowdqa.store.models import JobStatus
    from tests.api.conftest import auth

    _, job_url, job_id = finished_job(client, keys["a"])
    api = f"/api/v1/jobs/{job_id}"
    assert client.get(f"{job_url}/report.json").content == client.get(f"{api}/report", headers=auth(keys["a"])).content
    assert (client.get(f"{job_url}/labels?format=conll").content
            == client.get(f"{api}/labels?format=conll", headers=auth(keys["a"])).content)
    assert 'posterior<span class="kind">mv</span>' in client.get(f"{job_url}/documents/0").text
    # The job page offers the label formats of a span report (every one but the categorical table).
    offered = re.findall(r'/labels\?format=([\w-]+)"', client.get(job_url).text)
    assert offered == ["spans-jsonl", "conll", "tokens-csv", "tokens-jsonl", "ebm-nlp", "token-scores"]
    with Session(get_engine(settings)) as s:
        crud.update_job(session=s, job_id=job_id, status=JobStatus.failed, error="ValueError: boom")
    for download in ("report.json", "labels", "workers.csv", "documents/0"):
        r = client.get(f"{job_url}/{download}")
        assert r.status_code == 409 and "is failed, not finished: ValueError: boom" in r.text, download


def test_the_parse_summary_names_its_fields_in_words(client, keys, tmp_path):
    """Found walking the README: the dataset page listed the summary's JSON keys ("label_counts",
    "annotators_per_document", "expert_documents_without_crowd"); they read as words now, the labels as given."""
    csrf = sign_in(client, keys["a"])
    url = client.post("/ui/datasets", data={"name": "d", "csrf": csrf}, follow_redirects=False).headers["location"]
    spans = tmp_path / "s.csv"
    spans.write_text("doc_id,annotator,start,end,label,text\nd1,w1,0,6,Test_Arm,Adults with asthma\n")
    with open(spans, "rb") as fh:
        client.post(f"{url}/uploads", data={"format": "spans-csv", "role": "crowd", "csrf": csrf},
                    files={"file": ("s.csv", fh)})
    page = client.get(url).text
    for words in ("label counts", "annotators per document", "documents with expert",
                  "expert documents without crowd"):
        assert f"<dt>{words}</dt>" in page
    assert "label_counts" not in page and "<dt>Test_Arm</dt>" in page


def test_the_job_form_offers_a_method_the_data_allows_first(client, keys, tmp_path):
    """Found walking the README: a categorical dataset's job form had hmm-crowd selected, which refuses categorical
    answers (one click on Start, one error). It selects ds there, and for spans the registry's sequence default
    (hmm-crowd-tagger since issue 43; hmm-crowd before)."""
    import re

    csrf = sign_in(client, keys["a"])

    def selected(filename: str, text: str, fmt: str) -> str:
        url = client.post("/ui/datasets", data={"name": filename, "csrf": csrf},
                          follow_redirects=False).headers["location"]
        (tmp_path / filename).write_text(text)
        with open(tmp_path / filename, "rb") as fh:
            client.post(f"{url}/uploads", data={"format": fmt, "role": "crowd", "csrf": csrf},
                        files={"file": (filename, fh)})
        form = client.get(url).text.split('id="method"', 1)[1].split("</select>", 1)[0]
        return re.findall(r'<option value="([^"]+)" selected>', form)

    assert selected("a.csv", "item,annotator,label\ni1,w1,yes\ni1,w2,no\n", "categorical") == ["ds"]
    assert selected("s.csv", "doc_id,annotator,start,end,label,text\nd1,w1,0,6,P,Adults with asthma\n",
                    "spans-csv") == ["hmm-crowd-tagger"]


def _fill_dataset(settings, dataset_id: str, *, n_jobs: int, n_uploads: int) -> tuple[list[str], list[str]]:
    """``n_jobs`` failed jobs and ``n_uploads`` upload rows (no files), a second apart, oldest first: their ids."""
    from sqlalchemy import insert

    from crowdqa.store.models import Dataset, Job, JobStatus, Upload

    t0 = utcnow() - timedelta(days=1)
    with Session(get_engine(settings)) as s:
        ds = s.get(Dataset, dataset_id)
        jobs = [Job(project_id=ds.project_id, dataset_id=ds.id, corpus_sha256="0" * 64, method="mv",
                    status=JobStatus.failed, error="x", created_at=t0 + timedelta(seconds=k)) for k in range(n_jobs)]
        s.add_all(jobs)
        uploads = [Upload(dataset_id=ds.id, filename=f"u{k}.csv", format="categorical", role="crowd", size=1,
                          sha256="0" * 64, raw_path="none", corpus_sha256="0" * 64,
                          created_at=t0 + timedelta(seconds=k)).model_dump() for k in range(n_uploads)]
        if uploads:
            s.exec(insert(Upload), params=uploads)
        s.commit()
        return [j.id for j in jobs], [u["id"] for u in uploads]



def test_dataset_page_lists_the_newest_jobs_and_uploads_and_says_how_many(client, keys, settings):
    """Polish 2: with more than 200 jobs and uploads, the dataset page lists the newest 200 of each, newest first,
    and says how many the API lists (before: the oldest 1000, without a word)."""
    csrf = sign_in(client, keys["a"])
    url = client.post("/ui/datasets", data={"name": "d", "csrf": csrf}, follow_redirects=False).headers["location"]
    ds_id = url.rsplit("/", 1)[-1]
    page = client.get(url).text
    assert "Showing the newest" not in page
    jobs, uploads = _fill_dataset(settings, ds_id, n_jobs=205, n_uploads=1003)
    page = client.get(url).text
    shown_jobs = re.findall(r'/ui/jobs/(\w+)" class="job-link"', page)
    assert [j[:8] for j in reversed(jobs[-200:])] == [j[:8] for j in shown_jobs]
    assert re.findall(r"<td>(u\d+)\.csv</td>", page) == [f"u{k}" for k in range(1002, 802, -1)]
    assert "Showing the newest 200 of 205 jobs" in page and f'href="/api/v1/datasets/{ds_id}/jobs"' in page
    assert "Showing the newest 200 of 1003 uploads" in page and f'href="/api/v1/datasets/{ds_id}/uploads"' in page


def test_mturk_batch_is_found_among_any_number_of_uploads(settings):
    """Polish 2: the review export finds the dataset's mturk-csv crowd upload however many uploads came before it
    (before: only among the oldest 10,000)."""
    from crowdqa.jobs.exports import _batch_upload, has_batch
    from crowdqa.store.models import Job, JobStatus, Upload

    with Session(get_engine(settings)) as s:
        project = crud.create_project(session=s, name="many-uploads")
        ds = crud.create_dataset(session=s, project_id=project.id, dataset_in=DatasetCreate(name="d"))
        ds_id = ds.id
    [job_id], _ = _fill_dataset(settings, ds_id, n_jobs=1, n_uploads=10_001)
    with Session(get_engine(settings)) as s:
        job = s.get(Job, job_id)
        assert job.status == JobStatus.failed and not has_batch(session=s, job=job)
        batch = Upload(dataset_id=ds_id, filename="batch.csv", format="mturk-csv", role="crowd", size=1,
                       sha256="0" * 64, raw_path="none", corpus_sha256="0" * 64)
        s.add(batch)
        s.commit()
        assert has_batch(session=s, job=job) and _batch_upload(s, job, None).id == batch.id
        assert _batch_upload(s, job, batch.id).id == batch.id


def test_the_icon_is_served_where_browsers_ask_and_pages_link_to_it(client, keys):
    """Polish 3: /favicon.ico is an SVG (before: 404 on every dashboard page), and the dashboard links to it."""
    from xml.etree import ElementTree

    r = client.get("/favicon.ico")
    assert r.status_code == 200 and r.headers["content-type"].startswith("image/svg+xml")
    assert ElementTree.fromstring(r.text).tag == "{http://www.w3.org/2000/svg}svg"
    sign_in(client, keys["a"])
    for page in (client.get("/ui/").text, client.get("/ui/signin").text):
        assert '<link rel="icon" href="/favicon.ico" type="image/svg+xml">' in page


def test_dataset_summary_shows_integral_medians_as_counts(client, keys):
    """Polish 3: the dataset summary's median annotators per document reads ``5``, not ``5.000``; a median
    between two counts keeps its fraction."""
    from crowdqa.api.dashboard.web import fmt_count

    csrf = sign_in(client, keys["a"])
    url = client.post("/ui/datasets", data={"name": "d", "csrf": csrf}, follow_redirects=False).headers["location"]
    with open(SAMPLE / "crowd.jsonl", "rb") as fh:
        client.post(f"{url}/uploads", data={"format": "spans-jsonl", "role": "crowd", "csrf": csrf},
                    files={"file": ("crowd.jsonl", fh)})
    page = client.get(url).text
    medians = re.findall(r"<dt>median</dt>\s*<dd>\s*([^<]*?)\s*</dd>", page)
    assert medians and all(m.isdigit() for m in medians), medians
    assert (fmt_count(5.0), fmt_count(4.5), fmt_count(3), fmt_count(None)) == ("5", "4.500", "3", "-")


@pytest.mark.parametrize(("chosen", "params", "use_experts"), [
    ("", {"expert_variants": True}, False), ("no", {}, False), ("yes", {}, True), ("on", {}, True)])
def test_the_job_forms_experts_choice_has_three_states(client, keys, chosen, params, use_experts):
    """Issue 46: the job form's experts choice is a select: empty (the default) lets method auto decide (the job
    keeps the request as params {"expert_variants": true}, use_experts false until it finishes), ``no`` and
    ``yes`` tell it (``on`` is the compare page's hidden field for a recommended +experts candidate)."""
    from tests.api.conftest import sample_dataset

    csrf = sign_in(client, keys["a"])
    dataset = sample_dataset(client, keys["a"])
    form = client.get(f"/ui/datasets/{dataset}").text
    choices = re.search(r'<select name="use_experts" id="use-experts">(.*?)</select>', form, re.S)[1]
    assert re.findall(r'<option value="([^"]*)"', choices) == ["", "yes", "no"]
    assert re.search(r'<option value="" selected>method auto decides', choices)
    made = client.post(f"/ui/datasets/{dataset}/jobs", data={"method": "auto", "use_experts": chosen, "csrf": csrf},
                       follow_redirects=False)
    assert made.status_code == 303, made.text
    job_id = made.headers["location"].rsplit("/", 1)[-1]
    row = client.get(f"/api/v1/jobs/{job_id}", headers=auth(keys["a"])).json()
    assert (row["params"], row["use_experts"]) == (params, use_experts)
