"""A single term: the documents holding it in the leaf's fields."""

from __future__ import annotations

from typing import Any

import numpy as np

from sieve.engine.format import bitset
from sieve.engine.query.bql import ast
from sieve.engine.query.ops.base import LeafOp, LeafPlan, positions_in_doc
from sieve.engine.segment.reader import SegmentReader


class TermOp(LeafOp):
    name = "term"

    def match(self, ev: Any, leaf: LeafPlan, cands: np.ndarray | None) -> np.ndarray:
        if leaf.unknown:
            return bitset.empty(ev.n)
        return ev.term(leaf.tids[0], leaf.mask, cands)

    def positions(self, r: SegmentReader, leaf: LeafPlan, d: int) -> np.ndarray:
        return positions_in_doc(r, leaf.tids[0], d)

    def positions_many(
        self, r: SegmentReader, leaf: LeafPlan, docs: list[int], ragged: Any, check: Any
    ) -> tuple[np.ndarray, np.ndarray]:
        return chained(leaf, ragged)

    def occurrences(self, r: SegmentReader, leaf: LeafPlan) -> np.ndarray:
        if leaf.unknown:
            return np.zeros(0, dtype=np.int64)
        return np.asarray(r.positions(leaf.tids[0])).astype(np.int64)


TERM = TermOp()


def term_leaf(leaf: LeafPlan, i: int) -> LeafPlan:
    """The i-th analysed term of a leaf as a term leaf of the same scope (resolved already): what
    a phrase or NEAR loosens into."""
    fields = getattr(leaf.node, "fields", None)
    return LeafPlan(
        ast.Term(leaf.terms[i], fields),
        TERM,
        (leaf.terms[i],),
        (leaf.tids[i],),
        mask=leaf.mask,
        text=leaf.terms[i],
    )


def chained(leaf: LeafPlan, ragged: Any) -> tuple[np.ndarray, np.ndarray]:
    """(positions of the leaf's first term followed by the others at their offsets, owners) over
    the documents `ragged` reads, one vectorised pass per term."""
    pos, owner = ragged(leaf.tids[0])
    for off, tid in zip(leaf.offsets[1:], leaf.tids[1:]):
        if not len(pos):
            break
        nxt, _ = ragged(tid)
        keep = np.isin(pos + off, nxt)
        pos, owner = pos[keep], owner[keep]
    return pos, owner
