"""Expert and crowd labels that do not meet. An expert file answering ``yes/no`` where the crowd answered ``0/1``, or
typing spans ``PERSON`` where the crowd typed ``PER``, used to score every worker and the aggregate 0 without a word
(span F1 0.000 beside token F1 1.000). Now labels sharing none are refused (CLI exit 2 in one line naming the file;
API 422 problem+json on the upload that makes them so, in either order, and on a job), and labels only one side
uses are a warning (the CLI's note lines, the upload summary's notes, the report's fit warnings) that says when a
label is the other side's written with another case or as another number."""

from __future__ import annotations

import json

from crowdqa.api.cli import main
from tests.api.conftest import auth, upload, wait_job

SENTENCES = [[("John", "PER"), ("Smith", "PER"), ("visited", "O"), ("Paris", "LOC")], [("IBM", "ORG"), ("rose", "O")],
             [("Mary", "PER"), ("left", "O")], [("Acme", "ORG"), ("Corp", "ORG"), ("fell", "O")],
             [("Rome", "LOC"), ("won", "O")], [("Ann", "PER"), ("and", "O"), ("Bob", "PER")]]


def _conll(path, renames: list[dict], *, annotators: list[str] | None = None, sentences=SENTENCES):
    """CoNLL with one BIO column per annotator; ``renames`` maps each annotator's types (``{"PER": "PERSON"}``)."""
    lines = [f"# annotators: {' '.join(annotators)}"] if annotators else []
    for sentence in sentences:
        columns = []
        for rename in renames:
            tags, prev = [], "O"
            for _, t in sentence:
                tags.append("O" if t == "O" else ("I-" if prev == t else "B-") + rename.get(t, t))
                prev = t
            columns.append(tags)
        lines += [" ".join([w, *(c[i] for c in columns)]) for i, (w, _) in enumerate(sentence)] + [""]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _crowd(tmp_path, name="crowd.conll", rename=None):
    rename = rename or {}
    return _conll(tmp_path / name, [rename, rename, {**rename, "LOC": rename.get("ORG", "ORG")}],
                  annotators=[f"{name[:2]}{k}" for k in range(3)])


LONG = {"PER": "PERSON", "ORG": "ORGANIZATION", "LOC": "LOCATION"}


def _answers(path, labels=("0", "1"), gold: tuple[str, str] | None = None):
    """Categorical answers of three workers on 20 items (and a gold column with ``gold``'s two labels)."""
    rows = ["question,worker,answer" + (",truth" if gold else "")]
    for i in range(20):
        rows += [f"q{i},w{w},{labels[(i + (w == 2)) % 2]}" + (f",{gold[i % 2]}" if gold else "") for w in range(3)]
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return path


def _truth(path, labels):
    path.write_text("question,truth\n" + "".join(f"q{i},{labels[i % 2]}\n" for i in range(20)), encoding="utf-8")
    return path


def _problem(r, status: int) -> dict:
    assert r.status_code == status, r.text
    assert r.headers["content-type"].startswith("application/problem+json"), r.headers
    return r.json()


# --- the command line -------------------------------------------------------------------------------------------

def test_cli_categorical_labels_sharing_none_are_refused(tmp_path, capsys):
    """The lead's case: crowd 0/1, expert file yes/no: exit 2, one line naming the expert file and both sets, and
    nothing written (before: accuracy 0.000 for the aggregate and every worker)."""
    truth, out = _truth(tmp_path / "truth2.csv", ("no", "yes")), tmp_path / "o.csv"
    status = main(["aggregate", str(_answers(tmp_path / "answer.csv")), "--format", "categorical", "--expert",
                   str(truth), "--expert-format", "categorical", "--method", "mv", "--output", str(out), "--quiet"])
    err = capsys.readouterr().err.strip().splitlines()
    assert status == 2 and len(err) == 1, err
    assert err[0].startswith(f"crowdqa: error: {truth}: the experts' labels ('no', 'yes') share none with the "
                             "crowd's ('0', '1')"), err
    assert not out.exists()


def test_cli_numbers_written_otherwise_are_named(tmp_path, capsys):
    """Expert 0.0/1.0 against crowd 0/1: the reader keeps labels as written (two classes), so it is refused, and
    the line says each is the other's number written otherwise."""
    truth = _truth(tmp_path / "t.csv", ("0.0", "1.0"))
    assert main(["aggregate", str(_answers(tmp_path / "a.csv")), "--format", "categorical", "--expert", str(truth),
                 "--method", "mv", "--output", str(tmp_path / "o.csv"), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "expert '1.0' and crowd '1': the same number written otherwise" in err, err


def test_cli_span_types_sharing_none_are_refused(tmp_path, capsys):
    """The lead's second case: crowd B-PER/B-ORG/B-LOC, experts B-PERSON/...: exit 2 in one line (before: span F1
    0.000 beside token F1 1.000), through aggregate, report and compare --use-experts alike."""
    crowd, gold = _crowd(tmp_path), _conll(tmp_path / "gold.conll", [LONG])
    for command in (["aggregate", "--method", "mv", "--output", str(tmp_path / "o.conll"), "--quiet"],
                    ["report", "--aggregate", str(crowd)],
                    ["compare", "--use-experts", "--methods", "mv,ds", "--output", str(tmp_path / "c.json"),
                     "--quiet"]):
        status = main([command[0], str(crowd), "--format", "conll", "--expert", str(gold), *command[1:]])
        err = capsys.readouterr().err.strip().splitlines()
        assert status == 2 and len(err) == 1, (command, err)
        assert err[0].startswith(f"crowdqa: error: {gold}: the experts' span types ('LOCATION', 'ORGANIZATION', "
                                 "'PERSON') share none with the crowd's ('LOC', 'ORG', 'PER')"), err
    assert not (tmp_path / "o.conll").exists() and not (tmp_path / "c.json").exists()


def test_cli_labels_only_one_side_uses_are_a_note(tmp_path, capsys):
    """Experts type persons 'per' (the crowd: 'PER'): a note names both labels and says only the case differs, the
    report's fit warnings say it too, and the scores are still written. The same files with one vocabulary: no note."""
    crowd, gold = _crowd(tmp_path), _conll(tmp_path / "gold.conll", [{"PER": "per"}])
    report = tmp_path / "r.json"
    assert main(["aggregate", str(crowd), "--format", "conll", "--expert", str(gold), "--method", "mv",
                 "--output", str(tmp_path / "o.conll"), "--report", str(report), "--quiet"]) == 0
    notes = [line for line in capsys.readouterr().err.splitlines() if line.startswith("crowdqa: note:")]
    assert len(notes) == 1 and "span types no crowd annotator chose ('per')" in notes[0], notes
    assert "expert 'per' and crowd 'PER': only case or surrounding spaces differ" in notes[0], notes
    warnings = json.loads(report.read_text())["fit"]["warnings"]
    assert any("expert 'per' and crowd 'PER'" in w for w in warnings), warnings
    same = _conll(tmp_path / "same.conll", [{}])
    assert main(["aggregate", str(crowd), "--format", "conll", "--expert", str(same), "--method", "mv",
                 "--output", str(tmp_path / "o.conll"), "--report", str(report), "--quiet"]) == 0
    assert "note:" not in capsys.readouterr().err
    assert json.loads(report.read_text())["fit"]["warnings"] == []


def test_cli_a_rare_expert_class_is_a_warning_not_a_refusal(tmp_path, capsys):
    """An expert class the crowd never chose (on two of twenty items) is real data: exit 0 and a note."""
    truth = tmp_path / "t.csv"
    truth.write_text("question,truth\n" + "".join(f"q{i},{'2' if i < 2 else i % 2}\n" for i in range(20)),
                     encoding="utf-8")
    aggregate = tmp_path / "agg.csv"
    aggregate.write_text("item,label\n" + "".join(f"q{i},{i % 2}\n" for i in range(20)), encoding="utf-8")
    assert main(["report", str(_answers(tmp_path / "a.csv")), "--format", "categorical", "--expert", str(truth),
                 "--aggregate", str(aggregate)]) == 0
    err = capsys.readouterr().err
    assert "the experts use labels no crowd annotator chose ('2')" in err, err


# --- the service ------------------------------------------------------------------------------------------------

def _dataset(client, key) -> str:
    return client.post("/api/v1/datasets", headers=auth(key), json={"name": "vocab"}).json()["id"]


def test_api_span_types_sharing_none_are_422_in_either_order(client, keys, tmp_path):
    """Crowd first: the expert upload is 422 naming both sets, the dataset unchanged. Experts first: the crowd
    upload is the one refused. (Before: 201 both, and a report scoring every span 0.)"""
    key = keys["a"]
    crowd, gold = _crowd(tmp_path), _conll(tmp_path / "gold.conll", [LONG])
    ds = _dataset(client, key)
    assert upload(client, key, ds, crowd, format="conll").status_code == 201
    before = client.get(f"/api/v1/datasets/{ds}", headers=auth(key)).json()
    body = _problem(upload(client, key, ds, gold, format="conll", role="expert"), 422)
    assert ("gold.conll: the experts' span types ('LOCATION', 'ORGANIZATION', 'PERSON') share none with the "
            "crowd's ('LOC', 'ORG', 'PER')") in body["detail"], body
    assert client.get(f"/api/v1/datasets/{ds}", headers=auth(key)).json() == before
    other = _dataset(client, key)
    assert upload(client, key, other, gold, format="conll", role="expert").status_code == 201
    body = _problem(upload(client, key, other, crowd, format="conll"), 422)
    assert "crowd.conll: the experts' span types" in body["detail"], body
    uploads = client.get(f"/api/v1/datasets/{other}/uploads", headers=auth(key)).json()
    assert uploads["count"] == 1


def test_api_categorical_gold_column_sharing_none_is_422(client, keys, tmp_path):
    """One upload holding both roles (a gold column of yes/no beside answers 0/1) is refused too."""
    key = keys["a"]
    body = _problem(upload(client, key, _dataset(client, key), _answers(tmp_path / "a.csv", gold=("no", "yes")),
                           format="categorical"), 422)
    assert "the experts' labels ('no', 'yes') share none with the crowd's ('0', '1')" in body["detail"], body


def test_api_labels_only_one_side_uses_are_noted_and_reported(client, keys, tmp_path):
    """Experts typing 'per' for the crowd's 'PER': 201, the upload summary's notes say it (case only), and the
    job's report carries the warning in its fit record."""
    key = keys["a"]
    ds = _dataset(client, key)
    assert upload(client, key, ds, _crowd(tmp_path), format="conll").status_code == 201
    r = upload(client, key, ds, _conll(tmp_path / "gold.conll", [{"PER": "per"}]), format="conll", role="expert")
    assert r.status_code == 201, r.text
    notes = r.json()["summary"].get("notes", [])
    assert any("expert 'per' and crowd 'PER': only case or surrounding spaces differ" in n for n in notes), notes
    job = client.post(f"/api/v1/datasets/{ds}/jobs", headers=auth(key), json={"method": "mv"})
    assert job.status_code == 202, job.text
    done = wait_job(client, job.json()["id"], key)
    assert done["status"] == "finished", done
    report = client.get(f"/api/v1/jobs/{done['id']}/report", headers=auth(key)).json()
    assert any("span types no crowd annotator chose ('per')" in w for w in report["fit"]["warnings"]), report["fit"]


def test_api_job_on_labels_left_sharing_none_is_422(client, keys, tmp_path):
    """Two crowd uploads (one typing LOC) and experts typing LOC only: accepted with a note; deleting the crowd
    upload that shared LOC leaves the labels sharing none, and a job is then 422 (before: 202, every score 0)."""
    key = keys["a"]
    ds = _dataset(client, key)
    people = [[(w, t if t == "PER" else "O") for w, t in s] for s in SENTENCES]
    places = [[(w, t if t == "LOC" else "O") for w, t in s] for s in SENTENCES]
    assert upload(client, key, ds, _conll(tmp_path / "p.conll", [{}, {}], annotators=["c1", "c2"],
                                          sentences=people), format="conll").status_code == 201
    second = upload(client, key, ds, _conll(tmp_path / "l.conll", [{}], annotators=["c3"], sentences=places),
                    format="conll")
    assert second.status_code == 201, second.text
    assert upload(client, key, ds, _conll(tmp_path / "g.conll", [{}], annotators=["e1"], sentences=places),
                  format="conll", role="expert").status_code == 201
    assert client.delete(f"/api/v1/datasets/{ds}/uploads/{second.json()['id']}", headers=auth(key)).status_code == 204
    body = _problem(client.post(f"/api/v1/datasets/{ds}/jobs", headers=auth(key), json={"method": "mv"}), 422)
    assert "the experts' span types ('LOC') share none with the crowd's ('PER')" in body["detail"], body


def test_api_categorical_expert_answers_sharing_none_stay_409_and_name_the_case(client, keys, tmp_path):
    """Categorical answers sharing no label with the dataset's were refused already (409, one label scheme per
    dataset), and stay so; the message now says when only the case differs (expert Yes/No, crowd yes/no)."""
    key = keys["a"]
    ds = _dataset(client, key)
    assert upload(client, key, ds, _answers(tmp_path / "a.csv", labels=("no", "yes")),
                  format="categorical").status_code == 201
    body = _problem(upload(client, key, ds, _truth(tmp_path / "t.csv", ("No", "Yes")), format="categorical",
                           role="expert"), 409)
    assert "this file's answers (No, Yes) share no label with the dataset's (no, yes)" in body["detail"], body
    assert "this file's 'Yes' and the dataset's 'yes': only case or surrounding spaces differ" in body["detail"], body


# --- ids written otherwise (the expert-only documents' guard, issue 30, says so) ---------------------------------

def _truth_ids(path, ids):
    path.write_text("question,truth\n" + "".join(f"{i},{k % 2}\n" for k, i in enumerate(ids)), encoding="utf-8")
    return path


def test_cli_expert_ids_written_otherwise_are_named(tmp_path, capsys):
    """Expert ids 'Q0'.. for the crowd's 'q0'..: the refusal names the pairs; three such ids among matching ones:
    the note of the documents left out names them (before: the ids only, or the count only)."""
    answers = _answers(tmp_path / "a.csv")
    every = _truth_ids(tmp_path / "t.csv", [f"Q{i}" for i in range(20)])
    assert main(["aggregate", str(answers), "--format", "categorical", "--expert", str(every), "--method", "mv",
                 "--output", str(tmp_path / "o.csv"), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "ids written otherwise: expert 'Q0' and crowd 'q0', expert 'Q1' and crowd 'q1'" in err, err
    some = _truth_ids(tmp_path / "s.csv", [f"q{i}" for i in range(15)] + [" Q15", "Q16", "Q17"])
    assert main(["aggregate", str(answers), "--format", "categorical", "--expert", str(some), "--method", "mv",
                 "--output", str(tmp_path / "o.csv"), "--quiet"]) == 0
    err = capsys.readouterr().err
    assert ("3 expert document(s) (items) matched no crowd document by id and are left out: only documents the "
            "crowd labelled are aggregated and scored (ids written otherwise: expert 'Q15' and crowd 'q15', "
            "expert 'Q16' and crowd 'q16', expert 'Q17' and crowd 'q17')") in err, err


def test_api_expert_ids_written_otherwise_are_named(client, keys, tmp_path):
    key = keys["a"]
    ds = _dataset(client, key)
    assert upload(client, key, ds, _answers(tmp_path / "a.csv"), format="categorical").status_code == 201
    body = _problem(upload(client, key, ds, _truth_ids(tmp_path / "t.csv", [f"Q{i}" for i in range(20)]),
                           format="categorical", role="expert"), 422)
    assert "ids written otherwise: expert 'Q0' and crowd 'q0'" in body["detail"], body
