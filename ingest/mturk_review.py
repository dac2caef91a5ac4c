"""A Mechanical Turk batch-results CSV written back with ``Approve`` / ``Reject`` filled, byte for byte.

The requester site takes back the batch-results file it gave out (Manage > Results > Upload CSV):
an ``x`` in the ``Approve`` column approves an assignment, text in the ``Reject`` column rejects
it and is the reason the worker sees. :func:`read_batch` keeps the file as it is (its text, byte-order
mark and encoding, and where every field of every record starts and ends); :func:`write_reviewed`
changes only the cells it is asked to and returns the bytes.

Rules
-----
* **Untouched bytes stay.** Every cell not written, the column order, each field's quoting, each
  record's line ending (``\\r\\n``, ``\\n`` or ``\\r``; a last line without one), blank lines and the
  encoding (UTF-8 with or without a byte-order mark, UTF-16 with one; the reader's decoding rule,
  :func:`crowdqa.ingest._io.decode_text`) come out as they went in.
* **Records** are split exactly as Python's :mod:`csv` reader (the one
  :func:`crowdqa.ingest.mturk_csv.read_mturk_csv` uses) splits them: comma-separated, ``"``-quoted
  fields with ``""`` for a quote, line breaks inside quotes belong to the field, text after a
  closing quote is kept as part of the field (non-strict), a line break outside quotes ends the
  record. Line numbers are the line where a record starts, as in the reader's messages.
* **Written cells**: ``Approve`` gets ``x`` (an approval) and ``Reject`` the reason (a rejection);
  ``RequesterFeedback`` gets the reason in both cases, for the requester's records. Columns the file
  lacks are added at the end of the header and of every record as wide as the header (empty where
  nothing is decided). A written cell is quoted when the cell it replaces was, when the header's
  fields are all quoted (the requester site quotes every field), or when its text needs it.
* **CSV injection**: every value written goes through :func:`crowdqa.ingest.writers.csv_escape`
  (a leading ``'`` before ``=``, ``+``, ``-``, ``@``, tab or carriage return), so nothing we write
  runs as a spreadsheet formula. Cells we do not write are the user's and stay as they are.
* Only assignments still waiting for a decision are filled: ``AssignmentStatus`` ``Submitted`` (or
  no status column) and empty ``Approve`` and ``Reject`` cells. So reviewing a reviewed file again
  changes nothing.
"""

from __future__ import annotations

import codecs
import re
from collections.abc import Mapping
from dataclasses import dataclass

from crowdqa.ingest._io import decode_text
from crowdqa.ingest.errors import IngestError
from crowdqa.ingest.writers import csv_escape

__all__ = ["BatchFile", "Assignment", "RowDecision", "read_batch", "assignments", "write_reviewed",
           "REVIEW_COLUMNS"]

#: The columns a review writes, in the order missing ones are added.
REVIEW_COLUMNS = ("Approve", "Reject", "RequesterFeedback")

# A quoted field: the quoted part ("" is a quote; it may run to the end of the file when never closed),
# then whatever follows the closing quote up to the next comma or line break (kept, as csv does).
_QUOTED = re.compile(r'"((?:[^"]+|"")*)("?)([^,\r\n]*)')
_PLAIN = re.compile(r"[^,\r\n]*")
_BREAK = re.compile(r"\r\n|\r|\n")
_NEEDS_QUOTES = re.compile(r'[,"\r\n]|^\s|\s$')


@dataclass(frozen=True)
class _Record:
    """One CSV record: the text span of each field, where its content ends and the line it starts on."""

    fields: tuple[tuple[int, int], ...]
    end: int
    line: int


@dataclass(frozen=True)
class BatchFile:
    """A batch-results file as read: its text, how to encode it back, and its records.

    Attributes
    ----------
    text : str
        The decoded text, without the byte-order mark.
    bom : bytes
        The byte-order mark the file started with (``b""`` for none).
    codec : str
        ``utf-8``, ``utf-16-le`` or ``utf-16-be``.
    records : tuple of _Record
        Every record; a blank line is a record without fields.
    header : tuple of str
        The first record's values, stripped.
    source : str
        The file's name, for messages.
    """

    text: str
    bom: bytes
    codec: str
    records: tuple[_Record, ...]
    header: tuple[str, ...]
    source: str

    def value(self, row: int, column: int) -> str:
        """The value of field ``column`` of record ``row``, unquoted as :mod:`csv` reads it."""
        start, end = self.records[row].fields[column]
        return _unquote(self.text[start:end])

    def quoted(self, row: int, column: int) -> bool:
        """True when the field was written between quotes."""
        start, _ = self.records[row].fields[column]
        return self.text.startswith('"', start)


def _unquote(raw: str) -> str:
    if not raw.startswith('"'):
        return raw
    m = _QUOTED.fullmatch(raw)
    assert m is not None  # every field span was matched by _QUOTED
    return m[1].replace('""', '"') + m[3]


def _encoding(data: bytes) -> tuple[bytes, str]:
    for bom, codec in ((codecs.BOM_UTF8, "utf-8"), (codecs.BOM_UTF16_LE, "utf-16-le"),
                       (codecs.BOM_UTF16_BE, "utf-16-be")):
        if data.startswith(bom):
            return bom, codec
    return b"", "utf-8"


def _split(text: str) -> list[_Record]:
    """Split ``text`` into records and fields as :mod:`csv`'s reader does (module notes), keeping offsets."""
    records: list[_Record] = []
    pos, n, line = 0, len(text), 1
    while pos < n:
        start = pos
        fields: list[tuple[int, int]] = []
        if text[pos] not in "\r\n":  # else a blank line: a record without fields
            while True:
                m = (_QUOTED if text.startswith('"', pos) else _PLAIN).match(text, pos)
                assert m is not None  # both patterns match the empty string
                fields.append((pos, m.end()))
                pos = m.end()
                if pos < n and text[pos] == ",":
                    pos += 1
                    continue
                break
        end = pos
        pos += 2 if text.startswith("\r\n", pos) else (1 if pos < n else 0)
        records.append(_Record(fields=tuple(fields), end=end, line=line))
        line += len(_BREAK.findall(text, start, pos))
    return records


def read_batch(data: bytes, *, source: str) -> BatchFile:
    """Read a batch-results file's bytes, keeping everything needed to write it back unchanged.

    Parameters
    ----------
    data : bytes
        The file as downloaded from the requester site (or as uploaded).
    source : str
        The file's name in messages.

    Returns
    -------
    BatchFile

    Raises
    ------
    IngestError
        Undecodable bytes (naming the line), an empty file, or no ``WorkerId`` / ``AssignmentId`` column.
    """
    bom, codec = _encoding(data)
    text = decode_text(data, source=source)
    records = _split(text)
    if not records or not records[0].fields:
        raise IngestError("empty file: expected the batch-results header row", source=source, line=1)
    header_record = records[0]
    header = tuple(_unquote(text[s:e]).strip() for s, e in header_record.fields)
    for needed in ("WorkerId", "AssignmentId"):
        if needed not in header:
            raise IngestError(f"not a Mechanical Turk batch-results file: no {needed} column, which the requester "
                              f"site needs to match a decision to its assignment (columns are "
                              f"{', '.join(header[:8])})", source=source, line=1)
    return BatchFile(text=text, bom=bom, codec=codec, records=tuple(records), header=header, source=source)


@dataclass(frozen=True)
class Assignment:
    """One assignment row of a batch file.

    Attributes
    ----------
    row : int
        Record index in :attr:`BatchFile.records` (0 is the header).
    line : int
        File line where the record starts.
    worker : str
        ``WorkerId``, stripped.
    assignment_id : str
    open : bool
        True when the assignment waits for a decision (module notes).
    status : str
        ``AssignmentStatus`` (``""`` without the column), or ``"decided in the file"`` when the
        ``Approve`` or ``Reject`` cell is already filled.
    """

    row: int
    line: int
    worker: str
    assignment_id: str
    open: bool
    status: str


def assignments(batch: BatchFile) -> tuple[list[Assignment], list[int]]:
    """Every assignment row, and the lines of records that are not one (a field count unlike the header's).

    Blank lines are neither.
    """
    col = {name: i for i, name in reversed(list(enumerate(batch.header)))}  # the first of repeated names
    width = len(batch.header)
    rows: list[Assignment] = []
    malformed: list[int] = []
    for r, rec in enumerate(batch.records[1:], start=1):
        if not rec.fields:
            continue
        if len(rec.fields) != width:
            malformed.append(rec.line)
            continue

        def get(name: str, r: int = r) -> str:
            return batch.value(r, col[name]).strip() if name in col else ""

        status = get("AssignmentStatus")
        decided = bool(get("Approve") or get("Reject"))
        rows.append(Assignment(row=r, line=rec.line, worker=get("WorkerId"), assignment_id=get("AssignmentId"),
                               open=status in ("", "Submitted") and not decided,
                               status="decided in the file" if decided and status in ("", "Submitted") else status))
    return rows, malformed


@dataclass(frozen=True)
class RowDecision:
    """What to write for one assignment: approve (``x`` in Approve) or reject (the reason in Reject)."""

    approve: bool
    feedback: str


def _cell(value: str, *, quote: bool) -> str:
    value = csv_escape(value)
    if quote or _NEEDS_QUOTES.search(value):
        return '"' + value.replace('"', '""') + '"'
    return value


def write_reviewed(batch: BatchFile, decisions: Mapping[int, RowDecision]) -> bytes:
    """The file's bytes with the decided rows' ``Approve``, ``Reject`` and ``RequesterFeedback`` cells filled.

    Parameters
    ----------
    batch : BatchFile
    decisions : mapping of record index to RowDecision
        Records to fill (indices from :func:`assignments`); every other byte is kept (module notes).

    Returns
    -------
    bytes
        Encoded as the input was, with its byte-order mark.
    """
    header = batch.header
    col = {name: i for i, name in reversed(list(enumerate(header)))}
    missing = [c for c in REVIEW_COLUMNS if c not in col]
    width = len(header)
    quote_all = all(batch.quoted(0, j) for j in range(width))
    added = {name: width + k for k, name in enumerate(missing)}
    text = batch.text
    edits: list[tuple[int, int, str]] = []  # (start, end, replacement) in text order
    for r, rec in enumerate(batch.records):
        if r == 0:
            if missing:
                edits.append((rec.end, rec.end, "".join("," + _cell(c, quote=quote_all) for c in missing)))
            continue
        if len(rec.fields) != width:
            continue  # blank or malformed: left as it is
        d = decisions.get(r)
        values: dict[str, str] = {}
        if d is not None:
            values = {"Approve": "x", "RequesterFeedback": d.feedback} if d.approve else \
                     {"Reject": d.feedback, "RequesterFeedback": d.feedback}
        for name in REVIEW_COLUMNS:
            if name in col and name in values:
                start, end = rec.fields[col[name]]
                edits.append((start, end, _cell(values[name], quote=quote_all or batch.quoted(r, col[name]))))
        if missing:
            quote = quote_all or batch.quoted(r, width - 1)
            edits.append((rec.end, rec.end, "".join(
                "," + (_cell(values[c], quote=quote) if c in values else ('""' if quote else ""))
                for c in sorted(missing, key=added.__getitem__))))
    edits.sort(key=lambda e: (e[0], e[1]))
    out, pos = [], 0
    for start, end, new in edits:
        out.append(text[pos:start])
        out.append(new)
        pos = end
    out.append(text[pos:])
    return batch.bom + "".join(out).encode(batch.codec)
