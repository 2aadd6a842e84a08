"""A sorted table of byte strings (terms, ids, keyword values) read from a blob and its offsets:
indexing, exact lookup and prefix ranges by binary search, without decoding the whole table."""

from __future__ import annotations

import bisect
from collections.abc import Sequence

import numpy as np


class StringTable(Sequence[bytes]):
    """A sorted table of byte strings in one blob, searched by bisection without loading it.

    Every 64th entry is kept in memory, so a lookup bisects a Python list (in C) and then one
    block of at most 64 entries, instead of slicing the memory map at every bisection step.
    """

    BLOCK = 64

    def __init__(self, blob: np.ndarray, off: np.ndarray) -> None:
        # Memoryviews slice in a fraction of a numpy slice's time: a lookup makes two.
        self._blobv, self._offv = (
            np.ascontiguousarray(blob).data,
            np.ascontiguousarray(off).data,
        )
        self._n = len(off) - 1
        starts = off[: self._n : self.BLOCK].tolist()
        ends = off[1 : self._n + 1][:: self.BLOCK].tolist()
        raw = blob.tobytes() if len(starts) > 4096 else None  # one copy beats thousands of slices
        self._sample = [
            (raw[a:b] if raw is not None else blob[a:b].tobytes()) for a, b in zip(starts, ends)
        ]

    def __len__(self) -> int:
        return self._n

    def __getitem__(self, i: int) -> bytes:  # type: ignore[override]
        if not 0 <= i < self._n:
            raise IndexError(i)
        return self._blobv[self._offv[i] : self._offv[i + 1]].tobytes()

    def _block(self, key: bytes) -> tuple[int, list[int], bytes] | None:
        """(first entry, offsets, bytes) of the block that holds `key` if the table does; None
        when `key` sorts before every entry."""
        b = bisect.bisect_right(self._sample, key) - 1
        if b < 0:
            return None
        lo = b * self.BLOCK
        offs = self._offv[lo : min(lo + self.BLOCK, self._n) + 1].tolist()
        return lo, offs, self._blobv[offs[0] : offs[-1]].tobytes()

    def _bisect(self, key: bytes) -> int:
        """bisect_left of `key` over the whole table."""
        block = self._block(key)
        if block is None:
            return 0
        lo, offs, raw = block
        base = offs[0]
        # Six probes slice the block; cutting all of its 64 entries first cost more than the search.
        return lo + bisect.bisect_left(
            range(len(offs) - 1), key, key=lambda i: raw[offs[i] - base : offs[i + 1] - base]
        )

    def find(self, key: bytes) -> int:
        """Index of `key`, or -1."""
        if not key:
            i = self._bisect(key)
            return i if i < self._n and self[i] == key else -1
        block = self._block(key)
        if block is None:
            return -1
        lo, offs, raw = block
        # Entries are concatenated, so `key` may also occur inside or across entries: an occurrence
        # counts only where an entry of exactly its length starts (the last of the entries starting
        # there: any before it are empty).
        base, k = offs[0], len(key)
        o = raw.find(key)
        while o != -1:
            i = bisect.bisect_right(offs, base + o) - 1
            if offs[i] == base + o and i + 1 < len(offs) and offs[i + 1] == base + o + k:
                return lo + i
            o = raw.find(key, o + 1)
        return -1

    def prefix_range(self, prefix: bytes) -> tuple[int, int]:
        """[lo, hi) of the entries that start with `prefix`."""
        # 0xff never occurs in UTF-8, so prefix+0xff sorts after every extension of prefix.
        return self._bisect(prefix), self._bisect(prefix + b"\xff")
