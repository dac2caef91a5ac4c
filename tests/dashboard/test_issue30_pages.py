"""Issue 30, items 3 and 4 on the dashboard's server side (no browser): the worker table is worst first by
default, and categorical jobs get their own view."""

from __future__ import annotations

import re

from tests.api.conftest import sample_dataset, wait_job
from tests.dashboard.test_pages import sign_in


def _rows(html: str) -> list[list[str]]:
    body = html.split('id="workers"', 1)[1].split("</tbody>", 1)[0]
    return [re.findall(r"<td>(?:<a[^>]*>)?([^<]*)", tr) for tr in re.findall(r"<tr class=\"role-[^\"]+\">(.*?)</tr>",
                                                                               body, flags=re.S)]


def test_worker_table_is_worst_first_by_default(client, keys):
    """The job page's worker table was sorted by annotator id (before); by default it is by F1 against the
    experts, worst first, workers without one last."""
    csrf = sign_in(client, keys["a"])
    dataset = sample_dataset(client, keys["a"])
    job_url = client.post(f"/ui/datasets/{dataset}/jobs", data={"method": "mv", "csrf": csrf},
                          follow_redirects=False).headers["location"]
    assert wait_job(client, job_url.rsplit("/", 1)[-1], keys["a"])["status"] == "finished"
    html = client.get(job_url).text
    assert 'data-key="f1">F1</a>' in html and "sorted-asc" in html.split('data-key="f1"')[0].rsplit("<th>", 1)[1]
    f1 = [r[6] for r in _rows(html)]
    scored = [float(v) for v in f1 if v != "-"]
    assert len(scored) >= 3 and scored == sorted(scored) and f1[:len(scored)] == [f"{v:.3f}" for v in scored], f1
