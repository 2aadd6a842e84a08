"""sieve.engine.format.distinct against np.unique (its oracle), for every shape and dtype it meets."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from sieve.engine.format.distinct import distinct, distinct_sorted

ints = st.lists(st.integers(-(2**40), 2**40), max_size=300)


@settings(max_examples=300, deadline=None)
@given(ints, st.sampled_from([np.int64, np.int32, np.uint16, np.intp]))
def test_distinct_is_np_unique(values: list[int], dtype: type) -> None:
    arr = np.asarray(values, dtype=np.int64)
    if dtype is not np.int64:
        arr = (arr % 1000).astype(dtype)
    got = distinct(arr)
    want = np.unique(arr)
    assert got.dtype == want.dtype and got.tolist() == want.tolist()
    assert distinct_sorted(np.sort(arr)).tolist() == want.tolist()


def test_distinct_of_a_matrix_flattens_and_never_aliases_its_input() -> None:
    m = np.array([[3, 1], [1, 2]])
    assert distinct(m).tolist() == [1, 2, 3]
    one = np.array([7])
    out = distinct_sorted(one)
    out[0] = 0
    assert one.tolist() == [7]  # a copy, as np.unique gives
    assert distinct(np.zeros(0, dtype=np.int64)).tolist() == []
