"""Speedups that must not change what is computed: the CRC-32 implementation that verifies array blocks."""

from __future__ import annotations

import zlib

from hypothesis import given, settings
from hypothesis import strategies as st

from sieve.engine.format import storage


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=70_000), st.integers(min_value=0, max_value=2**32 - 1))
def test_block_checksums_are_zlibs_crc32(data: bytes, start: int) -> None:
    """Files written by one implementation verify under the other: it is the same function."""
    assert storage.crc32(data) == zlib.crc32(data)
    assert storage.crc32(data, start) == zlib.crc32(data, start)
    view = memoryview(data)[len(data) // 3 :]
    assert storage.crc32(view) == zlib.crc32(view)


def test_a_gather_reads_verified_blocks_plainly_and_still_finds_damage(tmp_path, monkeypatch) -> None:
    """A gather from a large file tests its rows' blocks; once every block between its smallest
    and largest row is verified it reads plainly. A gather that reaches a damaged block, even with
    verified blocks around it, raises before any value comes back."""
    import numpy as np
    import pytest

    from sieve.errors import IndexDamagedError

    monkeypatch.setattr(storage, "GATHER_WHOLE_BYTES", 0)  # test blocks, never the whole file
    values = np.arange(1 << 20, dtype=np.uint32)  # 4 MiB: 256 blocks of 16 KiB
    path = tmp_path / "a.sva"
    entry = storage.write_array(path, values)
    per_block = (1 << storage.BLOCK_SHIFT) // 4
    raw = bytearray(path.read_bytes())
    raw[storage.HEADER_SIZE + 200 * per_block * 4 + 5] ^= 0x10  # a byte of block 200
    path.write_bytes(bytes(raw))
    a = storage.open_array(path, "a.sva", {**entry})
    low = np.arange(0, 10 * per_block, 37)
    assert np.array_equal(a[low], values[low])  # blocks 0..9 verified by the per-row test
    assert np.array_equal(a[low[::-1]], values[low[::-1]])  # then read plainly, in any order
    assert a._all_verified(0, 10 * per_block - 1) and not a._all_verified(0, 10 * per_block)
    with pytest.raises(IndexDamagedError):
        a[np.array([5, 200 * per_block + 1, 9 * per_block])]
    with pytest.raises(IndexDamagedError):
        a[np.arange(0, 256 * per_block, per_block)]
    assert np.array_equal(a[np.array([-1, 3])], values[[-1, 3]])  # negative rows take the per-row test
