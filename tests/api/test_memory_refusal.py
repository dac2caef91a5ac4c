"""Limits at the entry points: the CLI and the API both refuse a run whose estimated memory exceeds
CROWDQA_MAX_MEMORY (item 5: the command line with one line, exit 2; the API with a 422 before anything is queued),
and the API reads the conll-folders format (item 10)."""

from __future__ import annotations

import random

from crowdqa.api.cli import main
from tests.api.conftest import auth, upload


def _answers(path, *, n_items: int, n_classes: int, seed: int = 0):
    rng = random.Random(seed)
    rows = ["task,worker,label"] + [f"i{i},w{w},L{rng.randrange(n_classes)}"
                                    for i in range(n_items) for w in rng.sample(range(50), 3)]
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return path


def test_the_command_line_refuses_in_one_line(tmp_path, capsys, monkeypatch):
    """100 classes, 50 workers: about 0.2 GiB, over a limit of 64 MiB; without the check the run goes on."""
    monkeypatch.setenv("CROWDQA_MAX_MEMORY", "64M")
    path = _answers(tmp_path / "a.csv", n_items=2_000, n_classes=100)
    status = main(["aggregate", str(path), "-f", "categorical", "--method", "ds", "--output", str(tmp_path / "o.csv")])
    err = capsys.readouterr().err.strip().splitlines()
    assert status == 2 and err[-1].startswith("crowdqa: error: ds and its report on this data would need about ")
    assert "more than the limit of 64.0 MiB (CROWDQA_MAX_MEMORY)" in err[-1] and not (tmp_path / "o.csv").exists()


def test_the_api_refuses_with_a_422_before_queueing(client, keys, tmp_path, monkeypatch):
    key = keys["a"]
    ds = client.post("/api/v1/datasets", headers=auth(key), json={"name": "many"}).json()["id"]
    assert upload(client, key, ds, _answers(tmp_path / "a.csv", n_items=2_000, n_classes=100),
                  format="categorical").status_code == 201
    monkeypatch.setenv("CROWDQA_MAX_MEMORY", "64M")
    r = client.post(f"/api/v1/datasets/{ds}/jobs", headers=auth(key), json={"method": "mv"})
    assert r.status_code == 422 and r.headers["content-type"].startswith("application/problem+json")
    assert "more than the limit of 64.0 MiB (CROWDQA_MAX_MEMORY)" in r.json()["detail"]
    assert client.get(f"/api/v1/datasets/{ds}/jobs", headers=auth(key)).json()["data"] == []


def test_the_api_reads_conll_folders_as_a_zip(client, keys, tmp_path):
    """Issue 30 item 10 through the API: the format comes from ingest/formats.py, a zip of the folder."""
    import zipfile

    from tests.ingest.test_conll_folders import _write

    root = _write(tmp_path / "rodrigues")
    with zipfile.ZipFile(tmp_path / "r.zip", "w") as z:
        for f in sorted(root.rglob("*.txt")):
            z.write(f, f.relative_to(tmp_path).as_posix())
    key = keys["a"]
    ds = client.post("/api/v1/datasets", headers=auth(key), json={"name": "rodrigues"}).json()["id"]
    r = upload(client, key, ds, tmp_path / "r.zip", format="conll-folders")
    assert r.status_code == 201, r.text
    summary = client.get(f"/api/v1/datasets/{ds}", headers=auth(key)).json()["summary"]
    assert summary["documents"] == 4 and summary["annotators"] == {"crowd": 2, "expert": 1}
