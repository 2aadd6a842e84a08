"""Distinct values of integer arrays, by sorting.

`np.unique` hashes since numpy 2.3: measured on numpy 2.4 it takes 10-30 times as long as a sort and
one comparison on integer arrays from about a thousand values (1.0 ms against 0.05 ms for 12,000
document numbers, 16 ms against 0.5 ms for 100,000), and these are the sizes a query's or a batch's
sets have. Every distinct-values step of the engine goes through here.
"""

from __future__ import annotations

import numpy as np


def distinct(values: np.ndarray) -> np.ndarray:
    """The distinct values of `values` (any order, any shape),
    ascending: what `np.unique` returns."""
    return distinct_sorted(np.sort(values, axis=None))


def distinct_sorted(values: np.ndarray) -> np.ndarray:
    """The distinct values of an ascending 1-d array, ascending (no sort)."""
    if len(values) < 2:
        return values.copy()
    first = np.empty(len(values), dtype=bool)
    first[0] = True
    np.not_equal(values[1:], values[:-1], out=first[1:])
    return values[first]
