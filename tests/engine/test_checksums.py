"""Speedups that must not change what is computed: the CRC-32 implementation that verifies array blocks."""

from __future__ import annotations

import zlib

from hypothesis import given, settings
from hypothesis import strategies as st

from sieve.engine import storage


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=70_000), st.integers(min_value=0, max_value=2**32 - 1))
def test_block_checksums_are_zlibs_crc32(data: bytes, start: int) -> None:
    """Files written by one implementation verify under the other: it is the same function."""
    assert storage.crc32(data) == zlib.crc32(data)
    assert storage.crc32(data, start) == zlib.crc32(data, start)
    view = memoryview(data)[len(data) // 3 :]
    assert storage.crc32(view) == zlib.crc32(view)
