"""Time ingesting the whole PICO crowd set: ``python -m benchmarks.ingest_pico``.

Reads ``pico/annotations/{train,dev,test}/PICO-annos-crowdsourcing.json`` (Participants)
with the ``pico-jsonl`` reader and merges them, as a user would upload them, and
reports documents per second (best of two runs; both are listed) and peak memory (``tracemalloc`` peak of a second,
traced run, and the process's maximum resident set size) to
``benchmarks/results/ingest_pico.json``. Target: under 5 s and under 500 MB.

Two runs:

* ``shared_docs``: the texts of ``pico/docs``. Spans that do not fit their text are
  skipped (``on_error="skip"``) and counted, so a docs folder that does not match the
  annotation offsets shows up as ``spans_skipped`` instead of a crash.
* ``synthetic_texts``: the same annotation files with texts made here (seeded random
  words, each text as long as its real one or its furthest span end, whichever is
  longer), so that every span aligns and the run has the size of real abstracts.

The data folder is ``../shared/data`` (or ``CROWDQA_SHARED_DATA``); without it the
benchmark prints what is missing and exits 0.
"""

from __future__ import annotations

import gc
import json
import os
import resource
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

import numpy as np

from benchmarks.tables import write_results
from crowdqa.ingest import read_corpus
from crowdqa.ingest.merge import merge_corpora
from crowdqa.ingest.summary import summarize

REPO = Path(__file__).resolve().parents[1]
DATA = Path(os.environ.get("CROWDQA_SHARED_DATA", REPO.parent / "shared" / "data"))
OUT = REPO / "benchmarks" / "results" / "ingest_pico.json"
SPLITS = ("train", "dev", "test")


def _ingest(files: list[Path], docs: Path):
    results = [read_corpus(f, format="pico-jsonl", docs=docs, category="Participants", on_error="skip") for f in files]
    return merge_corpora([r.corpus for r in results]), sum(len(r.problems) for r in results)


def _measure(files: list[Path], docs: Path) -> dict:
    runs = []
    for _ in range(2):  # the first run reads the texts from disk; the second finds them in the page cache
        gc.collect()
        t0 = time.perf_counter()
        corpus, skipped = _ingest(files, docs)
        runs.append(time.perf_counter() - t0)
        del corpus
    seconds = min(runs)
    gc.collect()
    tracemalloc.start()
    corpus, _ = _ingest(files, docs)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    s = summarize(corpus)
    return {
        "seconds": round(seconds, 3),
        "seconds_per_run": [round(r, 3) for r in runs],
        "documents": s["documents"],
        "documents_per_second": round(s["documents"] / seconds, 1),
        "tokens": s["tokens"],
        "annotations": s["annotations"],
        "annotators": s["annotators"]["crowd"],
        "spans_skipped": skipped,
        "tracemalloc_peak_mb": round(peak / 2**20, 1),
    }


def _synthetic_docs(files: list[Path], docs: Path, out: Path, seed: int = 0) -> None:
    """Write one text per document, as long as the real text or the furthest span end."""
    rng = np.random.default_rng(seed)
    vocab = np.array(["patients", "with", "asthma", "were", "randomised", "to", "placebo", "(n=40)", "IL-2", "."])
    for f in files:
        for line in f.read_text(encoding="utf-8").splitlines():
            rec = json.loads(line)
            doc_id = rec["docid"]
            ends = [e for spans in rec.get("Participants", {}).values() for _, e in spans]
            real = docs / f"{doc_id}.txt"
            need = max([*ends, len(real.read_text(encoding="utf-8")) if real.exists() else 0, 1])
            words = rng.choice(vocab, size=need // 4 + 2)
            (out / f"{doc_id}.txt").write_text(" ".join(words.tolist())[: need + 1], encoding="utf-8")


def main() -> int:
    """Run both measurements and write the results file."""
    files = [DATA / "pico" / "annotations" / s / "PICO-annos-crowdsourcing.json" for s in SPLITS]
    docs = DATA / "pico" / "docs"
    missing = [p for p in [*files, docs] if not p.exists()]
    if missing:
        print(f"skipped: PICO data not found ({missing[0]} is absent); see ../shared/data/README.md for the source")
        return 0
    report = {
        "benchmark": "ingest_pico",
        "files": [str(f.relative_to(DATA)) for f in files],
        "docs_folder_texts": len(list(docs.glob("*.txt"))),
        "python": sys.version.split()[0],
        "target": {"seconds": 5.0, "memory_mb": 500},
        "shared_docs": _measure(files, docs),
    }
    with tempfile.TemporaryDirectory() as tmp:
        _synthetic_docs(files, docs, Path(tmp))
        report["synthetic_texts"] = _measure(files, Path(tmp))
    report["max_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    write_results(OUT, report, indent=2)
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
