"""What an integrator meets: a client generated from the served OpenAPI document does the typed-client how-to's flow.

The document is fetched from a running ``crowdqa serve``, validated with ``openapi-spec-validator``,
turned into a client package by ``openapi-python-client`` and imported; the how-to's flow then
runs through that client alone (no raw HTTP): a dataset, the crowd and expert uploads, a job,
polling, the typed report, the worker rows and their CSV, and a 404 and a 422 read as typed
``Problem`` objects.
"""

from __future__ import annotations

import importlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from tests.utils.services import free_port, wait_for_port

BIN = Path(sys.executable).parent
SAMPLE = Path(__file__).resolve().parents[2] / "api" / "sample"
GENERATOR = BIN / "openapi-python-client"

pytestmark = pytest.mark.skipif(not GENERATOR.exists() or not (BIN / "crowdqa").exists(),
                                reason="openapi-python-client or crowdqa is not installed in this environment "
                                       "(pip install -e '.[test]')")


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """A real ``crowdqa serve`` (embedded) and a key of a project, for the whole module."""
    tmp = tmp_path_factory.mktemp("generated-client")
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("CROWDQA_")}
    env.update(CROWDQA_DATA_DIR=str(tmp / "data"), PYTHONUNBUFFERED="1")
    key = subprocess.run([str(BIN / "crowdqa"), "keys", "create", "--project", "integrator"], env=env,
                         capture_output=True, text=True, check=True).stdout.strip().splitlines()[-1]
    server = subprocess.Popen([str(BIN / "crowdqa"), "serve", "--port", str(port), "--log-level", "warning"],
                              env=env, cwd=tmp, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        wait_for_port(port, timeout=60)
        yield {"url": f"http://127.0.0.1:{port}", "key": key, "tmp": tmp}
    finally:
        server.send_signal(signal.SIGTERM)
        log, _ = server.communicate(timeout=30)
        assert "Traceback" not in log, log


@pytest.fixture(scope="module")
def document(served) -> dict:
    return httpx.get(f"{served['url']}/openapi.json", timeout=30).json()


@pytest.fixture(scope="module")
def client_package(served, document):
    """The generated client, imported as ``crowdqa_client`` (removed from sys.modules afterwards)."""
    tmp = served["tmp"]
    (tmp / "openapi.json").write_text(json.dumps(document))
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    out = subprocess.run([str(GENERATOR), "generate", "--path", str(tmp / "openapi.json"), "--output-path",
                          str(tmp / "crowdqa_client"), "--meta", "none"], env=env, capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "Warning" not in out.stdout + out.stderr, out.stdout + out.stderr  # every schema understood
    sys.path.insert(0, str(tmp))
    try:
        yield importlib.import_module("crowdqa_client")
    finally:
        sys.path.remove(str(tmp))
        for name in [m for m in sys.modules if m == "crowdqa_client" or m.startswith("crowdqa_client.")]:
            del sys.modules[name]


def test_the_served_document_is_valid_openapi(document):
    from openapi_spec_validator import validate

    validate(document)  # raises on any error
    for path, operations in document["paths"].items():
        for method, op in operations.items():
            for code, response in op["responses"].items():
                content = response.get("content", {})
                if code[0] == "4" or "application/problem+json" in content:  # errors: problem+json alone
                    assert list(content) == ["application/problem+json"], (method, path, code)
                    assert content["application/problem+json"]["schema"]["$ref"].endswith("/Problem")
                elif "$ref" in content.get("application/json", {}).get("schema", {}):  # typed JSON: JSON only
                    assert list(content) == ["application/json"], (method, path, code)
            assert "_api_v1_" not in op["operationId"], op["operationId"]  # short ids: the client's names


def test_the_readme_flow_through_the_generated_client_alone(served, client_package):
    from crowdqa_client import AuthenticatedClient
    from crowdqa_client.api.datasets import create_dataset, create_job, create_upload
    from crowdqa_client.api.jobs import export_workers, get_job, get_report, list_workers
    from crowdqa_client.models import (
        DatasetCreate,
        JobCreate,
        Method,
        Problem,
        QualityReport,
        SortOrder,
        UploadForm,
        UploadFormFormat,
        UploadFormRole,
        WorkerSortKey,
    )
    from crowdqa_client.types import File

    client = AuthenticatedClient(base_url=served["url"], token=served["key"], timeout=60)
    dataset = create_dataset.sync(client=client, body=DatasetCreate(name="sample"))
    for name, role in (("crowd.jsonl", UploadFormRole.CROWD), ("expert.jsonl", UploadFormRole.EXPERT)):
        with open(SAMPLE / name, "rb") as fh:
            upload = create_upload.sync(dataset.id, client=client, body=UploadForm(
                file=File(payload=fh, file_name=name), format_=UploadFormFormat.SPANS_JSONL, role=role))
        assert not isinstance(upload, Problem), upload
        assert upload.summary.documents == 40 if role == UploadFormRole.CROWD else upload.summary.documents == 20
    job = create_job.sync(dataset.id, client=client, body=JobCreate(method=Method.MV, use_experts=False))
    assert not isinstance(job, Problem), job
    assert isinstance(job.progress.stage, str), job.progress  # "queued" (or later), never unset
    deadline = time.monotonic() + 120
    while (polled := get_job.sync(job.id, client=client)).status not in ("finished", "failed"):
        assert time.monotonic() < deadline, polled
        time.sleep(0.5)
    assert polled.status == "finished", polled.error
    assert polled.progress.stage == "done" and polled.progress.stages  # typed progress

    report = get_report.sync(job.id, client=client)
    assert isinstance(report, QualityReport) and report.method == "mv"
    rows = list_workers.sync(job.id, client=client, sort=WorkerSortKey.F1, order=SortOrder.ASC, limit=5)
    assert rows.count == 11 and len(rows.data) == 5
    worst = rows.data[0]
    assert worst.annotator == "mturk:A10SPAM" and worst.detail.annotator == worst.annotator  # typed detail
    csv_text = export_workers.sync(job.id, client=client, sort=WorkerSortKey.F1, order=SortOrder.ASC)
    assert csv_text.splitlines()[0].startswith("annotator,") and "mturk:A10SPAM" in csv_text.splitlines()[1]

    missing = get_job.sync("0" * 32, client=client)
    assert isinstance(missing, Problem) and missing.status == 404 and missing.title == "Not Found"
    refused = create_job.sync(dataset.id, client=client,
                              body=JobCreate.from_dict({"method": "ds", "params": {"no_such_parameter": 1}}))
    assert isinstance(refused, Problem) and refused.status == 422 and "no_such_parameter" in refused.detail


def _readme_blocks() -> tuple[str, str]:
    """The typed-client how-to (docs/how-to/typed-client.md): its shell block (fetch the document, generate) and its
    Python block."""
    section = (SAMPLE.parents[1] / "docs" / "how-to" / "typed-client.md").read_text(encoding="utf-8")
    shell = section.split("```sh\n", 1)[1].split("\n```", 1)[0]
    python = section.split("```python\n", 1)[1].split("\n```", 1)[0]
    return shell, python


def test_the_readme_client_example_word_for_word(served, tmp_path):
    """The how-to's commands and Python, as written but for the server's port and the key, in a folder holding
    the two sample files: the client is generated, the flow runs, and what it prints reads as values (the
    parse summaries as dicts, each poll's status and progress, never an unset field's repr)."""
    shell, python = _readme_blocks()
    port = served["url"].rsplit(":", 1)[1]
    for name in ("crowd.jsonl", "expert.jsonl"):
        (tmp_path / name).write_bytes((SAMPLE / name).read_bytes())
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    made = subprocess.run(["bash", "-euo", "pipefail", "-c", shell.replace(":8000", f":{port}")], cwd=tmp_path,
                          env=env, capture_output=True, text=True, timeout=300)
    assert made.returncode == 0 and (tmp_path / "crowdqa_client").is_dir(), made.stdout + made.stderr
    code = (f"KEY = {served['key']!r}\n" + python.replace(":8000", f":{port}")
            + "\nprint(type(report).__name__, worst.count, type(csv_text).__name__, type(missing).__name__,"
              " missing.status)\n")
    ran = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert ran.returncode == 0, ran.stderr
    lines = ran.stdout.splitlines()
    assert lines[:2] == ["40 {'crowd': 10, 'expert': 0}", "20 {'crowd': 0, 'expert': 1}"], lines
    assert lines[-1] == "QualityReport 11 str Problem 404", lines
    for poll in lines[2:-1]:  # e.g. "running {'stage': 'fitting', 'iteration': 3, ...}"
        status, progress = poll.split(" ", 1)
        assert status in ("queued", "running") and progress.startswith("{'stage': '"), poll
    assert "Unset" not in ran.stdout


def _pre_annotation_block() -> str:
    """The typed-client how-to's second Python block: pre-annotation through the generated client."""
    section = (SAMPLE.parents[1] / "docs" / "how-to" / "typed-client.md").read_text(encoding="utf-8")
    return section.split("```python\n")[2].split("\n```", 1)[0]


def test_pre_annotation_through_the_generated_client_word_for_word(served, client_package, tmp_path, monkeypatch):
    """The how-to's pre-annotation block as written (the sample's files in the folder, the server's port and key):
    a hmm-crowd-tagger job labels the expert file's texts, polled and downloaded through the typed client; the
    labels are the API's own (``GET /predictions/{id}/labels`` over plain HTTP), and a job of a method that cannot
    pre-annotate answers a typed 409 Problem."""
    for name in ("crowd.jsonl", "expert.jsonl"):
        (tmp_path / name).write_bytes((SAMPLE / name).read_bytes())
    monkeypatch.chdir(tmp_path)
    scope = {"KEY": served["key"]}
    exec(_pre_annotation_block().replace(":8000", ":" + served["url"].rsplit(":", 1)[1]), scope)  # noqa: S102
    prediction, drafts = scope["prediction"], scope["drafts"]
    assert prediction.status == "finished" and prediction.documents == 20
    plain = httpx.get(f"{served['url']}/api/v1/predictions/{prediction.id}/labels",
                      headers={"Authorization": f"Bearer {served['key']}"}, timeout=60)
    assert isinstance(drafts, str) and drafts == plain.text and drafts.count("\n") > 0

    from crowdqa_client import AuthenticatedClient
    from crowdqa_client.api.datasets import create_job
    from crowdqa_client.api.jobs import get_job
    from crowdqa_client.api.predictions import create_prediction
    from crowdqa_client.models import DocumentsForm, DocumentsFormFormat, JobCreate, Method, Problem
    from crowdqa_client.types import File

    client = AuthenticatedClient(base_url=served["url"], token=served["key"], timeout=60)
    dataset = scope["dataset"]
    mv = create_job.sync(dataset.id, client=client, body=JobCreate(method=Method.MV))
    while get_job.sync(mv.id, client=client).status not in ("finished", "failed"):
        time.sleep(0.5)
    with open("expert.jsonl", "rb") as fh:
        refused = create_prediction.sync(mv.id, client=client, body=DocumentsForm(
            file=File(payload=fh, file_name="expert.jsonl"), format_=DocumentsFormFormat.SPANS_JSONL))
    assert isinstance(refused, Problem) and refused.status == 409 and "hmm-crowd-tagger" in refused.detail
