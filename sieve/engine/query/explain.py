"""Which fields and sections of one document each positive atom of a query really matched.

Computed for the few documents shown to a reader, from positions and the query's own field scopes
(never guessed from token overlap).
"""

from __future__ import annotations

import numpy as np

from sieve.engine import deadline
from sieve.engine.analysis.fields import Field
from sieve.engine.format.distinct import distinct
from sieve.engine.format.ranges import ragged
from sieve.engine.query.ops.base import LeafPlan, positions_in_doc
from sieve.engine.query.plan import Plan
from sieve.engine.segment.reader import SegmentReader, search_sorted

__all__ = ["Explainer", "leaf_positions", "positions_in_doc"]

_FIELDS = tuple(Field)  # by bit number: an enum lookup by value costs a microsecond


def leaf_positions(r: SegmentReader, leaf: LeafPlan, d: int) -> np.ndarray:
    """Where a leaf matches in document d, in any field (its operator says what that means)."""
    return leaf.op.positions(r, leaf, d)


class Explainer:
    """Where one query's positive atoms match, document by document (from its plan: no lookups)."""

    def __init__(self, r: SegmentReader, plan: Plan) -> None:
        self.r = r
        # Equal atoms match in the same places: `s*` written 1,024 times is explained once.
        distinct: dict[tuple[object, ...], LeafPlan] = {}
        for leaf in plan.positive:
            distinct.setdefault(
                (
                    leaf.kind,
                    leaf.terms,
                    leaf.tids,
                    leaf.offsets,
                    leaf.term_range,
                    leaf.mask,
                    leaf.distance,
                    str(leaf.node) if leaf.parts else "",
                ),
                leaf,
            )
        self.leaves = tuple(distinct.values())

    def _ragged(self, tid: int, docs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(positions of a term inside any of `docs`, index into `docs` of each), one binary search
        per end."""
        r = self.r
        if tid < 0:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
        last = r.doc_units[np.minimum(docs + 1, r.n_docs)]
        starts = r.unit_start[r.doc_units[docs]]
        # the next document's first position
        nexts = r.unit_start[np.minimum(last, len(r.unit_start) - 1)]
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
            pos, owner = leaf.op.positions_many(self.r, leaf, docs, positions, deadline.check)
            self._collect(pos, owner, leaf.mask, fields, sections)
        return [([_FIELDS[f] for f in sorted(fs)], sorted(ss)) for fs, ss in zip(fields, sections)]

    def _collect(
        self,
        pos: np.ndarray,
        owner: np.ndarray,
        fmask: int,
        fields: list[set[int]],
        sections: list[set[int]],
    ) -> None:
        if not len(pos):
            return
        r = self.r
        units = r.units_of(pos)
        ufield = r.unit_field[units].astype(np.int64)
        keep = ((np.int64(1) << ufield) & fmask) != 0
        owner, ufield, usec = (
            owner[keep],
            ufield[keep],
            r.unit_section[units[keep]].astype(np.int64),
        )
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
            pos = leaf.op.positions(r, leaf, d)
            if not len(pos):
                continue
            units = r.units_of(pos)
            ufield = r.unit_field[units]
            keep = ((np.uint8(1) << ufield) & leaf.mask) != 0
            fields.update(ufield[keep].tolist())
            sections.update(s for s in r.unit_section[units[keep]].tolist() if s >= 0)
        return [Field(f) for f in sorted(fields)], sorted(sections)
