"""Hostile and broken uploads at the parser level: every case ends in a Corpus or one IngestError line.

Never another exception, never a hang (each parse runs under a time bound), and bombs
(zip, JSON nesting, 10^6 annotators) stay within a memory bound measured with tracemalloc.
The hand-made catalogue is :mod:`tests.reliability.hostile`; hypothesis mutates the valid
base file of each format on top of it.
"""

from __future__ import annotations

import io
import struct
import time
import tracemalloc
import zipfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from crowdqa.aggregation.corpus import Corpus
from crowdqa.ingest import read_corpus
from crowdqa.ingest.errors import IngestError
from tests.reliability.conftest import time_bound
from tests.reliability.hostile import BASES, TEXT, Case, cases, zip_bytes

FORMATS = sorted({c.format for c in cases()})
PARSE_SECONDS = 20.0


def _write(case: Case, folder: Path) -> tuple[Path, Path | None]:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"upload{case.suffix}"
    path.write_bytes(case.payload())
    docs = None
    if case.docs:
        docs = folder / "docs"
        docs.mkdir(exist_ok=True)
        (docs / "d1.txt").write_text(TEXT, encoding="utf-8")
    return path, docs


def parse(case: Case, folder: Path) -> Corpus | IngestError:
    """Read one case; return the corpus or the IngestError. Anything else fails the test, naming the case."""
    path, docs = _write(case, folder)
    try:
        with time_bound(PARSE_SECONDS, case.name):
            return read_corpus(path, format=case.format, docs=docs, **case.options).corpus
    except IngestError as err:
        assert "\n" not in str(err), (case.name, str(err))
        assert str(err).strip(), case.name
        return err
    except Exception as exc:  # noqa: BLE001 - the point: name the case and the exception
        pytest.fail(f"{case.name}: {type(exc).__name__}: {str(exc)[:200]}")


def _base_case(fmt: str) -> Case:
    base, suffix, docs = BASES[fmt]
    return Case(f"{fmt}/base", fmt, base, "ok", suffix=suffix, docs=docs)


@pytest.mark.parametrize("fmt", FORMATS)
def test_hand_made_cases(fmt, tmp_path, tally):
    """Each catalogue case of the format: refused with one IngestError line, or read as the user expects.

    Oracle for the encoding cases ("same"): the plain UTF-8 base file read by the same parser; a file
    with a UTF-8 BOM or a UTF-16 BOM is either the same corpus or refused, never a different one.
    """
    base = parse(_base_case(fmt), tmp_path / "base") if fmt in BASES else None
    if base is not None:
        assert isinstance(base, Corpus), base
    mine = [c for c in cases() if c.format == fmt]
    wrong = []
    for i, case in enumerate(mine):
        got = parse(case, tmp_path / str(i))
        ok = isinstance(got, Corpus)
        if case.expect == "error" and ok:
            wrong.append(f"{case.name}: expected an IngestError, read {got.n_obs} labels")
        elif case.expect == "ok" and not ok:
            wrong.append(f"{case.name}: expected a corpus, got {got}")
        elif case.expect == "same" and ok and not got.equals(base):
            wrong.append(f"{case.name}: read a different corpus than the plain UTF-8 file")
        if ok and case.check is not None:
            case.check(got)
    tally(len(mine))
    assert not wrong, "\n".join(wrong)


def test_bom_variants_read_like_the_plain_file(tmp_path, tally):
    """The decoding rule promises UTF-8 with a BOM and UTF-16 with a BOM for every text format (not refusal)."""
    refused = []
    for c in cases():
        if c.expect == "same":
            if not isinstance(parse(c, tmp_path / c.name.replace("/", "_")), Corpus):
                refused.append(c.name)
            tally()
    assert not refused, refused


# ---------------------------------------------------------------- bombs, with a memory bound
MEMORY_BOUND = 64 << 20  # bytes traced while refusing a bomb


def _peak_while(fn) -> tuple[object, int]:
    tracemalloc.start()
    try:
        out = fn()
        return out, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def _deflate_bomb(name: str, size: int, *, others: dict[str, bytes], fill: bytes = b" ") -> bytes:
    """A zip whose member ``name`` inflates to ``size`` bytes of ``fill`` (~1000:1), beside valid ``others``."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for other, data in others.items():
            zf.writestr(other, data)
        with zf.open(name, "w", force_zip64=True) as fh:
            chunk = fill * (1 << 20)
            for _ in range(size >> 20):
                fh.write(chunk)
    return buf.getvalue()


def _lying_bomb(name: str, real: int, claimed: int, others: dict[str, bytes]) -> bytes:
    """A zip whose first member ``name`` inflates to ``real`` bytes but whose headers claim ``claimed``."""
    raw = bytearray(zip_bytes({name: b"0" * real, **others}))
    # The first member: local header at 0 (uncompressed size at offset 22); its central entry (offset 24).
    struct.pack_into("<I", raw, 22, claimed)
    cd = raw.find(b"PK\x01\x02")
    struct.pack_into("<I", raw, cd + 24, claimed)
    return bytes(raw)


@pytest.mark.parametrize("fmt,member", [("doccano", "alice.jsonl"), ("brat", "alice/d1.ann")])
def test_zip_bombs_are_refused_in_bounded_memory(fmt, member, tmp_path, tally):
    """A 256 MiB member in a ~250 KiB zip, a member whose headers under-state its size, and a 2 GiB
    claimed size: IngestError in seconds, with < 64 MiB traced at the peak (not the bomb's size)."""
    others = {"alice/d1.txt": TEXT.encode(), "bob/d1.ann": b""} if fmt == "brat" else {"bob.jsonl": BASES[fmt][0]}
    bombs = {
        "deflate-256MiB": _deflate_bomb(member, 256 << 20, others=others),
        "lying-header": _lying_bomb(member, real=2 << 20, claimed=1000, others=others),
    }
    big = bytearray(zip_bytes({member: b"x"}))
    struct.pack_into("<I", big, big.rfind(b"PK\x01\x02") + 24, 0xFFFFFFF0)  # claims ~4 GiB
    bombs["claims-4GiB"] = bytes(big)
    for name, payload in bombs.items():
        assert len(payload) < 1 << 20, (name, len(payload))
        path = tmp_path / f"{name}.zip"
        path.write_bytes(payload)
        t0 = time.monotonic()
        with time_bound(PARSE_SECONDS, name):
            err, peak = _peak_while(lambda p=path: _expect_error(p, fmt))
        assert isinstance(err, IngestError), (name, err)
        assert peak < MEMORY_BOUND, f"{name}: {peak / 2**20:.0f} MiB traced while refusing it"
        assert time.monotonic() - t0 < PARSE_SECONDS
        tally()


def _expect_error(path: Path, fmt: str):
    try:
        read_corpus(path, format=fmt)
    except IngestError as err:
        return err
    return None


@pytest.mark.parametrize("fmt", ["spans-jsonl", "label-studio", "doccano", "pico-jsonl"])
def test_json_nesting_bomb_in_bounded_memory(fmt, tmp_path, tally):
    """10^6 nested arrays (2 MB of brackets): one IngestError line, under the memory bound."""
    case = Case(f"{fmt}/deep", fmt, b"[" * 10**6 + b"]" * 10**6, suffix=".jsonl", docs=BASES[fmt][2])
    got, peak = _peak_while(lambda: parse(case, tmp_path))
    assert isinstance(got, IngestError), got
    assert peak < MEMORY_BOUND, f"{peak / 2**20:.0f} MiB"
    tally()


def _many_annotators(n: int) -> bytes:
    rows = "".join(f"q{i % 1000},w{i},{'ab'[i % 2]}\n" for i in range(n))
    return ("item,annotator,label\n" + rows).encode()


def _annotators_case(n: int, tmp_path: Path, *, seconds: float, megabytes: int) -> None:
    path = tmp_path / "many.csv"
    path.write_bytes(_many_annotators(n))
    t0 = time.monotonic()
    with time_bound(seconds * 2, "many annotators"):
        corpus, peak = _peak_while(lambda: read_corpus(path, format="categorical").corpus)
    elapsed = time.monotonic() - t0
    print(f"{n} annotators: {elapsed:.1f} s, {peak / 2**20:.0f} MiB traced")
    assert corpus.n_workers == n and corpus.n_obs == n and corpus.n_docs == 1000
    assert corpus.worker_ids[123_456 % n] == f"w{123_456 % n}"
    assert peak < megabytes << 20, f"{peak / 2**20:.0f} MiB for {n} annotators"


def test_many_annotators_bounded(tmp_path, tally):
    """10^5 annotators with one label each: read in seconds, memory linear in the rows (~1 KB per row)."""
    _annotators_case(10**5, tmp_path, seconds=15, megabytes=120)
    tally()


@pytest.mark.slow
def test_a_million_annotators(tmp_path, tally):
    """10^6 annotators with one label each (the issue's bound): time and memory measured and bounded."""
    _annotators_case(10**6, tmp_path, seconds=60, megabytes=1200)
    tally()


# ---------------------------------------------------------------- hypothesis: mutated base files
_MUTATIONS = st.lists(st.tuples(
    st.sampled_from(["truncate", "insert", "delete", "replace-digit", "duplicate", "flip"]),
    st.floats(0, 1), st.binary(min_size=1, max_size=8) | st.sampled_from(
        [b"-1", b"NaN", b"1e999", b"\x00", b"\xff\xfe", b'"', b"\n", b"[[[[", b"=cmd|", b"\r", b",", b"\t"])),
    min_size=1, max_size=4)


def _mutate(data: bytes, ops) -> bytes:
    out = bytearray(data)
    for op, where, blob in ops:
        i = int(where * len(out))
        if op == "truncate":
            del out[i:]
        elif op == "insert":
            out[i:i] = blob
        elif op == "delete":
            del out[i:i + len(blob)]
        elif op == "replace-digit":
            j = next((k for k in range(i, len(out)) if chr(out[k]).isdigit()), None)
            if j is not None:
                out[j:j + 1] = blob
        elif op == "duplicate":
            out[i:i] = out[i:i + 64]
        elif op == "flip" and out:
            out[min(i, len(out) - 1)] ^= blob[0] or 1
    return bytes(out)


@hsettings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(fmt=st.sampled_from(sorted(BASES)), ops=_MUTATIONS, skip=st.booleans())
def test_mutated_files_never_crash(fmt, ops, skip, tmp_path_factory, tally):
    """Random edits of each format's valid file (and of the files inside its zip): Corpus or IngestError,
    under ``on_error`` fail and skip alike."""
    base, suffix, docs = BASES[fmt]
    if isinstance(base, dict):
        data = {k: _mutate(v, ops) for k, v in base.items()}
    else:
        data = _mutate(base, ops)
    case = Case(f"{fmt}/mutated", fmt, data, "any", suffix=suffix, docs=docs,
                options={"on_error": "skip" if skip else "fail"})
    got = parse(case, tmp_path_factory.mktemp("m"))
    if isinstance(got, Corpus):
        assert got.n_tokens == int(got.doc_lengths.sum()) and (got.label < got.n_classes).all()
    tally()


# ---------------------------------------------------------------- CSV injection in what we write
def _categorical_corpus(ids: list[str], labels: list[str]) -> Corpus:
    n = len(ids)
    return Corpus.from_arrays(token=np.arange(n), worker=np.zeros(n, dtype=np.int64),
                              label=np.arange(n) % len(labels), doc_lengths=np.ones(n, dtype=np.int64),
                              token_start=np.zeros(n, dtype=np.int64),
                              token_end=np.array([len(s) for s in ids]), doc_ids=ids, texts=ids,
                              worker_ids=["=w"], worker_roles=["crowd"], class_names=labels)


def test_categorical_csv_never_writes_a_formula(tmp_path, tally):
    """Item ids and labels starting with = + - @ (or a tab / CR) are written with a leading quote, so a
    spreadsheet shows them as text; plain numbers such as -1 are written as they are.

    Oracle: the OWASP CSV-injection rule (cells must not start with = + - @ TAB CR), checked with
    Python's csv reader on the written file; ``csv_unescape`` gives every id back exactly."""
    import csv

    from crowdqa.ingest.writers import csv_unescape, write_labels

    ids = ["=cmd|' /C calc'!A0", "+1+1", "-2+3", "@SUM(A1)", "\t=1", "\r=1", "'=x", "-1", "+3.5", "plain", "1e5"]
    labels = ["=HYPERLINK(\"http://evil\")", "-1", "ok"]
    corpus = _categorical_corpus(ids, labels)
    out = tmp_path / "labels.csv"
    write_labels(np.arange(len(ids)) % len(labels), corpus, out, format="categorical-csv")
    rows = list(csv.reader(out.open(newline="", encoding="utf-8")))[1:]
    cells = [c for r in rows for c in r]
    numeric = {"-1", "+3.5"}
    for cell in cells:
        assert cell in numeric or not cell.startswith(("=", "+", "-", "@", "\t", "\r")), cell
    assert [csv_unescape(r[0]) for r in rows] == ids
    assert [csv_unescape(r[1]) for r in rows] == [labels[k % len(labels)] for k in range(len(ids))]
    tally(len(cells))
