"""Postings' masks and counts (format 9: coded together in a byte, rare triples aside) read back exactly."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sieve.engine import attributes, storage

COUNT = st.one_of(st.integers(0, 3), st.integers(0, 300), st.integers(0, 2**31))


def _open(folder: Path, entries: dict[str, dict[str, int]]) -> attributes.Attributes:
    assert sorted(entries) == sorted(attributes.CODED_FILES)
    a = attributes.Attributes({name: storage.open_array(folder / name, name, entry) for name, entry in entries.items()})
    assert a.agree()
    return a


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 63), COUNT, COUNT), max_size=120), st.integers(1, 4), st.integers(0, 300), st.data())
def test_every_read_gives_what_was_written(tmp_path_factory: pytest.TempPathFactory, triples: list[tuple[int, int, int]],
                                           pieces: int, common: int, data: st.DataObject) -> None:
    """Masks, tf (the larger count of a pair) and ttf (the smaller), a share of them one triple
    repeated `common` times (so the table has a most frequent entry), written in `pieces` appends
    as a spilled build merges its runs; read by slices, by selections and by field sets."""
    triples = triples + [(4, 1, 1)] * common
    np.random.default_rng(len(triples)).shuffle(triples)  # type: ignore[arg-type]
    mask = np.array([t[0] for t in triples], dtype=np.uint8)
    tf = np.array([max(t[1:]) for t in triples], dtype=np.int64)
    ttf = np.array([min(t[1:]) for t in triples], dtype=np.int64)
    folder = tmp_path_factory.mktemp("attrs")
    w = attributes.AttributesWriter(folder, attributes.table_of(*attributes.merge([attributes.histogram(mask[i::2], tf[i::2], ttf[i::2]) for i in range(2)])))
    cuts = np.linspace(0, len(tf), pieces + 1).astype(int)
    for a, b in zip(cuts[:-1], cuts[1:]):
        w.append(mask[a:b], tf[a:b], ttf[a:b])
    got = _open(folder, w.close())
    assert len(got) == len(tf)
    if common > len(triples) // 2:
        assert np.asarray(got.codes[: len(tf)])[mask == 4].tolist().count(0) >= common  # the most frequent triple is code 0
    for _ in range(5):
        lo = data.draw(st.integers(0, len(tf)))
        hi = data.draw(st.integers(lo, len(tf)))
        fields = data.draw(st.integers(1, 63))
        assert got.masks(lo, hi).tolist() == mask[lo:hi].tolist()
        assert got.meets(lo, hi, fields).tolist() == ((mask[lo:hi] & fields) != 0).tolist()
        assert got.tf(lo, hi).tolist() == tf[lo:hi].tolist() and got.text_tf(lo, hi).tolist() == ttf[lo:hi].tolist()
        sel = np.unique(np.asarray(data.draw(st.lists(st.integers(0, max(hi - lo - 1, 0)), max_size=10)), dtype=np.int64)) if hi > lo else np.zeros(0, np.int64)
        assert got.tf(lo, hi, sel).tolist() == tf[lo + sel].tolist() and got.text_tf(lo, hi, sel).tolist() == ttf[lo + sel].tolist()


def test_the_table_holds_the_255_most_frequent_triples(tmp_path: Path) -> None:
    # Triple i (mask 4, tf i, ttf i) occurs 400 - i times: the 255 most frequent are i = 0..254.
    counts = np.arange(400, 0, -1)
    tf = np.repeat(np.arange(400), counts)
    mask = np.full(len(tf), 4, dtype=np.uint8)
    table = attributes.table_of(*attributes.histogram(mask, tf, tf))
    assert len(table) == 255
    got = _open(tmp_path, attributes.write(tmp_path, mask, tf, tf))
    codes = np.asarray(got.codes[: len(tf)])
    assert codes.max() == attributes.ESCAPE and np.array_equal(codes[tf < 255], tf[tf < 255]) and (codes[tf >= 255] == attributes.ESCAPE).all()
    assert len(got.big[0]) == int(counts[255:].sum()) and got.tf(0, len(tf)).tolist() == tf.tolist()


def test_a_text_count_above_the_count_is_refused(tmp_path: Path) -> None:
    w = attributes.AttributesWriter(tmp_path, np.zeros(0, dtype=np.int64))
    with pytest.raises(ValueError, match="exceeds"):
        w.append(np.array([4], dtype=np.uint8), np.array([2]), np.array([3]))
