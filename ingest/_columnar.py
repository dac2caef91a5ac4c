"""The fast path of the table readers: Apache Arrow's multithreaded CSV and JSON readers.

A reader first tries to read its whole file here; when anything is unusual (a row with a
missing or extra field, a blank field, a field with spaces at its ends, a byte that is not
UTF-8, a duplicate row...) the fast path gives up (``None``) and the reader's own row loop
reads the file again, so every message that names a file and line, and ``on_error="skip"``,
come from one place. The fast path therefore only ever accepts files the row loop would
read without a single problem, and returns the same corpus.

pyarrow is imported here only, when a table file is read, so the command line starts
without it.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

__all__ = ["read_csv_columns", "read_json_columns", "factorize", "clean_strings", "int_values", "raw_ints", "present"]

#: Characters Python's ``str.strip()`` removes (``str.isspace``), as an RE2 class: a field
#: starting or ending with one of them is left to the row loop, which strips it.
_SPACE = r"[\s\x0b\x1c-\x1f\x85\xa0\x{1680}\x{2000}-\x{200a}\x{2028}\x{2029}\x{202f}\x{205f}\x{3000}]"
#: Arrow block size: large enough for the parser's threads, small enough to bound the buffers.
_BLOCK = 1 << 24


def read_csv_columns(
    path, *, delimiter: str, n_columns: int, columns: Sequence[int], block_size: int = _BLOCK,
) -> dict[int, object] | None:
    """Read columns of a CSV/TSV file (a header row of ``n_columns`` names first) as Arrow string arrays.

    Parameters
    ----------
    path : str, PathLike or binary file object
    delimiter : str
    n_columns : int
        Fields of every row; a row with another number of fields ends the fast path.
    columns : sequence of int
        0-based indices of the columns to keep.
    block_size : int
        Bytes per parsed block; blocks are parsed in parallel, so a smaller one lets a file of a
        few MB use both cores (a row longer than a block gives None).

    Returns
    -------
    dict of int to pyarrow.Array, or None
        Each kept column (one chunk, values as written, quotes resolved); ``None`` when
        Arrow refuses the file (a row of another width, bytes that are not UTF-8).
    """
    import pyarrow as pa
    import pyarrow.csv as pv

    names = [f"c{i}" for i in range(n_columns)]
    keep = [names[i] for i in columns]
    try:
        table = pv.read_csv(
            path,
            read_options=pv.ReadOptions(column_names=names, skip_rows=1, block_size=block_size),
            parse_options=pv.ParseOptions(delimiter=delimiter, newlines_in_values=True, quote_char='"',
                                          double_quote=True, ignore_empty_lines=True),
            convert_options=pv.ConvertOptions(
                column_types={n: pa.string() for n in keep}, include_columns=keep,
                strings_can_be_null=False, quoted_strings_can_be_null=False,
            ),
        )
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
        return None
    return {i: table.column(names[i]).combine_chunks() for i in columns}


def read_json_columns(path: str | os.PathLike, *, keys: Sequence[str]) -> dict[str, object] | None:
    """Read JSON Lines whose every line is an object, as Arrow arrays of the given keys.

    Returns
    -------
    dict of str to pyarrow.Array, or None
        An absent key gives an all-null array; ``None`` when Arrow refuses the file (a line
        that is not a JSON object, blank lines, mixed types in one key...).
    """
    import pyarrow as pa
    import pyarrow.json as pj

    try:
        table = pj.read_json(path, read_options=pj.ReadOptions(block_size=_BLOCK))
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
        return None
    out = {}
    for k in keys:
        if k in table.column_names:
            out[k] = table.column(k).combine_chunks()
        else:
            out[k] = pa.nulls(table.num_rows)
    return out


def clean_strings(array) -> bool:
    """True when every value is a non-empty string without spaces at its ends (what ``strip`` keeps)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if not pa.types.is_string(array.type) and not pa.types.is_large_string(array.type):
        return False
    if array.null_count or len(array) == 0:
        return array.null_count == 0 and len(array) == 0
    if pc.min(pc.utf8_length(array)).as_py() == 0:  # (no scalar argument: pyarrow converts those with pandas)
        return False
    return not pc.any(pc.match_substring_regex(array, f"^{_SPACE}|{_SPACE}$")).as_py()


def factorize(array) -> tuple[NDArray[np.int64], object]:
    """Codes and distinct values (an Arrow array) of an Arrow array, values in order of first appearance."""
    import pyarrow.compute as pc

    encoded = pc.dictionary_encode(array)
    return int_values(encoded.indices), encoded.dictionary


def int_values(array) -> NDArray[np.int64]:
    """The values of an Arrow integer array without nulls, as int64, read from its data buffer.

    pyarrow's own ``to_numpy`` (and ``np.asarray``) goes through its pandas conversion, which
    imports pandas: most of a second of start-up for a command that never uses it.
    """
    if array.null_count:
        raise ValueError(f"int_values needs integers without nulls, found {array.null_count} nulls")
    return raw_ints(array)


def raw_ints(array) -> NDArray[np.int64]:
    """The data buffer of an Arrow integer array as int64, whatever a null slot holds (an all-null array: zeros)."""
    import pyarrow as pa

    if pa.types.is_null(array.type) or len(array) == 0:
        return np.zeros(len(array), dtype=np.int64)
    if not pa.types.is_integer(array.type):
        raise ValueError(f"expected an Arrow integer array, found {array.type}")
    dtype = np.dtype(f"<{'i' if pa.types.is_signed_integer(array.type) else 'u'}{array.type.bit_width // 8}")
    data = np.frombuffer(array.buffers()[1], dtype=dtype, count=len(array) + array.offset)
    return data[array.offset:].astype(np.int64)


def present(array) -> NDArray[np.bool_]:
    """Which entries of an Arrow array are not null (its validity bitmap, unpacked)."""
    import pyarrow as pa

    if pa.types.is_null(array.type):
        return np.zeros(len(array), dtype=bool)
    if array.null_count == 0:
        return np.ones(len(array), dtype=bool)
    bits = np.unpackbits(np.frombuffer(array.buffers()[0], dtype=np.uint8), bitorder="little")
    return bits[array.offset:array.offset + len(array)].astype(bool)
