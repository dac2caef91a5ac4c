"""Reader throughput: rows and labels per second of every reader, on synthetic files of each format.

``python -m benchmarks.readers [--quick] [--scale F]`` writes ``benchmarks/results/readers.json``
(``readers_quick.json`` with ``--quick``: a tenth of the sizes).

Issue 14 asks every parser to read at least 1M rows (or tokens) per second where its format
allows. Each format gets a seeded synthetic file (or folder) of the layout its reader documents,
with string ids and clean fields, so the reader takes its fastest legal path:

* ``categorical``: ``task,worker,label`` CSV rows (the whole-path benchmark's file).
* ``conll``: one token per line, a tag column per annotator (``?`` where an annotator did not label
  the sentence), blank lines between sentences.
* ``spans-csv`` / ``spans-jsonl``: one row per span ``doc_id,annotator,start,end,label``, texts in a
  ``docs`` folder.
* ``pico-jsonl``: one line per document, ``{"docid": ..., "Participants": {worker: [[s, e], ...]}}``,
  texts in a ``docs`` folder.
* ``ebm-nlp``: ``documents/<PMID>.tokens`` and one ``<PMID>.<WID>.ann`` file per (document, worker).
* ``brat``: one folder per annotator of ``<doc>.ann`` files (a ``T`` line per span), texts in ``docs``.
* ``label-studio``: one JSON export, a task per document with an annotation per worker (a result per span).
* ``doccano``: one ``<user>.jsonl`` per annotator, a line per document they labelled.
* ``mturk-csv``: a batch-results CSV, a row per assignment with ``Answer.taskAnswers`` as
  crowd-entity-annotation JSON.

The last four have no columnar fast path (each row is parsed in Python, and brat is a file per
assignment); their rows are spans (brat, Label Studio) or assignments of 4 spans (doccano, MTurk).

For each, ``ingest.read_corpus`` is timed in this process (best of ``--repeat`` runs, after one
untimed warm-up that imports the reader's modules and fills the page cache): wall seconds and CPU
seconds (``time.process_time``, all threads), so a run on a shared machine can be read by its CPU
time too. ``rows`` are the file's data rows (CSV rows, JSON lines, token lines, ``.ann`` files'
tokens), ``labels`` the corpus's (token, annotator) labels.

Memory (:func:`peak_rss`): the same file is read once more by a fresh Python process, after a small file of the
format (so every import is done); its resident set before that read and its peak during it (Linux's VmRSS and
VmHWM) are recorded beside the size of the input on disk.
"""

from __future__ import annotations

import argparse
import gc
import json
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from benchmarks.tables import make_meta, write_results

RESULTS = Path(__file__).resolve().parent / "results"
WORDS = np.array(["the", "patients", "with", "type", "2", "diabetes", "were", "randomised", "to", "placebo", "or",
                  "metformin", "trial", "of", "adults", "aged", "years", "and", "children", "a", "in", "study"])


def _texts(rng: np.random.Generator, n_docs: int, n_tokens: int) -> list[list[str]]:
    """``n_docs`` documents of ``n_tokens`` random words each."""
    words = WORDS[rng.integers(0, WORDS.size, (n_docs, n_tokens))]
    return [row.tolist() for row in words]


def _spans(rng: np.random.Generator, tokens: list[str], k: int) -> list[tuple[int, int]]:
    """``k`` character spans covering 1-4 whole tokens of a text made of ``tokens`` joined by spaces."""
    lengths = np.array([len(t) for t in tokens])
    starts = np.concatenate([[0], np.cumsum(lengths + 1)[:-1]])
    first = np.sort(rng.choice(len(tokens) - 4, size=k, replace=False))
    last = first + rng.integers(0, 4, k)
    return [(int(starts[a]), int(starts[b] + lengths[b])) for a, b in zip(first, last, strict=True)]


def make_categorical(folder: Path, rows: int, rng: np.random.Generator) -> tuple[Path, dict]:
    from benchmarks.whole_path import write_data

    path = folder / "answers.csv"
    write_data(rows, path, seed=int(rng.integers(2**31)))
    return path, {}


def make_conll(folder: Path, rows: int, rng: np.random.Generator) -> tuple[Path, dict]:
    """Sentences of 14 tokens, 5 annotator columns, each annotator labelling 3 of 5 sentences."""
    n_sent, length, n_ann = rows // 14, 14, 5
    tags = np.array(["O", "B-PER", "I-PER", "B-ORG", "I-ORG", "B-LOC"])
    path = folder / "crowd.conll"
    words = WORDS[rng.integers(0, WORDS.size, (n_sent, length))]
    truth = rng.choice(tags.size, (n_sent, length), p=[0.7, 0.06, 0.06, 0.06, 0.06, 0.06])
    noisy = np.where(rng.random((n_sent, length, n_ann)) < 0.85, truth[:, :, None],
                     rng.integers(0, tags.size, (n_sent, length, n_ann)))
    cells = tags[noisy]
    absent = rng.random((n_sent, n_ann)) < 0.4  # this annotator did not label this sentence
    cells[np.broadcast_to(absent[:, None, :], cells.shape)] = "?"
    cols = [words] + [cells[:, :, a] for a in range(n_ann)]
    lines = cols[0]
    for c in cols[1:]:
        lines = np.char.add(np.char.add(lines, "\t"), c)
    with open(path, "w", encoding="utf-8") as fh:
        fh.write("# annotators: " + " ".join(f"w{a}" for a in range(n_ann)) + "\n")
        for s in range(0, n_sent, 20_000):
            fh.write("\n\n".join("\n".join(sent) for sent in lines[s:s + 20_000].tolist()))
            fh.write("\n\n")
    return path, {}


def _write_docs(folder: Path, texts: list[list[str]]) -> Path:
    docs = folder / "docs"
    docs.mkdir()
    for i, toks in enumerate(texts):
        (docs / f"d{i:06d}.txt").write_text(" ".join(toks), encoding="utf-8")
    return docs


def _span_rows(rows: int, rng: np.random.Generator) -> tuple[list[list[str]], list[tuple]]:
    """Documents of 200 tokens, 5 workers per document, 4 spans per worker: 20 rows per document."""
    n_docs = max(rows // 20, 1)
    texts = _texts(rng, n_docs, 200)
    out = []
    for d, toks in enumerate(texts):
        for w in rng.choice(300, 5, replace=False):
            out += [(f"d{d:06d}", f"worker{w:03d}", s, e, "Participants") for s, e in _spans(rng, toks, 4)]
    return texts, out


def make_spans_csv(folder: Path, rows: int, rng: np.random.Generator) -> tuple[Path, dict]:
    texts, spans = _span_rows(rows, rng)
    docs = _write_docs(folder, texts)
    path = folder / "spans.csv"
    path.write_text("doc_id,annotator,start,end,label\n" + "".join(f"{d},{w},{s},{e},{lab}\n"
                                                                    for d, w, s, e, lab in spans), encoding="utf-8")
    return path, {"docs": docs}


def make_spans_jsonl(folder: Path, rows: int, rng: np.random.Generator) -> tuple[Path, dict]:
    texts, spans = _span_rows(rows, rng)
    docs = _write_docs(folder, texts)
    path = folder / "spans.jsonl"
    path.write_text("".join(json.dumps({"doc_id": d, "annotator": w, "start": s, "end": e, "label": lab}) + "\n"
                            for d, w, s, e, lab in spans), encoding="utf-8")
    return path, {"docs": docs}


def make_pico_jsonl(folder: Path, rows: int, rng: np.random.Generator) -> tuple[Path, dict]:
    """``rows`` documents of 250 tokens, 6 workers each with 2 spans (the size of PICO's abstracts and crowd)."""
    texts = _texts(rng, rows, 250)
    docs = _write_docs(folder, texts)
    path = folder / "annotations.json"
    with open(path, "w", encoding="utf-8") as fh:
        for d, toks in enumerate(texts):
            by = {f"A{w:03d}": [list(s) for s in _spans(rng, toks, 2)] for w in rng.choice(300, 6, replace=False)}
            fh.write(json.dumps({"docid": f"d{d:06d}", "Participants": by}) + "\n")
    return path, {"docs": docs, "category": "Participants"}


def make_ebm_nlp(folder: Path, rows: int, rng: np.random.Generator) -> tuple[Path, dict]:
    """``rows`` documents of 250 tokens (one per line, as EBM-NLP ships them), 3 workers each."""
    root = folder / "ebm_nlp_2_00"
    (root / "documents").mkdir(parents=True)
    ann = root / "annotations" / "individual" / "phase_1" / "participants" / "train"
    ann.mkdir(parents=True)
    for d, toks in enumerate(_texts(rng, rows, 250)):
        pmid = f"{10_000_000 + d}"
        (root / "documents" / f"{pmid}.tokens").write_text("\n".join(toks) + "\n", encoding="utf-8")
        for w in rng.choice(300, 3, replace=False):
            lab = (rng.random(250) < 0.15).astype(int)
            (ann / f"{pmid}.{w:05d}.ann").write_text(",".join(map(str, lab)).replace(",", " ") + "\n",
                                                      encoding="utf-8")
    return root, {"category": "participants"}


def _assignments(rows: int, rng: np.random.Generator) -> tuple[list[list[str]], dict[tuple[str, str], list[tuple]]]:
    """The spans of :func:`_span_rows` grouped by assignment ``(doc_id, worker)``, with the documents' tokens."""
    texts, spans = _span_rows(rows, rng)
    out: dict[tuple[str, str], list[tuple]] = {}
    for d, w, s, e, lab in spans:
        out.setdefault((d, w), []).append((s, e, lab))
    return texts, out


def make_brat(folder: Path, rows: int, rng: np.random.Generator) -> tuple[Path, dict]:
    texts, by = _assignments(rows, rng)
    root = folder / "brat"
    docs = _write_docs(folder, texts)
    for (d, w), spans in by.items():
        (root / w).mkdir(parents=True, exist_ok=True)
        text = " ".join(texts[int(d[1:])])
        (root / w / f"{d}.ann").write_text("".join(f"T{i + 1}\t{lab} {s} {e}\t{text[s:e]}\n"
                                                   for i, (s, e, lab) in enumerate(spans)), encoding="utf-8")
    return root, {"docs": docs}


def make_label_studio(folder: Path, rows: int, rng: np.random.Generator) -> tuple[Path, dict]:
    texts, by = _assignments(rows, rng)
    tasks: dict[str, dict] = {}
    for (d, w), spans in by.items():
        text = " ".join(texts[int(d[1:])])
        task = tasks.setdefault(d, {"id": d, "data": {"text": text}, "annotations": []})
        task["annotations"].append({"completed_by": w, "was_cancelled": False, "result": [
            {"type": "labels", "from_name": "label", "to_name": "text",
             "value": {"start": s, "end": e, "text": text[s:e], "labels": [lab]}} for s, e, lab in spans]})
    path = folder / "export.json"
    path.write_text(json.dumps(list(tasks.values())), encoding="utf-8")
    return path, {}


def make_doccano(folder: Path, rows: int, rng: np.random.Generator) -> tuple[Path, dict]:
    """``rows`` JSON lines (assignments of 4 spans) in one ``<user>.jsonl`` per worker."""
    texts, by = _assignments(4 * rows, rng)
    root = folder / "doccano"
    root.mkdir()
    users: dict[str, list[str]] = {}
    for (d, w), spans in by.items():
        users.setdefault(w, []).append(json.dumps({"id": d, "text": " ".join(texts[int(d[1:])]),
                                                   "label": [[s, e, lab] for s, e, lab in spans]}))
    for w, lines in users.items():
        (root / f"{w}.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return root, {}


def make_mturk_csv(folder: Path, rows: int, rng: np.random.Generator) -> tuple[Path, dict]:
    """``rows`` assignments (CSV rows) of 4 spans each, the answer as crowd-entity-annotation JSON."""
    import csv

    texts, by = _assignments(4 * rows, rng)
    path = folder / "Batch_1_batch_results.csv"
    with open(path, "w", encoding="utf-8", newline="") as fh:
        out = csv.writer(fh)
        out.writerow(["HITId", "AssignmentId", "WorkerId", "AssignmentStatus", "Input.id", "Input.text",
                      "Answer.taskAnswers"])
        for k, ((d, w), spans) in enumerate(by.items()):
            answer = [{"crowd-entity-annotation": {"entities": [
                {"startOffset": s, "endOffset": e, "label": lab} for s, e, lab in spans]}}]
            out.writerow([f"H{d}", f"A{k:07d}", w, "Approved", d, " ".join(texts[int(d[1:])]), json.dumps(answer)])
    return path, {}


#: format -> (maker, size of the full run, what a row is)
FORMATS: dict[str, tuple[Callable, int, str]] = {
    "categorical": (make_categorical, 3_000_000, "CSV row (one label)"),
    "conll": (make_conll, 1_400_000, "token line (5 annotator columns)"),
    "spans-csv": (make_spans_csv, 100_000, "CSV row (one span)"),
    "spans-jsonl": (make_spans_jsonl, 100_000, "JSON line (one span)"),
    "pico-jsonl": (make_pico_jsonl, 4_000, "JSON line (one document, 6 workers)"),
    "ebm-nlp": (make_ebm_nlp, 2_000, "token of an .ann file"),
    "brat": (make_brat, 100_000, "T line of an .ann file (one span)"),
    "label-studio": (make_label_studio, 100_000, "result (one span)"),
    "doccano": (make_doccano, 25_000, "JSON line (one document of one user, 4 spans)"),
    "mturk-csv": (make_mturk_csv, 25_000, "CSV row (one assignment, 4 spans)"),
}


def _count_rows(fmt: str, path: Path, corpus) -> int:
    """Data rows of the input: what a user would count in the file(s)."""
    if fmt == "conll":
        return corpus.n_tokens
    if fmt == "ebm-nlp":
        return int(corpus.n_obs)  # every .ann file holds one label per token of its document
    if fmt == "brat":
        return sum(line.startswith("T") for f in path.rglob("*.ann") for line in f.read_text("utf-8").splitlines())
    if fmt == "label-studio":
        return sum(len(a["result"]) for t in json.loads(path.read_text(encoding="utf-8")) for a in t["annotations"])
    if fmt == "doccano":
        return sum(_count_rows("spans-jsonl", f, corpus) for f in path.glob("*.jsonl"))
    if fmt == "mturk-csv":
        import csv

        with open(path, encoding="utf-8", newline="") as fh:
            return sum(1 for _ in csv.reader(fh)) - 1
    with open(path, "rb") as fh:
        n = sum(chunk.count(b"\n") for chunk in iter(lambda: fh.read(1 << 20), b""))
    return n - (1 if fmt in ("categorical", "spans-csv") else 0)


def measure(fmt: str, path: Path, options: dict, repeat: int) -> dict:
    from crowdqa.ingest import read_corpus

    read_corpus(path, format=fmt, **options)  # warm-up: imports and the page cache
    walls, cpus = [], []
    for _ in range(repeat):
        gc.collect()
        w0, c0 = time.perf_counter(), time.process_time()
        parsed = read_corpus(path, format=fmt, **options)
        walls.append(time.perf_counter() - w0)
        cpus.append(time.process_time() - c0)
        corpus = parsed.corpus
        del parsed
    rows = _count_rows(fmt, path, corpus)
    wall, cpu = min(walls), min(cpus)
    return {"rows": rows, "labels": int(corpus.n_obs), "tokens": int(corpus.n_tokens), "documents": int(corpus.n_docs),
            "annotators": int(corpus.n_workers), "wall_seconds": round(wall, 4), "cpu_seconds": round(cpu, 4),
            "wall_runs": [round(x, 4) for x in walls], "cpu_runs": [round(x, 4) for x in cpus],
            "rows_per_second": round(rows / wall), "rows_per_cpu_second": round(rows / cpu),
            "labels_per_second": round(corpus.n_obs / wall), "labels_per_cpu_second": round(corpus.n_obs / cpu)}


#: What the fresh process of :func:`peak_rss` runs: a small file of the format first (every import the reader
#: makes), then the resident set (VmRSS) and, the peak reset (``/proc/self/clear_refs``), the peak (VmHWM) of reading
#: the file itself.
_PEAK_CHILD = """
import gc, json, sys
from crowdqa.ingest import read_corpus

def status(key):
    with open("/proc/self/status") as fh:
        return next(int(line.split()[1]) for line in fh if line.startswith(key + ":"))

job = json.loads(sys.argv[1])
read_corpus(job["warm"], format=job["format"], **job["warm_options"])
gc.collect()
before = status("VmRSS")
with open("/proc/self/clear_refs", "w") as fh:
    fh.write("5")
corpus = read_corpus(job["path"], format=job["format"], **job["options"]).corpus
print(json.dumps({"before": before, "peak": status("VmHWM"), "labels": int(corpus.n_obs)}))
"""


def _input_bytes(path: Path) -> int:
    """Bytes of the input on disk: the file, or every file under the folder."""
    return path.stat().st_size if path.is_file() else sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def peak_rss(fmt: str, path: Path, options: dict, *, warm: tuple[Path, dict]) -> dict:
    """The peak resident set (MiB, Linux's VmHWM) of a fresh Python process while it reads ``path`` with
    ``ingest.read_corpus``, its resident set before that read (after reading ``warm``, a small file of the same
    format, so every import is done), and the input's size on disk (MiB; the ``docs`` texts of the span formats
    not counted)."""
    def text(opts: dict) -> dict:
        return {k: str(v) for k, v in opts.items()}

    job = json.dumps({"path": str(path), "format": fmt, "options": text(options), "warm": str(warm[0]),
                      "warm_options": text(warm[1])})
    out = subprocess.run([sys.executable, "-c", _PEAK_CHILD, job], capture_output=True, text=True, check=True)
    got = json.loads(out.stdout.strip().splitlines()[-1])
    return {"input_mib": round(_input_bytes(path) / 2**20, 1), "before_rss_mib": round(got["before"] / 1024, 1),
            "peak_rss_mib": round(got["peak"] / 1024, 1), "peak_labels": got["labels"]}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="a tenth of the sizes")
    ap.add_argument("--repeat", type=int, default=3, help="timed runs per format (the best is reported)")
    ap.add_argument("--formats", default=",".join(FORMATS), help="comma-separated formats")
    args = ap.parse_args(argv)
    t_start = time.perf_counter()
    out = {}
    for fmt in args.formats.split(","):
        maker, size, unit = FORMATS[fmt]
        n = max(size // 10, 100) if args.quick else size
        with tempfile.TemporaryDirectory(prefix=f"crowdqa-readers-{fmt}-") as tmp:
            (Path(tmp) / "full").mkdir()
            (Path(tmp) / "warm").mkdir()
            path, options = maker(Path(tmp) / "full", n, np.random.default_rng(0))
            point = measure(fmt, path, options, args.repeat)
            warm = maker(Path(tmp) / "warm", max(n // 1000, 10), np.random.default_rng(1))
            point.update(peak_rss(fmt, path, options, warm=warm))
        point["row"] = unit
        print(fmt, json.dumps(point), flush=True)
        out[fmt] = point
    command = "python -m benchmarks.readers" + (" --quick" if args.quick else "")
    if args.formats != ",".join(FORMATS):
        command += f" --formats {args.formats}"
    meta = make_meta(command, seconds=time.perf_counter() - t_start)
    meta["note"] = "Best of the timed runs; the machine (2 cores) was shared with other engineers' work"
    dest = write_results(RESULTS / ("readers_quick.json" if args.quick else "readers.json"),
                         {"meta": meta, "target_rows_per_second": 1_000_000, "formats": out}, indent=2)
    print(f"wrote {dest}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
