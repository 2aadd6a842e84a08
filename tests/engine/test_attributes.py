"""Postings' masks and counts (format 9: tf and ttf in one byte, large ones aside) read back exactly."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sieve.engine.format import attributes, storage

COUNT = st.one_of(st.integers(0, 3), st.integers(0, 20), st.integers(0, 300), st.integers(0, 2**31))


def _open(folder: Path, entries: dict[str, dict[str, int]]) -> attributes.Attributes:
    assert sorted(entries) == sorted(attributes.PACKED_FILES)
    a = attributes.Attributes({name: storage.open_array(folder / name, name, entry) for name, entry in entries.items()})
    assert a.agree()
    return a


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 63), COUNT, COUNT), max_size=80), st.integers(1, 4), st.data())
def test_every_read_gives_what_was_written(tmp_path_factory: pytest.TempPathFactory, triples: list[tuple[int, int, int]],
                                           pieces: int, data: st.DataObject) -> None:
    """Masks, tf (the larger count of a pair) and ttf (the smaller), written in `pieces` appends
    (as a spilled build merges its runs), read by slices, by selections and by field sets."""
    mask = np.array([t[0] for t in triples], dtype=np.uint8)
    tf = np.array([max(t[1:]) for t in triples], dtype=np.int64)
    ttf = np.array([min(t[1:]) for t in triples], dtype=np.int64)
    folder = tmp_path_factory.mktemp("attrs")
    w = attributes.AttributesWriter(folder)
    cuts = np.linspace(0, len(tf), pieces + 1).astype(int)
    for a, b in zip(cuts[:-1], cuts[1:]):
        w.append(mask[a:b], tf[a:b], ttf[a:b])
    got = _open(folder, w.close())
    assert len(got) == len(tf)
    for _ in range(5):
        lo = data.draw(st.integers(0, len(tf)))
        hi = data.draw(st.integers(lo, len(tf)))
        fields = data.draw(st.integers(1, 63))
        assert got.masks(lo, hi).tolist() == mask[lo:hi].tolist()
        assert got.meets(lo, hi, fields).tolist() == ((mask[lo:hi] & fields) != 0).tolist()
        assert got.tf(lo, hi).tolist() == tf[lo:hi].tolist() and got.text_tf(lo, hi).tolist() == ttf[lo:hi].tolist()
        sel = np.unique(np.asarray(data.draw(st.lists(st.integers(0, max(hi - lo - 1, 0)), max_size=10)), dtype=np.int64)) if hi > lo else np.zeros(0, np.int64)
        assert got.tf(lo, hi, sel).tolist() == tf[lo + sel].tolist() and got.text_tf(lo, hi, sel).tolist() == ttf[lo + sel].tolist()


def test_small_counts_take_one_byte_and_no_side_list(tmp_path: Path) -> None:
    tf, ttf = np.array([1, 14, 37, 31, 40, 3]), np.array([1, 8, 30, 31, 30, 3])
    byte, (tf_at, tf_val), (ttf_at, ttf_val) = attributes.pack(tf, ttf)
    # 8 + 6; 30 + 7 (tf - ttf is 7: aside); 31 + 0 (ttf 31: aside, and so is tf); 30 + 10 (aside)
    assert (byte & 31).tolist() == [1, 8, 30, 31, 30, 3] and (byte >> 5).tolist() == [0, 6, 7, 0, 7, 0]
    assert tf_at.tolist() == [2, 3, 4] and tf_val.tolist() == [37, 31, 40] and ttf_at.tolist() == [3] and ttf_val.tolist() == [31]
    got = _open(tmp_path, attributes.write(tmp_path, np.full(6, 4, dtype=np.uint8), tf, ttf))
    assert got.tf(0, 6).tolist() == tf.tolist() and got.text_tf(0, 6).tolist() == ttf.tolist()


def test_a_text_count_above_the_count_is_refused() -> None:
    with pytest.raises(ValueError, match="exceeds"):
        attributes.pack(np.array([2]), np.array([3]))
