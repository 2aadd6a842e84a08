"""The document store's block compression (sieve.engine.format.store): any byte range of a stream reads
back exactly, whatever blocks it spans; a block table or block that disagrees is damage."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sieve.engine.format import storage
from sieve.engine.format.store import SHIFTS, BlockReader, BlockWriter
from sieve.errors import IndexDamagedError

SHIFT = SHIFTS["store.text"]
BLOCK = 1 << SHIFT


def _write(tmp: Path, records: list[bytes]) -> BlockReader:
    w = BlockWriter(tmp, "store.text")
    for rec in records:
        w.append(rec)
    entries = w.close()
    blob = storage.open_array(tmp / "store.text.sva", "s.sva", entries["store.text.sva"])
    starts = storage.open_array(tmp / "store.text.blocks.sva", "s.blocks.sva", entries["store.text.blocks.sva"]).whole()
    return BlockReader(blob, starts, sum(map(len, records)), "s.sva", SHIFT)


_RECORD = st.one_of(st.binary(max_size=40), st.integers(0, 3 * BLOCK).map(lambda n: (b"sieve %d " % n * n)[:n]))


@settings(max_examples=60, deadline=None)
@given(st.lists(_RECORD, max_size=30), st.data())
def test_every_range_reads_back(tmp_path_factory: pytest.TempPathFactory, records: list[bytes], data: st.DataObject) -> None:
    tmp = tmp_path_factory.mktemp("store")
    reader = _write(tmp, records)
    whole = b"".join(records)
    assert len(reader.starts) - 1 == -(-len(whole) // BLOCK)
    at = 0
    for rec in records:  # each record where its offsets say
        assert reader.read(at, at + len(rec)) == rec
        at += len(rec)
    for _ in range(5):  # and arbitrary ranges, across block edges
        a = data.draw(st.integers(0, len(whole)))
        b = data.draw(st.integers(a, len(whole)))
        assert reader.read(a, b) == whole[a:b]


def test_compresses_text(tmp_path: Path) -> None:
    text = b"".join(b"the open() call returns a file descriptor %d\n" % i for i in range(5000))
    reader = _write(tmp_path, [text])
    assert len(reader.blob) * 3 < len(text)


def test_disagreements_are_damage(tmp_path: Path) -> None:
    reader = _write(tmp_path, [b"x" * (BLOCK + 10)])
    with pytest.raises(IndexDamagedError, match="block table disagrees"):
        BlockReader(reader.blob, reader.starts, BLOCK * 5, "s.sva", SHIFT)  # offsets claim more blocks than stored
    swapped = np.array([0, len(reader.blob) - int(reader.starts[1]), len(reader.blob)], dtype=np.int64)
    bad = BlockReader(reader.blob, swapped, BLOCK + 10, "s.sva", SHIFT)  # the first block cut at the wrong byte
    with pytest.raises(IndexDamagedError, match="s.sva: block 0 does not decompress"):
        bad.read(0, 5)
    with pytest.raises(IndexDamagedError, match="outside the stream"):
        reader.read(5, BLOCK * 3)


def test_waits_for_the_helper_when_far_ahead(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # With a tiny allowance every append waits for the blocks before it: the stream is still whole and in order.
    monkeypatch.setattr(BlockWriter, "AHEAD_BYTES", 1)
    records = [(b"record %d " % i) * (i % 300) for i in range(400)]
    reader = _write(tmp_path, records)
    assert reader.read(0, sum(map(len, records))) == b"".join(records)


def test_a_failed_block_fails_the_build(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # An error on the helper thread reaches the builder (at an append or at close), never a store with a hole.
    from sieve.engine.format import store

    def broken(raw: bytes) -> bytes:
        raise OSError("disk full")

    monkeypatch.setattr(store, "compress", broken)
    w = BlockWriter(tmp_path, "store.text")
    with pytest.raises(OSError, match="disk full"):
        for _ in range(8):
            w.append(b"x" * BLOCK)
        w.close()
