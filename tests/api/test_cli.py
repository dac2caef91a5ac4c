"""The command line: `crowdqa aggregate` (synchronous pipeline) and `crowdqa keys create`."""

from __future__ import annotations

import json

import numpy as np
import pytest
from sqlmodel import Session

from crowdqa.api.cli import main
from crowdqa.ingest import read_corpus
from crowdqa.ingest.merge import merge_corpora
from crowdqa.jobs.pipeline import run_pipeline
from crowdqa.store import crud
from crowdqa.store.db import get_engine
from tests.api.conftest import SAMPLE


def test_aggregate_writes_labels_report_and_progress(tmp_path, capsys):
    """Oracle: the spans written equal the spans of run_pipeline's labels; one stderr line per EM iteration."""
    out, rep = tmp_path / "agg.jsonl", tmp_path / "report.json"
    status = main(["aggregate", str(SAMPLE / "crowd.jsonl"), "--format", "spans-jsonl", "--expert",
                   str(SAMPLE / "expert.jsonl"), "--method", "ds", "--params", '{"max_iter": 25, "tol": 0}',
                   "--output", str(out), "--report", str(rep)])
    captured = capsys.readouterr()
    assert status == 0, captured.err
    iterations = [line for line in captured.err.splitlines() if line.startswith("crowdqa: ds: iteration ")]
    assert len(iterations) == 25 and "log-likelihood" in iterations[0]
    corpus = merge_corpora([read_corpus(SAMPLE / "crowd.jsonl", format="spans-jsonl").corpus,
                            read_corpus(SAMPLE / "expert.jsonl", format="spans-jsonl", role="expert").corpus])
    direct = run_pipeline(corpus, method="ds", params={"max_iter": 25, "tol": 0})
    expected = tmp_path / "expected.jsonl"
    from crowdqa.ingest.writers import LabelScores, write_labels

    c = direct.confidence
    write_labels(direct.labels, corpus, expected, format="spans-jsonl",
                 scores=LabelScores(token=c.token, span=c.span, proba=c.proba))
    assert out.read_text() == expected.read_text()
    report = json.loads(rep.read_text())
    assert report["method"] == "ds" and report["fit"]["iterations"] == 25
    assert "Aggregate vs experts" in captured.out or "aggregate" in captured.out.lower()


def test_aggregate_quiet_and_stage_seconds(tmp_path, capsys):
    """--quiet prints nothing on stderr; the report's fit block has the seconds of every stage (issue 14)."""
    out, rep = tmp_path / "agg.jsonl", tmp_path / "report.json"
    assert main(["aggregate", str(SAMPLE / "crowd.jsonl"), "--format", "spans-jsonl", "--method", "ds",
                 "--output", str(out), "--report", str(rep), "--quiet"]) == 0
    assert capsys.readouterr().err == ""
    stages = json.loads(rep.read_text())["fit"]["stages"]
    assert set(stages) == {"reading", "fitting", "scoring", "writing"}


def test_aggregate_and_report_write_the_typed_report_without_importing_pydantic(tmp_path):
    """Issue 14: crowdqa aggregate and crowdqa report leave the typed model (pydantic) to the service; their
    report files are still exactly QualityReports (validated and dumped again: the same JSON)."""
    import subprocess
    import sys

    from crowdqa.quality.report_model import QualityReport

    files = ["--format", "spans-jsonl", "--expert", str(SAMPLE / "expert.jsonl")]
    aggregate = ["aggregate", str(SAMPLE / "crowd.jsonl"), *files, "--method", "mv", "--output",
                 str(tmp_path / "agg.jsonl"), "--report", str(tmp_path / "aggregate.json"), "--quiet"]
    report = ["report", str(SAMPLE / "crowd.jsonl"), *files, "--aggregate", str(tmp_path / "agg.jsonl"),
              "--json", str(tmp_path / "report.json"), "--n-boot", "50"]
    code = (f"import sys\nfrom crowdqa.api.cli import main\nassert main({aggregate!r}) == 0\n"
            f"assert main({report!r}) == 0\nprint(' '.join(sorted(sys.modules)))")
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert "numpy" in loaded and "pydantic" not in loaded and "crowdqa.quality.report_model" not in loaded
    for name in ("aggregate.json", "report.json"):
        written = json.loads((tmp_path / name).read_text())
        assert QualityReport.model_validate(written).model_dump(mode="json") == written
        assert written["workers"] and written["agreement"]["crowd_kappa"]


def test_aggregate_progress_bar_on_a_terminal(tmp_path):
    """On a terminal (a pseudo-terminal of 100 columns) stderr shows tqdm bars: the EM iterations counted."""
    import fcntl
    import os
    import pty
    import struct
    import subprocess
    import sys
    import termios

    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 30, 100, 0, 0))
    proc = subprocess.run(
        [sys.executable, "-m", "crowdqa.api.cli", "aggregate", str(SAMPLE / "crowd.jsonl"), "--format", "spans-jsonl",
         "--method", "ds", "--params", '{"max_iter": 7, "tol": 0}', "--output", str(tmp_path / "a.jsonl")],
        stdout=subprocess.DEVNULL, stderr=follower, timeout=120)
    os.close(follower)
    chunks = []
    while True:
        try:
            data = os.read(leader, 65536)
        except OSError:  # the pty's other end is closed: all was read
            break
        if not data:
            break
        chunks.append(data)
    os.close(leader)
    err = b"".join(chunks).decode("utf-8", "replace")
    assert proc.returncode == 0, err
    assert "crowdqa: ds: fitting: 100%" in err and "7/7" in err and " iteration " not in err


def test_aggregate_conll_round_trip(tmp_path):
    """CoNLL output of the sample has one BIO tag per token, in input order, after each document's -DOCSTART-
    line (issue 13); read back, it gives the pipeline's labels."""
    from crowdqa.ingest.aggregate_input import read_aggregate

    out = tmp_path / "agg.conll"
    assert main(["aggregate", str(SAMPLE / "crowd.jsonl"), "--format", "spans-jsonl", "--method", "mv",
                 "--output", str(out), "--output-format", "conll"]) == 0
    corpus = read_corpus(SAMPLE / "crowd.jsonl", format="spans-jsonl").corpus
    labels = run_pipeline(corpus, method="mv").labels
    lines = [line for line in out.read_text().splitlines() if line.strip()]
    assert [line for line in lines if line.startswith("-DOCSTART-")] == [f"-DOCSTART- {d}" for d in corpus.doc_ids]
    tags = [line.split()[-1] for line in lines if not line.startswith("-DOCSTART-")]
    assert len(tags) == corpus.n_tokens and {t[:2] for t in tags} <= {"O", "B-", "I-"}
    assert read_aggregate(out, corpus, format="conll").tolist() == labels.tolist()
    assert np.count_nonzero(labels) > 0


@pytest.mark.parametrize("argv, message", [
    (["--method", "ds", "--use-experts"], "use_experts needs expert labels, and the data has none"),
    (["--method", "ds", "--params", "[1]"], "--params must be a JSON object"),
    (["--method", "ds", "--params", '{"bogus": 1}'], "unknown parameter 'bogus'"),
])
def test_aggregate_user_errors_are_one_line(tmp_path, capsys, argv, message):
    """Mistakes print one `crowdqa: error:` line and exit 2, no traceback."""
    status = main(["aggregate", str(SAMPLE / "crowd.jsonl"), "--format", "spans-jsonl", "--output",
                   str(tmp_path / "o.jsonl"), *argv])
    err = capsys.readouterr().err.strip().splitlines()
    assert status == 2 and err[-1].startswith("crowdqa: error:") and message in err[-1]
    assert "Traceback" not in "\n".join(err)


@pytest.mark.parametrize("argv, message", [
    (["aggregate", "x.csv", "--methd", "mv"], "crowdqa aggregate: error: unrecognized option --methd "
                                              "(did you mean --method?)"),
    (["agregate", "x.csv"], "invalid choice: 'agregate' (did you mean 'aggregate'?)"),
    (["aggregate", "x.csv", "-f", "conl", "--method", "mv", "--output", "o"],
     "invalid choice: 'conl' (did you mean 'conll'?)"),
    (["ingest"], "crowdqa ingest: error: the following arguments are required: PATH, --format/-f"),
    (["aggregate", "x.csv", "-f", "conll", "--method", "mv", "--output", "o", "--n-bot", "9"],
     "crowdqa aggregate: error: unrecognized option --n-bot "),
])
def test_argument_errors_are_one_line_with_a_suggestion(capsys, argv, message):
    """Issue 30 item 9: argparse printed 17 lines of usage first, and ``--methd mv`` said only that
    --method is required. Oracle: one stderr line holding the expected words, status 2."""
    with pytest.raises(SystemExit) as exc:
        main(argv)
    err = capsys.readouterr().err
    assert exc.value.code == 2 and err.count("\n") == 1 and message in err and "usage:" not in err


def _pico(tmp_path, name: str, lines: list[str]):
    (tmp_path / "docs").mkdir(exist_ok=True)
    (tmp_path / "docs" / "d1.txt").write_text("Adults with type 2 diabetes were given therapy .")
    (tmp_path / "docs" / "d2.txt").write_text("Children with asthma  and their parents .")
    (tmp_path / name).write_text("\n".join(lines) + "\n")
    return str(tmp_path / name)


def test_report_counts_whitespace_spans_and_every_skip(tmp_path, capsys):
    """Issue 30 item 8: ``report --aggregate`` of an aggregate with spans over whitespace alone failed, and
    ``--on-error skip`` then skipped rows without a word. Oracle: the spans written below (two over blanks,
    one past the end of its document in the aggregate, one in the crowd file)."""
    crowd = _pico(tmp_path, "crowd.json", ['{"docid": "d1", "Participants": {"a": [[0, 26]], "b": [[0, 6]]}}',
                                           '{"docid": "d2", "Participants": {"a": [[0, 20]], "b": [[0, 80]]}}'])
    expert = _pico(tmp_path, "expert.json", ['{"docid": "d1", "Participants": {"e": [[0, 26]]}}',
                                             '{"docid": "d2", "Participants": {"e": [[0, 20]]}}'])
    agg = ['{"docid": "d1", "Participants": {"HMMCrowd": [[0, 26], [6, 7]]}}',
           '{"docid": "d2", "Participants": {"HMMCrowd": [[0, 20], [20, 22]]}}']
    argv = ["report", crowd, "-f", "pico-jsonl", "--docs", str(tmp_path / "docs"), "--expert", expert,
            "--aggregate-format", "pico-jsonl", "--n-boot", "10", "--aggregate"]
    crowd_ok = _pico(tmp_path, "crowd_ok.json", (tmp_path / "crowd.json").read_text().replace("80", "8").split("\n"))
    assert main([argv[0], crowd_ok, *argv[2:], _pico(tmp_path, "agg.json", agg)]) == 0
    err = capsys.readouterr().err
    assert "2 span(s) cover only whitespace (no token) and are left out; the first: " in err
    assert f"{tmp_path / 'agg.json'}:1: span [6, 7) of document 'd1'" in err and "error" not in err

    agg.append('{"docid": "d3", "Participants": {"HMMCrowd": [[0, 2]]}}')
    assert main([*argv, _pico(tmp_path, "agg2.json", agg), "--on-error", "skip"]) == 0
    err = capsys.readouterr().err.splitlines()
    assert [line.split(";")[0] for line in err if "left out" in line and "bad row" in line] == [
        "crowdqa: note: --on-error=skip left out 1 bad row(s)"] * 2
    assert any("crowd.json:2: span [0, 80) is not inside document 'd2'" in line for line in err)


def test_report_counts_whitespace_spans_of_an_aggregate_format(tmp_path, capsys):
    """Item 8 for an aggregate in crowdqa's own spans-jsonl: a span over the blank at [8, 9) of trial-000 ("Eligible
    participants ...") was dropped without a word; now a note counts it."""
    rows = [{"doc_id": "trial-000", "annotator": "agg", "start": 27, "end": 58, "label": "Participants"},
            {"doc_id": "trial-000", "annotator": "agg", "start": 8, "end": 9, "label": "Participants"}]
    (tmp_path / "agg.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    status = main(["report", str(SAMPLE / "crowd.jsonl"), "-f", "spans-jsonl", "--expert", str(SAMPLE / "expert.jsonl"),
                   "--aggregate", str(tmp_path / "agg.jsonl"), "--n-boot", "10"])
    err = capsys.readouterr().err
    assert status == 0 and "crowdqa: note: 1 span(s) cover only whitespace (no token) and are left out; the first: " \
        f"{tmp_path / 'agg.jsonl'}:2" in err


def test_keys_create_prints_the_key_last(settings, capsys):
    """`crowdqa keys create --project NAME` prints the key alone on its last line; it authenticates."""
    assert main(["keys", "create", "--project", "lab"]) == 0
    key = capsys.readouterr().out.strip().splitlines()[-1]
    with Session(get_engine(settings)) as s:
        assert crud.authenticate(session=s, key=key).name == "lab"
    assert main(["worker"]) == 2  # no CROWDQA_REDIS_URL: a one-line error
    assert "needs CROWDQA_REDIS_URL" in capsys.readouterr().err


def test_keys_create_admin_and_expiring_keys(settings, capsys):
    """Issue 35 item 6: the first key of a project and `--admin` keys are admin keys; `--expires-in DAYS`."""
    assert main(["keys", "create", "--project", "lab"]) == 0
    out = capsys.readouterr().out
    assert "created an admin key" in out and "first key is an admin key" in out
    assert main(["keys", "create", "--project", "lab", "--expires-in", "2"]) == 0
    out = capsys.readouterr().out
    assert "created an API key" in out and "valid until" in out
    assert main(["keys", "create", "--project", "lab", "--admin"]) == 0
    assert "created an admin key for project 'lab'" in capsys.readouterr().out
    assert main(["keys", "list", "--project", "lab"]) == 0
    rows = capsys.readouterr().out.splitlines()[1:]
    assert [(r.split()[2], r.split()[-1] == "never") for r in rows] == [("admin", True), ("key", False),
                                                                        ("admin", True)]
    for bad in ("0", "-1", "nan", "4000"):
        assert main(["keys", "create", "--project", "lab", "--expires-in", bad]) == 2
        assert "--expires-in must be more than 0" in capsys.readouterr().err
    with Session(get_engine(settings)) as s:
        assert len(crud.list_api_keys(session=s, project_name="lab")) == 3


def test_default_output_format_follows_the_output_suffix():
    """An output named *.jsonl gets spans even for EBM-NLP input; no suffix falls back to the input's kind."""
    from crowdqa.jobs.local import default_output_format

    assert default_output_format("ebm-nlp", output="agg.jsonl") == "spans-jsonl"
    assert default_output_format("spans-jsonl", output="agg.conll") == "conll"
    assert default_output_format("ebm-nlp", output="agg_dir") == "ebm-nlp"
    assert default_output_format("categorical", output="labels.csv") == "categorical-csv"
    assert default_output_format("conll") == "conll"


def test_an_output_suffix_that_names_the_other_kind_of_labels_is_refused(tmp_path, capsys):
    """Span labels are never written as JSON Lines into a file named .csv (the suffix of categorical-csv), as
    categorical answers are never written into one named .jsonl: one line naming the formats that fit and
    --output-format, nothing written, before any fit. --output-format spans-jsonl writes the name as given."""
    answers = tmp_path / "answers.csv"
    answers.write_text("task,worker,label\n" + "".join(f"t{i},w{w},{(i + w) % 2}\n" for i in range(6)
                                                       for w in range(3)), encoding="utf-8")
    spans = ["aggregate", str(SAMPLE / "crowd.jsonl"), "--format", "spans-jsonl", "--method", "mv", "--quiet"]
    for command, out, message in (
            ([*spans], "agg.csv", "these are span labels, and .csv names categorical-csv (answers): name the "
             "output .jsonl (spans-jsonl) or .conll (conll), or a folder (ebm-nlp), or choose with --output-format "
             "spans-jsonl, conll or ebm-nlp"),
            (["aggregate", str(answers), "--format", "categorical", "--method", "mv", "--quiet"], "agg.jsonl",
             "these are categorical answers, written as categorical-csv (item,label): name the output .csv")):
        assert main([*command, "--output", str(tmp_path / out)]) == 2
        err = capsys.readouterr().err
        assert err == f"crowdqa: error: --output {tmp_path / out}: {message}\n"
        assert not (tmp_path / out).exists()
    assert main([*spans, "--output", str(tmp_path / "agg.csv"), "--output-format", "spans-jsonl"]) == 0
    assert json.loads((tmp_path / "agg.csv").read_text().splitlines()[0])["doc_id"]


def test_the_worker_table_says_where_the_workers_it_leaves_out_are(tmp_path, capsys):
    """"... N more workers in the JSON report" only when a report file was written (naming it); otherwise the
    option that writes them all. For crowdqa aggregate (--report) and crowdqa report (--json) alike."""
    crowd = ["--format", "spans-jsonl", "--expert", str(SAMPLE / "expert.jsonl"), "--top", "1"]
    agg, rep = tmp_path / "agg.jsonl", tmp_path / "r.json"

    def more(command: list[str]) -> str:
        assert main(command) == 0
        lines = [line for line in capsys.readouterr().out.splitlines() if "more workers" in line]
        assert len(lines) == 1, lines
        return lines[0].split(" more workers", 1)[1]

    aggregate = ["aggregate", str(SAMPLE / "crowd.jsonl"), *crowd, "--method", "mv", "--output", str(agg), "--quiet"]
    assert more(aggregate) == ": --report FILE writes them all, --top N shows N"
    assert more([*aggregate, "--report", str(rep)]) == f" in the JSON report {rep}" and rep.exists()
    report = ["report", str(SAMPLE / "crowd.jsonl"), *crowd, "--aggregate", str(agg)]
    assert more(report) == ": --json FILE writes them all, --top N shows N"
    assert more([*report, "--json", str(tmp_path / "s.json")]) == f" in the JSON report {tmp_path / 's.json'}"


def test_use_experts_takes_the_gold_column_of_the_one_file(tmp_path, capsys):
    """A categorical file's gold column is read as an expert: --use-experts needs no --expert file, and
    gold-mv (skills from the known labels) runs on the one file, scored by cross-fitting."""
    rows = ["task,worker,label,gold"]
    for item in range(40):
        truth = "ab"[item % 2]
        rows += [f"t{item},w{w},{truth if (item + w) % 5 else 'ab'[(item + 1) % 2]},{truth if w == 0 else ''}"
                 for w in range(4)]
    path = tmp_path / "answers.csv"
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    report = tmp_path / "report.json"
    assert main(["aggregate", str(path), "--format", "categorical", "--method", "gold-mv", "--use-experts",
                 "--output", str(tmp_path / "labels.csv"), "--report", str(report), "--quiet"]) == 0
    body = json.loads(report.read_text())
    assert body["experts_used_in_fit"] is True and body["aggregate_scored_on"].startswith("held-out")
    assert body["aggregate_vs_expert"]["accuracy"]["compared"] == 40


def test_use_experts_with_a_format_that_holds_no_experts_is_refused_before_reading(tmp_path, capsys):
    """CoNLL columns name no roles: without --expert the command stops before it opens the (absent) file."""
    status = main(["aggregate", str(tmp_path / "absent.conll"), "--format", "conll", "--method", "ds",
                   "--use-experts", "--output", str(tmp_path / "o.conll")])
    err = capsys.readouterr().err.strip().splitlines()
    assert status == 2 and err == ["crowdqa: error: --use-experts needs --expert PATH (a conll file holds no expert "
                                   "labels)"]


def test_gold_mv_without_use_experts_is_refused_before_reading(tmp_path, capsys):
    """gold-mv fitted on the crowd alone has nothing to learn from: one line naming the switch, the (absent)
    file never opened."""
    status = main(["aggregate", str(tmp_path / "absent.csv"), "--format", "categorical", "--method", "gold-mv",
                   "--output", str(tmp_path / "o.csv")])
    err = capsys.readouterr().err.strip().splitlines()
    assert status == 2 and len(err) == 1
    assert err[0].startswith("crowdqa: error: gold-mv learns each worker's skill from the experts' labels")
    assert "--use-experts" in err[0]


def test_progress_lines_count_the_fits_seconds(monkeypatch):
    """Found walking the README: an EM iteration's line gave the seconds since the command started (reading
    included: "iteration 1 ... (0.2 s)") while the closing line gave the fit's ("0.01 s"); both now count the
    fit's. Oracle: a clock the test sets."""
    import io

    from crowdqa.api.commands import aggregate

    clock = iter([0.0, 0.0, 5.0, 5.0, 5.5])
    monkeypatch.setattr(aggregate.time, "perf_counter", lambda: next(clock))
    out = io.StringIO()
    progress = aggregate.Progress("ds", stream=out)  # 0.0
    progress("reading", None, None)  # 0.0
    progress("fitting", 1, -10.0)  # 5.0 the reading ends, 5.0 the fit starts; 5.5 its first iteration
    assert out.getvalue().splitlines()[-1] == "crowdqa: ds: iteration    1  log-likelihood -10  (0.5 s)"


def test_categorical_answers_are_read_as_items(tmp_path, capsys):
    """Found walking the README: `crowdqa aggregate rte.tsv --format categorical` said "read 800 documents, 800
    tokens" and its report "800 items"; both commands now say items for categorical answers, as the report does."""
    answers = tmp_path / "answers.csv"
    answers.write_text("task,worker,label\ni1,w1,a\ni1,w2,b\ni2,w1,b\ni2,w2,b\ni3,w1,a\ni3,w2,a\n")
    assert main(["aggregate", str(answers), "--format", "categorical", "--method", "mv",
                 "--output", str(tmp_path / "labels.csv")]) == 0
    assert "crowdqa: read 3 items, annotators {'crowd': 2, 'expert': 0}" in capsys.readouterr().err.splitlines()
    truth = tmp_path / "truth.csv"
    truth.write_text("task,true_label\ni1,a\ni2,b\ni3,a\n")
    assert main(["compare", str(answers), "--format", "categorical", "--expert", str(truth), "--expert-format",
                 "categorical", "--methods", "mv,ds", "--output", str(tmp_path / "c.json")]) == 0
    assert "crowdqa: read 3 items" in capsys.readouterr().err.splitlines()
