"""The array paths of the line-based readers: lines, fields and field codes read from one byte array
(and :func:`unique_sorted`, the readers' ``np.unique``).

A reader that can take its whole file as bytes (CoNLL, a plain categorical CSV) finds the lines
and fields from the positions of the newline and delimiter bytes and encodes each field by its
bytes (:func:`field_codes`), so no Python string is made per row and no parser library is
imported. Each caller first checks that its file is plain enough for this (no quotes, no
control bytes, valid UTF-8...) and otherwise leaves it to its own row loop, which names the
file and line of anything wrong.
"""

from __future__ import annotations

import codecs
import os

import numpy as np
from numpy.typing import NDArray

__all__ = ["MAX_FIELD_BYTES", "read_padded", "padded", "find_byte", "other_controls", "line_bounds", "field_bounds",
           "field_codes", "joined", "unique_sorted"]

#: Longest field (in bytes) :func:`field_codes` encodes; callers leave longer ones to their row loop.
MAX_FIELD_BYTES = 32
#: ``_LOW_BYTES[n]``: the low ``n`` bytes of a little-endian 64-bit word (n = 0..8).
_LOW_BYTES = np.array([(1 << (8 * n)) - 1 for n in range(9)], dtype=np.uint64)
#: ``_WORD_MASKS[j, w]``: the bytes of word ``j`` that a field of ``w`` bytes fills (a lookup, not a clip per field).
_WORD_MASKS = _LOW_BYTES[np.clip(np.arange(MAX_FIELD_BYTES + 1)[None, :] - 8 * np.arange(MAX_FIELD_BYTES // 8)[:, None],
                                 0, 8)]
#: An odd 64-bit multiplier (2**64 / golden ratio) that spreads keys over the high bits of the product.
_MIX = np.uint64(0x9E3779B97F4A7C15)
#: Bytes per chunk of the scans of a whole file (:func:`find_byte`, :func:`other_controls`).
_SCAN = 1 << 22
#: Distinct values in the first block of fields above which they are found by one sort of all keys.
_MANY = 1 << 12


def read_padded(path: str | os.PathLike) -> bytearray:
    """The bytes of a file followed by :data:`MAX_FIELD_BYTES` zero bytes (``field_codes`` reads whole words).

    Read into one buffer of the final size, so neither the padding nor a later slice (:func:`padded`) copies it.
    Raises OSError as ``open`` does, or when the file changes size while it is read.
    """
    with open(path, "rb") as fh:
        size = os.fstat(fh.fileno()).st_size
        data = bytearray(size + MAX_FIELD_BYTES)
        if fh.readinto(memoryview(data)[:size]) != size or fh.read(1):
            raise OSError(f"{path}: the file changed while it was read")
    return data


def padded(data: bytearray, start: int) -> tuple[NDArray[np.uint8], int]:
    """The bytes of :func:`read_padded`'s ``data`` from ``start`` on as an array (a view, not a copy), and how
    many of them are the file's (the rest is the zero padding)."""
    return np.frombuffer(data, dtype=np.uint8, offset=start), len(data) - MAX_FIELD_BYTES - start


def find_byte(body: NDArray[np.uint8], size: int, value: int, *, dtype: type = np.int64) -> NDArray:
    """Positions of the byte ``value`` in ``body[:size]``, in order, as ``dtype`` (``np.int32`` halves them for a
    body under 2 GiB).

    Scanned by chunks of :data:`_SCAN` bytes, as is :func:`other_controls`: a comparison of the whole file
    at once makes a bool per byte of the file, whose pages the kernel maps anew at each scan; chunks reuse a
    few MB that stay in cache.
    """
    found = [(np.flatnonzero(body[a:min(a + _SCAN, size)] == value) + a).astype(dtype, copy=False)
             for a in range(0, size, _SCAN)]
    return np.concatenate(found) if found else np.zeros(0, dtype=dtype)


def other_controls(body: NDArray[np.uint8], size: int, *, below: int, allowed: tuple[int, ...]) -> int:
    """How many bytes of ``body[:size]`` are below ``below`` and none of ``allowed`` (scanned by chunks)."""
    n = 0
    for a in range(0, size, _SCAN):
        chunk = body[a:min(a + _SCAN, size)]
        n += int(np.count_nonzero(chunk < below)) - sum(int(np.count_nonzero(chunk == v)) for v in allowed
                                                         if v < below)
    return n


def line_bounds(body: NDArray[np.uint8], size: int, *, dtype: type = np.int64) -> tuple[NDArray, NDArray]:
    """Start and end (exclusive, at the newline) of every line of ``body[:size]``; a last line may lack its newline.

    Positions as ``dtype`` (:func:`find_byte`)."""
    ends = find_byte(body, size, 10, dtype=dtype)
    if size and body[size - 1] != 10:
        ends = np.append(ends, np.array([size], dtype=dtype))
    starts = np.empty_like(ends)
    if starts.size:
        starts[0] = 0
        np.add(ends[:-1], 1, out=starts[1:])
    return starts, ends


def field_bounds(body: NDArray[np.uint8], size: int, row_start: NDArray, row_end: NDArray, *,
                 delimiter: int, n_fields: int) -> NDArray | None:
    """The boundaries of ``n_fields`` fields in each row, or None if a row holds another number of fields.

    Returns
    -------
    ndarray of shape (n_rows, n_fields + 1), or None
        Field ``j`` of row ``i`` is ``body[b[i, j] + 1 : b[i, j + 1]]``: ``b[i, 0]`` is the byte
        before the row, then its delimiters, then its end. Of the dtype of ``row_start``.

    Notes
    -----
    With as many delimiters as ``n_rows * (n_fields - 1)``, every row holds exactly its own
    ``n_fields - 1`` of them iff each row's boundaries increase strictly: the first row with one
    too many pushes a delimiter into the next row, which then starts before its own start, and
    the first with one too few takes the next row's, past its own end.
    """
    delims = find_byte(body, size, delimiter, dtype=row_start.dtype)
    n_rows = row_start.size
    if delims.size != n_rows * (n_fields - 1):
        return None
    bounds = np.empty((n_rows, n_fields + 1), dtype=row_start.dtype)
    np.subtract(row_start, 1, out=bounds[:, 0])
    bounds[:, 1:-1] = delims.reshape(n_rows, n_fields - 1)
    del delims
    bounds[:, -1] = row_end
    if np.any(bounds[:, 1:] <= bounds[:, :-1]):
        return None
    return bounds


def field_codes(body: NDArray[np.uint8], start: NDArray[np.int64], width: NDArray[np.int64], *,
                first_seen: bool = False) -> tuple[NDArray[np.integer], list[str]] | None:
    """Codes and distinct values of byte fields ``body[start:start + width]`` (a factorisation), or None.

    Each field is read as up to four little-endian 64-bit words (``body`` comes from :func:`padded`),
    bytes past the field masked off; the caller guarantees no zero byte in a field, so its words
    are unique to it. Fields of one word are keyed by it; longer ones by a multiplicative mix of
    their words, and every field's words are then compared with those of its code's value, so a
    collision of the mix returns None instead of a wrong code. When the distinct keys are few
    (tags, labels, workers) they are found in a hash table of the keys of a first block, grown by
    the misses (:func:`_few_codes`), rather than by a sort of every field. None also for a field longer than
    :data:`MAX_FIELD_BYTES` or values that are not UTF-8.

    Parameters
    ----------
    body : ndarray of uint8
    start, width : ndarray of shape (n_fields,)
    first_seen : bool, default=False
        Number the values in order of first appearance (else in an order of their keys).

    Returns
    -------
    codes : ndarray of shape (n_fields,)
        Index of each field's value in ``values`` (int32 for fewer than 2**31 fields).
    values : list of str
        The distinct fields, decoded (UTF-8).
    """
    if start.size == 0:
        return np.zeros(0, dtype=np.intp), []
    n_words = max(-(-int(width.max()) // 8), 1)
    if n_words > MAX_FIELD_BYTES // 8:
        return None
    word = np.ndarray(buffer=body, dtype="<u8", shape=(body.size - 7,), strides=(1,))
    # Codes as int32 where they fit (half the memory of intp). The check below needs every word but the last:
    # fields of one key whose other words are equal have equal last words (``key ^ last`` is the mix of the
    # others), so the last word is dropped once mixed in.
    code_type = np.int32 if start.size < 2**31 else np.intp
    words = [_words(word, start, width, j) for j in range(n_words - 1)]
    key = _words(word, start, width, n_words - 1)
    if words:
        mixed = words[0] * _MIX
        for w in words[1:]:
            mixed ^= w
            mixed *= _MIX  # (wraps modulo 2**64)
        key ^= mixed
        del mixed
    sample = np.sort(key[:1 << 16])
    distinct = sample[_firsts(sample)]
    if distinct.size > _MANY:  # many values (item ids): one sort of every key
        # numpy's default argsort (SIMD quicksort) is faster than its stable one on 64-bit keys; the first
        # field of each value is then the least position in its run of the sort.
        order = np.argsort(key)
        new = _firsts(key[order])
        del key
        codes = np.empty(order.size, dtype=code_type)
        rank = np.cumsum(new, dtype=code_type)
        rank -= 1
        codes[order] = rank
        del rank
        some = np.minimum.reduceat(order, np.flatnonzero(new))
        del order, new
    else:
        codes, distinct = _few_codes(key, distinct)
        del key
        some = np.full(distinct.size, codes.size, dtype=np.int64)
        np.minimum.at(some, codes, np.arange(codes.size))  # the first field of each value
    if first_seen:
        order = np.argsort(some)
        rank = np.empty(some.size, dtype=code_type)
        rank[order] = np.arange(some.size)
        codes, some = rank[codes], some[order]
    if not all(np.array_equal(w, w[some][codes]) for w in words):
        return None
    del words
    first_start, first_width = start[some], width[some]
    values = _decode([_words(word, first_start, first_width, j) for j in range(n_words)], first_width)
    return None if values is None else (codes, values)


def _words(word: NDArray[np.uint64], start: NDArray, width: NDArray, j: int) -> NDArray[np.uint64]:
    """Word ``j`` (bytes ``8 j`` to ``8 j + 7``) of each field ``start, width``, the bytes past the field zero."""
    out = word[start + 8 * j]
    if width.min() < 8 * j + 8:  # (no mask where every field fills the word)
        out &= _WORD_MASKS[j][width]
    return out


def _few_codes(key: NDArray[np.uint64], distinct: NDArray[np.uint64]) -> tuple[NDArray[np.intp], NDArray[np.uint64]]:
    """Index of each key in the sorted distinct keys, ``distinct`` (a first guess) grown by the keys it lacks.

    Each key is looked up in a hash table of the distinct keys (8 slots per key, multiplicative hashing);
    the keys of a value that lost its slot to another, and the keys not yet known, are found by
    ``searchsorted``; unknown ones are added and the lookup repeated.
    """
    while True:
        bits = max((8 * distinct.size - 1).bit_length(), 6)
        shift = np.uint64(64 - bits)
        table = np.zeros(1 << bits, dtype=np.int32 if key.size < 2**31 else np.intp)
        table[(distinct * _MIX) >> shift] = np.arange(distinct.size)  # of colliding keys one keeps the slot
        codes = table[(key * _MIX) >> shift]
        miss = np.flatnonzero(distinct[codes] != key)
        if not miss.size:
            return codes, distinct
        found = np.minimum(np.searchsorted(distinct, key[miss]), distinct.size - 1)
        unknown = distinct[found] != key[miss]
        if not unknown.any():
            codes[miss] = found
            return codes, distinct
        distinct = np.union1d(distinct, key[miss[unknown]])


def unique_sorted(values: NDArray) -> NDArray:
    """``np.unique(values)`` by a sort: numpy 2.4's ``np.unique`` hashes, many times slower than a sort on
    int64 keys, with many distinct values or few."""
    v = np.sort(values)
    return v[_firsts(v)] if v.size else v


def _firsts(ordered: NDArray) -> NDArray[np.bool_]:
    """Where each run of equal values of a sorted array starts."""
    new = np.ones(ordered.size, dtype=bool)
    np.not_equal(ordered[1:], ordered[:-1], out=new[1:])
    return new


def joined(body: NDArray[np.uint8], start: NDArray[np.int64], width: NDArray[np.int64], *, separator: int
           ) -> NDArray[np.uint8]:
    """The byte fields ``body[start:start + width]`` copied end to end, each followed by the byte ``separator``."""
    out_end = np.cumsum(width + 1)
    # Where each output byte comes from: one step forward within a field and its separator, a jump to the
    # next field's first byte (a running sum of steps; the separator's byte is then overwritten).
    step = np.ones(int(out_end[-1]) if out_end.size else 0, dtype=np.int64)
    if out_end.size:
        step[(out_end - width - 1)[1:]] = start[1:] - start[:-1] - width[:-1]
        step[0] = start[0]
    out = body[np.cumsum(step, out=step)]
    out[out_end - 1] = separator
    return out


def _decode(words: list[NDArray[np.uint64]], width: NDArray[np.int64]) -> list[str] | None:
    """Fields given by their little-endian words (bytes past each field zero) as strings (UTF-8), or None if one
    is not UTF-8.

    The words of each field are laid out as a row of bytes with a newline after the field; the bytes up to
    each newline are taken at once (a row mask), decoded in one go and split: a few bytes per field of
    temporaries, where gathering the fields from the file's bytes needs an index per byte.
    """
    n, k = width.size, 8 * len(words)
    rows = np.zeros((n, k + 1), dtype=np.uint8)
    for j, w in enumerate(words):
        rows[:, 8 * j:8 * j + 8] = w.astype("<u8", copy=False).view(np.uint8).reshape(n, 8)
    rows[np.arange(n), width] = 10
    kept = rows[np.arange(k + 1) <= width[:, None]]
    del rows
    try:
        text = codecs.utf_8_decode(kept, "strict", True)[0]  # from the array's buffer, without a copy as bytes
    except UnicodeDecodeError:
        return None
    del kept
    return text.split("\n")[:-1]
