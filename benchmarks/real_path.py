"""What a user waits on real crowd data: the whole ``crowdqa aggregate`` process vs crowd-kit's whole process.

``python -m benchmarks.real_path [--repeats N] [--cap SECONDS]`` writes ``benchmarks/results/real_path.json``.

Data (../shared/data, or ``$CROWDQA_SHARED_DATA``; the run stops with a message when it is absent):

* Snow et al. 2008 RTE and TEMP (``categorical/snow2008_*.tsv``, as distributed: annotation id, worker
  id, item id, response, gold) and Welinder et al. 2010 Bluebirds (``categorical/welinder2010_bluebirds``,
  written once to an ``item,annotator,label,gold`` CSV as in :mod:`benchmarks.categorical`);
* PICO (Nguyen et al. 2017): the Participants crowd spans of train, dev, test and expert-dev
  (``pico/annotations/*/PICO-annos-crowdsourcing.json``, concatenated once into one JSON Lines file)
  with the abstracts of ``pico/docs``, and the medical student's spans as the expert file. The expert-dev
  crowd spans are the crowd's labels of the 64 documents the experts labelled: without them no crowd label
  meets an expert one and the report has nothing to score against the experts, which is not a user's study.

Each run is its own process, one after the other; wall seconds, CPU seconds and peak RSS come from
``os.wait4`` (see :func:`benchmarks.whole_path._run`); the best (least CPU) of ``--repeats`` runs is kept
(one run on PICO, whose processes take minutes), so the numbers say what the work costs rather than how
busy the shared machine was.

* crowdqa: ``crowdqa aggregate FILE --format F --method M --output OUT --report report.json --quiet``:
  reading, fit, the default report (every worker against the gold/experts with intervals, pair kappas),
  writing the labels and the report.
* crowd-kit 1.4.2, its documented use, in a Python process of its own: ``pandas.read_csv`` of the same
  file, the columns renamed to ``task, worker, label`` (gold dropped), ``MajorityVote().fit_predict`` or
  ``DawidSkene(n_iter=100).fit_predict``, the labels written with ``to_csv``. On PICO crowd-kit needs
  token tasks: the peer script reads the JSON Lines and the abstracts, cuts every abstract into
  ``\\S+`` tokens and gives each (token, worker) of a document the worker annotated a 1 inside one of the
  worker's spans and a 0 outside (what a user of crowd-kit writes; crowdqa's tokenizer differs, so the
  token counts differ a little), then fits and writes token labels. crowd-kit has no HMM-Crowd; for
  ``hmm-crowd`` the peer column is empty.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.tables import make_meta, write_results
from benchmarks.whole_path import BIN, _run

REPO = Path(__file__).resolve().parents[1]
DATA = Path(os.environ.get("CROWDQA_SHARED_DATA", REPO.parent / "shared" / "data"))
RESULTS = REPO / "benchmarks" / "results"

CROWD_KIT = r"""
import json, re, sys
from pathlib import Path
import numpy as np
import pandas as pd
from crowdkit.aggregation import DawidSkene, MajorityVote
path, kind, method, out = sys.argv[1:5]
if kind == "pico":
    docs = Path(sys.argv[5])
    rows = []
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            rec = json.loads(line)
            doc = rec["docid"]
            text = (docs / f"{doc}.txt").read_text(encoding="utf-8")
            starts = np.array([m.start() for m in re.finditer(r"\S+", text)])
            for worker, spans in rec.get("Participants", {}).items():
                inside = np.zeros(starts.size, dtype=np.int64)
                for a, b in spans:
                    inside[(starts >= a) & (starts < b)] = 1
                rows.append(pd.DataFrame({"task": [f"{doc}:{i}" for i in range(starts.size)], "worker": worker,
                                          "label": inside}))
    df = pd.concat(rows, ignore_index=True)
else:
    df = pd.read_csv(path, sep="\t" if path.endswith(".tsv") else ",")
    names = {"categorical": ["task", "worker", "label"]}[kind]
    cols = {"orig_id": "task", "!amt_worker_ids": "worker", "response": "label",
            "item": "task", "annotator": "worker"}
    df = df.rename(columns=cols)[names]
model = MajorityVote() if method == "mv" else DawidSkene(n_iter=100)
labels = model.fit_predict(df)
labels.to_csv(out)
"""


def datasets(tmp: Path) -> list[dict]:
    """The data sets present, each with the crowdqa arguments and the peer's."""
    from benchmarks.categorical import _bluebirds_csv

    cat = DATA / "categorical"
    out = []
    for name in ("snow2008_rte", "snow2008_temp"):
        if (cat / f"{name}.tsv").exists():
            out.append({"name": name, "path": cat / f"{name}.tsv", "kind": "categorical",
                        "args": ["--format", "categorical"], "methods": ("mv", "ds")})
    if (cat / "welinder2010_bluebirds" / "labels.yaml").exists():
        out.append({"name": "bluebirds", "path": _bluebirds_csv(tmp), "kind": "categorical",
                    "args": ["--format", "categorical"], "methods": ("mv", "ds")})
    pico = DATA / "pico"
    splits = [pico / "annotations" / s / "PICO-annos-crowdsourcing.json"
              for s in ("train", "dev", "test", "expert-dev")]
    if all(p.exists() for p in splits) and (pico / "docs").is_dir():
        crowd = tmp / "pico_crowd.jsonl"
        with open(crowd, "w", encoding="utf-8") as fh:
            for p in splits:
                fh.write(p.read_text(encoding="utf-8").rstrip("\n") + "\n")
        expert = pico / "annotations" / "expert-dev" / "PICO-annos-professional.json"
        args = ["--format", "pico-jsonl", "--docs", str(pico / "docs"), "--category", "Participants"]
        if expert.exists():
            args += ["--expert", str(expert), "--expert-format", "pico-jsonl"]
        out.append({"name": "pico_participants", "path": crowd, "kind": "pico", "args": args,
                    "methods": ("mv", "ds", "hmm-crowd"), "docs": pico / "docs"})
    return out


def _best(runs: list[dict]) -> dict:
    ok = [r for r in runs if r["exit"] == 0] or runs
    best = dict(min(ok, key=lambda r: r["cpu_seconds"]))
    best["runs_seconds"] = [r["seconds"] for r in runs]
    best["runs_cpu_seconds"] = [r["cpu_seconds"] for r in runs]
    return best


def point(ds: dict, method: str, work: Path, *, repeats: int, cap: float) -> dict:
    report = work / "report.json"
    suffix = ".jsonl" if ds["kind"] == "pico" else ".csv"
    ours = []
    for _ in range(repeats):
        r = _run([str(BIN / "crowdqa"), "aggregate", str(ds["path"]), *ds["args"], "--method", method,
                  "--output", str(work / f"out{suffix}"), "--report", str(report), "--quiet"])
        if r["exit"] == 0:
            rep = json.loads(report.read_text())
            r.update(stages=rep["fit"]["stages"], iterations=rep["fit"]["iterations"],
                     labels=rep["counts"]["annotations"], workers=rep["counts"]["crowd_workers"],
                     documents=rep["counts"]["documents"], tokens=rep["counts"]["tokens"])
        ours.append(r)
    out = {"data": ds["name"], "method": method, "crowdqa": _best(ours)}
    for key in ("labels", "workers", "documents", "tokens"):
        out[key] = out["crowdqa"].pop(key, None)
    if method in ("mv", "ds"):
        script = work / "crowdkit_run.py"
        script.write_text(CROWD_KIT)
        argv = [sys.executable, str(script), str(ds["path"]), ds["kind"], method, str(work / "ck.csv")]
        if ds["kind"] == "pico":
            argv.append(str(ds["docs"]))
        out["crowd_kit"] = _best([_run(argv, cap=cap) for _ in range(repeats)])
        if out["crowd_kit"]["exit"] == 0 and out["crowdqa"]["exit"] == 0:
            out["ratio_seconds"] = round(out["crowd_kit"]["seconds"] / out["crowdqa"]["seconds"], 2)
            out["ratio_cpu_seconds"] = round(out["crowd_kit"]["cpu_seconds"] / out["crowdqa"]["cpu_seconds"], 2)
    out["load_average"] = [round(x, 2) for x in os.getloadavg()]  # after the point: how shared the machine was
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3, help="runs of each process; the least CPU is kept")
    ap.add_argument("--cap", type=float, default=900.0, help="stop a crowd-kit run after this many seconds")
    args = ap.parse_args(argv)
    t_start = time.perf_counter()
    points = []
    with tempfile.TemporaryDirectory(prefix="crowdqa-real-path-") as tmp:
        found = datasets(Path(tmp))
        if not found:
            print(f"no shared data under {DATA}: see ../shared/data/README.md", file=sys.stderr)
            return 2
        for ds in found:
            for method in ds["methods"]:
                repeats = 1 if ds["kind"] == "pico" else args.repeats
                p = point(ds, method, Path(tmp), repeats=repeats, cap=args.cap)
                print(json.dumps(p), flush=True)
                points.append(p)
                _save(points, args, t_start)
    print(f"wrote {_save(points, args, t_start)}")
    return 0


def _save(points: list[dict], args: argparse.Namespace, t_start: float) -> Path:
    meta = make_meta(f"python -m benchmarks.real_path --repeats {args.repeats} --cap {args.cap:g}",
                     seconds=time.perf_counter() - t_start)
    meta["note"] = (f"Least-CPU of {args.repeats} runs per process (one on PICO); the machine (2 cores) was "
                    "shared with other engineers' work, so wall seconds include waiting for a core")
    out = write_results(RESULTS / "real_path.json", {"meta": meta, "points": points}, indent=2)
    return out


if __name__ == "__main__":
    sys.exit(main())
