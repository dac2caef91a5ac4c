"""A catalogue of hostile and broken uploads, for every parser.

Each :class:`Case` is one upload: the file (bytes, or zip members), its format, options, and
what a user may expect: ``"error"`` (the file is refused with one IngestError line / a 4xx
problem), ``"ok"`` (it is read; ``check`` says what must hold) or ``"any"`` (either, but
never a crash, a hang or unbounded memory). Built from a small valid file per format
("the base") by the transformations a broken export or an attacker produces.
"""

from __future__ import annotations

import codecs
import io
import json
import zipfile
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from crowdqa.aggregation.corpus import Corpus

#: The document text of every base file (non-ASCII on purpose: Latin-1 then differs from UTF-8).
TEXT = "Patiënts with asthma were given drug X ."
DOC = "d1"
#: Worker ids a spreadsheet would run as formulas (OWASP "CSV injection").
INJECTION_IDS = ("=cmd|' /C calc'!A0", "+1+1", "-2+3", "@SUM(A1:A9)", "=HYPERLINK(\"http://x\")")

Expect = str  # "error" | "ok" | "any"


@dataclass(frozen=True)
class Case:
    """One upload: ``data`` is the file's bytes or, for a zip, ``{member: bytes}`` (zipped when written)."""

    name: str
    format: str
    data: bytes | dict[str, bytes]
    expect: Expect = "error"
    options: dict = field(default_factory=dict)
    suffix: str = ""
    check: Callable[[Corpus], None] | None = None
    docs: bool = False  # needs the <doc_id>.txt texts (PICO)

    def payload(self) -> bytes:
        return zip_bytes(self.data) if isinstance(self.data, dict) else self.data


def zip_bytes(members: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return buf.getvalue()


# ---------------------------------------------------------------- valid base files
def _jsonl(rows) -> bytes:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows).encode()


def _csv_cell(v) -> str:
    s = str(v)
    return '"' + s.replace('"', '""') + '"' if any(c in s for c in ',"\n\r') else s


def spans_rows(annotator="a", start=0, end=8, label="P"):
    return [{"doc_id": DOC, "annotator": annotator, "start": start, "end": end, "label": label, "text": TEXT},
            {"doc_id": DOC, "annotator": "b", "start": 14, "end": 20, "label": "P", "text": TEXT}]


def spans_csv(rows) -> bytes:
    cols = ["doc_id", "annotator", "start", "end", "label", "text"]
    return ("\n".join([",".join(cols)] + [",".join(_csv_cell(r[c]) for c in cols) for r in rows]) + "\n").encode()


def label_studio(start=0, end=8, annotator=3) -> bytes:
    return json.dumps([{"id": 1, "data": {"text": TEXT}, "annotations": [
        {"completed_by": annotator, "result": [{"type": "labels", "value": {"start": start, "end": end,
                                                                               "labels": ["P"]}}]},
        {"completed_by": 4, "result": []}]}], ensure_ascii=False).encode()


def doccano(start=0, end=8) -> bytes:
    return _jsonl([{"id": 1, "text": TEXT, "label": [[start, end, "P"]]}])


def pico(start=0, end=8, annotator="a") -> bytes:
    return _jsonl([{"docid": DOC, "Participants": {annotator: [[start, end]], "b": [[14, 20]]}}])


def mturk(start=0, end=8, worker="W1") -> bytes:
    answer = json.dumps([{"x": {"entities": [{"startOffset": start, "endOffset": end, "label": "P"}]}}])
    head = "HITId,AssignmentId,WorkerId,AssignmentStatus,Input.text,Answer.taskAnswers"
    rows = [f"h1,a1,{_csv_cell(worker)},Approved,{_csv_cell(TEXT)},{_csv_cell(answer)}",
            f"h1,a2,W2,Approved,{_csv_cell(TEXT)},{_csv_cell(answer)}"]
    return ("\n".join([head, *rows]) + "\n").encode()


def categorical(workers=("w1", "w2", "w3"), labels=("a", "b", "a")) -> bytes:
    lines = ["item,annotator,label"] + [f"q{i % 2},{_csv_cell(w)},{_csv_cell(lab)}"
                                        for i, (w, lab) in enumerate(zip(workers, labels, strict=True))]
    return ("\n".join(lines) + "\n").encode()


def conll(tags=(("B-ORG", "O"), ("O", "O"))) -> bytes:
    return "".join(f"{tok}\t" + "\t".join(t) + "\n" for tok, t in zip(("EU", "rejects"), tags, strict=True)).encode()


def brat(ann="T1\tP 0 8\tPatiënts\n", user="alice") -> dict[str, bytes]:
    return {f"{user}/{DOC}.ann": ann.encode(), f"{user}/{DOC}.txt": TEXT.encode(), f"bob/{DOC}.ann": b""}


#: format -> (base bytes or zip members, suffix the file is stored under, needs docs)
BASES: dict[str, tuple[bytes | dict[str, bytes], str, bool]] = {
    "spans-jsonl": (_jsonl(spans_rows()), ".jsonl", False),
    "spans-csv": (spans_csv(spans_rows()), ".csv", False),
    "categorical": (categorical(), ".csv", False),
    "conll": (conll(), ".conll", False),
    "mturk-csv": (mturk(), ".csv", False),
    "label-studio": (label_studio(), ".json", False),
    "doccano": (doccano(), ".jsonl", False),
    "pico-jsonl": (pico(), ".jsonl", True),
    "brat": (brat(), ".zip", False),
}
TEXT_FORMATS = [f for f, (b, _, _) in BASES.items() if isinstance(b, bytes)]
JSON_FORMATS = ["spans-jsonl", "label-studio", "doccano", "pico-jsonl"]


# ---------------------------------------------------------------- transformations
def _worker_check(expected: tuple[str, ...]) -> Callable[[Corpus], None]:
    def check(c: Corpus) -> None:
        missing = [w for w in expected if not any(wid == w or wid.endswith(":" + w) for wid in c.worker_ids)]
        assert not missing, (missing, c.worker_ids)
    return check


def _no_labels(c: Corpus) -> None:
    assert c.n_obs == 0, c.n_obs


def _nest(depth: int) -> str:
    return "[" * depth + "]" * depth


def cases() -> list[Case]:
    """Every hand-made case (about 200)."""
    out: list[Case] = []
    for fmt, (base, suffix, docs) in BASES.items():
        kw = {"suffix": suffix, "docs": docs}
        if isinstance(base, bytes):
            for frac in (0.33, 0.5, 0.9):
                out.append(Case(f"{fmt}/truncated-{frac}", fmt, base[: int(len(base) * frac)], "any", **kw))
            out += [
                # An empty file is refused, or read as an empty corpus (which the service then refuses).
                Case(f"{fmt}/empty", fmt, b"", "any", check=_no_labels, **kw),
                Case(f"{fmt}/only-bom", fmt, codecs.BOM_UTF8, "any", check=_no_labels, **kw),
                Case(f"{fmt}/nul-bytes", fmt, base.replace(b"a", b"\x00", 3), "any", **kw),
                Case(f"{fmt}/binary", fmt, bytes(range(256)) * 4, **kw),
                Case(f"{fmt}/latin-1", fmt, base.decode().encode("latin-1"), "error" if TEXT.encode() in base
                     else "same", **kw),
                Case(f"{fmt}/utf-8-bom", fmt, codecs.BOM_UTF8 + base, "same", **kw),
                Case(f"{fmt}/utf-16-le-bom", fmt, codecs.BOM_UTF16_LE + base.decode().encode("utf-16-le"), "same",
                     **kw),
                Case(f"{fmt}/utf-16-be-bom", fmt, codecs.BOM_UTF16_BE + base.decode().encode("utf-16-be"), "same",
                     **kw),
                Case(f"{fmt}/utf-16-no-bom", fmt, base.decode().encode("utf-16-le"), **kw),
                Case(f"{fmt}/crlf", fmt, base.replace(b"\n", b"\r\n"), "any", **kw),
                Case(f"{fmt}/huge-line", fmt, base.rstrip(b"\n") + b"x" * (4 << 20), "any", **kw),
                Case(f"{fmt}/huge-line-first", fmt, b"y" * (4 << 20) + b"\n" + base, "any", **kw),
                Case(f"{fmt}/many-blank-lines", fmt, base + b"\n" * 200_000, "any", **kw),
            ]
        else:  # zip uploads
            raw = zip_bytes(base)
            for frac in (0.3, 0.6, 0.95):
                out.append(Case(f"{fmt}/truncated-zip-{frac}", fmt, raw[: int(len(raw) * frac)], **kw))
            out.append(Case(f"{fmt}/empty-zip", fmt, zip_bytes({}), **kw))
    # JSON nesting bombs, at a value position and as the whole document.
    for fmt in JSON_FORMATS:
        docs = BASES[fmt][2]
        rows = [{**spans_rows()[0], "extra": "NEST"}]
        deep_value = _jsonl(rows).replace(b'"NEST"', _nest(100_000).encode())
        out += [Case(f"{fmt}/nesting-bomb-value", fmt, deep_value, "any", docs=docs, suffix=".jsonl"),
                Case(f"{fmt}/nesting-bomb-doc", fmt, _nest(200_000).encode(), docs=docs, suffix=".jsonl"),
                Case(f"{fmt}/nesting-bomb-objects", fmt, ('{"a":' * 50_000 + "1" + "}" * 50_000).encode(),
                     docs=docs, suffix=".jsonl")]
    # Offsets: negative, reversed, out of range, huge, NaN, infinite, fractional, boolean.
    bad_offsets = {"negative": (-3, 8), "reversed": (8, 2), "empty": (5, 5), "past-end": (0, 999),
                   "huge": (0, 10**30), "nan": (float("nan"), 8), "inf": (0, float("inf")),
                   "fraction": (0.5, 8), "bool": (True, 8), "text": ("zero", 8), "hex": ("0x1", 8)}
    for what, (s, e) in bad_offsets.items():
        rows = spans_rows(start=s, end=e)
        out.append(Case(f"spans-jsonl/offset-{what}", "spans-jsonl", _jsonl(rows).replace(b"Infinity", b"1e999")
                        if what == "inf" else _jsonl(rows), suffix=".jsonl"))
        out.append(Case(f"spans-csv/offset-{what}", "spans-csv", spans_csv(rows), suffix=".csv"))
        out.append(Case(f"label-studio/offset-{what}", "label-studio", label_studio(s, e), suffix=".json"))
        out.append(Case(f"doccano/offset-{what}", "doccano", doccano(s, e), suffix=".jsonl"))
        out.append(Case(f"pico-jsonl/offset-{what}", "pico-jsonl", pico(s, e), docs=True, suffix=".jsonl"))
        out.append(Case(f"mturk-csv/offset-{what}", "mturk-csv", mturk(s, e), suffix=".csv"))
        if isinstance(s, int) and isinstance(e, int):
            out.append(Case(f"brat/offset-{what}", "brat", brat(f"T1\tP {s} {e}\tx\n"), suffix=".zip"))
    out += [Case("brat/offset-nan", "brat", brat("T1\tP nan 8\tx\n"), suffix=".zip"),
            Case("brat/offset-fraction", "brat", brat("T1\tP 0.5 8\tx\n"), suffix=".zip"),
            Case("brat/fragments-reversed", "brat", brat("T1\tP 0 8;4 2\tx\n"), suffix=".zip")]
    # Labels that are not what the format says: NaN, numbers, empty, "O", huge class counts.
    out += [
        Case("spans-jsonl/label-nan", "spans-jsonl", _jsonl(spans_rows(label=float("nan"))), suffix=".jsonl"),
        Case("spans-jsonl/label-number", "spans-jsonl", _jsonl(spans_rows(label=3)), suffix=".jsonl"),
        Case("spans-jsonl/label-O", "spans-jsonl", _jsonl(spans_rows(label="O")), suffix=".jsonl"),
        Case("spans-jsonl/label-empty", "spans-jsonl", _jsonl(spans_rows(label="")), suffix=".jsonl"),
        Case("conll/tag-nan", "conll", conll((("NaN", "O"), ("O", "1.5"))), "any", suffix=".conll"),
        Case("conll/ragged", "conll", b"EU\tB-ORG\tO\nrejects\tO\n", suffix=".conll"),
        Case("categorical/label-nan", "categorical", categorical(labels=("nan", "NaN", "1.5")), "ok", suffix=".csv"),
        Case("categorical/too-many-columns", "categorical", b"item,annotator,label\nq,w,a,b,c\n", suffix=".csv"),
        Case("categorical/field-over-csv-limit", "categorical",
             b"item,annotator,label\nq,w," + b"a" * 300_000 + b"\n", "any", suffix=".csv"),
        Case("categorical/unterminated-quote", "categorical", b'item,annotator,label\nq,w,"a\n', "any",
             suffix=".csv"),
        Case("spans-csv/unterminated-quote", "spans-csv", spans_csv(spans_rows()) + b'd1,"a,0,8\n', suffix=".csv"),
    ]
    # CSV injection in worker ids: kept as data (the ids are the user's), never run as formulas by us.
    for n, wid in enumerate(INJECTION_IDS):
        tag = f"{n}{wid[:1]}"
        out += [
            Case(f"categorical/injection-{tag}", "categorical", categorical(workers=(wid, "w2", "w3")), "ok",
                 check=_worker_check((wid,)), suffix=".csv"),
            Case(f"spans-csv/injection-{tag}", "spans-csv", spans_csv(spans_rows(annotator=wid)), "ok",
                 check=_worker_check((wid,)), suffix=".csv"),
            Case(f"spans-jsonl/injection-{tag}", "spans-jsonl", _jsonl(spans_rows(annotator=wid)), "ok",
                 check=_worker_check((wid,)), suffix=".jsonl"),
            Case(f"mturk-csv/injection-{tag}", "mturk-csv", mturk(worker=wid), "ok",
                 check=_worker_check((wid,)), suffix=".csv"),
            Case(f"label-studio/injection-{tag}", "label-studio", label_studio(annotator=wid), "ok",
                 check=_worker_check((wid,)), suffix=".json"),
            Case(f"pico-jsonl/injection-{tag}", "pico-jsonl", pico(annotator=wid), "ok", docs=True,
                 check=_worker_check((wid,)), suffix=".jsonl"),
        ]
    # Zip archives: path traversal, absolute names, symbolic links, bombs are in the test module.
    for fmt, member in (("brat", "alice/d1.ann"), ("doccano", "alice.jsonl")):
        body = brat()[member] if fmt == "brat" else doccano()
        for evil in ("../evil", "../../etc/evil", "/abs/evil", "a/../../evil", "C:/evil", "..\\evil"):
            name = f"{evil}.ann" if fmt == "brat" else f"{evil}.jsonl"
            members = {**(brat() if fmt == "brat" else {"bob.jsonl": doccano()}), name: body}
            out.append(Case(f"{fmt}/traversal-{evil}", fmt, members, suffix=".zip"))
    out.append(Case("doccano/symlink-member", "doccano", _symlink_zip(), suffix=".zip"))
    out.append(Case("corpus/not-npz", "corpus", b"PK\x03\x04garbage", suffix=".npz"))
    out.append(Case("corpus/pickle-inside", "corpus", _pickle_npz(), suffix=".npz"))
    names = [c.name for c in out]
    assert len(names) == len(set(names)), "case names must be unique"
    return out


def _symlink_zip() -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        info = zipfile.ZipInfo("alice.jsonl")
        info.external_attr = (0o120777 << 16)  # S_IFLNK
        zf.writestr(info, "/etc/passwd")
    return buf.getvalue()


def _pickle_npz() -> bytes:
    """An .npz whose array is an object array (loading it needs pickle): must be refused, not unpickled."""
    buf = io.BytesIO()
    np.savez(buf, token=np.array([object()], dtype=object))
    return buf.getvalue()
