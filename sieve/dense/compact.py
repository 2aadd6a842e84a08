"""Vectors as stored in vectors.sva: int8 codes with one float32 scale per row in scales.sva (the
default: a quarter of float32's bytes), float16, or float32 (embeddings written before compact
storage, still read). Inner products with a query are computed in float32, block by block, so a
scan never holds more than one block decoded.

Per-row int8 scale: a row's largest component maps to 127, so every row uses the full code range
(unit vectors of 384 dimensions spread their weight unevenly across dimensions; one scale per
dimension measured no better, benchmarks/bench_dense_scale.py). float16 is stored exactly as
asked, but numpy converts it to float32 about seven times slower than int8 here, so it is not
the default."""

from __future__ import annotations

from typing import Any

import numpy as np

DTYPES = ("int8", "float16", "float32")
DEFAULT_DTYPE = "int8"
# Rows decoded at a time in a scan: 4,096 x 384 float32 is 6 MB, within the last-level cache.
BLOCK = 4096


def quantize(vectors: np.ndarray, dtype: str) -> tuple[np.ndarray, np.ndarray | None]:
    """(stored rows, per-row scales or None) of float32 `vectors` in `dtype`. Deterministic per
    row: a row quantized alone or among others gets the same codes and scale."""
    vectors = np.asarray(vectors, dtype=np.float32)
    if dtype != "int8":
        return vectors.astype(dtype), None
    peak = np.abs(vectors).max(axis=1) if vectors.shape[1] else np.zeros(len(vectors))
    scale = np.where(peak > 0, peak / np.float32(127), np.float32(1)).astype(np.float32)
    codes = np.rint(vectors / scale[:, None]).clip(-127, 127).astype(np.int8)
    return codes, scale


def _dot(vectors: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Each row's inner product with q, without BLAS. A matrix-vector product is memory-bound, and
    numpy's einsum runs it as fast as multi-threaded OpenBLAS here (6.6 against 7.3 ms for 100k x
    384), but OpenBLAS leaves its threads spinning afterwards, and on a 2-core machine they slowed
    the next query's encoding (torch) from 14 to 39 ms."""
    return np.einsum("ij,j->i", vectors, q)


class Vectors:
    """The vectors of one embeddings folder as float32, whatever their stored dtype. `stored` and
    `scales` are arrays or sieve's checked array files (read through slices and gathers, so a
    block is verified when first read)."""

    def __init__(self, stored: Any, scales: Any = None) -> None:
        self.stored = stored
        self.scales = scales
        self.dtype = str(np.dtype(stored.dtype))
        self.shape: tuple[int, ...] = tuple(stored.shape)

    def __len__(self) -> int:
        return int(self.shape[0])

    def _decode(self, raw: np.ndarray, scales: np.ndarray | None) -> np.ndarray:
        out = raw.astype(np.float32)
        if scales is not None:
            out *= scales[:, None]
        return out

    def rows(self, idx: np.ndarray) -> np.ndarray:
        """Rows `idx` as float32."""
        return self._decode(
            self.stored[idx], None if self.scales is None else np.asarray(self.scales[idx])
        )

    def whole(self) -> np.ndarray:
        """Every row as float32 (a copy unless stored as float32)."""
        if self.dtype == "float32":
            return np.asarray(self.stored.whole() if hasattr(self.stored, "whole") else self.stored)
        return self.rows(np.arange(len(self)))

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        a = self.whole()
        return a if dtype is None else a.astype(dtype, copy=False)

    def dot(self, q: np.ndarray, idx: np.ndarray | None = None) -> np.ndarray:
        """Inner products with q of every row (idx None) or of rows `idx`, float32."""
        q = np.asarray(q, dtype=np.float32)
        if idx is not None:
            got = _dot(self.stored[idx].astype(np.float32, copy=False), q)
            return got if self.scales is None else got * np.asarray(self.scales[idx])
        if self.dtype == "float32":
            whole = self.stored.whole() if hasattr(self.stored, "whole") else self.stored
            return _dot(whole, q)
        n = len(self)
        out = np.empty(n, dtype=np.float32)
        buf = np.empty((min(BLOCK, n), self.shape[1]), dtype=np.float32)
        for lo in range(0, n, BLOCK):
            hi = min(n, lo + BLOCK)
            part = buf[: hi - lo]
            part[...] = self.stored[lo:hi]  # converted into the buffer: no new array per block
            out[lo:hi] = _dot(part, q)
        if self.scales is not None:
            out *= np.asarray(self.scales[0:n])
        return out
