"""Spark's `xxhash64` of many strings (or longs) at once, in numpy: the buckets of the in-process
index build, and the ids of input items found again by a trace (capture/tracing/locate.py).

Spark hashes a string column with XXH64 (seed 42) over its UTF-8 bytes and reads the result as
a signed long; an index table's bucket is `pmod(hash, buckets)` (layout.py). `bucket_of_value`
computes that for one key with the `xxhash` package; `buckets_of` does the same for a whole
Arrow string array with array arithmetic, one pass per 8-byte word of the longest key rather
than one Python call per key (tests/index/test_index_inmemory.py compares both on random strings).

The algorithm is XXH64 as its specification gives it: 32-byte stripes through four
accumulators for keys of at least 32 bytes, then 8-byte words, one 4-byte word and single
bytes, then the avalanche. numpy's uint64 arithmetic wraps modulo 2**64, as XXH64 needs.
"""

from __future__ import annotations

import numpy as np

P1 = np.uint64(0x9E3779B185EBCA87)
P2 = np.uint64(0xC2B2AE3D27D4EB4F)
P3 = np.uint64(0x165667B19E3779F9)
P4 = np.uint64(0x85EBCA77C2B2AE63)
P5 = np.uint64(0x27D4EB2F165667C5)
SEED = 42  # Spark's seed for xxhash64


def _rotl(x: np.ndarray, r: int) -> np.ndarray:
    return (x << np.uint64(r)) | (x >> np.uint64(64 - r))


def _avalanche(h: np.ndarray) -> np.ndarray:
    """XXH64's final mix, as signed 64-bit hashes (``h``, an array of the caller's own, is mixed
    in place)."""
    with np.errstate(over="ignore"):
        _avalanche_into(h, np.empty_like(h), h)
    return h.view(np.int64)


def _avalanche_into(h: np.ndarray, scratch: np.ndarray, out: np.ndarray) -> None:
    """XXH64's final mix of ``h`` in place, its last step written to ``out`` (``scratch``: an
    array of h's length; ``out`` may be ``h``)."""
    for shift, prime in ((33, P2), (29, P3)):
        np.right_shift(h, np.uint64(shift), out=scratch)
        np.bitwise_xor(h, scratch, out=h)
        np.multiply(h, prime, out=h)
    np.right_shift(h, np.uint64(32), out=scratch)
    np.bitwise_xor(h, scratch, out=out)


def _round(acc: np.ndarray, lane: np.ndarray) -> np.ndarray:
    acc = acc + lane * P2
    return _rotl(acc, 31) * P1


def _words(data: np.ndarray, pos: np.ndarray, width: int) -> np.ndarray:
    """Little-endian words of `width` (8 or 4) bytes starting at each position: a gather from
    an overlapping view with a stride of one byte (data is zero-padded past the last key)."""
    view = np.ndarray((len(data) - 7,), dtype="<u8", buffer=data, strides=(1,))
    words = view[pos]
    return words if width == 8 else words & np.uint64(0xFFFFFFFF)


def hashes(array) -> np.ndarray:
    """XXH64 (seed 42) of every string of a pyarrow string array without nulls, as int64."""
    import pyarrow as pa  # deferred: only this path needs pyarrow

    if isinstance(array, pa.ChunkedArray):
        array = array.combine_chunks()
    if pa.types.is_string(array.type):
        array = array.cast(pa.large_string())
    n = len(array)
    if n == 0:
        return np.zeros(0, np.int64)
    _, offsets_buf, data_buf = array.buffers()
    offsets = np.frombuffer(offsets_buf, np.int64, n + 1, array.offset * 8)
    start = offsets[:-1].copy()
    length = (offsets[1:] - offsets[:-1]).astype(np.int64)
    raw = np.frombuffer(data_buf, np.uint8, int(offsets[-1])) if data_buf is not None and offsets[-1] \
        else np.zeros(0, np.uint8)
    data = np.concatenate([raw, np.zeros(40, np.uint8)])  # reads past a key's end stay in bounds
    seed = np.uint64(SEED)
    with np.errstate(over="ignore"):
        h = np.full(n, seed + P5, np.uint64)
        long_rows = np.flatnonzero(length >= 32)
        pos = start.copy()
        if len(long_rows):
            v1 = np.full(len(long_rows), seed + P1 + P2, np.uint64)
            v2 = np.full(len(long_rows), seed + P2, np.uint64)
            v3 = np.full(len(long_rows), seed, np.uint64)
            v4 = np.full(len(long_rows), seed - P1, np.uint64)
            stripes = length[long_rows] // 32
            p = start[long_rows].copy()
            for s in range(int(stripes.max())):
                live = np.flatnonzero(stripes > s)
                q = p[live]
                v1[live] = _round(v1[live], _words(data, q, 8))
                v2[live] = _round(v2[live], _words(data, q + 8, 8))
                v3[live] = _round(v3[live], _words(data, q + 16, 8))
                v4[live] = _round(v4[live], _words(data, q + 24, 8))
                p[live] = q + 32
            acc = _rotl(v1, 1) + _rotl(v2, 7) + _rotl(v3, 12) + _rotl(v4, 18)
            for v in (v1, v2, v3, v4):
                acc = (acc ^ _round(np.zeros_like(v), v)) * P1 + P4
            h[long_rows] = acc
            pos[long_rows] = p
        h = h + length.astype(np.uint64)
        end = start + length
        # The tail, on every row at once: a row without another word keeps its hash (np.where),
        # cheaper than gathering the rows that have one when most keys have similar lengths.
        zero = np.zeros(n, np.uint64)
        for _ in range(3):  # 8-byte words: at most 3 after the stripes
            live = pos + 8 <= end
            if not live.any():
                break
            k1 = _round(zero, _words(data, pos, 8))
            h = np.where(live, _rotl(h ^ k1, 27) * P1 + P4, h)
            pos = pos + 8 * live
        live = pos + 4 <= end
        if live.any():
            h = np.where(live, _rotl(h ^ (_words(data, pos, 4) * P1), 23) * P2 + P3, h)
            pos = pos + 4 * live
        for _ in range(3):  # single bytes: at most 3
            live = pos < end
            if not live.any():
                break
            h = np.where(live, _rotl(h ^ (data[pos].astype(np.uint64) * P5), 11) * P1, h)
            pos = pos + live
    return _avalanche(h)


def hash_longs(values: np.ndarray, seed: int, chunk: int = 1 << 16) -> np.ndarray:
    """Spark's ``XXH64.hashLong`` of every value with one seed (the hash of the columns before
    it, as a signed or unsigned 64-bit number), as signed 64-bit hashes.

    Worked ``chunk`` values at a time in two scratch arrays, every step in place: a trace hashes
    the row index of every row of each input file it reads back, and whole-array steps (a new
    array of the file's length per step) took 0.5-1 s for 6 million rows where this takes 0.06 s."""
    x = np.ascontiguousarray(values, np.int64).view(np.uint64)
    out = np.empty(len(x), np.uint64)
    k, t = np.empty(min(chunk, len(x)), np.uint64), np.empty(min(chunk, len(x)), np.uint64)
    with np.errstate(over="ignore"):
        start = np.uint64(seed & ((1 << 64) - 1)) + P5 + np.uint64(8)
        for i in range(0, len(x), chunk):
            n = min(chunk, len(x) - i)
            a, b = k[:n], t[:n]
            np.multiply(x[i:i + n], P2, out=a)  # k1 = rotl(x * P2, 31) * P1
            _rotl_into(a, 31, b)
            np.multiply(a, P1, out=a)
            np.bitwise_xor(a, start, out=a)  # h = rotl(start ^ k1, 27) * P1 + P4
            _rotl_into(a, 27, b)
            np.multiply(a, P1, out=a)
            np.add(a, P4, out=a)
            _avalanche_into(a, b, out[i:i + n])
    return out.view(np.int64)


def _rotl_into(x: np.ndarray, r: int, scratch: np.ndarray) -> None:
    """``x = rotl(x, r)`` in place (``scratch``: an array of x's length)."""
    np.left_shift(x, np.uint64(r), out=scratch)
    np.right_shift(x, np.uint64(64 - r), out=x)
    np.bitwise_or(x, scratch, out=x)


def buckets_of(array, buckets: int) -> np.ndarray:
    """`pmod(xxhash64(key), buckets)` of every key (as Spark computes a bucket), as int32."""
    return np.mod(hashes(array), buckets).astype(np.int32)
