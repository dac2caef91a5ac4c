"""``--reference`` names the expert the report grades against. The command line took any annotator's id, so
``--reference w1`` (a crowd worker) printed "reference: expert w1", graded the aggregate against that worker
(accuracy 1.000) and the real expert against it too (0.000), without a word. Now a crowd id is refused in one
line; the API's job request already refused it (422)."""

from __future__ import annotations

from crowdqa.api.cli import main
from tests.api.conftest import SAMPLE, auth, sample_dataset
from tests.api.test_label_vocabularies import _answers, _problem, _truth


def test_cli_reference_to_a_crowd_worker_is_refused(tmp_path, capsys):
    answers, truth = _answers(tmp_path / "a.csv"), _truth(tmp_path / "t.csv", ("0", "1"))
    aggregate = tmp_path / "agg.csv"
    aggregate.write_text("item,label\n" + "".join(f"q{i},{i % 2}\n" for i in range(20)), encoding="utf-8")
    common = [str(answers), "--format", "categorical", "--expert", str(truth), "--reference", "w1"]
    for command in (["aggregate", *common, "--method", "mv", "--output", str(tmp_path / "o.csv"), "--quiet"],
                    ["report", *common, "--aggregate", str(aggregate)],
                    ["compare", *common, "--methods", "mv,ds", "--output", str(tmp_path / "c.json"), "--quiet"]):
        assert main(command) == 2, command
        err = capsys.readouterr().err.strip().splitlines()
        assert err == ["crowdqa: error: --reference must be union or majority or an expert's id ['gold'], found "
                       "'w1' (a crowd annotator)"], (command, err)
    assert main(["aggregate", *common[:-1], "gold", "--method", "mv", "--output", str(tmp_path / "o.csv"),
                 "--quiet"]) == 0


def test_api_job_with_a_crowd_reference_is_422(client, keys):
    key = keys["a"]
    ds = sample_dataset(client, key)
    crowd = next(line.split('"annotator": "')[1].split('"')[0]
                 for line in (SAMPLE / "crowd.jsonl").read_text(encoding="utf-8").splitlines())
    body = _problem(client.post(f"/api/v1/datasets/{ds}/jobs", headers=auth(key),
                                json={"method": "mv", "reference": crowd}), 422)
    assert f"found {crowd!r}" in body["detail"], body
