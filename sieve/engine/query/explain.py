"""Which fields and sections of one document each positive atom of a query really matched.

Computed for the few documents shown to a reader, from positions and the query's own field scopes
(never guessed from token overlap).
"""

from __future__ import annotations

import numpy as np

from sieve.engine import deadline
from sieve.engine.format.distinct import distinct
from sieve.engine.analysis.fields import Field
from sieve.engine.query.plan import LeafPlan, Plan
from sieve.engine.query.proximity import window_starts
from sieve.engine.format.ranges import ragged
from sieve.engine.segment.reader import IndexReader, search_sorted

_FIELDS = tuple(Field)  # by bit number: an enum lookup by value costs a microsecond


def _doc_range(r: IndexReader, d: int) -> tuple[int, int]:
    start = int(r.unit_start[int(r.doc_units[d])])
    end = int(r.unit_start[int(r.doc_units[d + 1])]) if d + 1 < r.n_docs else 2**63 - 1
    return start, end


def positions_in_doc(r: IndexReader, tid: int, d: int) -> np.ndarray:
    """Positions of a term inside document d (int64), by binary search on its position list."""
    if tid < 0:
        return np.zeros(0, dtype=np.int64)
    start, end = _doc_range(r, d)
    pos = r.pos.covering(tid, np.array([start]), np.array([end - 1]))
    a, b = search_sorted(pos, [start, min(end, np.iinfo(pos.dtype).max)])
    return pos[a:b]


def leaf_positions(r: IndexReader, leaf: LeafPlan, d: int) -> np.ndarray:
    """Where a term, phrase (its first word), prefix or NEAR leaf matches in document d, in any
    field; an Indri window where its matches start, a #syn where its operands match."""
    if leaf.kind == "syn":
        return np.concatenate([leaf_positions(r, p, d) for p in leaf.parts])
    if leaf.kind in ("ordered", "unordered"):
        lists = {t: positions_in_doc(r, t, d).astype(np.int64) for t in set(leaf.tids)}
        return window_starts(r, [lists[t] for t in leaf.tids], leaf.distance or None, leaf.kind == "ordered")
    if leaf.kind == "prefix":
        lo, hi = leaf.term_range
        a, b = int(r.post_ptr[lo]), int(r.post_ptr[hi])
        hits = np.flatnonzero(np.asarray(r.post_doc[a:b]) == d) + a
        if not len(hits):
            return np.zeros(0, dtype=np.int64)
        tids = search_sorted(r.post_ptr, hits, side="right") - 1
        return np.concatenate([positions_in_doc(r, int(t), d).astype(np.int64) for t in tids])
    if leaf.kind == "near":
        return _near_positions(r, leaf, d)
    if leaf.kind == "term":
        return positions_in_doc(r, leaf.tids[0], d)
    start = positions_in_doc(r, leaf.tids[0], d).astype(np.int64)
    for off, tid in zip(leaf.offsets[1:], leaf.tids[1:]):
        start = start[np.isin(start + off, positions_in_doc(r, tid, d).astype(np.int64))]
    return start[r.within_units(start, leaf.offsets)]


class Explainer:
    """Where one query's positive atoms match, document by document (from its plan: no lookups)."""

    def __init__(self, r: IndexReader, plan: Plan) -> None:
        self.r = r
        # Equal atoms match in the same places: `s*` written 1,024 times is explained once.
        distinct: dict[tuple[object, ...], LeafPlan] = {}
        for leaf in plan.positive:
            distinct.setdefault((leaf.kind, leaf.terms, leaf.tids, leaf.offsets, leaf.term_range, leaf.mask, leaf.distance,
                                 str(leaf.node) if leaf.parts else ""), leaf)
        self.leaves = tuple(distinct.values())

    def _positions(self, leaf: LeafPlan, d: int) -> np.ndarray:
        return leaf_positions(self.r, leaf, d)

    def _ragged(self, tid: int, docs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(positions of a term inside any of `docs`, index into `docs` of each), one binary search per end."""
        r = self.r
        if tid < 0:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
        last = r.doc_units[np.minimum(docs + 1, r.n_docs)]
        starts = r.unit_start[r.doc_units[docs]]
        nexts = r.unit_start[np.minimum(last, len(r.unit_start) - 1)]  # the next document's first position
        more = docs + 1 < r.n_docs
        pos = r.pos.covering(tid, starts, np.where(more, nexts.astype(np.int64) - 1, 2**63 - 1))
        lo = search_sorted(pos, starts)
        hi = np.where(more, search_sorted(pos, nexts), len(pos))
        counts = hi - lo
        owner = np.repeat(np.arange(len(docs)), counts)
        return pos[ragged(lo, counts)].astype(np.int64), owner

    def matched_many(self, docs: list[int]) -> list[tuple[list[Field], list[int]]]:
        """`matched` for several documents at once: the binary searches are vectorised over them."""
        arr = np.asarray(docs, dtype=np.int64)
        fields: list[set[int]] = [set() for _ in docs]
        sections: list[set[int]] = [set() for _ in docs]
        ragged: dict[int, tuple[np.ndarray, np.ndarray]] = {}  # a phrase may repeat its words

        def positions(tid: int) -> tuple[np.ndarray, np.ndarray]:
            if tid not in ragged:
                ragged[tid] = self._ragged(tid, arr)
            return ragged[tid]

        for leaf in self.leaves:
            deadline.check()
            if leaf.kind in ("prefix", "near", "ordered", "unordered", "syn"):
                for i, d in enumerate(docs):  # rare atoms: the per-document path
                    deadline.check()
                    pos = self._positions(leaf, d)
                    self._collect(pos, np.full(len(pos), i), leaf.mask, fields, sections)
                continue
            pos, owner = positions(leaf.tids[0])
            for off, tid in zip(leaf.offsets[1:], leaf.tids[1:]):
                if not len(pos):
                    break
                nxt, _ = positions(tid)
                keep = np.isin(pos + off, nxt)
                pos, owner = pos[keep], owner[keep]
            if leaf.kind == "phrase":
                keep = self.r.within_units(pos, leaf.offsets)
                pos, owner = pos[keep], owner[keep]
            self._collect(pos, owner, leaf.mask, fields, sections)
        return [([_FIELDS[f] for f in sorted(fs)], sorted(ss)) for fs, ss in zip(fields, sections)]

    def _collect(self, pos: np.ndarray, owner: np.ndarray, fmask: int, fields: list[set[int]], sections: list[set[int]]) -> None:
        if not len(pos):
            return
        r = self.r
        units = r.units_of(pos)
        ufield = r.unit_field[units].astype(np.int64)
        keep = ((np.int64(1) << ufield) & fmask) != 0
        owner, ufield, usec = owner[keep], ufield[keep], r.unit_section[units[keep]].astype(np.int64)
        # A frequent word matches hundreds of times in one document: only its distinct (document,
        # field) and (document, section) pairs reach Python.
        for key in distinct(owner * 8 + ufield).tolist():
            fields[key >> 3].add(key & 7)
        inside = usec >= 0
        for key in distinct((owner[inside] << 32) + usec[inside]).tolist():
            sections[key >> 32].add(key & 0xFFFFFFFF)

    def matched(self, d: int) -> tuple[list[Field], list[int]]:
        """(fields, section numbers) where the query's positive atoms match document d, in order.

        The plain per-document computation: the reference `matched_many` is tested against."""
        fields: set[int] = set()
        sections: set[int] = set()
        r = self.r
        for leaf in self.leaves:
            pos = self._positions(leaf, d)
            if not len(pos):
                continue
            units = r.units_of(pos)
            ufield = r.unit_field[units]
            keep = ((np.uint8(1) << ufield) & leaf.mask) != 0
            fields.update(ufield[keep].tolist())
            sections.update(s for s in r.unit_section[units[keep]].tolist() if s >= 0)
        return [Field(f) for f in sorted(fields)], sorted(sections)


def _near_positions(r: IndexReader, leaf: LeafPlan, d: int) -> np.ndarray:
    """Positions of either NEAR operand with a position of the other within the distance, in the
    same unit. Windowed binary searches: O((|a| + |b|) log), never an |a| x |b| matrix."""
    a = positions_in_doc(r, leaf.tids[0], d).astype(np.int64)
    b = positions_in_doc(r, leaf.tids[1], d).astype(np.int64)
    if not len(a) or not len(b):
        return np.zeros(0, dtype=np.int64)
    return np.concatenate([_close_to(r, a, b, leaf.distance), _close_to(r, b, a, leaf.distance)])


def _close_to(r: IndexReader, x: np.ndarray, y: np.ndarray, distance: int) -> np.ndarray:
    """The positions of x with a different position of y at most `distance` away in the same unit."""
    units = r.units_of(x)
    starts = np.asarray(r.unit_start)
    first = starts[units].astype(np.int64)
    nxt = units + 1
    last = np.where(nxt < len(starts), starts[np.minimum(nxt, len(starts) - 1)].astype(np.int64) - 1, np.iinfo(np.int64).max)
    lo, hi = np.maximum(x - distance, first), np.minimum(x + distance, last)
    inside = np.searchsorted(y, hi, side="right") - np.searchsorted(y, lo, side="left")
    at = np.searchsorted(y, x)  # x itself among y (NEAR of a word with itself) does not count
    itself = (at < len(y)) & (y[np.minimum(at, len(y) - 1)] == x)
    return x[inside - itself > 0]
