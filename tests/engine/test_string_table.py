"""The term and id dictionaries (`StringTable`): lookups against bisection over a plain sorted list.

Entries share one blob with no separators, so a key also occurs inside and across entries; the
small alphabet below makes that the common case, not the exception."""

from __future__ import annotations

import bisect

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from sieve.engine.format.strings import StringTable

keys = st.binary(min_size=0, max_size=6).map(lambda b: bytes(0x61 + x % 3 for x in b))  # a, b, c


def _table(entries: list[bytes], dtype: type = np.uint32) -> StringTable:
    off = np.zeros(len(entries) + 1, dtype=dtype)
    off[1:] = np.cumsum([len(e) for e in entries])
    return StringTable(np.frombuffer(b"".join(entries), dtype=np.uint8), off)


@settings(max_examples=300, deadline=None)
@given(st.lists(keys, max_size=300, unique=True), st.lists(keys, max_size=40), st.sampled_from([np.uint32, np.int64]))
def test_lookups_match_a_sorted_list(entries: list[bytes], probes: list[bytes], dtype: type) -> None:
    entries.sort()
    table = _table(entries, dtype)
    assert len(table) == len(entries) and list(table) == entries
    for key in probes + entries[::7]:
        assert table.find(key) == (entries.index(key) if key in entries else -1), key
        assert table._bisect(key) == bisect.bisect_left(entries, key), key
        lo, hi = table.prefix_range(key)
        assert entries[lo:hi] == [e for e in entries if e.startswith(key)], key


def test_an_empty_table_finds_nothing() -> None:
    table = _table([])
    assert len(table) == 0 and table.find(b"a") == -1 and table.prefix_range(b"a") == (0, 0)
