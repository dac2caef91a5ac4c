"""Each owned benchmark's quick mode runs end to end and writes results that agree with their own inputs."""

from __future__ import annotations

import json

import numpy as np
import pytest

from benchmarks import categorical, sample_size_example, scaling
from crowdqa.quality.sample_size import slice_sample_size
from tests.conftest import shared_path


def test_span_data_is_valid_bio_and_deterministic():
    """Oracle: BIO validity checked by a plain loop over tokens; the same seed gives the same corpus."""
    corpus, truth = scaling.make_span_data(3_000, seed=3)
    assert abs(corpus.n_obs - 3_000) < 0.1 * 3_000
    assert np.all(np.bincount(corpus.token, minlength=corpus.n_tokens) == scaling.PER_DOC)
    # BIO validity by a plain loop: I-P only right after B-P or I-P of the same document.
    starts = set(corpus.doc_start.tolist())
    for t, y in enumerate(truth.tolist()):
        if y == 2:
            assert t not in starts and truth[t - 1] in (1, 2)
    again, truth2 = scaling.make_span_data(3_000, seed=3)
    assert again.equals(corpus) and np.array_equal(truth, truth2)


def test_loglog_slope():
    """Oracle: exact power laws."""
    x = [1e4, 1e5, 1e6]
    assert scaling.loglog_slope(x, [3 * v for v in x]) == pytest.approx(1.0)
    assert scaling.loglog_slope(x, [v**2 for v in x]) == pytest.approx(2.0)
    assert scaling.loglog_slope([1.0], [1.0]) is None


def test_scaling_runs_each_point_in_a_subprocess(tmp_path):
    assert scaling.main(["--sizes", "2000,8000", "--out", str(tmp_path)]) == 0
    res = json.loads((tmp_path / "scaling.json").read_text())
    assert [(p["method"], round(p["n_labels"], -3)) for p in res["points"]] == [
        (m, n) for n in (2000, 8000) for m in scaling.METHODS]
    assert all(p["peak_rss_during_fit_mb"] >= p["rss_before_fit_mb"] > 0 for p in res["points"])
    assert all(p["token_accuracy_vs_truth"] > 0.8 for p in res["points"])
    assert res["meta"]["command"] == "python -m benchmarks.scaling"
    assert (tmp_path / "scaling.png").stat().st_size > 0


@pytest.mark.shared_data
def test_categorical_quick(tmp_path):
    """Oracles: Snow et al. 2008 (RTE majority vote about 0.92) and crowd-kit's DawidSkene on the same data."""
    shared_path("categorical", "snow2008_rte.tsv")
    pytest.importorskip("crowdkit")
    # crowd-kit's slower methods take minutes per fit: the aggregators' own tests compare with them.
    assert categorical.main(["--quick", "--out", str(tmp_path), "--methods", "mv,ds,wawa"]) == 0
    res = json.loads((tmp_path / "categorical_quick.json").read_text())
    rte = res["datasets"]["snow2008_rte"]
    assert (rte["items"], rte["labels"], rte["workers"]) == (800, 8000, 164)
    assert rte["ours"]["mv"]["accuracy"] == pytest.approx(0.92, abs=0.01)
    assert rte["ours"]["ds"]["accuracy"] == pytest.approx(rte["crowdkit"]["ds"]["accuracy"], abs=0.005)
    assert set(rte["ours"]) == {"mv", "ds", "wawa"}
    assert rte["ours"]["wawa"]["accuracy"] == pytest.approx(rte["crowdkit"]["wawa"]["accuracy"], abs=0.005)
    assert res["datasets"]["bluebirds"]["ours"]["mv"]["accuracy"] == pytest.approx(0.7593, abs=5e-5)


def test_bootstrap_pr_matches_a_resampling_loop():
    """Oracle: the same resamples drawn and summed one at a time in a loop."""
    counts = np.array([[3, 1, 0], [0, 2, 5], [4, 0, 1], [1, 1, 1]])
    got = sample_size_example.bootstrap_pr(counts, n_boot=50, seed=7)
    idx = np.random.default_rng(7).integers(0, 4, size=(50, 4))
    ps, rs = [], []
    for row in idx:
        tp, fp, fn = counts[row].sum(axis=0)
        if tp + fp:
            ps.append(tp / (tp + fp))
        if tp + fn:
            rs.append(tp / (tp + fn))
    assert got["precision_ci"] == pytest.approx(np.percentile(ps, [2.5, 97.5]).tolist())
    assert got["recall_ci"] == pytest.approx(np.percentile(rs, [2.5, 97.5]).tolist())


@pytest.mark.shared_data
def test_sample_size_example_quick(tmp_path):
    """Oracle: slice_sample_size called on the inputs the results file states."""
    shared_path("pico", "annotations")
    assert sample_size_example.main(["--quick", "--out", str(tmp_path)]) == 0
    res = json.loads((tmp_path / "sample_size_example_quick.json").read_text())
    for p in res["plans"].values():
        i = p["inputs"]
        s = slice_sample_size(precision=i["precision"], recall=i["recall"], frequency=i["frequency"],
                              half_width=0.05, external=i["external"])
        assert p["tokens"] == s.documents
        assert p["documents"] == -(-s.documents // res["setup"]["tokens_per_document"])
    m = res["measured_on_expert_documents"]
    assert m["documents"] == 64
    for k in ("precision", "recall"):
        lo, hi = m["document_bootstrap"][f"{k}_ci"]
        assert lo <= m[k] <= hi


def test_whole_path_data_and_table(tmp_path):
    """The issue-14 data: 3 distinct answers per item from 500 workers, string ids; the table renders a run."""
    from benchmarks import tables, whole_path
    from crowdqa.ingest.categorical import read_categorical

    path = tmp_path / "synth.csv"
    whole_path.write_data(3_000, path)
    lines = path.read_text().splitlines()
    assert lines[0] == "task,worker,label" and len(lines) == 3_001
    assert lines[1].startswith("task") and ",worker" in lines[1]
    corpus = read_categorical(path)
    assert corpus.n_docs == 1_000 and np.all(np.bincount(corpus.token) == 3)
    point = whole_path.crowdqa_point(path, "mv", tmp_path)
    assert point["exit"] == 0 and set(point["stages"]) == {"reading", "fitting", "scoring", "writing"}
    d = {"meta": {"note": "a test"}, "cap_seconds": 10, "points": [
        {"labels": 3000, "items": 1000, "workers": 500, "method": "mv", "crowdqa": point,
         "crowd_kit": {"seconds": 11.0, "peak_rss_mib": 300.0, "exit": -9, "capped": True}}]}
    md = tables.render_whole_path(d, tmp_path, False)
    assert "> 11 s (stopped at the cap)" in md and "| 3,000 | MV |" in md


def test_reader_benchmark_files_read_as_their_layouts_say(tmp_path):
    """Oracle: the sizes each synthetic layout implies, counted by hand (and '?' cells counted in the file)."""
    from benchmarks import readers

    expected = {"categorical": (300, 300), "spans-csv": (40, 2 * 200 * 5), "spans-jsonl": (40, 2 * 200 * 5),
                "pico-jsonl": (3, 3 * 250 * 6), "ebm-nlp": (2 * 250 * 3, 2 * 250 * 3),
                # spans (2 documents x 5 workers x 4), and assignments of 4 spans (8 documents x 5 workers)
                "brat": (40, 2 * 200 * 5), "label-studio": (40, 2 * 200 * 5), "doccano": (40, 8 * 200 * 5),
                "mturk-csv": (40, 8 * 200 * 5)}
    for fmt, (maker, _, _) in readers.FORMATS.items():
        folder = tmp_path / fmt
        folder.mkdir()
        n = {"pico-jsonl": 3, "ebm-nlp": 2, "conll": 140}.get(fmt, 300 if fmt == "categorical" else 40)
        path, options = maker(folder, n, np.random.default_rng(1))
        point = readers.measure(fmt, path, options, repeat=1)
        if fmt == "conll":
            cells = [ln.split("\t")[1:] for ln in path.read_text().splitlines()[1:] if ln]
            expected[fmt] = (140, sum(c != "?" for row in cells for c in row))
        assert (point["rows"], point["labels"]) == expected[fmt], fmt
        assert point["rows_per_cpu_second"] > 0


def test_whole_path_api_point_and_api_only_merge(tmp_path, monkeypatch):
    """The API point on a small file through the real embedded service: the three steps' seconds and the
    service's CPU seconds, the job's four stages; --api-only --merge puts it into the point already in the file
    (keeping its CLI measurement) and the table shows it, a size with no earlier point as an API row alone."""
    from benchmarks import tables, whole_path

    path = tmp_path / "synth.csv"
    whole_path.write_data(3_000, path)
    a = whole_path.api_point(path, "mv", tmp_path)
    assert a["status"] == "finished" and set(a["stages"]) == {"reading", "fitting", "scoring", "writing"}
    assert all(a[f"{k}_seconds"] >= 0 and a[f"{k}_cpu_seconds"] >= 0 for k in ("upload", "job", "report"))

    results = tmp_path / "results"
    monkeypatch.setattr(whole_path, "RESULTS", results)
    monkeypatch.setattr(whole_path, "api_point", lambda path, method, work: {**a, "method_seen": method})
    cli = {"seconds": 1.0, "cpu_seconds": 1.0, "peak_rss_mib": 100.0, "exit": 0, "stages": {}}
    earlier = {"meta": {"note": "earlier"}, "cap_seconds": 10, "points": [
        {"labels": 3000, "items": 1000, "workers": 500, "method": m, "crowdqa": cli} for m in ("ds", "mv")]}
    results.mkdir()
    (results / "whole_path.json").write_text(json.dumps(earlier))
    assert whole_path.main(["--sizes", "3e3,6e3", "--api-only", "--merge", "--cap", "10"]) == 0
    d = json.loads((results / "whole_path.json").read_text())
    by = {(p["labels"], p["method"]): p for p in d["points"]}
    assert sorted(by) == [(3000, "ds"), (3000, "mv"), (6000, "ds"), (6000, "mv")]
    assert by[3000, "mv"]["crowdqa"] == cli and by[3000, "mv"]["api"]["method_seen"] == "mv"
    assert "crowdqa" not in by[6000, "ds"] and by[6000, "ds"]["api"]["method_seen"] == "ds"
    md = tables.render_whole_path(d, results, False)
    assert md.count("| 3,000 | MV |") == 2 and md.count("| 6,000 | MV |") == 1 and "CPU-s)" in md


def test_categorical_speed_row_replaces_only_the_named_row(tmp_path):
    """``--row ibcc`` (no crowd-kit peer: one child process) measures that row again and keeps the rest of the
    file as it was. Oracle: the previous file's other rows and meta, unchanged; the rows in METHODS' order."""
    pytest.importorskip("crowdkit")
    from benchmarks import categorical_speed

    old_row = {"classes": 3, "crowdqa": {"fit_seconds": 9.0, "fit_cpu_seconds": 9.0, "fits": 1, "accuracy": 0.5}}
    other = {"classes": 3, "crowdqa": {"fit_seconds": 1.0, "fit_cpu_seconds": 1.0, "fits": 3, "accuracy": 0.8},
             "crowdkit": {"fit_seconds": 2.0, "fit_cpu_seconds": 2.0, "fits": 3, "accuracy": 0.8},
             "speedup": 2.0, "speedup_cpu": 2.0}
    previous = {"setup": {"labels": 300, "items": 100, "cap_seconds": 5.0},
                "meta": {"command": "first run", "commit": "a" * 40},  # every results file has a commit (issue 31)
                "methods": {"ibcc": old_row, "mv": other, "mace, 1 restart": other}}
    path = tmp_path / "categorical_speed.json"
    path.write_text(json.dumps(previous), encoding="utf-8")
    assert categorical_speed.main(["--labels", "300", "--row", "ibcc", "--out", str(tmp_path)]) == 0
    now = json.loads(path.read_text(encoding="utf-8"))
    assert list(now["methods"]) == ["mv", "ibcc", "mace, 1 restart"]
    assert now["setup"] == previous["setup"] and now["meta"] == previous["meta"]
    assert now["methods"]["mv"] == other and now["methods"]["mace, 1 restart"] == other
    ibcc = now["methods"]["ibcc"]
    assert ibcc["crowdqa"]["fits"] >= 3 and ibcc["crowdqa"]["fit_seconds"] != 9.0 and "crowdkit" not in ibcc
    assert ibcc["rerun"]["command"] == "python -m benchmarks.categorical_speed --labels 300 --row ibcc"
    assert len(ibcc["rerun"]["load_average_at_end"]) == 3


@pytest.mark.shared_data
def test_compare_quick_on_conll_val(tmp_path):
    """Oracle: the data README's majority vote figure on this half (conlleval span F1 0.691)."""
    shared_path("conll_val", "answers.conll")
    from benchmarks import compare

    assert compare.main(["--quick", "--out", str(tmp_path)]) == 0
    res = json.loads((tmp_path / "compare_quick.json").read_text())["conll_val"]
    assert (res["corpus_documents"], res["tokens"], res["documents"]) == (2743, 37660, 2743)
    by = {m["method"]: m for m in res["methods"]}
    assert set(by) == {"mv", "ds"} and res["metric"] == "span_f1"
    assert by["mv"]["f1"] == pytest.approx(0.691, abs=0.0005)
    assert res["seconds"] >= res["fit_seconds"] > 0


def test_reader_benchmark_records_the_peak_memory_of_a_fresh_read(tmp_path):
    """The README's CoNLL memory note was a figure from a manual run; the readers benchmark now records, per format,
    the input's size and the peak RSS of a fresh process reading it (after a small file, so the imports are done),
    and the table renders them. Oracle: the child read the same labels; a ten times larger file peaks higher."""
    from benchmarks import readers, tables

    points = {}
    (tmp_path / "warm").mkdir()
    warm = readers.make_conll(tmp_path / "warm", 20, np.random.default_rng(2))
    for n in (2_000, 200_000):
        folder = tmp_path / str(n)
        folder.mkdir()
        path, options = readers.make_conll(folder, n, np.random.default_rng(1))
        point = readers.measure("conll", path, options, repeat=1)
        point.update(readers.peak_rss("conll", path, options, warm=warm))
        assert point["peak_labels"] == point["labels"]
        assert point["input_mib"] == round(path.stat().st_size / 2**20, 1)
        assert 0 < point["before_rss_mib"] < point["peak_rss_mib"], point
        points[n] = point
    assert points[200_000]["peak_rss_mib"] > points[2_000]["peak_rss_mib"] + 10
    d = {"meta": {}, "target_rows_per_second": 1_000_000,
         "formats": {"conll": {**points[200_000], "row": "token line"}}}
    md = tables.render_readers(d, tmp_path, False)
    peak = points[200_000]
    assert "| input | peak RSS |" in md
    assert f"| {peak['input_mib']:.1f} MiB | {peak['peak_rss_mib']:.0f} MiB ({peak['before_rss_mib']:.0f}) |" in md
    old = {k: v for k, v in points[200_000].items() if k not in ("input_mib", "before_rss_mib", "peak_rss_mib")}
    assert "peak RSS" not in tables.render_readers({**d, "formats": {"conll": {**old, "row": "r"}}}, tmp_path, False)
