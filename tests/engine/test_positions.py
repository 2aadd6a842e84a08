"""Positions in packed blocks (format 9) against the raw lists they encode.

Every read a query makes (a whole term, the blocks covering some ranges, some positions by number,
several terms at once) must give what the raw list gives: exactly, for `all`, `at` and
`of_terms`; for `covering`, an ascending superset holding every position in the ranges and only
positions of the term. The lists are drawn with gaps for every row table (8, 12, 16 and 32 bits)
and for exceptions (differences too large for the block's table, 64-bit ones included). Formats 5
to 8's whole-width tables are read by tests/engine/test_segments.py's older segments.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sieve.engine.format import storage
from sieve.engine.format.position_blocks import BlockPositions
from sieve.engine.format.positions import BLOCK, EXCEPTION_FILES, PACKED_BITS, PACKED_FILES, PACKED_FILES_ROWS, RANGE_BITS, PositionsWriter, RawPositions, any_in_bitmap, bitmap, encode, in_bitmap

GAPS = st.one_of(st.integers(1, 3), st.integers(1, 255), st.integers(256, 70_000), st.integers(70_000, 2**33))


@st.composite
def term_lists(draw: st.DrawFn, big: bool = False) -> list[list[int]]:
    """Ascending position lists, one per term: sizes around the block edges."""
    sizes = draw(st.lists(st.sampled_from([0, 1, 2, 127, 128, 129, 255, 256, 257, 300, 640, 1100, 2000]), min_size=1, max_size=6))
    out = []
    for n in sizes:
        gap = draw(GAPS) if big else draw(st.integers(1, 300))
        start = draw(st.integers(0, 1000))
        steps = np.random.default_rng(draw(st.integers(0, 2**32 - 1))).integers(1, gap + 1, size=n)
        out.append((start + np.cumsum(steps)).tolist())
    return out


def _blocks(lists: list[list[int]], dtype: type, tmp: Path, chunks: int = 1) -> tuple[BlockPositions, RawPositions]:
    """Write the lists with PositionsWriter (in `chunks` appends, as a spilled build does) and open them."""
    counts = np.array([len(x) for x in lists], dtype=np.int64)
    values = np.array([v for x in lists for v in x], dtype=np.int64)
    ptr = np.zeros(len(lists) + 1, dtype=np.int64)
    np.cumsum(counts, out=ptr[1:])
    w = PositionsWriter(tmp, dtype, int(values.max(initial=0)) + 1)
    cuts = np.linspace(0, len(lists), chunks + 1).astype(int)
    for a, b in zip(cuts[:-1], cuts[1:]):
        w.append(values[ptr[a] : ptr[b]], counts[a:b])
    entries = w.close()
    assert sorted(entries) == sorted(PACKED_FILES)
    arrays = {name: storage.open_array(tmp / name, name, entries[name], verify=True).whole() for name in PACKED_FILES}
    blocks = BlockPositions(ptr, arrays["pos.blocks.ptr.sva"], arrays["pos.first.sva"], arrays["pos.dir.sva"],
                            tuple(arrays[n] for n in PACKED_FILES_ROWS), arrays["pos.tail.sva"], positions=len(values),
                            exceptions=tuple(arrays[n] for n in EXCEPTION_FILES))  # type: ignore[arg-type]
    return blocks, RawPositions(ptr, values.astype(dtype))


@settings(max_examples=150, deadline=None)
@given(term_lists(big=True), st.integers(1, 3), st.sampled_from(["partial", "whole", "kept"]), st.data())
def test_every_read_gives_the_raw_lists(tmp_path_factory: pytest.TempPathFactory, lists: list[list[int]], chunks: int, mode: str, data: st.DataObject) -> None:
    """`partial`: every read decodes only the blocks it needs; `whole`: every read decodes whole
    lists (nothing kept); `kept`: the default, whole lists kept once decoded."""
    blocks, raw = _blocks(lists, np.uint64, tmp_path_factory.mktemp("pos"), chunks)
    # Blocks decoded transposed as by default, always or never.
    blocks.TRANSPOSED_MIN, blocks.TRANSPOSED = data.draw(st.sampled_from([(8, 1024), (0, 10**9), (10**9, 0)]))
    if mode != "kept":
        blocks.budget = 0
        blocks.WHOLE_SHARE = 0 if mode == "partial" else 10**9
        blocks.WHOLE_BLOCKS = -1 if mode == "partial" else 10**9
        if mode == "partial":
            blocks._again = lambda *_: False  # type: ignore[method-assign]  # not even a second read decodes it whole
    for t, values in enumerate(lists):
        whole = raw.all(t)
        if not values:
            assert len(blocks.all(t)) == 0
            continue
        if data.draw(st.booleans()):  # reads before and after the whole list was decoded (and maybe kept)
            assert blocks.all(t).dtype == np.uint64 and np.array_equal(blocks.all(t), whole)
        idx = np.unique(np.asarray(data.draw(st.lists(st.integers(0, len(values) - 1), max_size=20)), dtype=np.int64))
        assert np.array_equal(blocks.at(t, idx), whole[idx])
        lo = np.asarray(data.draw(st.lists(st.integers(-5, values[-1] + 5), min_size=1, max_size=8)), dtype=np.int64)
        hi = lo + np.asarray(data.draw(st.lists(st.integers(-2, 2**20), min_size=len(lo), max_size=len(lo))), dtype=np.int64)
        got = blocks.covering(t, lo, hi)
        w = whole.astype(np.int64)
        assert np.all(np.diff(got.astype(np.int64)) > 0) and np.isin(got, whole).all()
        wanted = w[((w[:, None] >= lo[None, :]) & (w[:, None] <= hi[None, :])).any(axis=1)]
        assert np.isin(wanted, got).all()
        assert np.array_equal(blocks.all(t), whole)
    for lo_t in range(len(lists)):
        for hi_t in range(lo_t, len(lists) + 1):
            assert sorted(blocks.of_terms(lo_t, hi_t).tolist()) == sorted(raw.of_terms(lo_t, hi_t).tolist())


@settings(max_examples=60, deadline=None)
@given(term_lists())
def test_u32_positions_and_the_row_tables(tmp_path_factory: pytest.TempPathFactory, lists: list[list[int]]) -> None:
    blocks, raw = _blocks(lists, np.uint32, tmp_path_factory.mktemp("pos"))
    counts = [len(x) for x in lists]
    assert len(blocks.first) == sum(n // BLOCK for n in counts) and len(blocks.tail) == sum(n % BLOCK for n in counts)
    for t in range(len(lists)):
        assert blocks.all(t).dtype == np.uint32 and np.array_equal(blocks.all(t), raw.all(t))


def test_each_block_takes_the_table_of_fewest_bytes() -> None:
    """Gaps of 1, 256 (12 bits), 5000 and 70,000 (beyond 16 bits: the 32-bit table), and blocks
    whose few large gaps are cheaper as exceptions than as a wider table."""
    few_wide = np.cumsum([0] + [300 if i in (10, 50, 90) else 1 for i in range(127)]).tolist()  # three gaps of 300: exceptions
    one_jump = list(range(100)) + list(range(70_000, 70_028))  # one gap of 69,901: an exception in the 8-bit table
    lists = [list(range(1, 129)), list(range(0, 256 * 128, 256)), list(range(0, 5000 * 128, 5000)),
             list(range(0, 70_000 * 128, 70_000)), few_wide, one_jump, [0, 2**33] + list(range(2**33 + 1, 2**33 + 127))]
    e = encode(np.concatenate([np.asarray(x) for x in lists]), np.array([len(x) for x in lists]))
    assert [PACKED_BITS[t] for t in (e.dir & 3).tolist()] == [8, 12, 16, 32, 8, 8, 8]
    assert e.exceptions.tolist() == [0, 0, 0, 0, 3, 1, 1] and e.exc_at.tolist() == [10, 50, 90, 99, 0]
    assert e.exc_val.tolist() == [300, 300, 300, 69_901, 2**33]
    assert [len(r) for r in e.rows] == [4, 1, 1, 1] and e.first.tolist() == [1, 0, 0, 0, 0, 0, 0] and len(e.tail) == 0


def test_positions_that_descend_are_refused() -> None:
    with pytest.raises(ValueError, match="ascend"):
        encode(np.array(list(range(127)) + [5]), np.array([128]))


def test_kept_lists_stay_within_their_bytes(tmp_path: Path) -> None:
    lists = [list(range(i, i + 1000 * (i + 1), i + 1)) for i in range(7)] + [list(range(3000))]  # 8 KB each as u64, the last 24 KB
    blocks, raw = _blocks(lists, np.uint64, tmp_path)
    assert blocks.budget == 10_000 * 8 // 2  # half of the positions' raw bytes
    blocks.budget = 40_000  # five lists of 8 KB; one over half of it is never kept
    for t in [0, 1, 2, 3, 4, 5, 0, 6]:
        got = blocks.all(t)
        assert np.array_equal(got, raw.all(t)) and not got.flags.writeable
        assert blocks._kept_bytes <= blocks.budget
    assert list(blocks._kept) == [3, 4, 5, 0, 6]  # least recently used out first
    assert np.array_equal(blocks.all(7), raw.all(7)) and 7 not in blocks._kept


def test_a_second_partial_read_keeps_the_list_only_if_it_fits(tmp_path: Path) -> None:
    lists = [list(range(0, 100 * BLOCK * 3, 3))]  # 100 blocks: read in part at first
    target = np.array([300], dtype=np.uint64)
    (tmp_path / "a").mkdir(), (tmp_path / "b").mkdir()
    blocks, raw = _blocks(lists, np.uint64, tmp_path / "a")
    blocks.budget = 10**9
    got = blocks.covering(0, target, target)
    assert 0 not in blocks._kept and len(got) == BLOCK and 300 in got
    assert np.array_equal(blocks.covering(0, target, target), raw.all(0)) and 0 in blocks._kept
    small, _ = _blocks(lists, np.uint64, tmp_path / "b")
    small.budget = 1000  # the list is 100 KB: never kept, so never decoded whole for one position
    for _ in range(3):
        assert len(small.covering(0, target, target)) == BLOCK
    assert not small._kept


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(0, 5000), max_size=300), st.lists(st.integers(0, 5100), max_size=300), st.sampled_from([np.uint32, np.uint64]))
def test_a_bitmap_holds_exactly_its_positions(values: list[int], targets: list[int], dtype: type) -> None:
    positions = np.unique(np.asarray(values, dtype=dtype))
    target = np.unique(np.asarray(targets, dtype=dtype))  # some past the last position
    bits = bitmap(positions)
    assert bits.dtype == np.uint8 and len(bits) == (int(positions[-1]) // 8 + 1 if len(positions) else 0) + 8
    got = in_bitmap(bits, target)
    assert got.dtype == dtype and np.array_equal(got, target[np.isin(target, positions)])


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(0, 3000), max_size=200), st.lists(st.tuples(st.integers(0, 3100), st.integers(-3, RANGE_BITS)), min_size=1, max_size=100))
def test_a_bitmap_tells_whether_a_range_holds_a_position(values: list[int], ranges: list[tuple[int, int]]) -> None:
    """Ranges of up to RANGE_BITS positions (and empty ones), some past the last position."""
    positions = np.unique(np.asarray(values, dtype=np.uint32))
    lo = np.asarray([a for a, _ in ranges], dtype=np.int64)
    width = np.asarray([max(w, 0) for _, w in ranges], dtype=np.int64)
    want = [bool(((positions >= a) & (positions < a + w)).any()) for a, w in zip(lo.tolist(), width.tolist())]
    bits = bitmap(positions)
    assert any_in_bitmap(bits, lo, width).tolist() == want
    for w in (0, 1, 7, RANGE_BITS):  # one width for all
        assert any_in_bitmap(bits, lo, w).tolist() == [bool(((positions >= a) & (positions < a + w)).any()) for a in lo.tolist()]


@settings(max_examples=80, deadline=None)
@given(st.booleans(), st.sampled_from([0, BlockPositions.BITMAP_SHARE, 10**9]), st.data())
def test_present_is_the_intersection_with_or_without_a_bitmap(tmp_path_factory: pytest.TempPathFactory, big: bool, share: int, data: st.DataObject) -> None:
    """`present` (a phrase's lookup of its later words) gives the targets that are positions of the
    term, whether it merges them with the list (or the blocks that can hold them) or tests a bitmap
    made at a later lookup of a frequent word; a bitmap too large for the budget or the share is
    not made (`big`: gaps up to 2**33, which would make bitmaps of gigabytes)."""
    lists = data.draw(term_lists(big=big))
    blocks, raw = _blocks(lists, np.uint64 if big else np.uint32, tmp_path_factory.mktemp("pos"))
    blocks.BITMAP_SHARE, blocks.budget, blocks.map_budget = share, 4 << 20, 2 << 20
    for t, values in enumerate(lists):
        whole = raw.all(t)
        for _ in range(3):
            top = (values[-1] if values else 0) + 300
            target = np.unique(np.asarray(data.draw(st.lists(st.integers(0, top), max_size=300)), dtype=whole.dtype))
            if data.draw(st.booleans()) and len(values):
                target = np.union1d(target, whole[:: data.draw(st.integers(1, 7))])  # many hits
            got = blocks.present(t, target)
            assert got.dtype == whole.dtype and np.array_equal(got, np.intersect1d(target, whole))
    assert blocks._kept_bytes <= blocks.budget and blocks._maps_bytes <= blocks.map_budget
    if share == 0:
        assert not blocks._maps


def test_a_bitmap_is_made_at_the_second_many_target_lookup(tmp_path: Path) -> None:
    lists = [list(range(0, 3000, 3)), list(range(1, 3000, 2))]
    blocks, raw = _blocks(lists, np.uint32, tmp_path)
    blocks.budget = blocks.map_budget = 1 << 20
    target = np.arange(0, 3000, 5, dtype=np.uint32)  # 600 targets: many, next to 1,000 positions
    want = np.intersect1d(target, raw.all(0))
    assert np.array_equal(blocks.present(0, target), want) and 0 not in blocks._maps  # first read: the list only
    assert 0 in blocks._kept
    assert np.array_equal(blocks.present(0, target), want) and 0 in blocks._maps
    assert blocks._maps[0].nbytes == 2997 // 8 + 1 + 8 and not blocks._maps[0].flags.writeable
    few = np.array([3, 4, 2997], dtype=np.uint32)  # a kept bitmap serves few targets too
    assert np.array_equal(blocks.present(0, few), [3, 2997])
    assert blocks._maps_bytes == blocks._maps[0].nbytes
    blocks.BITMAP_SHARE = 0  # a rarer word than the share allows: merged, no bitmap
    for _ in range(2):
        assert np.array_equal(blocks.present(1, target), np.intersect1d(target, raw.all(1)))
    assert 1 not in blocks._maps


def test_bitmaps_stay_within_their_bytes(tmp_path: Path) -> None:
    """Each word's bitmap is 383 bytes here; room for two: the least recently used goes first,
    and the lists are kept apart from them (in their own budget)."""
    lists = [list(range(i, 3000, 3)) for i in range(3)]
    blocks, raw = _blocks(lists, np.uint32, tmp_path)
    blocks.budget, blocks.map_budget = 1 << 20, 800
    target = np.arange(0, 3000, 2, dtype=np.uint32)
    for t in [0, 0, 1, 1, 0, 2, 2]:
        assert np.array_equal(blocks.present(t, target), np.intersect1d(target, raw.all(t)))
        assert blocks._maps_bytes == sum(b.nbytes for b in blocks._maps.values()) <= blocks.map_budget
    assert list(blocks._maps) == [0, 2] and list(blocks._kept) == [0, 1, 2]
