"""The list of most disputed documents holds only documents the crowd disputes, and the worker tables
(CLI, dashboard) are sorted worst first, ids in natural order, even when no worker has a score against the
experts."""

from __future__ import annotations

import re

import numpy as np
import pytest

from crowdqa.aggregation.corpus import Corpus
from crowdqa.api.cli import main
from crowdqa.jobs.pipeline import run_pipeline
from crowdqa.jobs.results import JobResult, disputed_documents


def _corpus() -> tuple[Corpus, np.ndarray]:
    """Six one-token sentences all three workers label O, then two 4-token sentences: in 's6' one worker differs
    from the others on one token (1 of 12 labels), in 's7' on two tokens (2 of 12)."""
    lengths = [1] * 6 + [4, 4]
    truth = np.zeros(sum(lengths), dtype=np.int64)
    truth[6:8] = 1
    truth[10:12] = 1
    token, worker, label = [], [], []
    for w in range(3):
        mine = truth.copy()
        if w == 2:
            mine[7] = 0  # s6
            mine[10:12] = 0  # s7
        token.append(np.arange(truth.size))
        worker.append(np.full(truth.size, w))
        label.append(mine)
    starts = np.concatenate([np.arange(n) * 2 for n in lengths])
    corpus = Corpus.from_arrays(
        token=np.concatenate(token), worker=np.concatenate(worker), label=np.concatenate(label),
        doc_lengths=lengths, token_start=starts, token_end=starts + 1, doc_ids=[f"s{d}" for d in range(8)],
        texts=[" ".join(["w"] * n) for n in lengths], worker_ids=["c0", "c1", "c2"],
        worker_roles=["crowd"] * 3, class_names=["O", "Entity"])
    return corpus, truth


def test_unanimous_documents_are_not_disputed_whatever_their_entropy():
    """A posterior at 0.5/0.5 on the one-token sentences (a sequence model's prior, as bsc-seq's on CoNLL) made
    them the top of the list at 0% disagreement (before); only 's7' and 's6' are disputed, in that order by
    either measure."""
    corpus, truth = _corpus()
    proba = np.zeros((corpus.n_tokens, 2))
    proba[np.arange(corpus.n_tokens), truth] = 0.9
    proba[np.arange(corpus.n_tokens), 1 - truth] = 0.1
    proba[:6] = 0.5
    result = JobResult(corpus=corpus, labels=truth, clamped=np.zeros(corpus.n_tokens, bool), proba=proba,
                       worker_confusion=np.zeros((3, 2, 2)))
    for by in ("entropy", "disagreement"):
        listed = disputed_documents(result, by=by)
        assert [d["id"] for d in listed] == ["s7", "s6"], (by, listed)
        assert [d["disagreement"] for d in listed] == [2 / 12, 1 / 12]


def _answers(path, n_workers=12):
    """Categorical answers without experts: worker w answers item i wrongly when (i + w) % (w + 2) == 0, so
    worker 0 is the worst and higher numbers are better."""
    rows = ["item,worker,label"]
    for i in range(60):
        truth = "abc"[i % 3]
        rows += [f"{i},{w + 1},{'abc'[(i + 1) % 3] if (i + w) % (w + 2) == 0 else truth}" for w in range(n_workers)]
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return path


def test_cli_table_is_worst_first_against_the_aggregate_without_experts(tmp_path, capsys):
    """No expert labels: the table said "by accuracy" and listed 1, 10, 11, 12, 2, ... (before); now it is by
    accuracy against the aggregate, worst first, ties in natural id order, and says so."""
    assert main(["aggregate", str(_answers(tmp_path / "a.csv")), "--format", "categorical", "--method", "mv",
                 "--output", str(tmp_path / "l.csv"), "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "by accuracy against the aggregate, worst first" in out, out
    header = next(ln.split() for ln in out.splitlines() if ln.split()[:2] == ["annotator", "role"])
    rows = [ln.split() for ln in out.splitlines() if re.match(r"^  \d+ +crowd", ln)]
    # (Acc(exp) has no interval here: its '95% CI' header word stands over nothing, so count from the left)
    accuracy = [float(r[header.index("Acc(agg)") - 2]) for r in rows]
    assert len(rows) == 12 and accuracy == sorted(accuracy), rows
    assert rows[0][0] == "1" and accuracy[0] < accuracy[-1]
    capsys.readouterr()
    assert main(["aggregate", str(tmp_path / "a.csv"), "--format", "categorical", "--method", "mv",
                 "--output", str(tmp_path / "l.csv"), "--quiet", "--sort", "annotator"]) == 0
    ids = [ln.split()[0] for ln in capsys.readouterr().out.splitlines() if re.match(r"^  \d+ +crowd", ln)]
    assert ids == [str(i) for i in range(1, 13)]


def _planted(n_tasks: int = 20, length: int = 8, disputed: int = 5, empty: int = 10) -> Corpus:
    """Twenty 8-token NER tasks and three crowd annotators (classes O, B-PER, I-PER, B-LOC, I-LOC). Every task
    but two has a two-token PER span at tokens 1-2 and a LOC at token 4, labelled by all three annotators, and one
    annotator misses one span on a few tasks (a planted ordinary error). Task ``disputed``: the three annotators all
    disagree (PER at 1-2, LOC at 1, PER at 2-4). Task ``empty``: everyone left it empty. Every word is seen once."""
    names = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC"]
    base = np.array([0, 1, 2, 0, 0, 3, 0, 0])
    token, worker, label = [], [], []
    for d in range(n_tasks):
        for w in range(3):
            mine = base.copy()
            if d == disputed:
                mine = [np.array([0, 1, 2, 0, 0, 0, 0, 0]), np.array([0, 3, 0, 0, 0, 0, 0, 0]),
                        np.array([0, 0, 1, 2, 2, 0, 0, 0])][w]
            elif d == empty:
                mine = np.zeros(length, dtype=np.int64)
            elif d % 4 == 1 and w == d % 3:  # an ordinary miss by one annotator
                mine[5] = 0
            token.append(d * length + np.arange(length))
            worker.append(np.full(length, w))
            label.append(mine)
    starts = np.tile(np.arange(length) * 5, n_tasks)
    return Corpus.from_arrays(
        token=np.concatenate(token), worker=np.concatenate(worker), label=np.concatenate(label),
        doc_lengths=[length] * n_tasks, token_start=starts, token_end=starts + 4,
        doc_ids=[str(100 + d) for d in range(n_tasks)],
        texts=[" ".join(f"w{d:02d}{i}" for i in range(length)) for d in range(n_tasks)],
        worker_ids=["c0", "c1", "c2"], worker_roles=["crowd"] * 3, class_names=names)


@pytest.mark.parametrize("method", ["hmm-crowd", "bsc-seq", "ds", "mv"])
def test_a_planted_disputed_task_comes_first_and_an_empty_one_is_not_disputed(method):
    """Issue 48: the task all three annotators disagree on ranked 17th of 20 in Label Studio's "disputed first"
    order (every HMM-Crowd score was .999996 or more) and a task everyone left empty ranked 4th. Now the pushed
    score (the calibrated probability that the task's aggregate is right) puts the disputed task first and the
    empty task in the second half, and the dashboard's list starts with the disputed task and leaves the empty
    one out."""
    from crowdqa.ingest.label_studio_api import LabelConfig
    from crowdqa.jobs.label_studio import _predictions

    corpus = _planted()
    r = run_pipeline(corpus, method=method)
    result = JobResult(corpus=corpus, labels=r.labels, clamped=r.clamped, proba=r.proba,
                       worker_confusion=r.worker_confusion, scores=r.confidence)
    config = LabelConfig(kind="spans", from_name="label", to_name="text", text_key="text", labels=("PER", "LOC"))
    rows = _predictions(corpus, r.labels, r.confidence, config, "v")
    by_score = [row["task"] for row in sorted(rows, key=lambda row: row["score"])]
    assert by_score[0] == 105, [(row["task"], round(row["score"], 4)) for row in rows]
    assert by_score.index(110) >= 10, by_score  # not in the first half (it was 4th of 20)
    listed = [d["id"] for d in disputed_documents(result)]
    assert listed[0] == "105" and "110" not in listed, listed
