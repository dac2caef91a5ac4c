"""Where results come from: make_meta's commit and load, the staleness check, the rerun command, the Benchmarks
page (docs/benchmarks.md)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks import meta as bmeta
from benchmarks import registry, tables
from benchmarks.__main__ import plan, run

REPO = tables.REPO


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, check=True).stdout.strip()


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A git repository with aggregation/model.py and notes.txt, one commit."""
    root = tmp_path / "repo"
    (root / "aggregation").mkdir(parents=True)
    (root / "aggregation" / "model.py").write_text("x = 1\n")
    (root / "notes.txt").write_text("n\n")
    _git(root, "init", "-q")
    _git(root, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "empty")
    _git(root, "add", ".")
    _git(root, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "first")
    return root


def _commit(root: Path, path: str, text: str) -> str:
    (root / path).write_text(text)
    _git(root, "add", path)
    _git(root, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", f"change {path}")
    return _git(root, "rev-parse", "HEAD")


def test_make_meta_records_commit_dirty_load_versions_and_peers():
    m = bmeta.make_meta("python -m benchmarks.x", peers={"authors": "abc"})
    assert m["commit"] == _git(REPO, "rev-parse", "HEAD")
    dirty = bool(_git(REPO, "status", "--porcelain", "--untracked-files=all"))
    assert m["dirty"] is dirty and (len(m["dirty_paths"]) > 0) is dirty
    assert len(m["load_average_before"]) == 3 and len(m["load_average_after"]) == 3
    assert m["versions"]["numpy"] and m["versions"]["python"] and m["cpu_model"] in m["machine"]
    assert m["peers"] == {"authors": "abc"} and m["seconds"] >= 0


def test_git_state_names_the_uncommitted_files(repo):
    state = bmeta.git_state(repo)
    assert state == {"commit": _git(repo, "rev-parse", "HEAD"), "dirty": False, "dirty_paths": []}
    (repo / "aggregation" / "model.py").write_text("x = 2\n")
    (repo / "new.txt").write_text("?\n")
    assert bmeta.git_state(repo)["dirty_paths"] == ["aggregation/model.py", "new.txt"]


def test_stale_reason_compares_the_sources_by_commit(repo):
    sources = ("aggregation", "bench.py")
    at = {"commit": _git(repo, "rev-parse", "HEAD"), "dirty_paths": []}
    assert bmeta.stale_reason(at, sources, repo) is None
    _commit(repo, "notes.txt", "other\n")  # a change outside the sources leaves the results current
    assert bmeta.stale_reason(at, sources, repo) is None
    later = _commit(repo, "aggregation/model.py", "x = 3\n")
    reason = bmeta.stale_reason(at, sources, repo)
    assert reason.startswith(f"the code it measures changed after its commit {at['commit'][:10]} (last in {later[:7]}")
    assert reason.endswith(": aggregation/model.py")
    assert bmeta.stale_reason({"commit": later, "dirty_paths": []}, sources, repo) is None
    assert bmeta.stale_reason({"commit": later, "dirty_paths": ["aggregation/model.py"]}, sources, repo) == (
        "it ran with uncommitted changes to aggregation/model.py")
    assert bmeta.stale_reason({"commit": later, "dirty_paths": ["notes.txt"]}, sources, repo) is None
    assert bmeta.stale_reason({"command": "x"}, sources, repo) == "no commit recorded"
    assert bmeta.stale_reason({"commit": "f" * 40}, sources, repo) == "its commit ffffffffff is not in this repository"


def test_tables_refuse_a_results_file_older_than_its_code(repo, tmp_path):
    """A table renders while its sources are unchanged since the file's commit, and not after they change."""
    results = tmp_path / "results"
    results.mkdir()
    first = _git(repo, "rev-parse", "HEAD")
    data = {"meta": {"command": "python -m benchmarks.scaling", "commit": first, "dirty_paths": [],
                     "machine": "Fake", "date": "2026-01-01 00:00 UTC"},
            "setup": {"methods": {"mv": ""}, "classes": ["O", "B-P", "I-P"], "annotators_per_doc": 4,
                      "annotators": 200, "mean_doc_tokens": 25},
            "points": [{"method": "mv", "n_labels": 1000, "n_tokens": 250, "fit_seconds": 0.5, "n_iter": 1,
                        "peak_rss_during_fit_mb": 40.0, "fit_extra_mb": 2.0}], "summary": {}}
    (results / "scaling.json").write_text(json.dumps(data))
    md = tables.render(results, repo=repo)
    assert f"commit `{first[:10]}`" in md and "| 1,000 | 250 | 500.0 ms / 40 MB (+2) |" in md
    later = _commit(repo, "aggregation/model.py", "x = 4\n")
    md = tables.render(results, repo=repo)
    assert "| 1,000 | 250 |" not in md
    assert (f"Not shown: `benchmarks/results/scaling.json` (commit `{first[:10]}`) is not from the current code "
            "(`python -m benchmarks.tables --stdout` says why). Rerun: `python -m benchmarks.scaling`.") in md
    assert later  # the reason (the change after the file's commit) goes to stderr: test_stale_reason_...
    # A current quick run is shown in place of the stale full one, marked as quick.
    quick = {**data, "meta": {**data["meta"], "command": "python -m benchmarks.scaling --quick", "commit": later}}
    (results / "scaling_quick.json").write_text(json.dumps(quick))
    md = tables.render(results, repo=repo)
    assert "`python -m benchmarks.scaling --quick`" in md and "**quick run**" in md and "Not shown" not in md


def test_every_table_has_source_paths_and_a_rerun_command():
    benchmarks = {b.stem for b in registry.BENCHMARKS}
    assert set(tables.SECTIONS) == benchmarks | {"rerun_all"} == set(registry.SOURCES)
    for b in registry.BENCHMARKS:
        assert b.steps and all((REPO / p).exists() for p in b.sources), b.stem
        for step in (*b.steps, *b.quick):
            script = Path(step[1].replace(".", "/") + ".py") if step[0] == "-m" else Path(step[0])
            assert (REPO / script).exists(), step


def test_rerun_runs_every_step_and_records_its_exit():
    steps = plan(["hmm_crowd", "whole_path"], quick=False)
    assert [s[0] for s in steps] == ["hmm_crowd", "whole_path", "whole_path"]
    assert "--merge" in steps[2][1]
    assert [s[0] for s in plan(["real_path", "scaling"], quick=True)] == ["scaling"]  # real_path: no quick variant
    done = run([("ok", ("-c", "pass")), ("bad", ("-c", "raise SystemExit(3)"))], python=sys.executable)
    assert [(d["benchmark"], d["exit"]) for d in done] == [("ok", 0), ("bad", 3)]
    assert done[1]["command"] == "python -c raise SystemExit(3)" and done[0]["seconds"] >= 0


def test_make_meta_keeps_the_commit_the_run_started_at(monkeypatch):
    """A commit made while a benchmark runs is not its code: the start's commit is recorded, the end's beside it."""
    head = _git(REPO, "rev-parse", "HEAD")
    monkeypatch.setattr(bmeta, "_GIT_AT_START", {"commit": "0" * 40, "dirty": True, "dirty_paths": ["x.py"]})
    m = bmeta.make_meta("python -m benchmarks.x")
    assert m["commit"] == "0" * 40 and m["commit_at_end"] == head
    assert "x.py" in m["dirty_paths"] and m["dirty"] is True
def test_every_results_file_has_a_commit_and_no_placeholder_texts():
    for path in sorted((REPO / "benchmarks" / "results").glob("*.json")):
        text = path.read_text(encoding="utf-8")
        assert "placeholder" not in text, path.name
        meta = json.loads(text).get("meta") or {}
        assert meta.get("commit"), path.name


def test_the_benchmarks_page_tables_are_the_rendered_results():
    """Rendering the results (with the staleness check) leaves the page between the markers unchanged."""
    text = tables.PAGE.read_text(encoding="utf-8")
    a, b = text.index(tables.START), text.index(tables.END)
    assert text[a + len(tables.START) + 1: b] == tables.render(), (
        "the Benchmarks page's tables differ from benchmarks/results: run `python -m benchmarks.tables`")


def _numbers_in(value) -> list[float]:
    if isinstance(value, bool):
        return []
    if isinstance(value, int | float):
        return [float(value)]
    if isinstance(value, dict):
        return [x for v in value.values() for x in _numbers_in(v)]
    if isinstance(value, list):
        return [x for v in value for x in _numbers_in(v)]
    return []


def test_the_benchmarks_prose_cites_only_numbers_of_results_files():
    """The text above the tables cites no number that no results file holds (issue 31).

    Each number of the prose (code spans and blocks, link targets, citation years and dates aside) must equal, at
    the digits shown, a number of some file in benchmarks/results (a share may be shown as a percentage).
    """
    import re

    text = tables.PAGE.read_text(encoding="utf-8")
    prose = text[text.index("# Benchmarks\n"): text.index(tables.START)]
    prose = re.sub(r"```.*?```", "", prose, flags=re.S)
    prose = re.sub(r"`[^`]*`", "", prose)
    prose = re.sub(r"\]\([^)]*\)", "]", prose)  # link targets
    prose = re.sub(r"(et al\.,?|issue) \d+", "", prose)
    prose = re.sub(r"\d{4}-\d\d-\d\d( \d\d:\d\d(-\d\d:\d\d)?)?", "", prose)  # dates of runs
    held = [x for p in (REPO / "benchmarks" / "results").glob("*.json")
            for x in _numbers_in(json.loads(p.read_text(encoding="utf-8")))]

    def found(token: str) -> bool:
        digits = len(token.split(".")[1]) if "." in token else 0
        x = float(token.replace(",", ""))
        return any(round(v, digits) == x or round(100 * v, digits) == x for v in held)

    missing = [t for t in re.findall(r"(?<![\w.])\d[\d,]*(?:\.\d+)?|(?<![\w\d])\.\d+", prose) if not found(t)]
    assert not missing, f"numbers in the Benchmarks prose that no results file holds: {missing}"


@pytest.mark.shared_data
def test_strict_span_scores_of_an_edited_gold_file(tmp_path):
    """Oracle by construction: the gold scores 1; one span's type changed costs exactly one span each way."""
    from benchmarks.hmm_crowd_authors import strict_span_prf
    from tests.conftest import shared_path

    gold = shared_path("conll_val", "gold.conll").read_text(encoding="utf-8").splitlines()
    assert strict_span_prf(shared_path("conll_val", "gold.conll")) == {"precision": 1.0, "recall": 1.0, "f1": 1.0}
    i = next(k for k, line in enumerate(gold) if line.endswith(" B-PER") and not gold[k + 1].endswith("I-PER"))
    gold[i] = gold[i][: -len("B-PER")] + "B-ORG"  # a one-token PER span becomes an ORG span
    edited = tmp_path / "edited.conll"
    edited.write_text("\n".join(gold) + "\n", encoding="utf-8")
    n = sum(line.endswith((" B-PER", " B-ORG", " B-LOC", " B-MISC")) for line in gold)  # spans (all start at B-)
    got = strict_span_prf(edited)
    assert got["precision"] == pytest.approx((n - 1) / n) and got["recall"] == pytest.approx((n - 1) / n)


def test_quick_steps_write_quick_files():
    """A quick step never overwrites a full run's results file (the tables would show it as a full run)."""
    for b in registry.BENCHMARKS:
        for step in b.quick:
            assert "--quick" in step, step
            if "--output" in step:
                assert step[step.index("--output") + 1].endswith(f"{b.stem}_quick.json"), step


def test_written_results_never_make_a_result_stale(repo):
    """benchmarks/results is output: a results file written or committed after a run leaves it current."""
    sources = ("benchmarks",)
    (repo / "benchmarks" / "results").mkdir(parents=True)
    at = _commit(repo, "benchmarks/run.py", "run = 1\n")
    meta = {"commit": at, "dirty_paths": ["benchmarks/results/other.json"]}
    assert bmeta.stale_reason(meta, sources, repo) is None
    _commit(repo, "benchmarks/results/other.json", "{}\n")
    assert bmeta.stale_reason(meta, sources, repo) is None
    _commit(repo, "benchmarks/run.py", "run = 2\n")
    assert "benchmarks/run.py" in bmeta.stale_reason(meta, sources, repo)


def test_write_results_completes_a_meta_block_without_a_commit(tmp_path):
    path = bmeta.write_results(tmp_path / "x.json", {"meta": {"command": "python -m benchmarks.x", "seconds": 2.0},
                                                     "value": 1})
    data = json.loads(path.read_text())
    assert data["meta"]["commit"] == _git(REPO, "rev-parse", "HEAD") and data["meta"]["seconds"] == 2.0
    assert data["meta"]["command"] == "python -m benchmarks.x" and data["value"] == 1
