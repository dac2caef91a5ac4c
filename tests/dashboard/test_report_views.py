"""The dashboard's server side (no browser): the worker table is worst first by
default, and categorical jobs get their own view."""

from __future__ import annotations

import re

from tests.api.conftest import sample_dataset, wait_job
from tests.dashboard.test_pages import sign_in


def _rows(html: str) -> list[list[str]]:
    body = html.split('id="workers"', 1)[1].split("</tbody>", 1)[0]
    rows = re.findall(r"<tr class=\"role-[^\"]+\">(.*?)</tr>", body, flags=re.S)
    return [re.findall(r"<td[^>]*>(?:<a[^>]*>)?([^<]*)", tr) for tr in rows]


def _sample_job(client, key: str, method: str) -> str:
    """A finished job of ``method`` on the sample dataset, started from the dashboard: its page's URL."""
    csrf = sign_in(client, key)
    dataset = sample_dataset(client, key)
    job_url = client.post(f"/ui/datasets/{dataset}/jobs", data={"method": method, "csrf": csrf},
                          follow_redirects=False).headers["location"]
    assert wait_job(client, job_url.rsplit("/", 1)[-1], key)["status"] == "finished"
    return job_url


def test_worker_table_is_worst_first_by_default(client, keys):
    """The job page's worker table was sorted by annotator id (before); by default it is by F1 against the
    experts, worst first, workers without one last."""
    job_url = _sample_job(client, keys["a"], "mv")
    html = client.get(job_url).text
    assert 'data-key="f1">F1</a>' in html and "sorted-asc" in html.split('data-key="f1"')[0].rsplit("<th>", 1)[1]
    f1 = [r[6] for r in _rows(html)]
    scored = [float(v) for v in f1 if v != "-"]
    assert len(scored) >= 3 and scored == sorted(scored) and f1[:len(scored)] == [f"{v:.3f}" for v in scored], f1


def _categorical_job(client, key: str, tmp_path) -> str:
    """A categorical dataset (not from Mechanical Turk): 40 items, 6 workers of increasing accuracy, a truth file
    for every item; a finished Dawid-Skene job's page URL."""
    rows = ["item,worker,label"]
    for i in range(40):
        truth = "abc"[i % 3]
        rows += [f"q{i},w{w},{'abc'[(i + 1) % 3] if (i * 7 + w) % (w + 2) == 0 else truth}" for w in range(6)
                 if (i + w) % 5]
    (tmp_path / "answers.csv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    (tmp_path / "truth.csv").write_text("item,label\n" + "".join(f"q{i},{'abc'[i % 3]}\n" for i in range(40)),
                                        encoding="utf-8")
    csrf = sign_in(client, key)
    url = client.post("/ui/datasets", data={"name": "cat", "csrf": csrf}, follow_redirects=False).headers["location"]
    for name, role in (("answers.csv", "crowd"), ("truth.csv", "expert")):
        with open(tmp_path / name, "rb") as fh:
            r = client.post(f"{url}/uploads", data={"format": "categorical", "role": role, "csrf": csrf},
                            files={"file": (name, fh)}, follow_redirects=False)
        assert r.status_code == 303, r.text
    job_url = client.post(f"{url}/jobs", data={"method": "ds", "csrf": csrf},
                          follow_redirects=False).headers["location"]
    assert wait_job(client, job_url.rsplit("/", 1)[-1], key)["status"] == "finished"
    return job_url


def test_categorical_jobs_get_their_own_view(client, keys, tmp_path):
    """Before: an empty precision/recall scatter, "annotator(s) have no score against the experts (no shared
    documents)" although every item has an expert label, columns of "-", tokens and documents, and a link to a
    Mechanical Turk review that answers 409. Now: the aggregate's accuracy with its interval and per-class F1,
    every worker drawn by accuracy against items compared, a table of accuracies with intervals against the
    experts and the aggregate (worst first), items everywhere, and no review link."""
    job_url = _categorical_job(client, keys["a"], tmp_path)
    html = client.get(job_url).text
    report = client.get(f"{job_url}/report.json").json()
    acc = report["aggregate_vs_expert"]["accuracy"]
    table = html.split('id="aggregate-accuracy"', 1)[1].split("</table>", 1)[0]
    assert f"{acc['value']:.3f}" in table and f"{acc['ci'][0]:.3f}-{acc['ci'][1]:.3f}" in table and "40" in table
    per_class = html.split('id="per-class"', 1)[1].split("</table>", 1)[0]
    for name, b in report["aggregate_vs_expert"]["per_class"].items():
        cells = f"<th>{name}</th><td>{b['precision']:.3f}</td><td>{b['recall']:.3f}</td><td>{b['f1']:.3f}</td>"
        assert cells in per_class
    svg = html.split('id="accuracy-scatter"', 1)[1].split("</svg>", 1)[0]
    drawn = re.findall(r'data-annotator="(w\d)" data-kind="crowd" data-accuracy="([\d.]+)" data-items="(\d+)"', svg)
    expected = {w["annotator"]: (w["vs_expert"]["accuracy"]["value"], w["vs_expert"]["accuracy"]["compared"])
                for w in report["workers"] if w["role"] == "crowd"}
    assert {a: (float(v), int(n)) for a, v, n in drawn} == expected and len(expected) == 6
    assert 'data-kind="aggregate"' in svg
    assert "no shared documents" not in html and "precision vs" not in html and "Most disputed items" in html
    assert 'id="review-link">Review the workers<' in html and "Mechanical Turk" not in html  # any format is reviewed
    rows = _rows(html)
    crowd = [r for r in rows if r[1] == "crowd"]
    accuracy = [float(r[3]) for r in crowd]
    assert accuracy == sorted(accuracy) and all(re.fullmatch(r"\d\.\d{3}-\d\.\d{3}", r[4]) for r in crowd), rows
    assert all(r[5] == str(expected[r[0]][1]) for r in crowd)
    worker = client.get(f"{job_url}/worker?id={crowd[0][0]}").text
    scores = worker.split('id="worker-scores"', 1)[1].split("</table>", 1)[0]
    assert "items compared" in scores and "precision" not in scores and "no shared documents" not in worker
    assert 'id="measured"' in worker and "share (items)" in worker and "<th>items</th>" in worker


def test_mturk_datasets_keep_the_review_link(client, keys, tmp_path):
    """The review link stays where there is a Mechanical Turk batch to review."""
    from tests.api.test_upload_requests import _mturk

    csrf = sign_in(client, keys["a"])
    url = client.post("/ui/datasets", data={"name": "mt", "csrf": csrf}, follow_redirects=False).headers["location"]
    with open(_mturk(tmp_path / "b.csv", ["Approved"] * 12), "rb") as fh:
        assert client.post(f"{url}/uploads", data={"format": "mturk-csv", "role": "crowd", "csrf": csrf},
                           files={"file": ("b.csv", fh)}, follow_redirects=False).status_code == 303
    job_url = client.post(f"{url}/jobs", data={"method": "mv", "csrf": csrf},
                          follow_redirects=False).headers["location"]
    assert wait_job(client, job_url.rsplit("/", 1)[-1], keys["a"])["status"] == "finished"
    assert 'id="review-link"' in client.get(job_url).text


def test_tag_jobs_show_the_confusion_matrix_and_the_tag_averages(client, keys, tmp_path):
    """A tag dataset (a token table with a role column: crowd rows labelling single tokens and expert rows) through
    the dashboard's forms: the job page shows the aggregate's accuracy, the per-tag scores, the micro and macro F1
    with their intervals and the confusion matrix against the experts, each figure as in the stored report."""
    from benchmarks._tag_crowd import hide_per_token, tag_crowd

    crowd = hide_per_token(tag_crowd(n_docs=30, n_workers=8, n_classes=4, labels_per_token=4, seed=5).corpus,
                           keep=0.7, seed=5)
    position = crowd.token - crowd.doc_start[:-1][crowd.token_doc[crowd.token]]
    rows = ["doc_id,token_index,token,annotator,label,role"]
    rows += [f"{crowd.doc_ids[crowd.token_doc[t]]},{p},{crowd.token_text(t)},{crowd.worker_ids[w]},"
             f"{crowd.class_names[k]},{crowd.worker_roles[w]}"
             for t, p, w, k in zip(crowd.token.tolist(), position.tolist(), crowd.worker.tolist(),
                                   crowd.label.tolist(), strict=True)]
    (tmp_path / "tokens.csv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    csrf = sign_in(client, keys["a"])
    url = client.post("/ui/datasets", data={"name": "tags", "csrf": csrf}, follow_redirects=False).headers["location"]
    with open(tmp_path / "tokens.csv", "rb") as fh:
        r = client.post(f"{url}/uploads", data={"format": "tokens-csv", "role": "crowd", "csrf": csrf},
                        files={"file": ("tokens.csv", fh)}, follow_redirects=False)
    assert r.status_code == 303, r.text
    job_url = client.post(f"{url}/jobs", data={"method": "hmm-crowd", "csrf": csrf},
                          follow_redirects=False).headers["location"]
    assert wait_job(client, job_url.rsplit("/", 1)[-1], keys["a"])["status"] == "finished"
    html = client.get(job_url).text
    report = client.get(f"{job_url}/report.json").json()
    agg = report["aggregate_vs_expert"]
    assert report["kind"] == "tags" and f"{agg['accuracy']['value']:.3f}" in html
    averages = html.split('id="tag-averages"', 1)[1].split("</p>", 1)[0]
    assert f"{agg['macro']['f1']:.3f} {agg['macro']['f1_ci'][0]:.3f}-{agg['macro']['f1_ci'][1]:.3f}" in averages
    matrix = html.split('id="tag-confusion"', 1)[1].split("</table>", 1)[0]
    counts = list(zip(*agg["token_confusion"]["matrix"], strict=True))  # shown rows: the experts' tags
    for name, row in zip(agg["token_confusion"]["labels"], counts, strict=True):
        if sum(row):
            assert f"({row[0]})" in matrix.split(f"<th>{name}</th>", 2)[-1].split("</tr>", 1)[0]


def test_job_page_shows_calibration_and_ranks_disputed_documents_by_it(client, keys):
    """Issue 48: the most disputed documents showed entropies of 0.000; now they are ranked by the calibrated
    probability that the document is right (shown, ascending), and the page has the calibration against the
    experts with its reliability diagram (an SVG drawn on the server, no script)."""
    job_url = _sample_job(client, keys["a"], "hmm-crowd")
    html = client.get(job_url).text
    assert 'id="calibration"' in html and 'id="calibration-table"' in html
    assert '<svg id="reliability-without-experts"' in html and "<script" not in html.split('id="calibration"')[1]
    if 'id="disputed"' in html:
        body = html.split('id="disputed"', 1)[1].split("</tbody>", 1)[0]
        scores = [float(v) for v in re.findall(r'<td class="score">([0-9.]+)</td>', body)]
        assert scores and scores == sorted(scores), scores
    labels = client.get(f"/api/v1/jobs/{job_url.rsplit('/', 1)[-1]}/labels", params={"format": "spans-jsonl"},
                        headers={"Authorization": f"Bearer {keys['a']}"})
    assert labels.status_code == 200 and all('"score": ' in line for line in labels.text.splitlines())
