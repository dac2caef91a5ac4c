"""The byte-array factorisation of ingest/_bytes.py against a dict oracle."""

from __future__ import annotations

import numpy as np
import pytest

from crowdqa.ingest import _bytes


def _fields(rng: np.random.Generator, n_values: int, n_fields: int) -> list[bytes]:
    """Fields of 1 to 32 bytes (one to four words), ASCII and not, drawn with repeats from ``n_values`` values."""
    alphabet = list("abcxyz0129-_/") + ["é", "日", "ü"]
    values = set()
    while len(values) < n_values:
        n = int(rng.integers(1, 11))
        values.add("".join(rng.choice(alphabet, size=n)).encode("utf-8"))
    values = sorted(values)
    return [values[i] for i in rng.integers(0, len(values), n_fields)]


def _codes(fields: list[bytes], *, first_seen: bool, many: int, monkeypatch):
    body, _ = _bytes.padded(bytearray(b"\n".join(fields) + bytes(_bytes.MAX_FIELD_BYTES)), 0)
    width = np.array([len(f) for f in fields], dtype=np.int64)
    start = np.concatenate([[0], np.cumsum(width + 1)[:-1]]).astype(np.int64)
    monkeypatch.setattr(_bytes, "_MANY", many)
    return _bytes.field_codes(body, start, width, first_seen=first_seen)


@pytest.mark.parametrize("many", [0, 1 << 12], ids=["sort", "hash"])
@pytest.mark.parametrize("first_seen", [False, True])
@pytest.mark.parametrize("n_values", [1, 3, 200, 3000])
def test_field_codes_equal_a_dict(monkeypatch, seed, many, first_seen, n_values):
    """Oracle: a dict of the decoded fields. Each code names the field's value; with ``first_seen`` the
    values are numbered in order of first appearance. Both branches (a sort of every key, and the hash
    table of a first block grown by the misses, whose table collides and misses on 3000 values)."""
    rng = np.random.default_rng(seed)
    fields = _fields(rng, n_values, 5 * n_values + 7)
    # Values absent from the first block (the hash branch's first guess) appear later.
    fields = fields + _fields(rng, 50, 300)
    codes, values = _codes(fields, first_seen=first_seen, many=many, monkeypatch=monkeypatch)
    text = [f.decode("utf-8") for f in fields]
    assert [values[c] for c in codes] == text
    assert len(values) == len(set(values)) == len(set(text))
    if first_seen:
        assert values == list(dict.fromkeys(text))


def test_read_padded(tmp_path):
    """The file's bytes then MAX_FIELD_BYTES zeros; ``padded`` views them from an offset, with the file's size."""
    path = tmp_path / "f.csv"
    path.write_bytes(b"h\nab,c\n")
    data = _bytes.read_padded(path)
    assert bytes(data) == b"h\nab,c\n" + bytes(_bytes.MAX_FIELD_BYTES)
    body, size = _bytes.padded(data, 2)
    assert size == 5 and body[:size].tobytes() == b"ab,c\n" and not body[size:].any()


def test_few_codes_grows_the_first_guess(seed):
    """Oracle: ``searchsorted`` into the sorted distinct keys. Keys unknown to the first guess are added,
    and keys that lost their hash slot to another are found all the same."""
    rng = np.random.default_rng(seed)
    pool = np.unique(rng.integers(0, 2**63, 5000, dtype=np.int64).astype(np.uint64))
    key = pool[rng.integers(0, pool.size, 40_000)]
    codes, distinct = _bytes._few_codes(key, pool[:7])
    np.testing.assert_array_equal(distinct, np.unique(key))
    np.testing.assert_array_equal(codes, np.searchsorted(distinct, key))


def test_scans_by_chunks_equal_whole_array_scans(monkeypatch, seed):
    """Oracle: the comparisons over the whole array at once. Chunks of 7 bytes cut lines and fields anywhere."""
    rng = np.random.default_rng(seed)
    raw = rng.choice(np.array([0, 1, 9, 10, 13, 32, 44, 65, 200], dtype=np.uint8), size=1000)
    body, size = _bytes.padded(bytearray(raw.tobytes() + bytes(_bytes.MAX_FIELD_BYTES)), 0)
    monkeypatch.setattr(_bytes, "_SCAN", 7)
    for value in (10, 44, 65):
        np.testing.assert_array_equal(_bytes.find_byte(body, size, value), np.flatnonzero(raw == value))
    expected = np.count_nonzero(raw < 33) - np.count_nonzero(raw == 10) - np.count_nonzero(raw == 9)
    assert _bytes.other_controls(body, size, below=33, allowed=(10, 9)) == expected
    assert _bytes.other_controls(body, size, below=33, allowed=(10, 9, 65)) == expected  # (65 is not below 33)
    assert _bytes.find_byte(body, 0, 10).size == 0


@pytest.mark.parametrize("dtype", [np.int64, np.int16, np.uint64])
def test_unique_sorted_equals_np_unique(seed, dtype):
    """Oracle: ``np.unique``."""
    rng = np.random.default_rng(seed)
    for n, m in ((0, 1), (1, 1), (500, 7), (5000, 4000)):
        values = rng.integers(0, m, n).astype(dtype)
        np.testing.assert_array_equal(_bytes.unique_sorted(values), np.unique(values))


@pytest.mark.parametrize("many", [0, 1 << 12], ids=["sort", "hash"])
def test_a_collision_of_the_mix_gives_none(monkeypatch, many):
    """Two 16-byte fields built so their mixed keys are equal (the second's last word solved for) are not
    given one code: every word is compared with its code's value, and the collision returns None."""
    mix = int(_bytes._MIX)
    a = b"abcdefgh" + b"ijklmnop"
    w0, w1 = (int.from_bytes(a[i:i + 8], "little") for i in (0, 8))
    key = ((w0 * mix) % 2**64) ^ w1
    for stem in range(1000):
        b0 = f"q{stem:07d}".encode()
        b1 = (key ^ ((int.from_bytes(b0, "little") * mix) % 2**64)).to_bytes(8, "little")
        if 0 not in b1 and 10 not in b1:
            break
    b = b0 + b1
    assert b != a
    assert _codes([a, b, a], first_seen=True, many=many, monkeypatch=monkeypatch) is None
    assert _codes([a, a], first_seen=True, many=many, monkeypatch=monkeypatch) is not None
