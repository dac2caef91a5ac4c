"""Schemathesis against the live OpenAPI document, over the ASGI transport (no network), with a valid key.

Every operation gets a bounded number of generated requests (``CROWDQA_SCHEMATHESIS_EXAMPLES``,
default 25): no response is a 500, and every response conforms to the document (status code
documented, content type documented, body valid against its schema, problem+json for errors).
Path ids are the real dataset and job of the key's project in about half of the requests, so the
operations are exercised past their 404s.
"""

from __future__ import annotations

import os
import random

import pytest
import schemathesis
from hypothesis import HealthCheck
from hypothesis import settings as hsettings
from schemathesis.generation.modes import GenerationMode
from schemathesis.specs.openapi.checks import ignored_auth, positive_data_acceptance

from crowdqa.api.main import app
from tests.api.conftest import sample_dataset, wait_job
from tests.utils.factories import auth

EXAMPLES = int(os.environ.get("CROWDQA_SCHEMATHESIS_EXAMPLES", "25"))



def _load_schema():
    """The live document; loading it runs the app's start-up, so point that at a scratch data folder."""
    import tempfile

    from crowdqa.store.settings import get_settings

    mp = pytest.MonkeyPatch()
    try:
        mp.setenv("CROWDQA_DATA_DIR", tempfile.mkdtemp(prefix="crowdqa-schema-"))
        mp.delenv("CROWDQA_DATABASE_URL", raising=False)
        mp.delenv("CROWDQA_REDIS_URL", raising=False)
        get_settings.cache_clear()
        return schemathesis.openapi.from_asgi("/openapi.json", app)
    finally:
        mp.undo()
        get_settings.cache_clear()


schema = _load_schema()
# Unknown query parameters are ignored, as by most HTTP APIs (FastAPI's default): not a schema violation here.
schema.config.generation.update(allow_extra_parameters=False)


@pytest.fixture(scope="module")
def live(tmp_path_factory):
    """One embedded service for the module: a key, a dataset with the sample and a finished job."""
    from fastapi.testclient import TestClient
    from sqlmodel import Session

    from crowdqa.store.db import get_engine
    from crowdqa.store.settings import get_settings
    from tests.utils.factories import project_with_key

    mp = pytest.MonkeyPatch()
    mp.setenv("CROWDQA_DATA_DIR", str(tmp_path_factory.mktemp("schemathesis") / "data"))
    mp.delenv("CROWDQA_REDIS_URL", raising=False)
    mp.delenv("CROWDQA_DATABASE_URL", raising=False)
    get_settings.cache_clear()
    try:
        with Session(get_engine(get_settings())) as s:
            _, key = project_with_key(s, "schemathesis")
        with TestClient(app) as client:
            ds = sample_dataset(client, key)
            job = client.post(f"/api/v1/datasets/{ds}/jobs", headers=auth(key), json={"method": "mv"}).json()["id"]
            assert wait_job(client, job, key)["status"] == "finished"
            yield {"key": key, "dataset_id": ds, "job_id": job, "client": client}
    finally:
        mp.undo()
        get_settings.cache_clear()


@schema.parametrize()
@hsettings(max_examples=EXAMPLES, deadline=None,
           suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                  HealthCheck.filter_too_much])
def test_every_operation_conforms(case, live, tally):
    """No 500; status, content type, headers and body as documented (schemathesis' default checks).

    Left out: ``positive_data_acceptance`` (a schema-valid body may still name an unknown expert or ask
    for categorical-csv labels of a span task: 422 is the right answer) and ``ignored_auth`` (the key
    is always sent; tests/api/test_auth.py covers requests without one)."""
    rng = random.Random(repr((case.method, case.path, case.query, case.body)))
    positive = case.meta is None or case.meta.generation.mode == GenerationMode.POSITIVE
    if positive and case.method.upper() != "DELETE" and case.path_parameters:
        for name in list(case.path_parameters):
            if name in ("dataset_id", "job_id") and rng.random() < 0.5:
                case.path_parameters[name] = live[name]
    response = case.call_and_validate(headers=auth(live["key"]),
                                      excluded_checks=[ignored_auth, positive_data_acceptance])
    assert response.status_code < 500, (case.method, case.formatted_path, response.status_code, response.text)
    tally()


def test_405_lists_every_method_of_the_path(live):
    """Regression (found by schemathesis): Starlette's 405 named only the first route's method in Allow."""
    client = live["client"]
    r = client.request("OPTIONS", "/api/v1/datasets", headers=auth(live["key"]))
    assert r.status_code == 405 and r.headers["content-type"].startswith("application/problem+json")
    assert set(r.headers["allow"].replace(" ", "").split(",")) >= {"GET", "POST"}
    r = client.request("PUT", f"/api/v1/jobs/{live['job_id']}", headers=auth(live["key"]))
    assert r.status_code == 405 and {"GET", "DELETE"} <= set(r.headers["allow"].replace(" ", "").split(","))


def test_unparseable_body_is_a_documented_422(live):
    """Regression (found by schemathesis): bytes that are not JSON gave an undocumented 400."""
    client = live["client"]
    headers = {**auth(live["key"]), "content-type": "application/json"}
    r = client.post("/api/v1/datasets", headers=headers, content=b"\xf0\x1b\xfa\xfa%")
    assert r.status_code == 422 and r.headers["content-type"].startswith("application/problem+json")
    assert r.json()["status"] == 422
