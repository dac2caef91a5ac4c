"""Request bodies are JSON as RFC 8259 has it: ``NaN``, ``Infinity`` and ``-Infinity`` are refused with 422.

Python's ``json`` reads those three words as floats, so ``{"params": {"alpha": Infinity}}`` reached a job's
parameters (and was shown back as ``null``), and a ``NaN`` weight failed the job when it ran instead of the request
when it was made. Every API router is made with :class:`StrictJSONRoute`, whose requests parse their bodies with
the three words refused, before any model or parameter table sees them: one place for every parameter, whether a
model field, a job's free-form ``params`` or a list inside them.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Coroutine
from typing import Any

from fastapi import Request, Response
from fastapi.routing import APIRoute
from starlette.exceptions import HTTPException

__all__ = ["StrictJSONRoute", "NonFiniteNumber", "loads"]


class NonFiniteNumber(ValueError):
    """A JSON body holds ``NaN``, ``Infinity`` or ``-Infinity`` at ``path`` (a list of keys and indexes)."""

    def __init__(self, word: str, path: list[str | int]) -> None:
        self.word, self.path = word, path
        where = ".".join(["body", *map(str, path)])
        super().__init__(f"{where}: {word} is not a number JSON allows; send a finite number")


class _Word:
    """Where the parser met one of the three words (found again by :func:`_find`, to name its place)."""

    def __init__(self, word: str) -> None:
        self.word = word


def _find(value: Any, path: list[str | int]) -> NonFiniteNumber | None:
    if isinstance(value, _Word):
        return NonFiniteNumber(value.word, path)
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, item in items:
        found = _find(item, [*path, key])
        if found is not None:
            return found
    return None


def loads(body: bytes | str) -> Any:
    """``json.loads`` that raises :class:`NonFiniteNumber`, naming the first place, for ``NaN`` and the infinities."""
    words: list[_Word] = []

    def constant(word: str) -> _Word:
        words.append(_Word(word))
        return words[-1]

    value = json.loads(body, parse_constant=constant)
    if words:
        raise _find(value, []) or NonFiniteNumber(words[0].word, [])
    return value


class _StrictJSONRequest(Request):
    async def json(self) -> Any:
        if not hasattr(self, "_json"):
            try:
                self._json = loads(await self.body())
            except NonFiniteNumber as exc:  # FastAPI passes an HTTPException on; ours answers it as problem+json
                raise HTTPException(422, str(exc)) from None
        return self._json


class StrictJSONRoute(APIRoute):
    """An API route whose JSON body refuses ``NaN`` and the infinities (FastAPI's documented custom route class)."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def strict_handler(request: Request) -> Response:
            return await handler(_StrictJSONRequest(request.scope, request.receive))

        return strict_handler
