"""Issue 35 item 4: iteration, restart and inner-step counts have upper bounds, refused when a job or command
is asked for (a job of max_iter 1e9 with tol null would hold a worker for days), and the bounds are shown
where the parameters are documented (OpenAPI, ``crowdqa aggregate --help``)."""

from __future__ import annotations

import pytest

from crowdqa.aggregation.limits import MAX_INNER_ITER, MAX_ITER, MAX_RESTARTS
from crowdqa.api.cli import main
from tests.api.conftest import auth, sample_dataset


@pytest.mark.parametrize("method, params, field", [
    ("ds", {"max_iter": 1_000_000_000, "tol": None}, "max_iter"),
    ("mace", {"n_restarts": MAX_RESTARTS + 1}, "n_restarts"),
    ("glad", {"m_step_max_iter": MAX_INNER_ITER + 1}, "m_step_max_iter"),
    ("hmm-crowd", {"init_rounds": MAX_ITER + 1}, "init_rounds"),
    ("mmsr", {"max_iter": MAX_ITER + 1}, "max_iter"),
])
def test_a_job_beyond_a_bound_is_a_422_naming_the_parameter_and_nothing_is_queued(client, keys, method, params,
                                                                                  field):
    key = keys["a"]
    ds = sample_dataset(client, key)
    r = client.post(f"/api/v1/datasets/{ds}/jobs", headers=auth(key), json={"method": method, "params": params})
    assert r.status_code == 422 and r.headers["content-type"].startswith("application/problem+json"), r.text
    body = r.json()
    assert body["detail"].startswith(f"params.{field}: {field} must be an integer in [")
    assert body["errors"][0]["loc"] == ["body", "params", field]
    assert client.get(f"/api/v1/datasets/{ds}/jobs", headers=auth(key)).json()["data"] == []


def test_the_bounds_themselves_are_accepted(client, keys):
    """The largest allowed value is a valid request (the bound is inclusive); the job is queued."""
    key = keys["a"]
    ds = sample_dataset(client, key)
    r = client.post(f"/api/v1/datasets/{ds}/jobs", headers=auth(key),
                    json={"method": "mace", "params": {"n_restarts": 1, "max_iter": MAX_ITER}})
    assert r.status_code == 202, r.text


def test_the_bounds_are_in_the_openapi_document(client):
    schemas = client.get("/openapi.json").json()["components"]["schemas"]
    text = schemas["JobCreate"]["properties"]["params"]["description"]
    assert f"max_iter and init_rounds <= {MAX_ITER:,}" in text and f"n_restarts <= {MAX_RESTARTS}" in text
    assert "tol null" in text


def test_the_command_line_refuses_a_bound_in_one_line_before_reading(tmp_path, capsys):
    status = main(["aggregate", str(tmp_path / "absent.jsonl"), "--format", "spans-jsonl", "--method", "ds",
                   "--params", '{"max_iter": 1000000000, "tol": null}', "--output", str(tmp_path / "o.jsonl")])
    err = capsys.readouterr().err.strip().splitlines()
    assert status == 2 and len(err) == 1
    assert err[0] == ("crowdqa: error: params.max_iter: max_iter must be an integer in [1, 10000], "
                      "found 1000000000")


def test_the_bounds_are_in_the_help(capsys):
    with pytest.raises(SystemExit):
        main(["aggregate", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert f"n_restarts <= {MAX_RESTARTS}" in out and "max_iter and init_rounds <= 10,000" in out

