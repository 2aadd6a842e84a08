"""`NEAR/n(a, b)`: both words at most n positions apart, in either order, inside one unit."""

from __future__ import annotations

from typing import Any

import numpy as np

from sieve.engine.analysis.analyzers import STOP
from sieve.engine.format import bitset
from sieve.engine.format.positions import RANGE_BITS, any_in_bitmap
from sieve.engine.query.bql import ast
from sieve.engine.query.ops.base import LeafOp, LeafPlan, PlanNode, Resolver, positions_in_doc
from sieve.engine.query.ops.boolean import and_of
from sieve.engine.query.ops.term import term_leaf
from sieve.engine.segment.reader import SegmentReader, search_sorted


class NearOp(LeafOp):
    name = "near"
    nodes = (ast.Near,)
    positional = True

    def leaf(self, b: Resolver, node: Any) -> LeafPlan:
        terms, mask, declared = b.analysed(node, _pair)
        tids = b.ids(terms)
        volume = 0 if min(tids) < 0 else sum(b.r.position_count(t) for t in set(tids))
        return LeafPlan(
            node,
            NEAR,
            terms,
            tids,
            mask=mask,
            distance=node.distance,
            volume=volume,
            text=f"{node.left} {node.right}",
            declared=declared,
        )

    def match(self, ev: Any, leaf: LeafPlan, cands: np.ndarray | None) -> np.ndarray:
        if leaf.unknown:
            return bitset.empty(ev.n)
        r, n, fmask = ev.r, leaf.distance, leaf.mask
        ta, tb = leaf.tids[0], leaf.tids[1]
        if ta == tb:
            pa = ev.positions(ta, cands)
            close = np.flatnonzero(np.diff(pa.astype(np.int64)) <= n)
            units = r.units_of(pa[close])
            same = r.in_units(units, pa[close + 1])
            return ev.docs_of(pa[close[same]], fmask, units[same])
        if r.position_count(ta) > r.position_count(tb):  # search the shorter list in the longer one
            ta, tb = tb, ta
        pa = ev.positions(ta, cands)
        if not len(pa):
            return bitset.empty(ev.n)
        wide = pa.astype(np.int64)
        bits = r.pos.bitmap_of(tb, len(pa)) if 2 * n + 1 <= RANGE_BITS else None
        if (
            bits is not None
        ):  # a frequent longer word: the bits within n of each position, read at once
            # (a window cut at position 0 reads a few bits too many: the test within units
            # below is exact)
            near = any_in_bitmap(bits, np.maximum(wide - n, 0), 2 * n + 1)
            wide = wide[near]
            units = r.units_of(pa[near])
            lo = np.maximum(wide - n, r.unit_start[units].astype(np.int64))
            same = any_in_bitmap(
                bits, lo, np.clip(np.minimum(wide + n + 1, r.unit_ends(units)) - lo, 0, None)
            )
            return ev.docs_of(pa[near][same], fmask, units[same])
        # Of the longer list, only the blocks within n of a position of the shorter.
        pb = r.pos.covering(tb, wide - n, wide + n)
        if not len(pb):
            return bitset.empty(ev.n)
        # Each position's nearest neighbours in the other list, right and left; only the pairs
        # within n are looked up in the unit table (a binary search each: the costly part).
        at = np.searchsorted(pb, pa)
        right = np.flatnonzero(at < len(pb))
        right = right[pb[at[right]].astype(np.int64) - wide[right] <= n]
        left = np.flatnonzero(at > 0)
        left = left[wide[left] - pb[at[left] - 1].astype(np.int64) <= n]
        mine = np.concatenate([right, left])
        theirs = np.concatenate([at[right], at[left] - 1])
        units = r.units_of(pa[mine])
        same = r.in_units(units, pb[theirs])
        return ev.docs_of(pa[mine[same]], fmask, units[same])

    def positions(self, r: SegmentReader, leaf: LeafPlan, d: int) -> np.ndarray:
        """Positions of either operand with a position of the other within the distance, in the
        same unit. Windowed binary searches: O((|a| + |b|) log), never an |a| x |b| matrix."""
        a = positions_in_doc(r, leaf.tids[0], d).astype(np.int64)
        b = positions_in_doc(r, leaf.tids[1], d).astype(np.int64)
        if not len(a) or not len(b):
            return np.zeros(0, dtype=np.int64)
        return np.concatenate([close_to(r, a, b, leaf.distance), close_to(r, b, a, leaf.distance)])

    def occurrences(self, r: SegmentReader, leaf: LeafPlan) -> np.ndarray:
        if leaf.unknown:
            return np.zeros(0, dtype=np.int64)
        a = np.asarray(r.positions(leaf.tids[0])).astype(np.int64)
        b = np.asarray(r.positions(leaf.tids[1])).astype(np.int64)
        return np.concatenate([close_to(r, a, b, leaf.distance), close_to(r, b, a, leaf.distance)])

    def why_apart(self, r: SegmentReader, leaf: LeafPlan, d: int) -> str:
        nearest = _nearest(r, leaf.tids[0], leaf.tids[1], d)
        if nearest is None:
            return "both words are in the document, but never in the same field value or section"
        return (
            f"the nearest the two words come in one field value or section is {nearest} apart;"
            f" at most {leaf.distance} asked"
        )

    def relax(self, kind: str, leaf: LeafPlan) -> PlanNode | None:
        if kind != "near-to-and":
            return super().relax(kind, leaf)
        return and_of(
            (term_leaf(leaf, 0), term_leaf(leaf, 1))
            if leaf.terms[0] != leaf.terms[1]
            else (term_leaf(leaf, 0),)
        )


NEAR = NearOp()


def _pair(b: Resolver, node: Any) -> tuple[tuple[str, ...], int, str]:
    terms = [b.analyzer.analyze(node.left)[0], b.analyzer.analyze(node.right)[0]]
    if STOP in terms:
        raise b.all_stop(node, node.left if terms[0] == STOP else node.right)
    mask, declared, ns = b.scope(node.fields)
    return tuple(ns(t) for t in terms), mask, declared


def close_to(r: SegmentReader, x: np.ndarray, y: np.ndarray, distance: int) -> np.ndarray:
    """The positions of x with a different position of y at most
    `distance` away in the same unit."""
    units = r.units_of(x)
    starts = np.asarray(r.unit_start)
    first = starts[units].astype(np.int64)
    nxt = units + 1
    last = np.where(
        nxt < len(starts),
        starts[np.minimum(nxt, len(starts) - 1)].astype(np.int64) - 1,
        np.iinfo(np.int64).max,
    )
    lo, hi = np.maximum(x - distance, first), np.minimum(x + distance, last)
    inside = np.searchsorted(y, hi, side="right") - np.searchsorted(y, lo, side="left")
    at = np.searchsorted(y, x)  # x itself among y (NEAR of a word with itself) does not count
    itself = (at < len(y)) & (y[np.minimum(at, len(y) - 1)] == x)
    return x[inside - itself > 0]


def _nearest(r: SegmentReader, a_tid: int, b_tid: int, d: int) -> int | None:
    """The smallest distance between the two words inside one unit of
    document d (None: never in one)."""
    a = positions_in_doc(r, a_tid, d).astype(np.int64)
    b = positions_in_doc(r, b_tid, d).astype(np.int64)
    ua, ub = r.units_of(a), r.units_of(b)
    best: int | None = None
    for unit in set(ua.tolist()) & set(ub.tolist()):
        x, y = a[ua == unit], b[ub == unit]
        at = np.clip(search_sorted(y, x), 0, len(y) - 1)
        gaps = np.minimum(np.abs(y[at] - x), np.abs(y[np.maximum(at - 1, 0)] - x))
        gaps = gaps[gaps > 0]
        if len(gaps):
            best = int(gaps.min()) if best is None else min(best, int(gaps.min()))
    return best
