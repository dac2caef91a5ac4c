"""Categorical reports without span scores; the command line checks what it can before
any work, agrees with the API and with itself, and says things in its own words."""

from __future__ import annotations

import csv
import json

import pytest

from crowdqa.api.cli import main
from crowdqa.quality.report import build_report
from tests.api.conftest import SAMPLE, auth, upload, wait_job

CROWD = str(SAMPLE / "crowd.jsonl")
EXPERT = str(SAMPLE / "expert.jsonl")


def _categorical(path, *, gold=True):
    """Five items, four workers answering A/B/C; W1 agrees with the gold on 2 of 5 items."""
    gold_labels = ["A", "B", "C", "A", "B"]
    answers = {"W1": ["A", "C", "A", "A", "C"], "W2": gold_labels, "W3": gold_labels, "W4": ["A", "B", "C", "B", "B"]}
    with open(path, "w", encoding="utf-8", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["item", "worker", "label", "gold"] if gold else ["item", "worker", "label"])
        for worker, labels in answers.items():
            for i, lab in enumerate(labels):
                w.writerow([f"i{i}", worker, lab, gold_labels[i]] if gold else [f"i{i}", worker, lab])
    return path


def _err(capsys) -> list[str]:
    return capsys.readouterr().err.strip().splitlines()


def test_categorical_reports_carry_no_span_scores(tmp_path):
    """Defect 5: with no outside class there is no positive label, so a categorical report has accuracy and
    per-class scores named as such, and no precision/recall/F1 where class 0 played "outside" (before: W1
    had F1 1.0 with accuracy 0.4)."""
    from crowdqa.ingest import read_corpus

    c = read_corpus(_categorical(tmp_path / "c.csv"), format="categorical").corpus
    w1 = c.labels_of(c.worker_ids.index("W1"))
    rep = build_report(c, w1, method="w1", experts_used_in_fit=False, n_boot=10).model_dump(mode="json")
    agg = rep["aggregate_vs_expert"]
    assert rep["kind"] == "categorical" and "token" not in agg and "span_location" not in agg
    assert agg["accuracy"]["value"] == pytest.approx(0.4) and set(agg["per_class"]) == {"A", "B", "C"}
    w = next(x for x in rep["workers"] if x["annotator"] == "W1")
    assert set(w["vs_expert"]) <= {"accuracy", "documents", "tokens"}
    assert w["vs_expert"]["accuracy"]["value"] == pytest.approx(0.4)


def test_categorical_worker_list_sorts_by_accuracy(client, keys, tmp_path):
    """Defect 5: /workers of a categorical job sorts by accuracy by default and refuses sort=f1 (422)
    instead of ranking by a phantom F1; the CSV export has the same rows."""
    key = keys["a"]
    ds = client.post("/api/v1/datasets", headers=auth(key), json={"name": "c"}).json()["id"]
    assert upload(client, key, ds, _categorical(tmp_path / "c.csv"), format="categorical").status_code == 201
    job = client.post(f"/api/v1/datasets/{ds}/jobs", headers=auth(key), json={"method": "mv"}).json()["id"]
    assert wait_job(client, job, key)["status"] == "finished"
    rows = client.get(f"/api/v1/jobs/{job}/workers", headers=auth(key)).json()["data"]
    assert [r["annotator"] for r in rows][0] == "W1" and all(r["f1"] is None for r in rows)
    accuracies = [r["accuracy"] for r in rows if r["role"] == "crowd"]
    assert accuracies == sorted(accuracies) and accuracies[0] == pytest.approx(0.4)
    r = client.get(f"/api/v1/jobs/{job}/workers?sort=f1", headers=auth(key))
    assert r.status_code == 422 and "accuracy" in r.json()["detail"]
    text = client.get(f"/api/v1/jobs/{job}/workers.csv", headers=auth(key))
    assert text.headers["content-type"].startswith("text/csv")
    table = list(csv.DictReader(text.text.splitlines()))
    assert [t["annotator"] for t in table] == [r["annotator"] for r in rows]


@pytest.mark.parametrize("extra, message", [
    (["--report", "{tmp}/missing/report.json"], "--report"),
    (["--expert", EXPERT, "--reference", "nobody"], "--reference"),
    (["--output-format", "categorical-csv"], "categorical"),
    (["--params", '{"max_iter": "ten"}', "--method", "ds"], "params.max_iter"),
])
def test_aggregate_checks_before_any_work(tmp_path, capsys, extra, message):
    """Defect 9: a bad --report path, --reference, --output-format or --params ends in one line and exit 2
    before any aggregate is written (before: after reading, fitting and writing the labels)."""
    out = tmp_path / "agg.jsonl"
    argv = ["aggregate", CROWD, "--format", "spans-jsonl", "--method", "mv", "--output", str(out),
            *[a.replace("{tmp}", str(tmp_path)) for a in extra]]
    assert main(argv) == 2
    err = _err(capsys)
    assert err[-1].startswith("crowdqa: error:") and message in err[-1], err
    assert not out.exists()
    assert not any("iteration" in line or "fitting" in line for line in err), err


def test_aggregate_of_a_categorical_mturk_batch_writes_categorical_csv(tmp_path, shared_data, capsys):
    """Defect 10: a categorical MTurk batch aggregated to out.csv gets item,label rows (before: spans-jsonl
    lines in a .csv file)."""
    out = tmp_path / "out.csv"
    batch = shared_data / "mturk" / "crowdtruth_amt_example.csv"
    assert main(["aggregate", str(batch), "--format", "mturk-csv", "--method", "mv", "--output", str(out)]) == 0
    rows = list(csv.reader(out.read_text(encoding="utf-8").splitlines()))
    assert rows[0] == ["item", "label", "score"] and len(rows) > 1
    assert any("HITId" in line for line in _err(capsys))  # the assumed document id is said


def test_report_reads_the_ebm_nlp_folder_aggregate_wrote(tmp_path, capsys):
    """Defect 10: `report --aggregate DIR` reads the ebm-nlp folder `aggregate` wrote, without being told its
    format (before: "Is a directory")."""
    out = tmp_path / "agg"
    assert main(["aggregate", CROWD, "--format", "spans-jsonl", "--expert", EXPERT, "--method", "mv",
                 "--output", str(out), "--output-format", "ebm-nlp"]) == 0
    capsys.readouterr()
    assert main(["report", CROWD, "--format", "spans-jsonl", "--expert", EXPERT, "--aggregate", str(out),
                 "--json", str(tmp_path / "r.json")]) == 0
    assert json.loads((tmp_path / "r.json").read_text())["aggregate_vs_expert"]["token"]["f1"] > 0.5


def test_an_empty_file_is_an_error_in_the_cli_as_in_the_api(client, keys, tmp_path, capsys):
    """Defect 10: an empty file is a one-line error with exit 2 in the CLI, as it is a 422 in the API."""
    empty = tmp_path / "empty.jsonl"
    empty.write_text("", encoding="utf-8")
    assert main(["ingest", str(empty), "--format", "spans-jsonl"]) == 2
    cli = _err(capsys)[-1]
    key = keys["a"]
    ds = client.post("/api/v1/datasets", headers=auth(key), json={"name": "e"}).json()["id"]
    api = upload(client, key, ds, empty)
    assert api.status_code == 422 and "holds no labels" in api.json()["detail"] and "holds no labels" in cli


def test_messages_speak_the_cli_s_words(tmp_path, capsys):
    """Defect 12: no numpy allow_pickle hint for a wrong corpus file, --docs rather than docs=DIR, one file
    prefix per message, and help without reST backticks or internal names."""
    binary = tmp_path / "binary.bin"
    binary.write_bytes(bytes(range(256)) * 3)
    assert main(["ingest", str(binary), "--format", "corpus"]) == 2
    err = _err(capsys)[-1]
    assert "allow_pickle" not in err and "unsafely" not in err
    assert main(["ingest", str(binary), "--format", "label-studio"]) == 2
    assert _err(capsys)[-1].count("binary.bin") == 1
    pico = tmp_path / "pico.jsonl"  # no docs folder beside it
    pico.write_text('{"docid": "1", "Participants": {"w": [[0, 3]]}}\n', encoding="utf-8")
    assert main(["ingest", str(pico), "--format", "pico-jsonl"]) == 2
    err = _err(capsys)[-1]
    assert "--docs DIR" in err and "docs=DIR" not in err
    for command in ("aggregate", "report", "ingest", "serve", "worker", "keys"):
        with pytest.raises(SystemExit):
            main([command, "--help"])
        text = capsys.readouterr().out
        assert "``" not in text and "ingest.read_corpus" not in text and "crowdqa.jobs.pipeline" not in text, command


def test_worker_table_sort_and_top(tmp_path, capsys):
    """The terminal worker table is sorted by quality (worst first) and cut with --top."""
    assert main(["aggregate", CROWD, "--format", "spans-jsonl", "--expert", EXPERT, "--method", "mv", "--output",
                 str(tmp_path / "a.jsonl"), "--top", "3"]) == 0
    out = capsys.readouterr().out.splitlines()
    rows = [line for line in out if line.strip().startswith("mturk:")]
    assert len(rows) == 3 and rows[0].strip().startswith("mturk:A10SPAM")


def _pretty_label_studio(path, *, end="six"):
    """Two tasks pretty-printed; the second annotator's second result of task 2 has ``end`` as its end."""
    def task(k, end2):
        return {"id": k, "data": {"text": "Ann lives in Rome"}, "annotations": [
            {"completed_by": 3, "result": [{"type": "labels", "value": {"start": 0, "end": 3, "labels": ["PER"]}}]},
            {"completed_by": 4, "result": [
                {"type": "choices", "value": {"choices": ["ok"]}},
                {"type": "labels", "value": {"start": 13, "end": end2, "labels": ["LOC"]}}]}]}
    text = json.dumps([task(1, 17), task(2, end)], indent=2)
    path.write_text(text, encoding="utf-8")
    lines = text.splitlines()
    # the line where the bad result opens: the "{" before the line holding its end
    bad = next(i for i, line in enumerate(lines) if f'"end": {json.dumps(end)}' in line)
    return path, next(i for i in range(bad, 0, -1) if lines[i].strip() == "{") + 1


def test_label_studio_errors_name_the_line_of_the_bad_result(client, keys, tmp_path, capsys):
    """Polish 1: a pretty-printed Label Studio export names the line where the bad result starts (before: the
    task number, ``ls.json:2:``), the same in the CLI and in the API's problem+json."""
    path, line = _pretty_label_studio(tmp_path / "ls.json")
    assert line > 40
    assert main(["ingest", str(path), "--format", "label-studio"]) == 2
    cli = _err(capsys)[-1]
    assert f"ls.json:{line}: bad result of '4': " in cli and "'six'" in cli, cli
    ds = client.post("/api/v1/datasets", headers=auth(keys["a"]), json={"name": "ls"}).json()["id"]
    api = upload(client, keys["a"], ds, path, format="label-studio")
    assert api.status_code == 422 and api.headers["content-type"].startswith("application/problem+json")
    assert f"ls.json:{line}: bad result of '4': " in api.json()["detail"], api.json()
    path.write_text(json.dumps(json.loads(path.read_text())), encoding="utf-8")  # one line: line 1 is right
    assert main(["ingest", str(path), "--format", "label-studio"]) == 2
    assert "ls.json:1: bad result of '4': " in _err(capsys)[-1]


@pytest.mark.parametrize("command", [
    ["ingest", "{missing}", "--format", "spans-jsonl"],
    ["aggregate", "{missing}", "--format", "spans-jsonl", "--method", "mv", "--output", "{tmp}/a.jsonl", "-q"],
    ["compare", "{missing}", "--format", "spans-jsonl", "--output", "{tmp}/c.json", "-q"],
    ["route", "{missing}", "--format", "spans-jsonl", "--budget", "5", "--output", "{tmp}/r.csv", "-q"],
    ["review", "{missing}", "--method", "mv", "--reject-below", "0.2", "--dry-run", "-q"],
    ["report", CROWD, "--format", "spans-jsonl", "--aggregate", "{missing}"],
    ["aggregate", CROWD, "--format", "spans-jsonl", "--method", "ds", "--from-model", "{missing}", "--output",
     "{tmp}/a.jsonl", "-q"],
])
def test_every_command_says_a_missing_path_in_the_same_words(tmp_path, capsys, command):
    """One wording for a path that is not there (review said the system's "No such file or directory")."""
    missing = str(tmp_path / "nope.csv")
    assert main([a.format(missing=missing, tmp=tmp_path) for a in command]) == 2
    err = _err(capsys)
    assert len(err) == 1 and err[0].startswith("crowdqa: error: ") and err[0].endswith(f"{missing}: no such file "
                                                                                       "or folder"), err
