"""Issue 47 item 5: NaN and the infinities are refused with 422 in every parameter (crowdqa.api.strict_json for
JSON bodies, crowdqa.jobs.params for job parameters from any entry point), and nothing is queued.

Oracle: RFC 8259 (JSON has no NaN or Infinity), and the request's own place of the word."""

from __future__ import annotations

import pytest
from fastapi.routing import APIRoute

from crowdqa.api.cli import main
from crowdqa.api.strict_json import NonFiniteNumber, StrictJSONRoute, loads
from tests.api.conftest import auth, sample_dataset


@pytest.mark.parametrize("body, where", [
    ('{"method": "ds", "params": {"alpha": Infinity}}', "body.params.alpha: Infinity"),
    ('{"method": "mv", "params": {"weights": {"w1": 1.0, "w2": NaN}}}', "body.params.weights.w2: NaN"),
    ('{"method": "mv", "params": {"weights": [1.0, -Infinity]}}', "body.params.weights.1: -Infinity"),
])
def test_a_job_with_a_non_finite_parameter_is_a_422_naming_it(client, keys, body, where):
    key = keys["a"]
    ds = sample_dataset(client, key)
    r = client.post(f"/api/v1/datasets/{ds}/jobs", headers={**auth(key), "content-type": "application/json"},
                    content=body)
    assert r.status_code == 422 and r.headers["content-type"] == "application/problem+json", r.text
    assert r.json()["detail"].startswith(where), r.json()
    assert client.get(f"/api/v1/datasets/{ds}/jobs", headers=auth(key)).json()["data"] == []


def test_a_string_holding_the_words_is_no_number():
    assert loads('{"note": "NaN and Infinity", "x": 1.5e308}') == {"note": "NaN and Infinity", "x": 1.5e308}
    with pytest.raises(NonFiniteNumber, match=r"^body\.a\.0\.b: NaN"):
        loads('{"a": [{"b": NaN}]}')


def _api_routes(routes) -> list[APIRoute]:
    """Every APIRoute under ``routes``, through included routers (FastAPI 0.16x wraps each as it is included)."""
    found = []
    for route in routes:
        inner = getattr(route, "original_router", None)
        found.extend(_api_routes(inner.routes) if inner is not None else [route] if isinstance(route, APIRoute)
                     else [])
    return found


def test_every_api_route_parses_strictly(client):
    """Every route but the dashboard's (HTML forms) and FastAPI's own documentation pages."""
    routes = [r for r in _api_routes(client.app.routes) if not r.path.startswith(("/ui", "/docs", "/redoc"))]
    assert len(routes) > 30
    assert all(isinstance(r, StrictJSONRoute) for r in routes), \
        [r.path for r in routes if not isinstance(r, StrictJSONRoute)]


def test_the_command_line_refuses_a_non_finite_parameter(tmp_path, capsys):
    status = main(["aggregate", str(tmp_path / "absent.jsonl"), "--format", "spans-jsonl", "--method", "ds",
                   "--params", '{"alpha": Infinity}', "--output", str(tmp_path / "o.jsonl")])
    err = capsys.readouterr().err.strip().splitlines()
    assert status == 2 and err == ["crowdqa: error: params.alpha: inf is not a finite number"]
