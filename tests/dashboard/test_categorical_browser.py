"""In Chromium: a categorical job's page drawn as a user sees it (the accuracy scatter's points
where the report puts them, hover text with intervals, the per-class table, a worker's confusion matrix)."""

from __future__ import annotations

import re

from tests.dashboard.conftest import sign_in
from tests.dashboard.test_browser import _new_dataset


def _files(tmp_path):
    rows = ["item,worker,label"]
    for i in range(60):
        truth = "abc"[i % 3]
        rows += [f"q{i},w{w},{'abc'[(i + 1) % 3] if (i * 7 + w) % (w + 2) == 0 else truth}" for w in range(8)
                 if (i + w) % (w + 3)]
    (tmp_path / "answers.csv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    (tmp_path / "truth.csv").write_text("item,label\n" + "".join(f"q{i},{'abc'[i % 3]}\n" for i in range(60)),
                                        encoding="utf-8")


def test_categorical_job_page_in_a_browser(server, page_of, tmp_path):
    _files(tmp_path)
    w = page_of()
    page = w.page
    sign_in(w, server, "a")
    _new_dataset(page, "categorical")
    for name, role in (("answers.csv", "crowd"), ("truth.csv", "expert")):
        page.set_input_files("#upload-form input[name=file]", str(tmp_path / name))
        page.select_option("#role", role)
        page.select_option("#format", "categorical")
        page.click("#upload-form button[type=submit]")
        page.wait_for_load_state()
    page.select_option("#method", "ds")
    page.click("#job-form button[type=submit]")
    page.wait_for_selector("#report, #failure", timeout=90_000)
    job_url = page.url.split("?")[0]
    report = page.context.request.get(job_url + "/report.json").json()
    w.shot("issue30-categorical-job")
    assert page.locator("#failure").count() == 0
    acc = report["aggregate_vs_expert"]["accuracy"]
    assert f"{acc['value']:.3f}" in page.inner_text("#aggregate-accuracy")
    assert page.locator("#per-class tbody tr").count() == 3
    # Every crowd worker is a point at (items compared, accuracy), in the axes' pixel frame.
    svg = page.locator("#accuracy-scatter")
    x0, x1, y0, y1, xmax = (float(svg.get_attribute(a)) for a in ("data-x0", "data-x1", "data-y0", "data-y1",
                                                                   "data-xmax"))
    drawn = {}
    for g in page.locator("#accuracy-scatter g.worker-point").all():
        box = g.locator("circle").bounding_box()
        frame = svg.bounding_box()
        cx, cy = box["x"] + box["width"] / 2 - frame["x"], box["y"] + box["height"] / 2 - frame["y"]
        drawn[g.get_attribute("data-annotator")] = ((cx - x0) / (x1 - x0) * xmax, (cy - y0) / (y1 - y0))
        title = g.locator("title").text_content()
        assert "items" in title and re.search(r"\d\.\d{3}-\d\.\d{3}", title), title
    expected = {e["annotator"]: (e["vs_expert"]["accuracy"]["compared"], e["vs_expert"]["accuracy"]["value"])
                for e in report["workers"] if e["role"] == "crowd"}
    assert set(drawn) == set(expected)
    for annotator, (items, accuracy) in expected.items():
        assert abs(drawn[annotator][0] - items) < 0.02 * xmax + 0.5 and abs(drawn[annotator][1] - accuracy) < 0.02
    text = page.inner_text("#report")
    assert "no shared documents" not in text and "Mechanical Turk" not in text and "tokens" not in text
    page.click("#workers tbody tr:first-child a.worker-link")
    page.wait_for_selector("#worker-scores")
    w.shot("issue30-categorical-worker")
    assert page.locator("#measured table.matrix tbody tr").count() == 3
    assert "items compared" in page.inner_text("#worker-scores")
    assert not w.errors, w.errors
