"""crowdqa.jobs.review and ``crowdqa review``: a batch aggregated, reviewed and written back.

Oracle: the batch of :mod:`tests.jobs.review_data`, whose workers' quality is known by construction
(the spammer's F1 is 0 on every document, the whole-sentence worker's precision 2/16 per sentence),
and Python's csv reader on the written file.
"""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from crowdqa.api.cli import main
from crowdqa.jobs.review import review_file
from crowdqa.quality.review_rules import ReviewRules
from tests.conftest import shared_path
from tests.jobs.review_data import batch_bytes, batch_rows


def _read(data: bytes) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(data.decode("utf-8-sig"), newline="")))


@pytest.fixture
def batch(tmp_path):
    path = tmp_path / "Batch_1_batch_results.csv"
    path.write_bytes(batch_bytes(batch_rows(spammer_status="Approved")))
    return path


def test_review_rejects_the_spammer_and_approves_the_rest(batch):
    outcome, _ = review_file(batch, ReviewRules(reject_below=0.2, min_tokens=50), method="mv")
    s = outcome.summary
    # 60 assignments: the spammer's first was approved on the site already; its 11 others are rejected.
    assert s["assignments"] == {"approved": 48, "rejected": 11, "left": {"already approved": 1},
                                "malformed_lines": []}
    assert s["workers"]["approved"] == 4 and s["workers"]["rejected"] == 1
    spam = next(d for d in s["decisions"] if d["worker"] == "ASPAM5")
    assert spam["verdict"] == "reject" and spam["score"] == 0.0 and spam["interval"] == [0.0, 0.0]
    whole = next(d for d in s["decisions"] if d["worker"] == "AWHOLE4")
    assert whole["verdict"] == "approve" and whole["reason"] == "at_or_above"  # F1 2/9 = 0.22 on every sentence
    assert whole["score"] == pytest.approx(2 / 9)
    rows = _read(outcome.reviewed_csv())
    for r in rows:
        if r["WorkerId"] == "ASPAM5" and r["AssignmentStatus"] == "Submitted":
            assert r["Approve"] == "" and r["Reject"].startswith("Rejected: F1 0.00") and \
                r["RequesterFeedback"] == r["Reject"]
        elif r["AssignmentStatus"] == "Submitted":
            assert r["Approve"] == "x" and r["Reject"] == "" and r["RequesterFeedback"].startswith("Approved:")
        else:
            assert r["Approve"] == r["Reject"] == r["RequesterFeedback"] == ""


def test_a_higher_bar_also_rejects_the_whole_sentence_worker_and_pays_bonuses(batch):
    rules = ReviewRules(reject_below=0.5, min_tokens=50, bonus="0.50", bonus_above=0.9)
    outcome, _ = review_file(batch, rules, method="mv")
    verdicts = {d["worker"]: d["verdict"] for d in outcome.summary["decisions"]}
    assert verdicts == {"AGOOD1": "approve", "AGOOD2": "approve", "AMISS3": "approve", "AWHOLE4": "reject",
                        "ASPAM5": "reject"}
    # AMISS3 missed two of twelve sentences: its F1 interval's lower bound is below 0.9, so no bonus.
    bonuses = _read(outcome.bonus_csv())
    assert [(b["WorkerId"], b["BonusAmount"]) for b in bonuses] == [("AGOOD1", "0.50"), ("AGOOD2", "0.50")]
    assert bonuses[0]["AssignmentId"] == "AS11AGOOD1" and bonuses[0]["Reason"].startswith("Bonus for quality: F1 1.00")
    assert outcome.summary["bonus_total"] == "1.00"


def test_cli_review_of_a_file_loads_no_store(batch):
    """``crowdqa review`` of a file without --project reads no rows: a fresh interpreter that ran it has loaded
    neither the store nor its ORM (the review of a stored job is crowdqa.jobs.exports'); the same run with
    --project does load them, so the check can fail."""
    def loaded(*extra: str) -> set[str]:
        argv = ["review", str(batch), "--method", "mv", "--reject-below", "0.2", "--dry-run", "--quiet", *extra]
        code = f"import sys\nfrom crowdqa.api.cli import main\nmain({argv!r})\nprint(*sys.modules, file=sys.stderr)"
        return set(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                                  env={**os.environ, "CROWDQA_DATA_DIR": str(batch.parent / "data")}).stderr.split())

    store = {"sqlalchemy", "sqlmodel", "crowdqa.store.crud", "crowdqa.store.models"}
    assert store & loaded() == set()
    assert store <= loaded("--project", "nope")


def test_cli_review_writes_the_batch_back_and_dry_run_writes_nothing(batch, tmp_path, capsys):
    out, bonus, summary = tmp_path / "reviewed.csv", tmp_path / "bonus.csv", tmp_path / "summary.json"
    args = ["review", str(batch), "--method", "mv", "--reject-below", "0.2", "--min-tokens", "50", "--quiet"]
    assert main([*args, "--output", str(out), "--bonus", "0.25", "--bonus-above", "0.9", "--bonus-output",
                 str(bonus), "--summary", str(summary)]) == 0
    text = capsys.readouterr().out
    assert "assignments: 48 approved, 11 rejected, 1 left as they were (1 already approved)" in text
    assert "ASPAM5" in text.split("rejected workers:")[1]
    data = out.read_bytes()
    assert data.startswith(b"\xef\xbb\xbf") and data.count(b"\r\n") == 61
    assert json.loads(summary.read_text())["assignments"]["rejected"] == 11
    assert bonus.read_bytes().startswith(b"WorkerId,AssignmentId,BonusAmount,Reason\r\n")
    # Reviewing the reviewed file: nothing is open any more, nothing changes.
    again = tmp_path / "again.csv"
    assert main(["review", str(out), "--method", "mv", "--reject-below", "0.2", "--quiet", "--output",
                 str(again)]) == 0
    assert again.read_bytes() == data
    # --dry-run: the summary, no file.
    dry = tmp_path / "dry.csv"
    assert main([*args, "--output", str(dry), "--dry-run"]) == 0
    assert "11 rejected" in capsys.readouterr().out and not dry.exists()


@pytest.mark.parametrize("extra, message", [
    (["--reject-below", "1.5"], r"--reject-below must be a number in \[0, 1\], found 1.5"),
    (["--reject-below", "0.2", "--min-tokens", "-3"], r"--min-tokens must be an integer >= 0, found -3"),
    (["--reject-below", "0.2", "--bonus", "-1", "--bonus-above", "0.8"], r"--bonus must be a positive amount"),
    (["--reject-below", "0.2", "--bonus", "1"], r"--bonus and --bonus-above go together"),
    (["--reject-below", "0.2", "--against", "expert"], r"--against expert needs --expert PATH"),
    (["--reject-below", "0.2", "--params", '{"max_iter": 0}'], r"params.max_iter"),
])
def test_cli_bad_rules_are_one_line_and_exit_2(batch, tmp_path, capsys, extra, message):
    import re

    status = main(["review", str(batch), "--method", "ds", "--output", str(tmp_path / "o.csv"), *extra])
    err = capsys.readouterr().err.strip()
    assert status == 2 and len(err.splitlines()) == 1 and err.startswith("crowdqa: error:")
    assert re.search(message, err), err
    assert not (tmp_path / "o.csv").exists()


def test_cli_unknown_method_and_not_a_batch_file(tmp_path, capsys):
    for args, message in ((["--method", "nope", "--reject-below", "0.2"], "method must be one of"),
                          (["--method", "mv", "--reject-below", "low"], "--reject-below must be a number in [0, 1], "
                                                                         "found 'low'"),
                          (["--method", "mv", "--reject-below", "0.2", "--min-tokens", "ten"],
                           "--min-tokens must be an integer >= 0, found 'ten'")):
        assert main(["review", "x.csv", *args, "--output", str(tmp_path / "o.csv")]) == 2
        err = capsys.readouterr().err
        assert len(err.splitlines()) == 1 and message in err, err
    other = tmp_path / "other.csv"
    other.write_text("item,annotator,label\n1,a,x\n")
    assert main(["review", str(other), "--method", "mv", "--reject-below", "0.2", "--output",
                 str(tmp_path / "o.csv")]) == 2
    assert "other.csv:1: not a Mechanical Turk batch-results file: no WorkerId column" in capsys.readouterr().err


def test_shared_mechanical_turk_example(tmp_path, capsys):
    """The CrowdTruth example from ../shared/data (categorical answers; no status, no review columns)."""
    path = shared_path("mturk", "crowdtruth_amt_example.csv")
    out = tmp_path / "reviewed.csv"
    assert main(["review", str(path), "--method", "ds", "--reject-below", "0.3", "--min-tokens", "3", "--quiet",
                 "--output", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "accuracy against the aggregate" in printed
    original = path.read_bytes()
    data = out.read_bytes()
    before, after = _read(original), _read(data)
    assert len(after) == len(before) == 63
    assert list(after[0]) == [*before[0], "Approve", "Reject", "RequesterFeedback"]
    for b, a in zip(before, after, strict=True):
        assert {k: a[k] for k in b} == b  # every original cell as it was
        assert (a["Approve"] == "x") != bool(a["Reject"])  # each assignment decided once
    # Byte level: each line of the original is the start of the same line in the review.
    for old, new in zip(original.split(b"\n"), data.split(b"\n"), strict=True):
        assert new.startswith(old.rstrip(b"\r"))


def test_blocked_workers_are_left_out_of_the_fit_and_still_scored():
    """Oracle: the fit with a worker blocked equals the fit on the corpus without that worker's labels."""
    import numpy as np

    from crowdqa.jobs.pipeline import run_pipeline
    from tests.utils.factories import synthetic_corpus

    corpus = synthetic_corpus(n_crowd=6, accuracy=0.8, seed=3)
    blocked = corpus.worker_ids[2]
    got = run_pipeline(corpus, method="ds", blocked=frozenset({blocked, "mturk:not-in-this-corpus"}))
    without = corpus.select_workers([w for w in range(corpus.n_workers) if w != 2])
    expected = run_pipeline(without, method="ds")
    np.testing.assert_array_equal(got.labels, expected.labels)
    np.testing.assert_allclose(got.proba, expected.proba)
    workers = got.report.workers
    assert [w.blocked for w in workers] == [w == 2 for w in range(corpus.n_workers)]
    assert got.report.blocked_workers == [blocked]
    assert workers[2].vs_aggregate.f1 is not None and workers[2].tokens > 0  # still scored
    with pytest.raises(ValueError, match="6 crowd annotators, 6 of them blocked"):
        run_pipeline(corpus, method="mv", blocked=frozenset(corpus.worker_ids))


def test_cli_blocked_list_add_remove(tmp_path, monkeypatch, capsys):
    from crowdqa.store.settings import get_settings

    monkeypatch.setenv("CROWDQA_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.delenv("CROWDQA_DATABASE_URL", raising=False)
    get_settings.cache_clear()
    try:
        assert main(["blocked", "list", "--project", "lab"]) == 2  # no database here yet: none is made
        assert "holds no crowdqa database" in capsys.readouterr().err
        assert main(["keys", "create", "--project", "other"]) == 0
        assert main(["blocked", "list", "--project", "lab"]) == 2
        assert "no project named 'lab'" in capsys.readouterr().err
        assert main(["keys", "create", "--project", "lab"]) == 0
        assert main(["blocked", "add", "mturk:A1", "mturk:A2", "--project", "lab", "--reason", "spam"]) == 0
        assert capsys.readouterr().out.splitlines()[-2:] == ["blocked: mturk:A1", "blocked: mturk:A2"]
        assert main(["blocked", "add", "mturk:A1", "--project", "lab"]) == 0
        assert "already blocked (reason updated): mturk:A1" in capsys.readouterr().out
        assert main(["blocked", "remove", "mturk:A2", "--project", "lab"]) == 0
        assert main(["blocked", "remove", "mturk:A2", "--project", "lab"]) == 2
        assert "'mturk:A2' is not on this project's block list" in capsys.readouterr().err
        assert main(["blocked", "list", "--project", "lab"]) == 0
        listed = capsys.readouterr().out.splitlines()
        assert len(listed) == 2 and listed[1].startswith("mturk:A1 ")
    finally:
        get_settings.cache_clear()


@settings(max_examples=8, deadline=None)
@given(st.permutations(range(60)))
def test_permuting_the_batch_rows_changes_nothing_but_their_order(order):
    """Oracle: the review of the batch as written. Each assignment gets the same decision and each worker the
    same score whatever the order of the rows (the bootstrap intervals are drawn over documents in file order,
    so only the estimates and verdicts are compared)."""
    import tempfile
    from pathlib import Path

    rows = batch_rows(spammer_status="Approved")
    rules = ReviewRules(reject_below=0.5, min_tokens=50)
    with tempfile.TemporaryDirectory() as tmp:
        a, b = Path(tmp) / "a.csv", Path(tmp) / "b.csv"
        a.write_bytes(batch_bytes(rows))
        b.write_bytes(batch_bytes([rows[i] for i in order]))
        first, _ = review_file(a, rules, method="mv")
        second, _ = review_file(b, rules, method="mv")

    def decided(outcome):
        return {r["AssignmentId"]: (r["Approve"], bool(r["Reject"])) for r in _read(outcome.reviewed_csv())}

    assert decided(first) == decided(second)
    scores = lambda o: {d["worker"]: (d["verdict"], d["score"], d["open_assignments"])  # noqa: E731
                        for d in o.summary["decisions"]}
    assert scores(first) == scores(second)
    assert first.summary["assignments"] == second.summary["assignments"]


def test_a_review_by_a_report_at_another_level_says_that_level(batch):
    """The summary and the terminal text name the report's interval level (here 90%), never a fixed 95%.

    Oracle: the level written into the report the review reads."""
    from crowdqa.ingest import read_corpus
    from crowdqa.ingest.mturk_review import read_batch
    from crowdqa.jobs.pipeline import run_pipeline
    from crowdqa.jobs.review import format_review, review_batch

    report = run_pipeline(read_corpus(batch, format="mturk-csv").corpus, method="mv").report.model_dump(mode="json")
    assert report["bootstrap"]["level"] == 0.95
    report["bootstrap"]["level"] = 0.9
    rules = ReviewRules(reject_below=0.5, min_tokens=50, bonus="0.50", bonus_above=0.9)
    summary = review_batch(read_batch(batch.read_bytes(), source=batch.name), report, rules).summary
    assert summary["rules"]["level"] == 0.9
    assert "the 90% interval's upper bound is below it" in format_review(summary, source=batch.name)
    texts = [d["feedback"] for d in summary["decisions"]] + [b["Reason"] for b in summary["bonuses"]]
    assert summary["bonuses"] and any("(90% interval " in t for t in texts)
    assert not any("95%" in t for t in texts)


def test_the_documented_crowdtruth_transcript_is_what_the_commands_print(capsys, monkeypatch):
    """The review transcript on CrowdTruth's example batch (docs/how-to/pay-and-block.md) was pasted from one manual
    run; each of its commands is run here and every line the page shows (``...`` elides lines) is printed, in that
    order."""
    import re
    import shlex
    from pathlib import Path

    path = shared_path("mturk", "crowdtruth_amt_example.csv")
    how_to = Path(__file__).resolve().parents[2] / "docs" / "how-to" / "pay-and-block.md"
    readme = how_to.read_text(encoding="utf-8")
    block = re.search(r"```\n(\$ crowdqa review crowdtruth_amt_example\.csv .*?)```", readme, flags=re.S)
    assert block, "the how-to shows a review of crowdtruth_amt_example.csv"
    runs = re.split(r"^\$ ", block[1], flags=re.M)[1:]
    assert len(runs) == 2
    monkeypatch.chdir(path.parent)
    for run in runs:
        command, *shown = run.rstrip("\n").split("\n")
        args = shlex.split(command)
        assert args[:2] == ["crowdqa", "review"]
        main(args[1:])
        printed = capsys.readouterr().out.splitlines()
        at = 0
        for line in (s for s in shown if s.strip() != "..."):
            assert line in printed[at:], f"the how-to shows {line!r}; {command!r} printed:\n" + "\n".join(printed)
            at = printed.index(line, at) + 1


def test_cli_review_into_a_closed_pipe_still_writes_its_files(batch, tmp_path):
    """``crowdqa review ... | head -1``: the reader leaves after its line, the next write to stdout meets a closed
    pipe, and the reviewed batch, bonuses and summary asked for are written all the same, quietly, with status 141.
    The pipe's reader is closed before the command prints (as ``head`` is gone by the time a long review's second
    block is written), and stdout is unbuffered so that the print itself meets it, not the flush at exit."""
    out, bonus, summary = tmp_path / "reviewed.csv", tmp_path / "bonus.csv", tmp_path / "summary.json"
    argv = ["review", str(batch), "--method", "mv", "--reject-below", "0.2", "--quiet", "--output", str(out),
            "--bonus", "0.25", "--bonus-above", "0.9", "--bonus-output", str(bonus), "--summary", str(summary)]
    proc = subprocess.Popen([sys.executable, "-c", "import sys\nfrom crowdqa.api.cli import main\nsys.exit(main())",
                             *argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env={**os.environ, "PYTHONUNBUFFERED": "1", "CROWDQA_DATA_DIR": str(tmp_path / "data")})
    proc.stdout.close()  # the reader has gone
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 141, err
    assert err == ""  # no traceback, no "Exception ignored"
    assert out.read_bytes().count(b"\r\n") == 61
    assert bonus.read_bytes().startswith(b"WorkerId,AssignmentId,BonusAmount,Reason\r\n")
    assert json.loads(summary.read_text())["assignments"]["rejected"] == 11
