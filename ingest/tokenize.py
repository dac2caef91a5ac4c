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

__all__ = ["TOKEN_PATTERN", "tokenize", "tokenize_many", "offsets_from_tokens"]

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


_BMP_CLASS: NDArray[np.int8] | None = None


def _char_class(codes: NDArray[np.uint32]) -> NDArray[np.int8]:
    """Class of each code point: 0 whitespace, 1 word character (``\\w``), 2 other.

    ``\\w`` and ``\\s`` of Python's ``re`` on str patterns are ``str.isalnum() or "_"``
    and ``str.isspace()``; a table over the Basic Multilingual Plane is built once, and
    the rare code points above it are classified one by one.
    """
    global _BMP_CLASS
    if _BMP_CLASS is None:
        chars = [chr(i) for i in range(0x10000)]
        word = np.fromiter(((c.isalnum() or c == "_") for c in chars), dtype=bool, count=0x10000)
        space = np.fromiter((c.isspace() for c in chars), dtype=bool, count=0x10000)
        _BMP_CLASS = np.where(space, 0, np.where(word, 1, 2)).astype(np.int8)
    out = np.empty(codes.shape[0], dtype=np.int8)
    low = codes < 0x10000
    out[low] = _BMP_CLASS[codes[low]]
    if not np.all(low):
        high = np.unique(codes[~low])
        cls = np.array([0 if chr(c).isspace() else 1 if chr(c).isalnum() else 2 for c in high.tolist()], np.int8)
        out[~low] = cls[np.searchsorted(high, codes[~low])]
    return out


def tokenize_many(texts: list[str] | tuple[str, ...]) -> tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.int64]]:
    """Tokenize many texts at once by the same rule as :func:`tokenize`, vectorised.

    The texts are laid end to end with a space between them (a token never crosses
    whitespace, so no token crosses a document boundary); every character is
    classified, and a token starts at a character of class "other" or at a word
    character that follows a non-word character.

    Returns
    -------
    lengths : ndarray of shape (n_docs,), int64
        Tokens per text.
    start, end : ndarray of shape (n_tokens,), int64
        Character offsets of each token in its own text (end exclusive).
    """
    n_docs = len(texts)
    if n_docs == 0:
        z = np.zeros(0, dtype=np.int64)
        return z, z.copy(), z.copy()
    joined = " ".join(texts)
    codes = np.frombuffer(joined.encode("utf-32-le"), dtype=np.uint32)
    cls = _char_class(codes)
    word = cls == 1
    prev_word = np.zeros_like(word)
    prev_word[1:] = word[:-1]
    next_word = np.zeros_like(word)
    next_word[:-1] = word[1:]
    other = cls == 2
    g_start = np.flatnonzero(other | (word & ~prev_word))
    g_end = np.flatnonzero(other | (word & ~next_word)) + 1
    base = np.zeros(n_docs + 1, dtype=np.int64)
    np.cumsum(np.fromiter((len(t) + 1 for t in texts), dtype=np.int64, count=n_docs), out=base[1:])
    doc = np.searchsorted(base, g_start, side="right") - 1
    lengths = np.bincount(doc, minlength=n_docs).astype(np.int64)
    return lengths, g_start - base[doc], g_end - base[doc]


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
