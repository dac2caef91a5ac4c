"""`crowdqa compare`: the results file, the table, and one-line errors (issue 29 item 3)."""

from __future__ import annotations

import json

import pytest

from crowdqa.api.cli import main
from crowdqa.ingest import read_corpus
from crowdqa.ingest.merge import merge_corpora
from crowdqa.jobs.compare import run_comparison
from tests.api.conftest import SAMPLE


def test_compare_writes_the_results_and_prints_the_table_best_first(tmp_path, capsys):
    out = tmp_path / "results.json"
    status = main(["compare", str(SAMPLE / "crowd.jsonl"), "--format", "spans-jsonl", "--expert",
                   str(SAMPLE / "expert.jsonl"), "--methods", "mv,ds,hmm-crowd", "--params-for",
                   'ds={"max_iter": 20}', "--output", str(out), "--n-boot", "200"])
    captured = capsys.readouterr()
    assert status == 0, captured.err
    body = json.loads(out.read_text())
    corpus = merge_corpora([read_corpus(SAMPLE / "crowd.jsonl", format="spans-jsonl").corpus,
                            read_corpus(SAMPLE / "expert.jsonl", format="spans-jsonl", role="expert").corpus])
    direct = run_comparison(corpus, methods=["mv", "ds", "hmm-crowd"], params_for={"ds": {"max_iter": 20}},
                            n_boot=200)
    assert [m["method"] for m in body["methods"]] == [m["method"] for m in direct["methods"]]
    assert [m["f1"] for m in body["methods"]] == [m["f1"] for m in direct["methods"]]
    for m in body["methods"]:
        assert {"method", "f1", "f1_low", "f1_high", "seconds", "converged", "diff", "diff_low", "diff_high"} <= set(m)
    assert body["recommended"] == direct["recommended"]
    assert body["rule"].startswith("recommend the candidate with the highest expected score")
    assert all(m["expected"] is not None and m["behind"] >= 0 for m in body["methods"])
    assert body["prior"]["anchor"] in {m["method"] for m in body["methods"]} and not body["expert_variants"]
    assert body["documents"] == direct["documents"] > 0 and body["metric"] in {"span_f1", "token_f1"}
    assert next(m for m in body["methods"] if m["method"] == "ds")["params"] == {"max_iter": 20}
    lines = captured.out.splitlines()
    assert lines[0].split()[0] == "method" and lines[2].split()[0] == body["methods"][0]["method"]
    assert f"recommended: {body['recommended']} (" in captured.out
    assert "expected points behind it: " in body["reason"] and "not significantly worse" not in body["reason"]
    # The converged column's "-" is explained under the table and in the JSON (issue 46).
    assert body["converged_legend"].startswith("converged: yes = ") and body["converged_legend"] in captured.out
    assert "- = the fit has no convergence test" in body["converged_legend"]


def test_compare_with_expert_variants_fits_each_method_with_and_without_the_experts(tmp_path, capsys):
    out = tmp_path / "results.json"
    assert main(["compare", str(SAMPLE / "crowd.jsonl"), "--format", "spans-jsonl", "--expert",
                 str(SAMPLE / "expert.jsonl"), "--methods", "mv,ds", "--expert-variants", "--output", str(out),
                 "--n-boot", "100", "--quiet"]) == 0
    printed = capsys.readouterr().out
    body = json.loads(out.read_text())
    assert body["expert_variants"] and not body["use_experts"]
    assert sorted((m["method"], m["use_experts"]) for m in body["methods"]) == [
        ("ds", False), ("ds", True), ("mv", False)]
    assert next(m for m in body["methods"] if m["use_experts"])["cross_fit_seconds"] > 0
    assert "ds+experts" in printed
    status = main(["compare", str(SAMPLE / "crowd.jsonl"), "--format", "spans-jsonl", "--expert",
                   str(SAMPLE / "expert.jsonl"), "--expert-variants", "--use-experts", "--output", str(out)])
    err = capsys.readouterr().err.strip().splitlines()
    assert status == 2 and len(err) == 1 and "give one of the two" in err[0]


def test_compare_all_on_categorical_answers_reads_accuracy(tmp_path, capsys):
    rows = ["task,worker,label,gold"]
    for item in range(30):
        truth = "ab"[item % 2]
        rows += [f"t{item},w{w},{truth if (item + w) % 4 else 'ab'[(item + 1) % 2]},{truth if w == 0 else ''}"
                 for w in range(1, 5)]
        rows.append(f"t{item},g,{truth},{truth}")
    path = tmp_path / "answers.csv"
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    out = tmp_path / "r.json"
    assert main(["compare", str(path), "--format", "categorical", "--output", str(out), "--quiet",
                 "--n-boot", "100"]) == 0
    body = json.loads(out.read_text())
    methods = {m["method"] for m in body["methods"]}
    assert body["metric"] == "accuracy" and "mv" in methods and "ds" in methods
    assert not methods & {"hmm-crowd", "bsc-seq", "gold-mv"}
    assert all("accuracy_low" in m and "macro_f1" in m["extra"] for m in body["methods"])


@pytest.mark.parametrize(("extra", "message"), [
    (["--methods", "mv,nope"], "methods must be 'all' or ids"),
    (["--params-for", "ds"], "--params-for must be METHOD=JSON"),
    (["--params-for", "ds={bad"], "--params-for ds: not JSON"),
    (["--params-for", 'ds={"max_iter": 0}'], "max_iter"),
    (["--methods", "mv", "--params-for", 'ds={"max_iter": 3}'], "params for ds, which is not among"),
    (["--methods", "mv,gold-mv"], "gold-mv learns"),
])
def test_compare_user_errors_are_one_line_before_reading(tmp_path, capsys, extra, message):
    status = main(["compare", str(tmp_path / "absent.jsonl"), "--format", "spans-jsonl", "--expert",
                   str(tmp_path / "absent_expert.jsonl"), "--output", str(tmp_path / "r.json"), *extra])
    err = capsys.readouterr().err.strip().splitlines()
    assert status == 2 and len(err) == 1 and message in err[0], err


def test_compare_without_experts_is_refused(tmp_path, capsys):
    status = main(["compare", str(SAMPLE / "crowd.jsonl"), "--format", "spans-jsonl", "--output",
                   str(tmp_path / "r.json"), "--quiet"])
    err = capsys.readouterr().err.strip().splitlines()
    assert status == 2 and len(err) == 1 and err[0].startswith(
        "crowdqa: error: compare scores every method against the experts, and the data has no expert labels")
    assert not (tmp_path / "r.json").exists()
    status = main(["compare", str(SAMPLE / "crowd.jsonl"), "--format", "conll", "--output", str(tmp_path / "r.json")])
    err = capsys.readouterr().err.strip().splitlines()
    assert status == 2 and err == ["crowdqa: error: compare scores the methods against the experts: give --expert PATH"]


@pytest.mark.parametrize(("told", "kinds"), [([], {False, True}), (["--no-use-experts"], {False}),
                                              (["--use-experts"], {True})])
def test_aggregate_auto_writes_the_recommended_methods_aggregate_with_the_comparison(tmp_path, capsys, told, kinds):
    """Issue 46: not told, auto compares both kinds of candidates (the oracle: crowdqa compare --expert-variants's
    recommendation on the same files) and fits the recommended one as compared; --no-use-experts / --use-experts
    compare crowd-only / clamped ones only. The line on stderr, the report's experts_used_in_fit and the
    comparison's recommendation agree, and the aggregate is the chosen method's run as recommended."""
    out, rep, direct = tmp_path / "auto.jsonl", tmp_path / "report.json", tmp_path / "direct.jsonl"
    common = [str(SAMPLE / "crowd.jsonl"), "--format", "spans-jsonl", "--expert", str(SAMPLE / "expert.jsonl")]
    assert main(["aggregate", *common, "--method", "auto", *told, "--output", str(out), "--report", str(rep)]) == 0
    captured = capsys.readouterr()
    report = json.loads(rep.read_text())
    chosen = report["comparison"]["recommended"]
    assert report["method"] == chosen and report["method_choice"].startswith("--method auto: ")
    assert {m["method"] for m in report["comparison"]["methods"]} >= {"mv", "ds", "hmm-crowd", "bsc-seq"}
    assert "Methods compared (--method auto):" in captured.out
    assert {m["use_experts"] for m in report["comparison"]["methods"]} == kinds
    clamped = report["comparison"]["recommended_use_experts"]
    assert report["experts_used_in_fit"] is clamped
    said = next(line for line in captured.err.splitlines() if line.startswith("crowdqa: --method auto: "))
    assert said.startswith(f"crowdqa: --method auto: {chosen}{' with the experts clamped' if clamped else ''}: ")
    if not told:
        assert main(["compare", *common, "--expert-variants", "--output", str(tmp_path / "c.json"), "--quiet"]) == 0
        oracle = json.loads((tmp_path / "c.json").read_text())
        assert (chosen, clamped) == (oracle["recommended"], oracle["recommended_use_experts"])
    assert main(["aggregate", *common, "--quiet", "--method", chosen, *(["--use-experts"] if clamped else []),
                 "--output", str(direct)]) == 0
    assert out.read_text() == direct.read_text()
    from crowdqa.quality.report_model import QualityReport

    assert QualityReport.model_validate(report).comparison.recommended == chosen


def test_aggregate_auto_without_experts_takes_the_default_and_says_so(tmp_path, capsys):
    rep = tmp_path / "report.json"
    assert main(["aggregate", str(SAMPLE / "crowd.jsonl"), "--format", "spans-jsonl", "--method", "auto",
                 "--output", str(tmp_path / "a.jsonl"), "--report", str(rep)]) == 0
    err = capsys.readouterr().err
    report = json.loads(rep.read_text())
    assert report["method"] == "bsc-seq" and report["comparison"] is None
    assert report["method_choice"].endswith(
        "no expert labels to compare methods on: the default for span labels of one type, bsc-seq")
    assert "--method auto: bsc-seq: no expert labels" in err


@pytest.mark.parametrize(("extra", "message"), [
    (["--params", '{"max_iter": 3}'], "--method auto compares the methods with their defaults"),
    (["--save-model", "m.npz"], "--save-model and --from-model need one method"),
])
def test_aggregate_auto_refuses_one_methods_options(tmp_path, capsys, extra, message):
    status = main(["aggregate", str(tmp_path / "absent.jsonl"), "--format", "spans-jsonl", "--method", "auto",
                   "--output", str(tmp_path / "a.jsonl"), *extra])
    err = capsys.readouterr().err.strip().splitlines()
    assert status == 2 and len(err) == 1 and message in err[0], err
