"""Ragged ranges (sieve.engine.format.ranges) against a list comprehension."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from sieve.engine.format.ranges import ragged


@given(st.lists(st.tuples(st.integers(0, 50), st.integers(0, 6)), max_size=30))
def test_ragged_lists_each_run_in_order(runs: list[tuple[int, int]]) -> None:
    starts = np.array([s for s, _ in runs], dtype=np.int64)
    lengths = np.array([n for _, n in runs], dtype=np.int64)
    got = ragged(starts, lengths)
    assert got.dtype == np.int64 and got.tolist() == [s + i for s, n in runs for i in range(n)]
