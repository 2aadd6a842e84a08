"""Ragged ranges: the offsets of many runs of consecutive integers, in one array.

A term's positions in some of its postings, a block's exceptions, a window's postings: each is a
run `start .. start + length - 1` of a flat array, and reading several at once is one gather
through every offset of every run. Every such step of the engine goes through here.
"""

from __future__ import annotations

import numpy as np


def ragged(starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """The offsets starts[i] .. starts[i] + lengths[i] - 1 of every i, in order (int64)."""
    total = int(lengths.sum())
    if not total:
        return np.zeros(0, dtype=np.int64)
    before = np.cumsum(lengths) - lengths  # where run i begins in the output
    return np.repeat(starts - before, lengths) + np.arange(total, dtype=np.int64)
