"""Vectorised pyarrow helpers the bill writers share: exact decimals, ISO text, maps and JSON.

Billing columns repeat a lot (hours, tags, product attributes), so several helpers work
once per distinct value and expand the result.
"""

from __future__ import annotations

import binascii
import hashlib
from collections.abc import Callable, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc


def column_getter(table: pa.Table) -> Callable[[str], pa.Array]:
    """Column getter returning plain arrays (compute kernels then mix them freely)."""

    def get(name: str) -> pa.Array:
        column = table.column(name)
        return column.chunk(0) if column.num_chunks == 1 else column.combine_chunks()

    return get


def int_values(arr: pa.ChunkedArray | pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """(values with nulls as 0, validity mask) of an int64 column."""
    valid = arr.is_valid().to_numpy(zero_copy_only=False)
    values = pc.fill_null(arr, 0).to_numpy(zero_copy_only=False).astype(np.int64, copy=False)
    return values, valid


def decimal_array(values: np.ndarray, valid: np.ndarray | None, scale: int) -> pa.Array:
    """decimal128(38, scale) array whose unscaled integers are `values` (no float on the way)."""
    n = len(values)
    words = np.empty((n, 2), dtype=np.int64)
    words[:, 0] = values
    words[:, 1] = values >> 63  # sign extension into the high 64 bits
    validity = None
    null_count = 0
    if valid is not None and not valid.all():
        validity = pa.py_buffer(np.packbits(valid, bitorder="little"))
        null_count = int(n - valid.sum())
    return pa.Array.from_buffers(
        pa.decimal128(38, scale), n, [validity, pa.py_buffer(words)], null_count=null_count
    )


def decimal_text(values: np.ndarray, valid: np.ndarray | None, scale: int) -> pa.Array:
    """Fixed-decimal strings ('13.176000'); each distinct amount is formatted once."""
    unique, inverse = np.unique(values, return_inverse=True)
    if len(unique) > len(values) // 4:
        return pc.cast(decimal_array(values, valid, scale), pa.string())
    text = pc.cast(decimal_array(unique, None, scale), pa.string()).take(pa.array(inverse.astype(np.int64)))
    return text if valid is None or valid.all() else where(valid, text, pa.nulls(len(values), pa.string()))


def double_array(values: np.ndarray, valid: np.ndarray | None, scale: int) -> pa.Array:
    """The double nearest each exact value values/10**scale (one correctly rounded division)."""
    out = values.astype(np.float64) / float(10**scale)
    return pa.array(out, type=pa.float64(), mask=None if valid is None else ~valid)


def iso_text(ts: pa.ChunkedArray | pa.Array) -> pa.Array:
    """ISO 8601 strings with Z. Billing timestamps repeat (hours), so format each value once."""
    seconds = pc.fill_null(ts.cast(pa.int64()), 0).to_numpy(zero_copy_only=False)
    unique, inverse = np.unique(seconds, return_inverse=True)
    text = pc.cast(pa.array(unique).cast(pa.timestamp("s")), pa.string())  # "YYYY-MM-DD HH:MM:SS"
    iso = pc.binary_join_element_wise(
        pc.utf8_slice_codeunits(text, 0, 10), "T", pc.utf8_slice_codeunits(text, 11, 19), "Z", ""
    )
    out = iso.take(pa.array(inverse.astype(np.int32)))
    return where(ts.is_valid().to_numpy(zero_copy_only=False), out, pa.nulls(len(seconds), pa.string()))


def const(value: str | None, n: int) -> pa.Array:
    return pa.nulls(n, pa.string()) if value is None else pa.repeat(pa.scalar(value, pa.string()), n)


def where(mask: np.ndarray, a: pa.Array, b: pa.Array) -> pa.Array:
    return pc.if_else(pa.array(mask), a, b)


def is_in(values: pa.Array, *options: str) -> np.ndarray:
    """Boolean numpy mask: values in options (nulls are False)."""
    found = pc.is_in(values, value_set=pa.array(options, pa.string()))
    return pc.fill_null(found, False).to_numpy(zero_copy_only=False)


def pick(options: Sequence[str | None], codes: np.ndarray) -> pa.Array:
    """options[codes] as a string array (None options become nulls), without Python objects."""
    codes = np.asarray(codes, dtype=np.int32)
    null_codes = [i for i, option in enumerate(options) if option is None]
    mask = np.isin(codes, null_codes) if null_codes else None
    dictionary = pa.array(["" if option is None else option for option in options], pa.string())
    return pa.DictionaryArray.from_arrays(pa.array(codes, mask=mask), dictionary).cast(pa.string())


def hex16(values: np.ndarray) -> pa.Array:
    """Lower-case 16-digit hex strings of uint64 values, vectorised."""
    raw = binascii.hexlify(values.astype(">u8").tobytes())
    fixed = pa.Array.from_buffers(pa.binary(16), len(values), [None, pa.py_buffer(raw)])
    return fixed.cast(pa.binary()).cast(pa.string())


def mix64(x: np.ndarray) -> np.ndarray:
    """splitmix64 finaliser: a fast, stable 64-bit hash of integers."""
    z = x.astype(np.uint64) + np.uint64(0x9E3779B97F4A7C15)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def seed64(*parts: object) -> int:
    digest = hashlib.blake2b(":".join(map(str, parts)).encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big")


def _once_per_combination(
    entries: Sequence[tuple[str, pa.Array]], build: Callable[[Sequence[tuple[str, pa.Array]], int], pa.Array]
) -> pa.Array:
    """build(entries, n) computed once per distinct row of values, then expanded to every row.

    Tags and product attributes repeat across thousands of hourly rows; building maps or
    JSON for the distinct combinations only is several times faster on big files.
    """
    n = len(entries[0][1])
    key = np.zeros(n, dtype=np.int64)
    radix = 1
    for _, values in entries:
        encoded = pc.dictionary_encode(values)
        codes = pc.fill_null(encoded.indices, -1).to_numpy(zero_copy_only=False).astype(np.int64) + 1
        radix_next = radix * (len(encoded.dictionary) + 1)
        if radix_next > 2**62:  # too many combinations to key in one integer
            return build(entries, n)
        key += codes * radix
        radix = radix_next
    _, first, inverse = np.unique(key, return_index=True, return_inverse=True)
    if len(first) > n // 2:
        return build(entries, n)
    subset = [(name, values.take(pa.array(first))) for name, values in entries]
    return build(subset, len(first)).take(pa.array(inverse.astype(np.int64)))


def map_array(entries: Sequence[tuple[str, pa.Array]], n: int) -> pa.Array:
    """MAP<string,string> per row from (key, values) pairs; null values leave the key out."""
    return _once_per_combination(entries, _build_map)


def _build_map(entries: Sequence[tuple[str, pa.Array]], n: int) -> pa.MapArray:
    valid = np.stack([v.is_valid().to_numpy(zero_copy_only=False) for _, v in entries], axis=1)
    counts = valid.sum(axis=1)
    offsets = np.zeros(n + 1, dtype=np.int32)
    np.cumsum(counts, out=offsets[1:])
    k = len(entries)
    flat = (np.arange(k)[None, :] * n + np.arange(n)[:, None])[valid]  # row-major order
    all_values = pa.concat_arrays([pc.cast(v, pa.string()) for _, v in entries])
    keys = pick([key for key, _ in entries], flat // n)
    items = all_values.take(pa.array(flat))
    return pa.MapArray.from_arrays(pa.array(offsets), keys, items)


def json_object(entries: Sequence[tuple[str, pa.Array]], n: int) -> pa.Array:
    """A JSON object string per row (null when empty). Values must need no escaping."""
    return _once_per_combination(entries, _build_json)


def _build_json(entries: Sequence[tuple[str, pa.Array]], n: int) -> pa.Array:
    # Each present entry renders as ',"key":"value"', an absent one as ''; the leading comma
    # is dropped at the end. (binary_join_element_wise's null_handling="skip" returned a
    # wrong-length array on pyarrow 26 for some inputs, so it is not used.)
    parts = [
        pc.fill_null(pc.binary_join_element_wise(f',"{key}":"', values, '"', ""), "")
        for key, values in entries
    ]
    body = pc.binary_join_element_wise(*parts, "")
    obj = pc.binary_join_element_wise("{", pc.utf8_slice_codeunits(body, 1), "}", "")
    return pc.if_else(pc.equal(body, ""), pa.nulls(n, pa.string()), obj)


def per_value(values: pa.Array, transform: Callable[[pa.Array], pa.Array]) -> pa.Array:
    """Apply a string transform once per distinct value (billing columns repeat a lot)."""
    encoded = pc.dictionary_encode(values)
    return pa.DictionaryArray.from_arrays(encoded.indices, transform(encoded.dictionary)).cast(pa.string())
