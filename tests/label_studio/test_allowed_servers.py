"""Who may make the server fetch a URL: CROWDQA_LABEL_STUDIO_URLS names the Label Studio servers a pull or push of
the API or the dashboard may reach (unset: any, the embedded single-user default), refused before any connection
with a 422 naming the setting and not its value; whatever the setting, other schemes and URLs with credentials
are refused and no redirect is followed; the CLI, run by the operator, is not bound by the list. On the fake of
Label Studio's API of test_pull_guards.py, behind a transport that records every request the client sends."""

from __future__ import annotations

import functools
import json

import httpx
import pytest
from sqlmodel import Session

from crowdqa.api.cli import main
from crowdqa.ingest.label_studio_api import LabelStudio
from crowdqa.store.db import get_engine
from crowdqa.store.errors import ConfigurationError
from crowdqa.store.settings import Settings, get_settings, url_origin
from tests.api.conftest import wait_job
from tests.label_studio.conftest import CHOICE_CONFIG
from tests.label_studio.test_pull_guards import CROWD, PROBLEM, PROJECT, TOKEN, URL, FakeLabelStudio, choice_tasks
from tests.utils.factories import auth, project_with_key

SETTING = "CROWDQA_LABEL_STUDIO_URLS"
#: An allow-list without the fake's server: what an API key must not get past.
OTHERS = "http://localhost:8080,https://ls.example.org"


class Recorded(FakeLabelStudio):
    """The fake, answering a push too (model versions, predictions, the project's model version), and keeping every
    request it is sent; ``redirect_to`` makes it answer every request with a 302 there."""

    def __init__(self) -> None:
        super().__init__(CHOICE_CONFIG, choice_tasks(CROWD))
        self.requests: list[httpx.Request] = []
        self.predictions = 0
        self.redirect_to: str | None = None

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        if self.redirect_to is not None:
            return httpx.Response(302, headers={"location": self.redirect_to})
        path = request.url.path
        if path == f"/api/projects/{PROJECT}/model-versions/":  # GET: {version: count}; DELETE: the count
            return httpx.Response(200, json={} if request.method == "GET" else 0)
        if path == f"/api/projects/{PROJECT}/import/predictions":
            self.predictions += len(json.loads(request.read()))
            return httpx.Response(201, json={"created": self.predictions})
        if path == f"/api/projects/{PROJECT}" and request.method == "PATCH":
            return httpx.Response(200, json={"id": PROJECT})
        return super().__call__(request)

    def hosts(self) -> set[str]:
        return {r.url.host for r in self.requests}


@pytest.fixture
def fake(monkeypatch) -> Recorded:
    server = Recorded()
    monkeypatch.setattr(LabelStudio, "__init__",
                        functools.partialmethod(LabelStudio.__init__, transport=httpx.MockTransport(server)))
    return server


def allow(monkeypatch, value: str | None) -> Settings:
    """The server's settings from now on with CROWDQA_LABEL_STUDIO_URLS set to ``value`` (None: unset)."""
    if value is None:
        monkeypatch.delenv(SETTING, raising=False)
    else:
        monkeypatch.setenv(SETTING, value)
    get_settings.cache_clear()
    return get_settings()


@pytest.fixture
def key(settings) -> str:
    with Session(get_engine(settings)) as s:
        return project_with_key(s, "a")[1]


def _pull(client, key: str, url: str = URL):
    return client.post("/api/v1/label-studio/pulls", headers=auth(key),
                       json={"url": url, "token": TOKEN, "project": PROJECT, "dataset": "ls"})


def _refused_naming_the_setting(r) -> None:
    assert r.status_code == 422, r.text
    assert r.headers["content-type"] == PROBLEM
    detail = r.json()["detail"]
    assert SETTING in detail and "may not reach" in detail
    assert "localhost:8080" not in detail and "ls.example.org" not in detail  # the list is the operator's


# -- the setting ----------------------------------------------------------------------------------------------
def test_the_setting_is_a_list_of_origins(monkeypatch, settings):
    """Origins compare as httpx connects: scheme and host lower-cased, the default port written out, a trailing
    slash dropped; unset is any URL, 'none' no server."""
    assert allow(monkeypatch, None).label_studio_origins is None
    assert allow(monkeypatch, "").label_studio_origins is None
    assert allow(monkeypatch, "none").label_studio_origins == frozenset()
    listed = allow(monkeypatch, " HTTP://LocalHost:8080/ , https://ls.example.org,http://[::1]:8080")
    assert listed.label_studio_origins == {"http://localhost:8080", "https://ls.example.org:443", "http://[::1]:8080"}
    assert url_origin("https://ls.example.org:443/label-studio/") == "https://ls.example.org:443"
    assert url_origin("http://bücher.example") == "http://xn--bcher-kva.example:80"


@pytest.mark.parametrize("value", ["localhost:8080", "ftp://ls.example.org", "http://ls.example.org/studio",
                                   "http://admin:hunter2@ls.example.org", "http://"])
def test_a_bad_setting_is_refused_naming_it(monkeypatch, settings, value):
    monkeypatch.setenv(SETTING, value)
    get_settings.cache_clear()
    with pytest.raises(ConfigurationError, match=f"^{SETTING}: ") as err:
        get_settings()
    assert "hunter2" not in str(err.value)


# -- the API's pull and push ----------------------------------------------------------------------------------
@pytest.mark.parametrize("url", [URL, "http://169.254.169.254/latest/meta-data", "http://127.0.0.1:6379",
                                 "http://localhost:5432", "https://label-studio.test:8080"])
def test_a_pull_outside_the_list_is_refused_before_any_connection(monkeypatch, settings, fake, client, key, url):
    """With the setting, a URL of another origin (another host, port or scheme: the server's Redis, PostgreSQL, a
    cloud metadata address) is refused with the same message whatever answers there, and no request is sent."""
    allow(monkeypatch, OTHERS)
    _refused_naming_the_setting(_pull(client, key, url))
    assert fake.requests == []
    assert client.get("/api/v1/datasets", headers=auth(key)).json()["data"] == []


@pytest.mark.parametrize("listed", [None, f"http://localhost:8080, {URL.upper()}/", "http://label-studio.test:8080"])
def test_a_pull_of_a_listed_server_or_with_no_list_is_made(monkeypatch, settings, fake, client, key, listed):
    allow(monkeypatch, listed)
    r = _pull(client, key)
    assert r.status_code == 200, r.text
    assert r.json()["tasks"] == 4 and fake.hosts() == {"label-studio.test"}


def test_none_refuses_every_server(monkeypatch, settings, fake, client, key):
    allow(monkeypatch, "none")
    _refused_naming_the_setting(_pull(client, key))
    assert fake.requests == []


@pytest.mark.parametrize("listed", [None, URL])
@pytest.mark.parametrize("url", ["ftp://label-studio.test:8080", "file:///etc/passwd", "gopher://label-studio.test",
                                 "http://admin:hunter2@label-studio.test:8080",
                                 "http://label-studio.test:8080\\@169.254.169.254"])
def test_other_schemes_and_credentials_are_refused_whatever_the_setting(monkeypatch, settings, fake, client, key,
                                                                       listed, url):
    allow(monkeypatch, listed)
    r = _pull(client, key, url)
    assert r.status_code == 422 and r.headers["content-type"] == PROBLEM, r.text
    detail = r.json()["detail"]
    assert ("user name or password" in detail) if "@" in url else ("must start with http" in detail)
    assert "hunter2" not in detail and fake.requests == []


def test_a_redirect_to_another_origin_is_not_followed(monkeypatch, settings, fake, client, key):
    """A listed server answering with a redirect (to a metadata address) sends the client nowhere: one request,
    to the listed server, and a 422 saying where the redirect pointed."""
    allow(monkeypatch, URL)
    fake.redirect_to = "http://169.254.169.254/latest/meta-data/"
    r = _pull(client, key)
    assert r.status_code == 422 and r.headers["content-type"] == PROBLEM, r.text
    assert "redirect (HTTP 302) to http://169.254.169.254/latest/meta-data/" in r.json()["detail"]
    assert fake.hosts() == {"label-studio.test"} and len(fake.requests) == 1


def _pulled_job(monkeypatch, client, key) -> str:
    """A finished MV job of a dataset pulled from the fake (the fake's server listed)."""
    allow(monkeypatch, URL)
    r = _pull(client, key)
    assert r.status_code == 200, r.text
    r = client.post(f"/api/v1/datasets/{r.json()['dataset_id']}/jobs", headers=auth(key), json={"method": "mv"})
    assert r.status_code == 202, r.text
    body = wait_job(client, r.json()["id"], key, timeout=60)
    assert body["status"] == "finished", body
    return body["id"]


def test_a_push_is_refused_once_its_server_left_the_list(monkeypatch, settings, fake, client, key):
    """A push reaches the URL kept at the pull: it is checked again against the list of the moment (the operator
    may have narrowed it since), and goes when the server is listed or no list is set."""
    job = _pulled_job(monkeypatch, client, key)
    allow(monkeypatch, OTHERS)
    fake.requests.clear()
    r = client.post(f"/api/v1/jobs/{job}/label-studio", headers=auth(key))
    _refused_naming_the_setting(r)
    assert fake.requests == [] and fake.predictions == 0
    for listed in (URL, None):
        allow(monkeypatch, listed)
        r = client.post(f"/api/v1/jobs/{job}/label-studio", headers=auth(key))
        assert r.status_code == 200 and r.json()["predictions"] == 4, r.text


@pytest.mark.parametrize(("redis", "listed", "warned"), [(True, None, True), (True, URL, False),
                                                         (False, None, False)])
def test_a_production_server_without_the_list_says_so_at_start(monkeypatch, settings, request, caplog, redis, listed,
                                                               warned):
    """The embedded single-user server keeps the open default quietly; a production one (Redis) warns at start."""
    import logging

    from fastapi.testclient import TestClient

    from crowdqa.api.main import app

    if redis:
        monkeypatch.setenv("CROWDQA_REDIS_URL", request.getfixturevalue("redis_url"))
    allow(monkeypatch, listed)
    caplog.set_level(logging.WARNING, logger="crowdqa.api.lifespan")
    with TestClient(app):
        pass
    said = [r.getMessage() for r in caplog.records if SETTING in r.getMessage()]
    warning = (f"{SETTING} is unset: any API key can make this server send requests to any URL (a Label Studio pull "
               "or push); set it to the Label Studio servers it may reach, or none")
    assert said == ([warning] if warned else [])


# -- the dashboard --------------------------------------------------------------------------------------------
def test_the_dashboards_connect_form_and_push_are_refused_outside_the_list(monkeypatch, settings, fake, client, key):
    from tests.dashboard.test_pages import sign_in

    job = _pulled_job(monkeypatch, client, key)
    csrf = sign_in(client, key)
    allow(monkeypatch, OTHERS)
    fake.requests.clear()
    for url in (URL, "http://169.254.169.254"):
        r = client.post("/ui/label-studio", data={"csrf": csrf, "url": url, "token": TOKEN, "project": str(PROJECT)},
                        follow_redirects=False)
        assert r.status_code == 422 and 'id="form-error"' in r.text, r.text
        assert SETTING in r.text and "ls.example.org" not in r.text
    r = client.post(f"/ui/jobs/{job}/label-studio", data={"csrf": csrf}, follow_redirects=False)
    assert r.status_code == 422 and SETTING in r.text and 'id="label-studio-push"' in r.text
    r = client.post("/ui/label-studio", data={"csrf": csrf, "url": "http://admin:hunter2@label-studio.test:8080",
                                              "token": TOKEN, "project": str(PROJECT)}, follow_redirects=False)
    assert r.status_code == 422 and "user name or password" in r.text and "hunter2" not in r.text
    assert fake.requests == []
    allow(monkeypatch, URL)
    r = client.post("/ui/label-studio", data={"csrf": csrf, "url": URL, "token": TOKEN, "project": str(PROJECT)},
                    follow_redirects=False)
    assert r.status_code == 303, r.text


# -- the CLI --------------------------------------------------------------------------------------------------
def test_the_cli_is_the_operators_and_not_bound_by_the_list(monkeypatch, settings, fake, capsys):
    """The CLI runs as the operator on the server's machine, who could reach any URL from there anyway: the list
    (written for API keys) does not bind it; other schemes and credentials are one line, as everywhere."""
    allow(monkeypatch, "none")
    pull = ["label-studio", "pull", "--token", TOKEN, "--project", str(PROJECT), "--dataset", "ls"]
    assert main([*pull, "--url", URL]) == 0
    assert "4 held" in capsys.readouterr().out and fake.hosts() == {"label-studio.test"}
    for url, why in (("ftp://label-studio.test", "must start with http"),
                     ("http://admin:hunter2@label-studio.test:8080", "user name or password")):
        fake.requests.clear()
        assert main([*pull, "--url", url]) != 0
        err = capsys.readouterr().err
        assert why in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err
        assert "hunter2" not in err and fake.requests == []
