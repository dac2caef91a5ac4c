"""Helpers that write one set of spans in each upload format (the tests' own fixtures)."""

from __future__ import annotations

import csv
import json
from pathlib import Path

#: (doc_id, annotator, start, end, label); label None = "labelled, nothing found".
Row = tuple[str, str, int | None, int | None, str | None]


def write_spans_jsonl(
    path: Path, rows: list[Row], texts: dict[str, str], *, roles: dict[str, str] | None = None
) -> Path:
    with open(path, "w", encoding="utf-8") as fh:
        for d, a, s, e, lab in rows:
            obj = {"doc_id": d, "annotator": a, "start": s, "end": e, "label": lab, "text": texts[d]}
            if roles:
                obj["role"] = roles[a]
            fh.write(json.dumps(obj) + "\n")
    return path


def write_spans_csv(path: Path, rows: list[Row], texts: dict[str, str]) -> Path:
    with open(path, "w", encoding="utf-8", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["doc_id", "annotator", "start", "end", "label", "text"])
        for d, a, s, e, lab in rows:
            w.writerow([d, a, "" if s is None else s, "" if e is None else e, lab or "", texts[d]])
    return path


def _grouped(rows: list[Row]) -> dict[tuple[str, str], list[tuple[int, int, str]]]:
    out: dict[tuple[str, str], list[tuple[int, int, str]]] = {}
    for d, a, s, e, lab in rows:
        spans = out.setdefault((a, d), [])
        if lab is not None:
            spans.append((s, e, lab))
    return out


def write_brat(folder: Path, rows: list[Row], texts: dict[str, str]) -> Path:
    for (a, d), spans in _grouped(rows).items():
        (folder / a).mkdir(parents=True, exist_ok=True)
        (folder / a / f"{d}.txt").write_bytes(texts[d].encode("utf-8"))
        lines = [f"T{i + 1}\t{lab} {s} {e}\t{texts[d][s:e]}" for i, (s, e, lab) in enumerate(spans)]
        (folder / a / f"{d}.ann").write_text("".join(x + "\n" for x in lines), encoding="utf-8")
    return folder


def write_doccano(folder: Path, rows: list[Row], texts: dict[str, str]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    by_user: dict[str, list[str]] = {}
    for (a, d), spans in _grouped(rows).items():
        rec = {"id": d, "text": texts[d], "label": [[s, e, lab] for s, e, lab in spans]}
        by_user.setdefault(a, []).append(json.dumps(rec))
    for a, lines in by_user.items():
        (folder / f"{a}.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return folder


def write_label_studio(path: Path, rows: list[Row], texts: dict[str, str]) -> Path:
    tasks: dict[str, dict] = {}
    for (a, d), spans in _grouped(rows).items():
        task = tasks.setdefault(d, {"id": d, "data": {"text": texts[d]}, "annotations": []})
        result = [
            {"type": "labels", "from_name": "label", "to_name": "text",
             "value": {"start": s, "end": e, "text": texts[d][s:e], "labels": [lab]}}
            for s, e, lab in spans
        ]
        task["annotations"].append({"completed_by": a, "was_cancelled": False, "result": result})
    path.write_text(json.dumps(list(tasks.values())), encoding="utf-8")
    return path


def assert_same_corpus(a, b) -> None:
    """Two reads agree: equal corpora (arrays and vocabularies), or the same error message (str)."""
    import numpy as np

    if isinstance(a, str) or isinstance(b, str):
        assert a == b
        return
    for name in ("token", "worker", "label", "doc_lengths", "token_start", "token_end"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)
    for name in ("doc_ids", "texts", "worker_ids", "worker_roles", "class_names", "tags"):
        assert getattr(a, name) == getattr(b, name), name
