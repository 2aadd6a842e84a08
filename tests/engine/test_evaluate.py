"""Helpers of the evaluator checked against numpy's own set operations."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from sieve.engine.format.positions import common

_lists = st.lists(st.integers(0, 2**32 - 1), max_size=300).map(lambda xs: np.unique(np.array(xs, dtype=np.uint32)))


@settings(max_examples=300, deadline=None)
@given(a=_lists, b=_lists, dense=st.booleans())
def test_common_is_the_intersection(a: np.ndarray, b: np.ndarray, dense: bool) -> None:
    """Both ways (binary searches for a short list against a long one, merging for comparable
    lengths) give exactly the values in both lists, ascending, in their dtype."""
    if dense:  # lists drawn from a narrow range share many values
        a, b = np.unique(a % 512), np.unique(b % 512)
    got = common(a, b)
    assert got.dtype == a.dtype and np.array_equal(got, np.intersect1d(a, b, assume_unique=True))
    assert np.array_equal(common(b, a), got)


def test_common_takes_each_way() -> None:
    rng = np.random.default_rng(5)
    many = np.unique(rng.integers(0, 10**6, 20_000)).astype(np.uint32)
    few = np.unique(np.concatenate([many[::500], rng.integers(0, 10**6, 30).astype(np.uint32)]))
    same = np.unique(np.concatenate([many[::3], rng.integers(0, 10**6, 5_000).astype(np.uint32)]))
    for other in (few, same):  # 40 against 20,000 (searched), 11,600 against 20,000 (merged)
        assert np.array_equal(common(many, other), np.intersect1d(many, other))


def test_phrase_matches_find_their_documents_past_empty_ones(tmp_path) -> None:  # type: ignore[no-untyped-def]
    # Documents with no text (no unit, no position) before, between and after the others: every
    # match's document is found from its position, with or without a scope.
    import sieve

    recs = [{"id": "e0"}, {"id": "a", "title": "red fox", "text": "the red fox runs"}, {"id": "e1"}, {"id": "e2", "title": ""},
            {"id": "b", "text": "a red fox and a red hen"}, {"id": "c", "title": "hen", "author": "red fox"}, {"id": "e3"}]
    index = sieve.build_index(recs, tmp_path / "ix")
    reader = index.segments[0].reader
    assert index.match('"red fox"').ids == ["a", "b", "c"]
    assert index.match('"red fox"[title,section,body]').ids == ["a", "b"]
    assert index.match('"red hen"').ids == ["b"]
    assert index.match("NEAR/2(fox, runs)").ids == ["a"]
    fox = reader.positions(reader.term_id("fox"))
    assert [index.reader.doc_id(d) for d in reader.docs_of_units(reader.units_of(fox)).tolist()] == ["a", "a", "b", "c"]


def test_near_and_phrases_through_a_bitmap_stay_within_units(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """A frequent word's bitmap (made at its second heavy lookup) answers NEAR and phrases as its
    list did: a neighbour across a unit's end (title to heading, heading to text, text to the next
    section, author to author) is not near; one at the edge of the distance is; the first
    positions of the segment (windows cut at 0) too."""
    import sieve

    filler = " ".join(["z"] * 40)
    recs = [
        {"id": "edge", "title": "y x", "text": f"z z z y {filler}"},  # at the segment's first positions
        {"id": "cross", "title": "a b x", "sections": [{"heading": "y c", "text": f"{filler} x"}, {"heading": "y", "text": "q"}]},
        {"id": "in", "text": f"x z z y {filler} y x"},  # y three after x, and y right before x
        {"id": "far", "text": f"x z z z y {filler}"},  # four apart: near only at 4
        {"id": "authors", "title": "t", "author": ["w x", "y w"]},
        {"id": "xs", "text": " ".join(["x"] * 12) + " " + filler},  # enough x for a heavy lookup of y
    ] + [{"id": f"f{i}", "text": " ".join(["y"] * 12) + " " + filler} for i in range(12)]  # y frequent (a block and more), x not
    index = sieve.build_index(recs, tmp_path / "ix")
    pos = index.segments[0].reader.pos
    want = {1: ["edge", "in"], 3: ["edge", "in"], 4: ["edge", "in", "far"]}
    for _ in range(3):  # the first reads decode y's list, a later one makes its bitmap
        for n, ids in want.items():
            assert index.match(f"NEAR/{n}(x, y)").ids == ids
        assert index.match('"y x"').ids == ["edge", "in"] and index.match('"x y"').ids == []
    assert pos._maps  # the bitmap answered the last round
