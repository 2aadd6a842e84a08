"""Window maxima (sieve.engine.rank.windows): each window's postings and best fraction, against brute force."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from sieve.engine.rank import windows


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 2000), st.data())
def test_windows_hold_their_postings_and_best_fraction(n_docs: int, data: st.DataObject) -> None:
    docs = np.array(sorted(data.draw(st.sets(st.integers(0, n_docs - 1), max_size=300))), dtype=np.intp)
    fractions = np.array(data.draw(st.lists(st.floats(0.0, 0.999), min_size=len(docs), max_size=len(docs))), dtype=np.float64)
    piece = data.draw(st.integers(1, 400))
    tw = windows.measure(((docs[i : i + piece], fractions[i : i + piece]) for i in range(0, len(docs), piece)), n_docs)
    width = 1 << windows.WINDOW_BITS
    assert len(tw.best) == windows.window_count(n_docs) == -(-n_docs // width)
    assert tw.starts[0] == 0 and tw.starts[-1] == len(docs)
    for w in range(len(tw.best)):
        inside = (docs >= w * width) & (docs < (w + 1) * width)
        assert np.array_equal(np.flatnonzero(inside), np.arange(tw.starts[w], tw.starts[w + 1]))
        top = fractions[inside].max() if inside.any() else 0.0
        # A float32 at or above the largest, by at most one step of float32.
        assert tw.best.dtype == np.float32 and top <= float(tw.best[w]) <= float(np.nextafter(np.float32(top), np.float32(np.inf)))


def test_the_cache_keeps_the_recently_used_within_its_budget() -> None:
    def item(n: int) -> windows.TermWindows:
        return windows.TermWindows(np.zeros(n + 1, dtype=np.int32), np.zeros(n, dtype=np.float32))

    one = item(9).nbytes  # 40 + 36 bytes
    cache = windows.WindowCache(budget=3 * one)
    for key in range(3):
        cache.put(key, item(9))
    assert cache.get(0) is not None  # 0 is now the most recently used
    cache.put(3, item(9))  # over budget: 1, the least recently used, goes
    assert cache.get(1) is None and all(cache.get(k) is not None for k in (0, 2, 3))
    cache.put(4, item(1000))  # larger than the whole budget: not kept, nothing evicted for it
    assert cache.get(4) is None and len(cache) == 3
    cache.clear()
    assert len(cache) == 0 and cache.get(0) is None
