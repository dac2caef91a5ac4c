"""The report's JSON writer: nested blocks indented, each row of a list (a worker, a pair) on one line.

:func:`dump_report` writes the keys in the order of the report it is given: the plain report of
:func:`crowdqa.quality.report.build_report_data` has the model's order (:mod:`crowdqa.quality.report_schema`),
and a typed report is dumped by pydantic in the same order.
"""

from __future__ import annotations

import json
from typing import IO, TYPE_CHECKING, Any

from crowdqa.quality.json_data import plain_json

if TYPE_CHECKING:  # the typed model (pydantic) is only dumped here, never imported
    from crowdqa.quality.report_model import QualityReport

__all__ = ["dump_report"]


#: One encoder for every row (``json.dumps`` with options builds a new one per call).
_ENCODER = json.JSONEncoder(ensure_ascii=False, allow_nan=False, separators=(", ", ": "))


#: Rows of a list encoded and written at once (all of a large list in one call made strings of many MB, fresh
#: memory each, whose page faults cost more than the encoding saved).
_ROWS_AT_ONCE = 1024


def _compact(value: Any) -> str:
    """One value as compact JSON by the C encoder; the slow :func:`plain_json` walk only where it must."""
    try:
        return _ENCODER.encode(value)
    except (TypeError, ValueError):  # a numpy value or a non-finite float inside: the slow walk
        return _ENCODER.encode(plain_json(value))


def dump_report(report: QualityReport | dict, fh: IO[str], *, _indent: str = "") -> None:
    """Write a report as JSON to ``fh``: nested blocks indented, each row of a list on one line.

    Every list of rows (workers, pair kappas) is encoded by the C encoder, one call per ``_ROWS_AT_ONCE``
    rows, and its rows put on lines of their own, so a report of 5,000 workers and 100,000 worker pairs
    takes a fraction of ``json.dump(..., indent=2)``'s time, and stays readable (one worker per line).
    NaN and inf become ``null``; numpy values become numbers.
    """
    if not isinstance(report, dict):  # the typed model
        report = report.model_dump(mode="json")
    inner = _indent + "  "
    fh.write("{")
    for i, (key, value) in enumerate(report.items()):
        fh.write(("," if i else "") + "\n" + inner + json.dumps(str(key), ensure_ascii=False) + ": ")
        if isinstance(value, dict) and value:
            dump_report(value, fh, _indent=inner)
        elif isinstance(value, list) and value and isinstance(value[0], dict | list):
            sep = ",\n" + inner + "  "
            fh.write("[\n" + inner + "  ")
            for at in range(0, len(value), _ROWS_AT_ONCE):  # small strings: no fresh memory for each one
                fh.write((sep if at else "") + _rows(value[at:at + _ROWS_AT_ONCE], sep))
            fh.write("\n" + inner + "]")
        else:
            fh.write(_compact(value))
    fh.write("\n" + _indent + "}" if report else "}")


def _rows(rows: list, sep: str) -> str:
    """The JSON of ``rows`` (dicts, or lists) joined by ``sep``, one C-encoder call for all of them.

    The list is encoded at once and ``sep`` put where one row ends and the next begins (``}, {``);
    that text occurs once per boundary unless a row holds it too (a string with ``}, {`` in it, or
    a nested list of rows), which the count shows: then each row is encoded on its own.
    """
    kind = dict if isinstance(rows[0], dict) else list
    if set(map(type, rows)) == {kind}:  # in C: a generator here costs a microsecond a row
        text = _compact(rows)[1:-1]
        close, open_ = ("}", "{") if kind is dict else ("]", "[")
        boundary = close + ", " + open_
        if text.count(boundary) == len(rows) - 1:
            return text.replace(boundary, close + sep + open_)
    return sep.join(map(_compact, rows))


