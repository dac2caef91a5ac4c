"""The dashboard in a real browser, end to end against a running ``crowdqa serve``.

One walk through the pages a user takes (sign in, upload the bundled sample, run HMM-Crowd, read
the report, a worker, a document), one with hostile uploads, one with another project's key.
Few tests on purpose: each drives Chromium through many pages.
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import httpx
import pytest

from tests.dashboard.conftest import REPO, sign_in

SAMPLE = REPO / "api" / "sample"


def _upload(page, path: Path, role: str) -> None:
    page.set_input_files("#upload-form input[name=file]", str(path))
    page.select_option("#role", role)
    page.select_option("#format", "spans-jsonl")
    page.click("#upload-form button[type=submit]")
    page.wait_for_load_state()


def _new_dataset(page, name: str) -> str:
    page.fill("#create-dataset input[name=name]", name)
    page.click("#create-dataset button[type=submit]")
    page.wait_for_selector("#upload-form")
    return page.url.rsplit("/", 1)[-1]


def _sample_dataset(w, server, name: str) -> str:
    """Sign in as project ``a``, create a dataset and upload the bundled sample's crowd and expert files."""
    sign_in(w, server, "a")
    dataset = _new_dataset(w.page, name)
    _upload(w.page, SAMPLE / "crowd.jsonl", "crowd")
    _upload(w.page, SAMPLE / "expert.jsonl", "expert")
    return dataset


def _run_job(page, method: str) -> str:
    page.select_option("#method", method)
    page.click("#job-form button[type=submit]")
    page.wait_for_selector("#report, #failure", timeout=90_000)  # the page reloads itself when the job ends
    return page.url.split("/jobs/", 1)[1].split("?")[0]


def _span_characters(path: Path) -> dict[tuple[str, str], set[int]]:
    """(doc_id, annotator) -> offsets of the non-space characters inside the file's spans.

    Spaces are left out: in an inside/outside scheme two adjacent spans are one run of tokens,
    so the viewer draws them as one highlight over the space between them.
    """
    out: dict[tuple[str, str], set[int]] = defaultdict(set)
    for line in path.read_text().splitlines():
        row = json.loads(line)
        if row.get("start") is not None:
            out[row["doc_id"], row["annotator"]].update(
                i for i in range(row["start"], row["end"]) if not row["text"][i].isspace())
    return out


def _marked_characters(row, text: str) -> set[int]:
    """Offsets of the non-space characters a viewer row highlights (checked against the marks' own text)."""
    seen: set[int] = set()
    for mark in row.locator("mark").all():
        start, end = int(mark.get_attribute("data-start")), int(mark.get_attribute("data-end"))
        assert mark.inner_text() == text[start:end]
        seen.update(i for i in range(start, end) if not text[i].isspace())
    return seen


def test_sign_in_upload_run_and_read_the_report(server, page_of):
    w = page_of()
    page = w.page
    page.goto(server.url + "/")
    assert page.url.endswith("/ui/signin")
    w.shot("signin")
    sign_in(w, server, "a")
    _new_dataset(page, "sample")
    _upload(page, SAMPLE / "crowd.jsonl", "crowd")
    _upload(page, SAMPLE / "expert.jsonl", "expert")
    assert page.locator("#uploads tbody tr").count() == 2
    assert "documents" in page.inner_text("dl.summary")
    w.shot("dataset")

    job_id = _run_job(page, "hmm-crowd")
    assert page.locator(".status").first.inner_text() == "finished"
    w.shot("report")

    report = httpx.get(f"{server.url}/api/v1/jobs/{job_id}/report",
                       headers={"Authorization": f"Bearer {server.keys['a']}"}).json()
    # The scatter: one point per worker scored against the experts, where the report puts it.
    expected = {e["annotator"]: (e["vs_expert"]["recall"], e["vs_expert"]["precision"])
                for e in report["workers"] if e["vs_expert"] and e["vs_expert"].get("precision") is not None}
    svg = page.locator("#scatter")
    x0, x1, y0, y1 = (float(svg.get_attribute(f"data-{k}")) for k in ("x0", "x1", "y0", "y1"))
    drawn = {}
    for point in page.locator("#scatter g.worker-point").all():
        circle = point.locator("circle")
        drawn[point.get_attribute("data-annotator")] = (
            (float(circle.get_attribute("cx")) - x0) / (x1 - x0),
            (float(circle.get_attribute("cy")) - y0) / (y1 - y0))
    assert drawn.keys() == expected.keys() and len(drawn) == 10
    for annotator, (recall, precision) in expected.items():
        assert drawn[annotator] == pytest.approx((recall, precision), abs=1e-3), annotator
    assert page.locator("#scatter g[data-kind=aggregate]").count() == 1
    agg = report["aggregate_vs_expert"]["token"]
    assert f"{agg['precision']:.3f}" in page.inner_text("#aggregate-scores")

    # The worker table opens sorted by F1, worst first: the spammer (lowest F1 against the experts) comes first.
    assert "sorted-asc" in page.locator("#workers th a[data-key=f1]").get_attribute("class")
    spammer = min(expected, key=lambda a: next(e["vs_expert"]["f1"] for e in report["workers"] if e["annotator"] == a))
    assert page.locator("#workers tbody tr").first.locator("td").first.inner_text() == spammer
    page.locator("#workers tbody tr").first.locator("a.worker-link").click()
    page.wait_for_selector("#worker-name")
    assert page.inner_text("#worker-name") == spammer
    assert page.locator("#estimated table.matrix tbody tr").count() == 2
    assert page.locator("#measured table.matrix tbody tr").count() == 2
    assert page.locator("#worst-documents tbody tr").count() > 0
    assert page.inner_text("#crumbs") == f"Datasets / sample / job {job_id[:8]} /"
    w.shot("worker")

    # A document the spammer disputes: every annotator's highlighted characters are their spans.
    page.locator("#worst-documents a.doc-link").first.click()
    page.wait_for_selector("#viewer")
    doc_id = page.inner_text("#doc-name")
    spans = {**_span_characters(SAMPLE / "crowd.jsonl"), **_span_characters(SAMPLE / "expert.jsonl")}
    text = next(json.loads(line)["text"] for line in (SAMPLE / "crowd.jsonl").read_text().splitlines()
                if json.loads(line)["doc_id"] == doc_id)
    rows = page.locator("#viewer tr[data-kind=crowd], #viewer tr[data-kind=expert]").all()
    assert len(rows) >= 5
    for row in rows:
        annotator = row.get_attribute("data-annotator")
        assert _marked_characters(row, text) == spans.get((doc_id, annotator), set()), annotator
    assert page.locator("#viewer tr[data-kind=aggregate]").count() == 1
    assert page.locator("#viewer tr[data-kind=posterior] span.tok").count() > 0
    assert page.inner_text("#crumbs") == f"Datasets / sample / job {job_id[:8]} /"
    w.shot("document")

    # Downloads answer with files.
    page.goto(f"{server.url}/ui/jobs/{job_id}")
    for href in page.locator("#downloads a").evaluate_all("els => els.map(e => e.getAttribute('href'))"):
        assert page.request.get(server.url + href).status == 200, href
    assert w.errors == [] and w.dialogs == []


def test_a_mistyped_address_is_the_dashboards_page_with_a_way_home(server, page_of):
    """A mistyped /ui address shows the dashboard's 404 page (its style and header, no other console error), whose
    link goes home."""
    w = page_of()
    sign_in(w, server, "a")
    response = w.page.goto(f"{server.url}/ui/datsets")
    assert response.status == 404 and response.headers["content-type"].startswith("text/html")
    assert w.page.inner_text("h1") == "No such page"
    assert w.page.locator("header.top a.brand").count() == 1
    w.shot("not-found")
    w.page.click("#home")
    w.page.wait_for_selector("#create-dataset")
    # Chromium logs the 404 of the page itself as a console error; nothing else may be one (a style or script).
    assert w.page.url == f"{server.url}/ui/" and w.errors == [
        "Failed to load resource: the server responded with a status of 404 (Not Found)"]


HOSTILE_LABEL = "<script>window.__pwned=1</script>"
HOSTILE_ID = "mturk:\"q'<img src=x onerror=alert(1)>"


def _hostile_file(tmp_path: Path) -> Path:
    text = "Patients <b>with</b> <script>alert('t')</script> asthma were enrolled ."
    long_text = "word " * 200_000  # a 1 MB line
    rows = []
    for doc, body in (("d<1>", text), ("d\"2", text), ("long", long_text)):
        for annotator in (HOSTILE_ID, "mturk:plain", "mturk:other"):
            rows.append({"doc_id": doc, "annotator": annotator, "start": 0, "end": 8, "label": HOSTILE_LABEL,
                         "text": body})
    path = tmp_path / "hostile.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    return path


def test_hostile_uploads_render_as_text(server, page_of, tmp_path):
    w = page_of()
    page = w.page
    sign_in(w, server, "a")
    _new_dataset(page, "<img src=x onerror=alert('name')>")
    _upload(page, _hostile_file(tmp_path), "crowd")
    assert page.locator("#uploads tbody tr").count() == 1, page.inner_text("main")
    assert page.inner_text("#dataset-name") == "<img src=x onerror=alert('name')>"
    _run_job(page, "mv")
    assert HOSTILE_ID in page.inner_text("#workers")
    page.locator("#workers a.worker-link", has_text=HOSTILE_ID).click()
    page.wait_for_selector("#worker-name")
    assert page.inner_text("#worker-name") == HOSTILE_ID
    page.locator("#worst-documents a.doc-link").first.click()
    page.wait_for_selector("#viewer")
    assert "<script>alert('t')</script>" in page.inner_text("#viewer") or page.inner_text("#doc-name") == "long"
    assert page.locator("#viewer mark").first.get_attribute("title") == HOSTILE_LABEL
    w.shot("hostile-document")
    assert page.evaluate("window.__pwned") is None
    # The 1 MB line: drawn up to the viewer's limit, with a note.
    page.goto(page.url.rsplit("/", 1)[0] + "/2")
    assert page.inner_text("#doc-name") == "long" and "Only the first" in page.inner_text("main")
    assert w.dialogs == [] and w.errors == []


def test_another_projects_key_sees_nothing(server, page_of):
    a = page_of()
    sign_in(a, server, "a")
    _new_dataset(a.page, "private to a")
    dataset_url = a.page.url
    b = page_of()
    sign_in(b, server, "b")
    assert b.page.locator("#datasets a.dataset-link").count() == 0
    assert "private to a" not in b.page.content()
    response = b.page.goto(dataset_url)
    assert response.status == 404
    b.shot("other-project")
    # A's cookie does not open B's pages either: each cookie is its own project's.
    assert b.page.goto(b.page.url.split("/ui/")[0] + "/ui/").ok
    assert "private to a" not in b.page.content()


def test_a_report_on_a_phone_scrolls_its_tables_instead_of_squeezing_them(server, page_of):
    """Found walking the README: at 420 px the report's tables wrapped every cell a letter a line ("mtur / k:A1 /
    0SPA / M") and pushed the page wider than the screen. Now the page fits the screen and the tables scroll."""
    w = page_of()
    _sample_dataset(w, server, "phone")
    job_id = _run_job(w.page, "mv")
    phone = page_of(width=420, height=800)
    sign_in(phone, server, "a")
    phone.page.goto(f"{server.url}/ui/jobs/{job_id}")
    phone.page.wait_for_selector("#workers")
    phone.shot("report-phone")
    assert phone.page.evaluate("document.documentElement.scrollWidth") <= 420
    line = phone.page.locator("#workers tbody tr").first.locator("td").first.bounding_box()["height"]
    assert line < 40, line  # one line of text (with padding), not a letter a line
