"""Small helpers the readers share: offsets from loose input, JSON span lists, document texts."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from crowdqa.ingest._io import read_text
from crowdqa.ingest.errors import IngestError

__all__ = ["as_offset", "parse_span_list", "DocsFolder", "check_role"]


def check_role(role: str) -> str:
    """Return ``role`` if it is ``"crowd"`` or ``"expert"``; raise IngestError otherwise."""
    if role not in ("crowd", "expert"):
        raise IngestError(f"role must be 'crowd' or 'expert', found {role!r}")
    return role


def as_offset(value: Any) -> int:
    """A character offset from JSON or CSV input: an int, or a string of digits.

    Raises
    ------
    ValueError
        For anything else (floats, booleans, negative numbers, text).
    """
    if isinstance(value, bool):
        raise ValueError(f"offset must be a non-negative integer, found {value!r}")
    if isinstance(value, int):
        out = value
    elif isinstance(value, str) and value.strip().isdigit():
        out = int(value.strip())
    elif isinstance(value, float) and value.is_integer():
        out = int(value)
    else:
        raise ValueError(f"offset must be a non-negative integer, found {value!r}")
    if out < 0:
        raise ValueError(f"offset must be a non-negative integer, found {value!r}")
    return out


def parse_span_list(value: Any, *, default_label: str | None) -> list[tuple[int, int, str]]:
    """Spans from the JSON shapes annotation tools write.

    Accepted: crowd-entity-annotation (``[{"<name>": {"entities": [...]}}]`` or
    ``{"entities": [...]}``), a list of objects with ``startOffset``/``endOffset``,
    ``start``/``end`` or ``start_offset``/``end_offset`` and ``label``, and a list of
    ``[start, end]`` or ``[start, end, label]``. Spans without a label get
    ``default_label``.

    Raises
    ------
    ValueError
        If the value is none of these shapes (the message says what was found).
    """
    out: list[tuple[int, int, str]] = []

    def label_of(obj: Any) -> str:
        if obj is None or obj == "":
            if default_label is None:
                raise ValueError("span has no label; give the label with category=NAME")
            return default_label
        if not isinstance(obj, str):
            raise ValueError(f"span label must be a string, found {obj!r}")
        return obj

    def walk(v: Any) -> None:
        if isinstance(v, dict):
            if "entities" in v:
                walk(v["entities"])
                return
            keys = next(
                ((a, b) for a, b in (("startOffset", "endOffset"), ("start_offset", "end_offset"), ("start", "end"))
                 if a in v and b in v),
                None,
            )
            if keys is not None:
                lab = v.get("label", v.get("labels"))
                if isinstance(lab, list):
                    for one in lab:
                        out.append((as_offset(v[keys[0]]), as_offset(v[keys[1]]), label_of(one)))
                else:
                    out.append((as_offset(v[keys[0]]), as_offset(v[keys[1]]), label_of(lab)))
                return
            inner = [x for x in v.values() if isinstance(x, dict | list)]
            if not inner:
                raise ValueError(f"no spans in JSON object with keys {sorted(v)[:5]}")
            for x in inner:
                walk(x)
            return
        if isinstance(v, list):
            if v and not isinstance(v[0], dict | list) and len(v) in (2, 3):
                lab = v[2] if len(v) == 3 else None
                out.append((as_offset(v[0]), as_offset(v[1]), label_of(lab)))
                return
            for x in v:
                walk(x)
            return
        raise ValueError(f"expected JSON spans, found {type(v).__name__} {str(v)[:40]!r}")

    walk(value)
    return out


class DocsFolder:
    """Texts ``<doc_id>.txt`` from a folder, read lazily and cached."""

    def __init__(self, folder: str | os.PathLike) -> None:
        self.folder = Path(folder)
        if not self.folder.is_dir():
            raise IngestError("docs must be a folder of <doc_id>.txt files", source=str(folder))
        self._cache: dict[str, str] = {}

    def get(self, doc_id: str) -> str | None:
        """The text of ``doc_id``, or None if the folder has no such file."""
        if doc_id not in self._cache:
            if "/" in doc_id or "\\" in doc_id or doc_id.startswith("."):
                return None
            p = self.folder / f"{doc_id}.txt"
            if not p.is_file():
                return None
            self._cache[doc_id] = read_text(p)
        return self._cache[doc_id]
