"""A phrase: its terms at their offsets from the first (stop words leave gaps), in one unit."""

from __future__ import annotations

from typing import Any

import numpy as np

from sieve.engine.format import bitset
from sieve.engine.query.bql import ast
from sieve.engine.query.ops.base import LeafOp, LeafPlan, PlanNode, positions_in_doc
from sieve.engine.query.ops.boolean import and_of
from sieve.engine.query.ops.term import chained, term_leaf
from sieve.engine.segment.reader import SegmentReader, search_sorted


class PhraseOp(LeafOp):
    name = "phrase"
    positional = True

    def settle(self, leaf: LeafPlan) -> None:
        super().settle(leaf)
        if not leaf.offsets:
            leaf.offsets = tuple(range(len(leaf.terms)))

    def match(self, ev: Any, leaf: LeafPlan, cands: np.ndarray | None) -> np.ndarray:
        """Documents where term i is at start + offsets[i], for some start, all in one unit of
        the leaf's fields."""
        if leaf.unknown:
            return bitset.empty(ev.n)
        r, tids, offsets = ev.r, leaf.tids, leaf.offsets
        freq = [r.position_count(t) for t in tids]
        order = sorted(range(len(tids)), key=freq.__getitem__)
        first = offsets[order[0]]
        rare = ev.positions(tids[order[0]], cands)
        # Candidate phrase starts, in the index's position dtype so binary searches never copy.
        start = rare[rare >= first] - rare.dtype.type(first)
        for i in order[1:]:
            if not len(start):
                break
            step = start.dtype.type(offsets[i])
            start = r.pos.present(tids[i], start + step) - step
        start = start[r.within_units(start, offsets)]
        return ev.docs_of(start, leaf.mask)

    def positions(self, r: SegmentReader, leaf: LeafPlan, d: int) -> np.ndarray:
        start = positions_in_doc(r, leaf.tids[0], d).astype(np.int64)
        for off, tid in zip(leaf.offsets[1:], leaf.tids[1:]):
            start = start[np.isin(start + off, positions_in_doc(r, tid, d).astype(np.int64))]
        return start[r.within_units(start, leaf.offsets)]

    def positions_many(
        self, r: SegmentReader, leaf: LeafPlan, docs: list[int], ragged: Any, check: Any
    ) -> tuple[np.ndarray, np.ndarray]:
        pos, owner = chained(leaf, ragged)
        keep = r.within_units(pos, leaf.offsets)
        return pos[keep], owner[keep]

    def occurrences(self, r: SegmentReader, leaf: LeafPlan) -> np.ndarray:
        if leaf.unknown:
            return np.zeros(0, dtype=np.int64)
        start = np.asarray(r.positions(leaf.tids[0])).astype(np.int64)
        for i, tid in zip(leaf.offsets[1:], leaf.tids[1:]):
            nxt = np.asarray(r.positions(tid)).astype(np.int64)
            at = search_sorted(nxt, start + i)
            ok = at < len(nxt)
            ok[ok] = nxt[at[ok]] == start[ok] + i
            start = start[ok]
        return start[r.within_units(start, leaf.offsets)]

    def why_apart(self, r: SegmentReader, leaf: LeafPlan, d: int) -> str:
        return (
            "the words are all in the document, but never next to each other in this order"
            " in one field value or section"
        )

    def relax(self, kind: str, leaf: LeafPlan) -> PlanNode | None:
        if kind != "phrase-to-words":
            return super().relax(kind, leaf)
        if not isinstance(
            leaf.node, ast.Phrase
        ):  # a word that analyses into several: not the user's phrase
            return None
        firsts = {
            t: i for i, t in reversed(list(enumerate(leaf.terms)))
        }  # each word once, first place
        return and_of(tuple(term_leaf(leaf, i) for i in sorted(firsts.values())))


PHRASE = PhraseOp()
