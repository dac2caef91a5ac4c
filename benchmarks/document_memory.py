"""Reading memory per input size, for one long document and for many short ones, and the refusal of a document past
the bound (issue 47: a spans-jsonl file of one 94M-character document took the server to 2.46 GB).

``python -m benchmarks.document_memory [--quick]`` writes ``benchmarks/results/document_memory.json``
(``document_memory_quick.json`` with ``--quick``: no file over 10 MB).

For each format that carries texts (spans-jsonl and spans-csv with a text column, label-studio, doccano, brat,
conll), files are written of one document of 250,000, 500,000 and 1,000,000 characters (the default bound,
``CROWDQA_MAX_DOCUMENT_CHARS``) and of 1,000 documents of 1,000 characters, each document labelled by two
annotators with a span every 60 characters (conll: a tag per token); the span tables carry the text on a document's
first row. Then spans-jsonl files of one document past the bound, the issue's two: 45 MB and 188 MB (two rows, one
per annotator, each with the text). Each file is read by a fresh Python process (``ingest.read_corpus`` with the
default bounds), after a small file of the format so every import is done; its resident set before and its peak
while reading (Linux's VmRSS and VmHWM) are recorded beside the file's size, and whether it was read or refused
(and why: spans-csv, for one, cannot hold a field of more than 131,072 characters, the csv module's limit).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.tables import make_meta, write_results

RESULTS = Path(__file__).resolve().parent / "results"
UNIT = "The patients (n=40) received IL-2 and improved. "  # 49 characters, 11 tokens
SPAN_EVERY = 60
ANNOTATORS = ("a1", "a2")

_CHILD = """
import json, sys
from crowdqa.ingest import read_corpus
from crowdqa.ingest.errors import IngestError

def status(key):
    with open("/proc/self/status") as fh:
        return next(int(line.split()[1]) for line in fh if line.startswith(key + ":"))

job = json.loads(sys.argv[1])
read_corpus(job["warm"], format=job["format"])
before = status("VmRSS")
with open("/proc/self/clear_refs", "w") as fh:
    fh.write("5")
try:
    corpus = read_corpus(job["path"], format=job["format"]).corpus
    outcome, tokens = "read", int(corpus.n_tokens)
except IngestError as exc:
    outcome, tokens = "refused: " + exc.detail, None
print(json.dumps({"before": before, "peak": status("VmHWM"), "outcome": outcome, "tokens": tokens}))
"""


def _text(n_chars: int) -> str:
    return (UNIT * (n_chars // len(UNIT) + 1))[:n_chars]


def _spans(text: str) -> list[tuple[int, int]]:
    return [(s, s + 8) for s in range(0, max(len(text) - 8, 0), SPAN_EVERY)]


def write(fmt: str, folder: Path, docs: list[str]) -> Path:
    """``docs`` (texts) as a file (or folder) of ``fmt``, each labelled by :data:`ANNOTATORS`."""
    folder.mkdir(parents=True, exist_ok=True)
    if fmt in ("spans-jsonl", "spans-csv"):
        path = folder / ("s.jsonl" if fmt == "spans-jsonl" else "s.csv")
        with open(path, "w") as f:
            if fmt == "spans-csv":
                f.write("doc_id,annotator,start,end,label,text\n")
            for d, text in enumerate(docs):
                first = True  # the text on the document's first row only (later rows take it from there)
                for who in ANNOTATORS:
                    for s, e in _spans(text):
                        if fmt == "spans-jsonl":
                            row = {"doc_id": f"d{d}", "annotator": who, "start": s, "end": e, "label": "P"}
                            f.write(json.dumps({**row, "text": text} if first else row) + "\n")
                        else:
                            f.write(f"d{d},{who},{s},{e},P,{text if first else ''}\n")
                        first = False
        return path
    if fmt == "label-studio":
        path = folder / "ls.json"
        tasks = [{"id": d, "data": {"text": text}, "annotations": [
            {"completed_by": who, "result": [{"from_name": "l", "to_name": "t", "type": "labels",
                                              "value": {"start": s, "end": e, "labels": ["P"]}}
                                             for s, e in _spans(text)]} for who in ANNOTATORS]}
                 for d, text in enumerate(docs)]
        path.write_text(json.dumps(tasks))
        return path
    if fmt == "doccano":
        for who in ANNOTATORS:
            with open(folder / f"{who}.jsonl", "w") as f:
                for d, text in enumerate(docs):
                    f.write(json.dumps({"id": d, "text": text, "label": [[s, e, "P"] for s, e in _spans(text)]})
                            + "\n")
        return folder
    if fmt == "brat":
        for who in ANNOTATORS:
            (folder / who).mkdir(exist_ok=True)
            for d, text in enumerate(docs):
                (folder / who / f"d{d}.txt").write_text(text)
                (folder / who / f"d{d}.ann").write_text(
                    "".join(f"T{k}\tP {s} {e}\t{text[s:e]}\n" for k, (s, e) in enumerate(_spans(text), 1)))
        return folder
    if fmt == "conll":
        path = folder / "c.conll"
        with open(path, "w") as f:
            f.write(f"# annotators: {' '.join(ANNOTATORS)}\n")
            for text in docs:
                for k, token in enumerate(text.split()):
                    tag = "B-P" if k % 10 == 0 else "O"
                    f.write(f"{token}\t{tag}\t{tag}\n")
                f.write("\n")
        return path
    raise ValueError(fmt)


def _issue_file(path: Path, size: int) -> Path:
    """The issue's shape: spans-jsonl, one document, two rows (one per annotator, one span each), each carrying
    the text, ``size`` bytes in all."""
    text = _text(size // 2 - 100)
    with open(path, "w") as f:
        for who in ANNOTATORS:
            f.write(json.dumps({"doc_id": "d0", "annotator": who, "start": 4, "end": 12, "label": "P",
                                "text": text}) + "\n")
    return path


def _bytes(path: Path) -> int:
    return path.stat().st_size if path.is_file() else sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def peak(fmt: str, path: Path, warm: Path) -> dict:
    """A fresh process's resident set before and peak while reading ``path`` (MiB), and the outcome."""
    job = json.dumps({"path": str(path), "format": fmt, "warm": str(warm)})
    out = subprocess.run([sys.executable, "-c", _CHILD, job], capture_output=True, text=True, check=True)
    got = json.loads(out.stdout.strip().splitlines()[-1])
    return {"input_mib": round(_bytes(path) / 2**20, 2), "before_rss_mib": round(got["before"] / 1024, 1),
            "peak_rss_mib": round(got["peak"] / 1024, 1),
            "added_mib": round((got["peak"] - got["before"]) / 1024, 1), "outcome": got["outcome"],
            "tokens": got["tokens"]}


FORMATS = ("spans-jsonl", "spans-csv", "label-studio", "doccano", "brat", "conll")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="no file over 10 MB")
    args = ap.parse_args(argv)
    t_start = time.perf_counter()
    shapes = [("one document", [250_000]), ("one document", [500_000]), ("one document", [1_000_000]),
              ("1,000 documents", [1_000] * 1_000)]
    points = []
    with tempfile.TemporaryDirectory(prefix="crowdqa-document-memory-") as tmp:
        for fmt in FORMATS:
            warm = write(fmt, Path(tmp) / fmt / "warm", [_text(200)])
            for k, (shape, sizes) in enumerate(shapes):
                path = write(fmt, Path(tmp) / fmt / str(k), [_text(n) for n in sizes])
                point = {"format": fmt, "shape": shape, "chars_per_document": sizes[0], **peak(fmt, path, warm)}
                print(json.dumps(point), flush=True)
                points.append(point)
        warm = write("spans-jsonl", Path(tmp) / "issue" / "warm", [_text(200)])
        for size in (10_000_000,) if args.quick else (45_000_000, 188_000_000):
            path = _issue_file(Path(tmp) / "issue" / f"{size}.jsonl", size)
            point = {"format": "spans-jsonl", "shape": "one document past the bound",
                     "chars_per_document": size // 2 - 100, **peak("spans-jsonl", path, warm)}
            print(json.dumps(point), flush=True)
            points.append(point)
            path.unlink()
    command = "python -m benchmarks.document_memory" + (" --quick" if args.quick else "")
    meta = make_meta(command, seconds=time.perf_counter() - t_start)
    meta["note"] = ("VmHWM of a fresh process per file, after a small file of the format; the machine (2 cores) "
                    "was shared with other engineers' work")
    dest = write_results(RESULTS / ("document_memory_quick.json" if args.quick else "document_memory.json"),
                         {"meta": meta, "points": points}, indent=2)
    print(f"wrote {dest}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
