"""``crowdqa review`` of every kind of upload: decisions and a block list for any format, the batch round trip kept.

Oracle: crowds built with a planted spammer whose answers do not depend on the truth (known by construction), and
the block-list CSV read back by the reader ``crowdqa blocked add --from-file`` uses.
"""

from __future__ import annotations

import csv
import io

import numpy as np
import pytest

from crowdqa.jobs.blocklist import read_block_list
from crowdqa.jobs.review import DECISION_COLUMNS, review_file
from crowdqa.quality.review_rules import ReviewRules
from tests.jobs.review_data import batch_bytes, batch_rows


def _categorical(path, rng) -> None:
    """200 items, three honest workers (90% right), one worker who always answers 'no'; a gold column."""
    lines = ["item,worker,label,gold"]
    for i in range(200):
        truth = "yes" if rng.random() < 0.5 else "no"
        other = "no" if truth == "yes" else "yes"
        for w in ("h1", "h2", "h3"):
            lines.append(f"q{i},{w},{truth if rng.random() < 0.9 else other},{truth}")
        lines.append(f"q{i},spam,no,{truth}")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def _conll(answers, gold, rng) -> None:
    """60 sentences of 8 tokens; one PER span each; three careful annotators and one who tags tokens PER at random
    (a quarter of them), whatever they are."""
    workers = ["c1", "c2", "c3", "rand"]
    a_lines, g_lines = ["# annotators: " + " ".join(workers)], []
    for s in range(60):
        start = int(rng.integers(0, 6))
        for t in range(8):
            tag = "B-PER" if t == start else "I-PER" if t == start + 1 else "O"
            careful = [tag if rng.random() < 0.95 else "O" for _ in range(3)]
            noise = ("B-PER" if rng.random() < 0.25 else "O")
            a_lines.append(f"tok{s}x{t} " + " ".join([*careful, noise]))
            g_lines.append(f"tok{s}x{t} {tag}")
        a_lines.append("")
        g_lines.append("")
    answers.write_text("\n".join(a_lines) + "\n", encoding="utf-8")
    gold.write_text("\n".join(g_lines) + "\n", encoding="utf-8")


def _decisions(outcome) -> dict[str, dict[str, str]]:
    rows = list(csv.DictReader(io.StringIO(outcome.decisions_csv().decode("utf-8"))))
    assert tuple(rows[0]) == DECISION_COLUMNS
    return {r["annotator"]: r for r in rows}


def test_categorical_review_writes_decisions_and_blocks_the_constant_answerer(tmp_path, seed):
    path = tmp_path / "answers.csv"
    _categorical(path, np.random.default_rng(seed))
    outcome, parsed = review_file(path, ReviewRules(reject_below=0.6, min_tokens=20), method="ds",
                                  format="categorical")
    assert outcome.batch is None and outcome.summary["assignments"] is None
    rows = _decisions(outcome)
    assert set(rows) == {"h1", "h2", "h3", "spam"}  # crowd workers only: the gold column is an expert
    assert rows["spam"]["verdict"] == "block" and rows["spam"]["block"] == "yes"
    assert {rows[w]["verdict"] for w in ("h1", "h2", "h3")} == {"keep"}
    assert read_block_list(outcome.block_list_csv(), source="b.csv") == [
        {"annotator": "spam", "reason": rows["spam"]["verdict_reason"]}]
    with pytest.raises(ValueError, match="no Mechanical Turk batch file to write back"):
        outcome.reviewed_csv()


def test_block_from_rejected_and_both(tmp_path, seed):
    path = tmp_path / "answers.csv"
    _categorical(path, np.random.default_rng(seed))
    rules = ReviewRules(reject_below=0.7, min_tokens=20, against="expert")
    rejected, _ = review_file(path, rules, method="ds", format="categorical", block_from="rejected")
    # The constant answerer is right on the items whose truth is "no", about half: rejected below 0.7.
    assert [r["annotator"] for r in rejected.summary["block_list"]] == ["spam"]
    assert rejected.summary["block_list"][0]["reason"].startswith("rejected: Rejected: accuracy")
    both, _ = review_file(path, rules, method="ds", format="categorical", block_from="both")
    assert [r["annotator"] for r in both.summary["block_list"]] == ["spam"]
    with pytest.raises(ValueError, match="block_from must be one of verdict, rejected, both"):
        review_file(path, rules, method="ds", format="categorical", block_from="all")


def test_conll_review_blocks_the_random_tagger(tmp_path, seed):
    answers, gold = tmp_path / "answers.conll", tmp_path / "gold.conll"
    _conll(answers, gold, np.random.default_rng(seed))
    outcome, _ = review_file(answers, ReviewRules(reject_below=0.3, min_tokens=20), method="ds", format="conll",
                             experts=[dict(path=gold, format="conll", role="expert")])
    rows = _decisions(outcome)
    assert rows["rand"]["verdict"] == "block"
    assert {rows[w]["verdict"] for w in ("c1", "c2", "c3")} == {"keep"}
    assert [r["annotator"] for r in outcome.summary["block_list"]] == ["rand"]


def test_mturk_batch_keeps_its_round_trip_and_gets_a_block_list(tmp_path):
    """The Mechanical Turk batch is still written back byte for byte but for the decided cells, and its summary
    now has the report's verdicts and a block list too."""
    path = tmp_path / "batch.csv"
    path.write_bytes(batch_bytes(batch_rows()))
    outcome, _ = review_file(path, ReviewRules(reject_below=0.5, min_tokens=10), method="mv")
    assert outcome.batch is not None and outcome.summary["format"] == "mturk-csv"
    reviewed = outcome.reviewed_csv()
    assert len(reviewed) > len(path.read_bytes()) and b"ASPAM5" in reviewed
    spam = next(d for d in outcome.summary["decisions"] if d["worker"] == "ASPAM5")
    assert spam["verdict"] == "reject" and spam["quality_verdict"] in ("block", "watch", "keep")
    assert "block_list" in outcome.summary and _decisions(outcome)["mturk:ASPAM5"]["decision"] == "reject"


def test_read_block_list_names_a_bad_row():
    with pytest.raises(ValueError, match=r"b.csv:1: a block list's header names an 'annotator' column"):
        read_block_list(b"who,why\nx,y\n", source="b.csv")
    with pytest.raises(ValueError, match=r"b.csv:3: no annotator"):
        read_block_list(b"annotator,reason\nw1,slow\n,empty\n", source="b.csv")
    assert read_block_list(b"\xef\xbb\xbfannotator\n'=w1\n\n", source="b.csv") == [{"annotator": "=w1",
                                                                                    "reason": ""}]


def test_cli_review_of_a_categorical_file(tmp_path, capsys, seed):
    """``crowdqa review --format categorical``: the decisions CSV as --output, the block list, one line per worker
    to block on the terminal; --bonus-output, a Mechanical Turk bonus list, is refused for another format."""
    from crowdqa.api.cli import main

    path = tmp_path / "answers.csv"
    _categorical(path, np.random.default_rng(seed))
    out, blocked = tmp_path / "decisions.csv", tmp_path / "blocked.csv"
    assert main(["review", str(path), "--format", "categorical", "--method", "ds", "--reject-below", "0.5",
                 "--min-tokens", "20", "--output", str(out), "--block-list", str(blocked), "--quiet"]) == 0
    text = capsys.readouterr().out
    assert "block list: 1 workers (from verdict)" in text and "  block spam: answers do not depend" in text
    assert "assignments:" not in text
    assert [r["annotator"] for r in csv.DictReader(io.StringIO(out.read_text()))] == ["h1", "h2", "h3", "spam"]
    assert [r["annotator"] for r in read_block_list(blocked.read_bytes(), source="b")] == ["spam"]
    assert main(["review", str(path), "--format", "categorical", "--method", "ds", "--reject-below", "0.5",
                 "--bonus", "1", "--bonus-above", "0.9", "--bonus-output", str(tmp_path / "b.csv"), "--dry-run"]) == 2
    assert "--bonus-output is a Mechanical Turk bonus list" in capsys.readouterr().err
    assert main(["review", str(path), "--format", "categorical", "--method", "ds", "--reject-below", "0.5",
                 "--apply-block-list", "--dry-run"]) == 2
    assert "--apply-block-list needs --project NAME" in capsys.readouterr().err
