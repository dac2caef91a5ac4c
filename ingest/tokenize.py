"""The one tokenizer used for every input that does not carry its own tokens.

Rule: a token is a maximal run of word characters (Unicode ``\\w``: letters, digits,
underscore) or a single character that is neither a word character nor whitespace.
``"IL-2 (n=40)."`` -> ``IL``, ``-``, ``2``, ``(``, ``n``, ``=``, ``40``, ``)``, ``.``.
Deterministic, locale-independent, and it never drops a non-space character, so every
character span overlaps at least one token unless it covers only whitespace.
"""

from __future__ import annotations

import re

import numpy as np
from numpy.typing import NDArray

__all__ = ["TOKEN_PATTERN", "tokenize", "offsets_from_tokens"]

TOKEN_PATTERN = re.compile(r"\w+|[^\w\s]", re.UNICODE)


def tokenize(text: str) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """Split ``text`` into tokens.

    Returns
    -------
    start, end : ndarray of shape (n_tokens,), int64
        Character offsets of each token (end exclusive).
    """
    flat = [i for m in TOKEN_PATTERN.finditer(text) for i in m.span()]
    pairs = np.asarray(flat, dtype=np.int64).reshape(-1, 2)
    return pairs[:, 0].copy(), pairs[:, 1].copy()


def offsets_from_tokens(tokens: list[str]) -> tuple[str, NDArray[np.int64], NDArray[np.int64]]:
    """Join given tokens with single spaces; return the text and each token's offsets.

    Used by token-based formats (CoNLL, EBM-NLP) so that their documents have a text
    and character offsets like every other document.
    """
    lengths = np.fromiter((len(t) for t in tokens), dtype=np.int64, count=len(tokens))
    start = np.zeros(len(tokens), dtype=np.int64)
    if len(tokens) > 1:
        np.cumsum(lengths[:-1] + 1, out=start[1:])
    return " ".join(tokens), start, start + lengths
