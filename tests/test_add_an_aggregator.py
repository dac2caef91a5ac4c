"""docs/how-to/add-an-aggregator.md, followed: the guide's worked example installed and run everywhere (issue 45).

The guide's own code blocks (the estimator module, its entry, the package's ``pyproject.toml``) are written into
a temporary folder as an installed package: the modules, and a ``.dist-info`` whose ``entry_points.txt`` is the
one ``pip install`` makes from that ``pyproject.toml``. Nothing of crowdqa is edited or patched: the method
reaches crowdqa through the entry point group, as an installed package's would. Then it runs through the
contract tests of tests/aggregation/test_common.py, ``crowdqa aggregate``, a job on SQLite and on PostgreSQL,
and ``crowdqa compare``.
"""

from __future__ import annotations

import json
import re
import sys
import tomllib
from pathlib import Path

import numpy as np
import pytest

from crowdqa.aggregation.registry import METHODS, load_entry_points, methods_by_cost
from tests.aggregation.test_common import CONTRACT, estimator_cases
from tests.api.conftest import SAMPLE, pg_settings, sample_dataset, settings, wait_job  # noqa: F401 - fixtures
from tests.utils.factories import auth

GUIDE = Path(__file__).resolve().parents[1] / "docs" / "how-to" / "add-an-aggregator.md"
METHOD = "smoothed-vote"


def guide_files() -> dict[str, str]:
    """The guide's code blocks that carry a file name (```` ```python title="path" ````), by that name."""
    blocks = re.findall(r'^```\w+ title="([^"]+)"\n(.*?)^```$', GUIDE.read_text(encoding="utf-8"), re.M | re.S)
    return dict(blocks)


@pytest.fixture
def installed(tmp_path, monkeypatch):
    """The guide's package as installed: its modules and a dist-info with the entry points of its pyproject."""
    files = guide_files()
    site = tmp_path / "site"
    for name, text in files.items():
        if name.endswith(".py"):
            (site / name).parent.mkdir(parents=True, exist_ok=True)
            (site / name).write_text(text, encoding="utf-8")
    project = tomllib.loads(files["pyproject.toml"])["project"]
    info = site / f"{project['name'].replace('-', '_')}-{project['version']}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {project['name']}\nVersion: {project['version']}\n")
    (info / "entry_points.txt").write_text("".join(
        f"[{group}]\n" + "".join(f"{name} = {value}\n" for name, value in points.items())
        for group, points in project["entry-points"].items()))
    monkeypatch.syspath_prepend(str(site))
    yield
    METHODS.pop(METHOD, None)  # this process's registry as it was (an installed package stays installed)
    from crowdqa.api.main import app

    app.openapi_schema = None  # FastAPI's cached document may list the method: the next test's app makes its own
    for name in [m for m in sys.modules if m.startswith("crowdqa_smoothed_vote")]:
        del sys.modules[name]


def register() -> None:
    """What every entry point of crowdqa (CLI, API, worker) does at start: register the installed packages'
    methods."""
    assert METHOD not in METHODS
    assert load_entry_points() == [METHOD]
    assert load_entry_points() == []  # a second start adds nothing


@pytest.fixture
def registered(installed):
    register()


def test_the_method_is_registered_in_its_place_and_meets_the_contract(registered, seed):
    """Oracle: the guide's rule (its entry's cost 15 puts it between majority vote, 10, and Dawid-Skene, 20), the
    contract tests every registered method passes, and the formula of the guide's Notes on a hand-made token."""
    assert methods_by_cost()[:3] == ["mv", METHOD, "ds"]
    for case in estimator_cases([METHOD]):
        method, params, is_em = case.values
        for test in CONTRACT:
            try:
                test(method, params, is_em, seed)
            except pytest.skip.Exception:  # a test for iterative fits, which this one is not
                assert not is_em
    from crowdqa.aggregation import make_aggregator
    from crowdqa.aggregation.corpus import Corpus

    corpus = Corpus.from_arrays(token=[0, 0, 0], worker=[0, 1, 2], label=[1, 1, 2], doc_lengths=[1],
                                token_start=[0], token_end=[1], doc_ids=["d"], texts=["a"],
                                worker_ids=["u", "v", "w"], worker_roles=["crowd"] * 3, class_names=["O", "B", "C"])
    fitted = make_aggregator(METHOD, {"alpha": 0.5}).fit(corpus)
    np.testing.assert_allclose(fitted.proba_[0], np.array([0.5, 2.5, 1.5]) / 4.5)


def test_the_cli_aggregates_and_compares_with_it(registered, tmp_path, capsys):
    """``crowdqa aggregate --method smoothed-vote`` and ``crowdqa compare`` (in-process, as tests/api/test_cli.py
    runs them). Oracle: the pipeline run on the same files, and the registry's order of cost in the rule."""
    from crowdqa.api.cli import main
    from crowdqa.ingest import read_corpus
    from crowdqa.jobs.pipeline import run_pipeline

    out, rep = tmp_path / "aggregate.jsonl", tmp_path / "report.json"
    assert main(["aggregate", str(SAMPLE / "crowd.jsonl"), "--format", "spans-jsonl", "--method", METHOD,
                 "--params", '{"alpha": 0.5}', "--output", str(out), "--report", str(rep), "--quiet"]) == 0
    report = json.loads(rep.read_text())
    corpus = read_corpus(SAMPLE / "crowd.jsonl", format="spans-jsonl").corpus
    direct = run_pipeline(corpus, method=METHOD, params={"alpha": 0.5}).report.model_dump(mode="json")
    for body in (report, direct):  # wall-clock seconds
        body["fit"].pop("seconds"), body["fit"].pop("stages")
    assert report == direct and report["method"] == METHOD and report["fit"]["params"] == {"alpha": 0.5}
    assert out.stat().st_size > 0

    comparison = tmp_path / "comparison.json"
    assert main(["compare", str(SAMPLE / "crowd.jsonl"), "--format", "spans-jsonl", "--expert",
                 str(SAMPLE / "expert.jsonl"), "--methods", f"ds,{METHOD},mv", "--output", str(comparison),
                 "--n-boot", "100", "--quiet"]) == 0
    body = json.loads(comparison.read_text())
    assert {m["method"] for m in body["methods"]} == {"mv", METHOD, "ds"}
    assert "(in the order mv, smoothed-vote, ds, " in body["rule"]
    assert f"recommended: {body['recommended']}" in capsys.readouterr().out


def _run_job(service_settings) -> dict:
    """A database made first; then the method registered, and a job of it on the bundled sample, through the API on
    the embedded service; the job's finished body."""
    from fastapi.testclient import TestClient
    from sqlmodel import Session

    from crowdqa.api.main import app
    from crowdqa.store.db import get_engine
    from tests.utils.factories import project_with_key

    with Session(get_engine(service_settings)) as s:
        _, key = project_with_key(s, "guide")
    register()
    with TestClient(app) as client:
        dataset = sample_dataset(client, key)
        r = client.post(f"/api/v1/datasets/{dataset}/jobs", headers=auth(key),
                        json={"method": METHOD, "params": {"alpha": 2.0}, "use_experts": True})
        assert r.status_code == 202, r.text
        body = wait_job(client, r.json()["id"], key)
        assert body["status"] == "finished", body
        report = client.get(f"/api/v1/jobs/{body['id']}/report", headers=auth(key)).json()
        assert report["method"] == METHOD and report["fit"]["params"] == {"alpha": 2.0}
        listed = client.get(f"/api/v1/jobs?dataset_id={dataset}", headers=auth(key)).json()
        assert [j["method"] for j in listed["data"]] == [METHOD]
    return body


def test_a_job_runs_it_on_sqlite(installed, settings):  # noqa: F811 - the fixture imported above
    """The job table, made before the method was registered, stores its id (no migration)."""
    assert _run_job(settings)["method"] == METHOD


@pytest.mark.postgres
def test_a_job_runs_it_on_postgres(installed, pg_settings):  # noqa: F811 - the fixture imported above
    assert _run_job(pg_settings)["method"] == METHOD


def test_the_api_schema_lists_it(registered):
    from crowdqa.store.models import JobCreate

    assert METHOD in JobCreate.model_json_schema()["$defs"]["Method"]["enum"]


@pytest.mark.parametrize("command", [["aggregate", "crowd.jsonl"], ["serve"], ["worker"]])
def test_an_entry_point_that_cannot_be_loaded_is_one_line(tmp_path, monkeypatch, capsys, command):
    """A package that declares a method it does not ship: the command stops before it starts, with one line naming
    the entry point and the package, not a traceback."""
    info = tmp_path / "crowdqa_broken-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: crowdqa-broken\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[crowdqa.methods]\nbroken-vote = crowdqa_broken_absent.entry:ENTRY\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("CROWDQA_DATA_DIR", str(tmp_path / "data"))
    from crowdqa.api.cli import main

    assert main(command) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "Traceback" not in err[0], err
    assert err[0].startswith("crowdqa: error: entry point broken-vote = crowdqa_broken_absent.entry:ENTRY "
                             "(crowdqa.methods, package crowdqa-broken): No module named 'crowdqa_broken_absent'")
    assert "broken-vote" not in METHODS
