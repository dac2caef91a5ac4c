"""Issue 30 item 6: a method's data-kind rules (its classes, token sequences, experts) are declared on its
registry entry and checked when a job or command is asked for, by the CLI and the API alike: KOS on a 4-class
dataset was queued (202) and then failed in the worker."""

from __future__ import annotations

from pathlib import Path

import pytest

from crowdqa.aggregation.registry import METHODS, aggregator_class
from crowdqa.api.cli import main
from tests.api.conftest import auth, upload


def _answers(path: Path, n_classes: int) -> Path:
    """Categorical answers: 24 items, 3 workers, ``n_classes`` labels."""
    rows = ["task,worker,label"] + [f"i{item},w{w},c{(item + (w == 2)) % n_classes}"
                                    for item in range(24) for w in range(3)]
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return path


def _dataset(client, key: str, path: Path) -> str:
    ds = client.post("/api/v1/datasets", headers=auth(key), json={"name": path.stem}).json()["id"]
    assert upload(client, key, ds, path, format="categorical").status_code == 201
    return ds


@pytest.mark.parametrize("method, n_classes, words", [
    ("kos", 4, "kos is defined for binary labels (2 classes), and the data has 4 classes"),
    ("hmm-crowd", 2, "hmm-crowd models token sequences"),
    ("bsc-seq", 3, "bsc-seq models token sequences"),
])
def test_a_method_the_data_does_not_suit_is_a_422_and_nothing_is_queued(client, keys, tmp_path, method, n_classes,
                                                                       words):
    key = keys["a"]
    ds = _dataset(client, key, _answers(tmp_path / f"answers{n_classes}.csv", n_classes))
    r = client.post(f"/api/v1/datasets/{ds}/jobs", headers=auth(key), json={"method": method})
    assert r.status_code == 422 and r.headers["content-type"].startswith("application/problem+json"), r.text
    assert r.json()["detail"].startswith(words)
    assert client.get(f"/api/v1/datasets/{ds}/jobs", headers=auth(key)).json()["data"] == []


def test_kos_on_binary_answers_is_queued_and_runs(client, keys, tmp_path):
    key = keys["a"]
    ds = _dataset(client, key, _answers(tmp_path / "binary.csv", 2))
    r = client.post(f"/api/v1/datasets/{ds}/jobs", headers=auth(key), json={"method": "kos"})
    assert r.status_code == 202, r.text


def test_the_command_line_refuses_a_sequence_model_on_categorical_answers_before_reading(tmp_path, capsys):
    status = main(["aggregate", str(tmp_path / "absent.csv"), "--format", "categorical", "--method", "hmm-crowd",
                   "--output", str(tmp_path / "o.csv")])
    err = capsys.readouterr().err.strip().splitlines()
    assert status == 2 and len(err) == 1 and err[0].startswith("crowdqa: error: hmm-crowd models token sequences")


def test_the_command_line_refuses_kos_on_four_classes_right_after_reading(tmp_path, capsys):
    out = tmp_path / "o.csv"
    status = main(["aggregate", str(_answers(tmp_path / "answers.csv", 4)), "--format", "categorical", "--method",
                   "kos", "--output", str(out), "--quiet"])
    err = capsys.readouterr().err.strip().splitlines()
    assert status == 2 and len(err) == 1 and "Traceback" not in err[0]
    assert err[0].startswith("crowdqa: error: kos is defined for binary labels (2 classes), and the data has 4")
    assert not out.exists()


@pytest.mark.parametrize("method", list(METHODS))
def test_the_registry_and_the_estimator_agree_on_the_classes(method):
    """The estimator refuses in fit what its registry entry refuses at the request (used without the registry)."""
    assert aggregator_class(method)._n_classes_range == METHODS[method].classes
