"""Two more silent cases in one upload. A gold column empty on every row gave a report with no expert at all, and
one empty on most rows a score on a few items, without a note; answers written two ways (``Yes`` and ``yes``,
``1`` and ``1.0``, span types ``PER`` and ``per``) became two classes whose annotators disagree, without a note.
A ``category`` that keeps none of a file's spans (an expert file calling them otherwise) read its annotators as
marking nothing, so every span of the others scored as wrong. Now each is a note: the CLI's note lines, the upload
summary's ``notes``."""

from __future__ import annotations

from crowdqa.api.cli import main
from tests.api.conftest import SAMPLE, auth, upload
from tests.api.test_label_vocabularies import SENTENCES, _conll


def _answers(path, *, gold_items: int | None = None, spelling=lambda i, w, label: label):
    """Three workers' answers on 20 items, with a ``truth`` column filled on the first ``gold_items`` items."""
    rows = ["question,worker,answer" + (",truth" if gold_items is not None else "")]
    for i in range(20):
        for w in range(3):
            label = spelling(i, w, "yes" if (i + (w == 2)) % 2 else "no")
            gold = "" if gold_items is None else "," + ("yes" if i % 2 else "no") * (i < gold_items)
            rows.append(f"q{i},w{w},{label}{gold}")
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return path


def _notes(capsys) -> list[str]:
    return [line for line in capsys.readouterr().err.splitlines() if line.startswith("crowdqa: note:")]


def _aggregate(path, tmp_path, *extra) -> int:
    return main(["aggregate", str(path), "--format", "categorical", "--method", "mv", "--output",
                 str(tmp_path / "o.csv"), "--quiet", *extra])


def test_cli_a_gold_column_empty_on_some_or_every_row_is_noted(tmp_path, capsys):
    assert _aggregate(_answers(tmp_path / "none.csv", gold_items=0), tmp_path) == 0
    assert _notes(capsys) == ["crowdqa: note: the gold column 'truth' is empty on every row: no expert label was "
                              "read from it"]
    assert _aggregate(_answers(tmp_path / "few.csv", gold_items=3), tmp_path) == 0
    assert _notes(capsys) == ["crowdqa: note: the gold column 'truth' has a value on 3 of 20 items: only those are "
                              "scored against the experts"]
    # Quoted fields take the row loop rather than the columnar reader: the same note.
    quoted = tmp_path / "quoted.csv"
    quoted.write_text((tmp_path / "few.csv").read_text(encoding="utf-8").replace("q1,", '"q1",'), encoding="utf-8")
    assert _aggregate(quoted, tmp_path) == 0
    assert _notes(capsys) == ["crowdqa: note: the gold column 'truth' has a value on 3 of 20 items: only those are "
                              "scored against the experts"]
    assert _aggregate(_answers(tmp_path / "all.csv", gold_items=20), tmp_path) == 0
    assert _aggregate(_answers(tmp_path / "nogold.csv"), tmp_path) == 0
    assert _notes(capsys) == []


def test_cli_answers_written_two_ways_are_noted(tmp_path, capsys):
    """'Yes' beside 'yes', '1.0' beside '1', and span types 'per' beside 'PER', each within one file."""
    capital = _answers(tmp_path / "a.csv", spelling=lambda i, w, label: label.capitalize() if w == 1 else label)
    assert _aggregate(capital, tmp_path) == 0
    (note,) = _notes(capsys)
    assert "labels written two ways are two classes here: 'No' and 'no'; 'Yes' and 'yes'" in note, note
    numbers = _answers(tmp_path / "n.csv", spelling=lambda i, w, label: {"yes": "1", "no": "0"}[label]
                       + (".0" if w == 0 else ""))
    assert _aggregate(numbers, tmp_path) == 0
    (note,) = _notes(capsys)
    assert "'0' and '0.0'; '1' and '1.0'" in note, note
    mixed = [[(w, "per" if (t == "PER" and k % 2) else t) for w, t in s] for k, s in enumerate(SENTENCES)]
    spans = _conll(tmp_path / "c.conll", [{}, {}], sentences=mixed)
    assert main(["aggregate", str(spans), "--format", "conll", "--method", "mv", "--output",
                 str(tmp_path / "o.conll"), "--quiet"]) == 0
    (note,) = _notes(capsys)
    assert "span types written two ways are two classes here: 'PER' and 'per'" in note, note


def test_api_upload_summary_notes_say_both(client, keys, tmp_path):
    key = keys["a"]
    ds = client.post("/api/v1/datasets", headers=auth(key), json={"name": "g"}).json()["id"]
    capital = _answers(tmp_path / "a.csv", gold_items=3,
                       spelling=lambda i, w, label: label.capitalize() if w == 1 else label)
    r = upload(client, key, ds, capital, format="categorical")
    assert r.status_code == 201, r.text
    notes = r.json()["summary"]["notes"]
    assert "the gold column 'truth' has a value on 3 of 20 items: only those are scored against the experts" in notes
    assert any("'Yes' and 'yes'" in n for n in notes), notes


def _renamed_expert(tmp_path):
    text = (SAMPLE / "expert.jsonl").read_text(encoding="utf-8").replace('"Participants"', '"Population"')
    path = tmp_path / "expert.jsonl"
    path.write_text(text, encoding="utf-8")
    return path


def test_cli_a_category_that_keeps_none_of_a_files_spans_is_noted(tmp_path, capsys):
    """--category Participants on an expert file that calls them Population: the experts read as marking nothing,
    and every aggregate span scored as wrong (precision 0.000), without a note before."""
    assert main(["aggregate", str(SAMPLE / "crowd.jsonl"), "--format", "spans-jsonl", "--expert",
                 str(_renamed_expert(tmp_path)), "--category", "Participants", "--method", "mv", "--output",
                 str(tmp_path / "a.jsonl"), "--quiet"]) == 0
    assert _notes(capsys) == ["crowdqa: note: category 'Participants' is none of the labels of this expert file's "
                              "20 spans ('Population'): its annotators read as marking nothing"]
    assert main(["aggregate", str(SAMPLE / "crowd.jsonl"), "--format", "spans-jsonl", "--expert",
                 str(SAMPLE / "expert.jsonl"), "--category", "Participants", "--method", "mv", "--output",
                 str(tmp_path / "a.jsonl"), "--quiet"]) == 0
    assert _notes(capsys) == []


def test_api_a_category_that_keeps_none_of_a_files_spans_is_noted(client, keys, tmp_path):
    key = keys["a"]
    ds = client.post("/api/v1/datasets", headers=auth(key), json={"name": "c"}).json()["id"]
    assert upload(client, key, ds, SAMPLE / "crowd.jsonl", category="Participants").status_code == 201
    r = upload(client, key, ds, _renamed_expert(tmp_path), role="expert", category="Participants")
    assert r.status_code == 201, r.text
    assert any("category 'Participants' is none of the labels of this expert file's 20 spans" in n
               for n in r.json()["summary"]["notes"]), r.json()["summary"]


def test_api_one_label_written_two_ways_in_two_crowd_uploads_is_noted(client, keys, tmp_path):
    """Two crowd batches, the second answering 'Yes' where the first answered 'yes' (both answer 'no'): two
    classes, accepted as before, and the second upload's summary now says so; a third batch like the first: quiet."""
    key = keys["a"]
    ds = client.post("/api/v1/datasets", headers=auth(key), json={"name": "b"}).json()["id"]

    def batch(name, yes, workers):
        path = tmp_path / name
        path.write_text("item,worker,label\n" + "".join(f"q{i},{w},{yes if (i + k) % 2 else 'no'}\n"
                                                          for i in range(10) for k, w in enumerate(workers)),
                        encoding="utf-8")
        return path

    assert upload(client, key, ds, batch("b1.csv", "yes", ["a", "b"]), format="categorical").status_code == 201
    r = upload(client, key, ds, batch("b2.csv", "Yes", ["c", "d"]), format="categorical")
    assert r.status_code == 201, r.text
    assert r.json()["summary"]["notes"] == [
        "the crowd's labels written two ways in two uploads are two classes: 'Yes' and 'yes' (only case, surrounding "
        "spaces or a number's form differ): write each one way if they mean one label"], r.json()["summary"]
    other = client.post("/api/v1/datasets", headers=auth(key), json={"name": "c"}).json()["id"]
    assert upload(client, key, other, batch("b1.csv", "yes", ["a", "b"]), format="categorical").status_code == 201
    r = upload(client, key, other, batch("b3.csv", "yes", ["e", "f"]), format="categorical")
    assert r.status_code == 201 and "notes" not in r.json()["summary"], r.json()["summary"]
