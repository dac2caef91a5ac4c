"""The HMM-Crowd authors' code as a peer: run it on conll_val beside ours, in one run.

Nguyen, Wallace, Li, Nenkova and Lease, "Aggregating and Predicting Sequence Labels from Crowd
Annotations", ACL 2017; their code (github.com/thanhan/seqcrowd-acl17, converted to Python 3 by
lib2to3 only) is in ``../shared/peers/hmm_crowd_authors``. It needs nltk and python-crfsuite,
which are not crowdqa's dependencies: :func:`peer_python` makes a virtual environment of its own
for it (``.venv-peers/hmm_crowd_authors``, ignored by git) the first time and reuses it.

:func:`compare` measures, on ``../shared/data/conll_val`` (the Rodrigues et al. layout for theirs,
``answers.conll`` for ours):

* the whole process: ``python hmm.py -i DIR -o OUT`` (read, Dawid-Skene start, one EM step, the
  command line's default, Viterbi decoding, writing the tags, scoring against the ground truth)
  against ``crowdqa aggregate answers.conll --format conll --method hmm-crowd --expert gold.conll
  --output OUT --report REPORT`` (read, fit, the default report against the expert, writing),
  each a process of its own; wall and CPU seconds;
* their stages, timed inside one process of their code (:data:`DRIVER` calls their functions):
  reading, the Dawid-Skene start, each E-step and M-step, decoding; and ours: one E-step plus
  M-step of the same model on the same corpus (``benchmarks.hmm_crowd.time_em_step``); wall and
  CPU seconds (on a shared machine the wall seconds include waiting for a core).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PEER = REPO.parent / "shared" / "peers" / "hmm_crowd_authors"
DATA = REPO.parent / "shared" / "data" / "conll_val"
VENV = REPO / ".venv-peers" / "hmm_crowd_authors"
#: What the peer's README says its code needs (any current versions).
PEER_PACKAGES = ("numpy", "scipy", "scikit-learn", "nltk", "python-crfsuite", "matplotlib")
#: The commit of github.com/thanhan/seqcrowd-acl17 the peer's files come from (its README).
PEER_COMMIT = "2a8a86f9ab4121d16b5abe5437bc764d306b87ae"

#: Run in the peer's environment with argv = [peer folder, data folder, EM steps]: their
#: ``main_em`` step by step (the same calls and arguments as ``hmm.py``'s defaults), each timed.
DRIVER = r"""
import json, sys, time
sys.path.insert(0, sys.argv[1])
import hmm, util
data, steps = sys.argv[2], int(sys.argv[3])
out = {}
def timed(name, f):
    t, c = time.perf_counter(), time.process_time()
    r = f()
    wall, cpu = time.perf_counter() - t, time.process_time() - c
    if name.endswith("_step"):
        out.setdefault(name + "_seconds", []).append(wall)
        out.setdefault(name + "_cpu_seconds", []).append(cpu)
    else:
        out[name + "_seconds"], out[name + "_cpu_seconds"] = wall, cpu
    return r
hs, hc, all_sen, features, labels = timed("read", lambda: hmm.run_rod(dirname=data))
timed("init", lambda: hc.init(init_type="dw", wm_rep="cv2", dw_em=5, wm_smooth=0.001))
gold = util.get_all_lab(all_sen)
hc.vb = [0.1, 0.1]
for _ in range(steps):
    timed("e_step", hc.e_step)
    timed("m_step", hc.m_step)
timed("decode", hc.mls)
p, r, f = hmm.eval_seq_train(gold, hc.res, labels)
out.update(precision=p, recall=r, f1=f, sentences=len(all_sen), tokens=sum(len(s) for s in all_sen))
print("RESULT " + json.dumps(out))
"""


def peer_python(venv: Path = VENV) -> Path:
    """The peer environment's interpreter, made with :data:`PEER_PACKAGES` on first use."""
    python = venv / "bin" / "python"
    if not python.exists():
        print(f"making {venv} for the authors' code: pip install {' '.join(PEER_PACKAGES)}", file=sys.stderr)
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check", *PEER_PACKAGES],
                       check=True)
    return python


def peer_versions(python: Path) -> dict:
    """Python and package versions of the peer environment, and the authors' commit."""
    code = ("import json, platform; from importlib import metadata as m; print(json.dumps({'python': "
            f"platform.python_version(), **{{n: m.version(n) for n in {PEER_PACKAGES!r}}}}}))")
    out = subprocess.run([str(python), "-c", code], capture_output=True, text=True, check=True)
    return {"hmm_crowd_authors": f"github.com/thanhan/seqcrowd-acl17@{PEER_COMMIT} (lib2to3)",
            "hmm_crowd_authors_env": json.loads(out.stdout)}


def _whole(argv: list[str], cwd: Path) -> dict:
    """Wall and CPU seconds of one process (``benchmarks.whole_path._run``), with its last stdout line."""
    from benchmarks.whole_path import _run

    with tempfile.TemporaryFile("w+") as log:
        here = os.getcwd()
        os.chdir(cwd)
        try:
            r = _run(argv, stdout=log)
        finally:
            os.chdir(here)
        log.seek(0)
        lines = [line for line in log.read().splitlines() if line.strip()]
    r["last_line"] = lines[-1] if lines else ""
    return r


def authors_whole(python: Path, work: Path) -> dict:
    """``python hmm.py -i DATA/rodrigues/ -o OUT``: seconds and the strict span P, R, F1 it prints."""
    r = _whole([str(python), "hmm.py", "-i", f"{DATA / 'rodrigues'}/", "-o", str(work / "authors.txt")], PEER)
    if r["exit"] == 0:
        p, rec, f = (float(x) for x in r["last_line"].strip("()").replace(",", " ").split())
        r.update(precision=p, recall=rec, f1=f)
    return r


def authors_stages(python: Path, *, steps: int) -> dict:
    """Their stages timed in one process (:data:`DRIVER`), with ``steps`` EM steps."""
    out = subprocess.run([str(python), "-c", DRIVER, str(PEER), f"{DATA / 'rodrigues'}/", str(steps)],
                         capture_output=True, text=True, check=True)
    line = next(x for x in reversed(out.stdout.splitlines()) if x.startswith("RESULT "))
    stages = json.loads(line[len("RESULT "):])
    for unit in ("seconds", "cpu_seconds"):
        stages[f"em_step_{unit}"] = [e + m for e, m in zip(stages[f"e_step_{unit}"], stages[f"m_step_{unit}"],
                                                            strict=True)]
    return stages


def ours_whole(work: Path, params: dict | None = None) -> dict:
    """``crowdqa aggregate`` of conll_val with HMM-Crowd and the default report against the gold file."""
    argv = [sys.executable, "-m", "crowdqa.api.cli", "aggregate", str(DATA / "answers.conll"), "--format", "conll",
            "--expert", str(DATA / "gold.conll"), "--expert-format", "conll", "--method", "hmm-crowd",
            "--output", str(work / "ours.conll"), "--output-format", "conll", "--report", str(work / "report.json"),
            "--quiet"]
    if params:
        argv += ["--params", json.dumps(params)]
    r = _whole(argv, REPO)
    if r["exit"] == 0:
        report = json.loads((work / "report.json").read_text(encoding="utf-8"))
        r.update(strict_span_prf(work / "ours.conll"), iterations=report["fit"]["iterations"],
                 stages=report["fit"]["stages"])
    return r


def strict_span_prf(predicted: Path) -> dict:
    """Strict span P/R/F1 (document, first and last token, type; the conlleval rule of ``decode_spans``) of a
    CoNLL file of predicted tags against conll_val's gold, both read with crowdqa's reader (same tokens)."""
    from crowdqa.aggregation.spans import decode_spans
    from crowdqa.ingest import read_corpus

    gold = read_corpus(DATA / "gold.conll", format="conll", role="expert").corpus
    pred = read_corpus(predicted, format="conll", role="expert").corpus

    def spans(corpus) -> set:
        s = decode_spans(corpus.vote_counts().argmax(axis=1), corpus)
        names = ("O", *corpus.entity_types)  # type index + 1 -> name (the two files may order the types apart)
        return set(zip(s.doc.tolist(), s.first.tolist(), s.last.tolist(), [names[t] for t in s.type.tolist()],
                       strict=True))

    want, got = spans(gold), spans(pred)
    tp = len(want & got)
    p, r = tp / max(len(got), 1), tp / max(len(want), 1)
    return {"precision": p, "recall": r, "f1": 2 * p * r / (p + r) if p + r else 0.0}


def compare(*, em_repeats: int = 5, peer_steps: int = 3) -> dict:
    """The whole processes and the EM steps of both on conll_val (see the module docstring)."""
    import numpy as np

    from benchmarks.hmm_crowd import time_em_step
    from crowdqa.ingest import read_corpus

    python = peer_python()
    with tempfile.TemporaryDirectory(prefix="crowdqa-hmm-authors-") as tmp:
        work = Path(tmp)
        authors = authors_whole(python, work)
        ours = ours_whole(work)
        ours_1 = ours_whole(work, {"max_iter": 1})
    stages = authors_stages(python, steps=peer_steps)
    corpus = read_corpus(DATA / "answers.conll", format="conll").corpus
    em = time_em_step(corpus, repeats=em_repeats)
    theirs_step = float(np.median(stages["em_step_seconds"]))
    theirs_step_cpu = float(np.median(stages["em_step_cpu_seconds"]))
    out = {"data": {"documents": corpus.n_docs, "tokens": corpus.n_tokens, "annotators": corpus.n_workers,
                    "labels": corpus.n_obs},
           "authors_whole_process": authors, "ours_whole_process": ours, "ours_whole_process_max_iter_1": ours_1,
           "authors_stages": stages, "ours_em_step": em,
           "em_step_ratio": theirs_step / em["em_step_seconds_median"],
           "em_step_cpu_ratio": theirs_step_cpu / em["em_step_cpu_seconds_median"]}
    if authors["exit"] == 0 and ours["exit"] == 0:
        out["whole_process_ratio"] = authors["seconds"] / ours["seconds"]
        out["whole_process_cpu_ratio"] = authors["cpu_seconds"] / ours["cpu_seconds"]
    return out
