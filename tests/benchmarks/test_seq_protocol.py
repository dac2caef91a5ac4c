"""benchmarks.seq_protocol: the rule, the cross-check's halves and the per-document span counts (issue 28)."""

from __future__ import annotations

import numpy as np

from benchmarks import seq_protocol as sp
from benchmarks.bsc_seq import exact_spans
from benchmarks.ner_crowd import ner_crowd


def test_span_counts_equal_the_set_oracle_per_document():
    """Oracle: Python sets of exact spans (benchmarks.bsc_seq.exact_spans), document by document."""
    corpus, truth, _ = ner_crowd(n_sentences=60, seed=3)
    pred = corpus.labels_of(0)
    pred[pred < 0] = 0
    counts = sp.span_counts(pred, truth, corpus)
    got, gold = exact_spans(pred, corpus), exact_spans(truth, corpus)
    doc_of = corpus.token_doc
    for d in range(corpus.n_docs):
        g = {s for s in got if doc_of[s[0]] == d}
        r = {s for s in gold if doc_of[s[0]] == d}
        assert counts[d].tolist() == [len(g & r), len(g - r), len(r - g)]


def test_subset_docs_keeps_the_labels_of_the_kept_documents():
    corpus, _, _ = ner_crowd(n_sentences=20, seed=1)
    sub, mask = sp.subset_docs(corpus, np.array([7, 2, 11]))
    assert sub.doc_ids == tuple(corpus.doc_ids[d] for d in (2, 7, 11)) and mask.sum() == sub.n_tokens
    for w in range(corpus.n_workers):
        np.testing.assert_array_equal(sub.labels_of(w), corpus.labels_of(w)[mask])


def test_rule_averages_whole_and_small_over_sets_and_ties_go_to_the_earlier():
    def cand(a, b, c, d):
        return {"f1": {"conll_val": {"whole": a, "small": b}, "pico": {"whole": c, "small": d}}}

    cands = [cand(0.7, 0.6, 0.8, 0.7), cand(0.9, 0.5, 0.6, 0.6), cand(0.6, 0.7, 0.7, 0.8)]
    assert sp.rule_score(cands[0]["f1"]) == np.mean([0.65, 0.75])
    assert sp.choose(cands) == 0  # 0.70, 0.65, 0.70: a tie, the earlier wins
    assert sp.choose(cands[1:]) == 1


def test_grid_starts_with_the_first_runs_grid_and_renders_the_features():
    """The first 24 candidates are the first run's (words only, the old defaults first), the next 24 add shapes,
    the last 15 lower-cased words beside the shapes; every candidate names every option the grid varies, so
    none depends on the class defaults the protocol itself changes."""
    from benchmarks.tables import _params_text

    assert len(sp.GRID) == 63 and len({str(c) for c in sp.GRID}) == 63
    assert sp.GRID[0] == {"features": ("word",), "alpha0": 1.0, "epsilon0": 1.0, "nu0": 1.0, "init": "vote",
                          "lowercase": False}
    assert {c["features"] for c in sp.GRID[:24]} == {("word",)}
    assert {c["features"] for c in sp.GRID[24:48]} == {("word", "capitalised", "digit")}
    assert not any(c["lowercase"] for c in sp.GRID[:48])
    assert {c["features"] for c in sp.GRID[48:]} == {("word", "capitalised"), ("word", "capitalised", "digit")}
    assert sum(c["lowercase"] for c in sp.GRID[48:]) == 8
    assert all(set(c) == set(sp.GRID[0]) for c in sp.GRID)
    assert _params_text({"features": ["word", "digit"], "nu0": 0.1}) == "features=word+digit, nu0=0.1"


def test_bsc_seq_defaults_are_the_committed_choice():
    """The class defaults are the candidate the rule chose in the committed full run (its options, by name):
    a default changed without rerunning the protocol, or a run whose choice was not adopted, fails here."""
    import json

    from crowdqa.aggregation.bsc_seq import BayesianSequenceCombination

    path = sp.RESULTS / "seq_protocol.json"
    chosen = json.loads(path.read_text(encoding="utf-8"))["chosen"]
    defaults = BayesianSequenceCombination().get_params()
    assert set(chosen) == set(sp.GRID[0])
    assert {k: tuple(v) if isinstance(v, list) else v for k, v in chosen.items()} == {k: defaults[k] for k in chosen}


def test_iteration_curve_runs_exactly_n_iterations_and_renders_one_row_per_method_and_set():
    """The curve's fits stop at exactly n iterations (tol None: no early stop), scored as the protocol scores;
    the table has a column per n and an empty cell where a method was not run that long."""
    from benchmarks.tables import _iteration_table

    corpus, truth, _ = ner_crowd(n_sentences=40, seed=2)
    counts = lambda labels, c, mask=None: sp.span_counts(labels, truth if mask is None else truth[mask], c)  # noqa: E731
    s = sp._Set("conll_val", corpus, np.arange(10), counts, np.arange(corpus.n_docs), seed=0)
    for method, steps in sp.ITERATION_STEPS.items():
        for n in steps[:2]:
            _, info = s.fit(method, {"max_iter": n, "tol": None}, small=False)
            assert info["iterations"] == n
    curves = sp.iteration_curve([s], quick=True)
    assert [r["iterations"] for r in curves["bsc-seq"]["conll_val"]] == list(sp.ITERATION_STEPS["bsc-seq"][:2])
    table = _iteration_table({**curves, "x": {"conll_val": [{"iterations": 7, "f1": 0.5, "seconds": 0}]}},
                             {"conll_val": "conll_val span F1"})
    assert "| method, set | 1 it. | 2 it. | 7 it. |" in table
    assert "| x, conll_val span F1 |  |  | 0.500 |" in table
