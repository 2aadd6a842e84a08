"""Executing a query plan over an opened segment: bitset algebra, positional checks last.

`eval(node, cands)` returns a set that is exact inside `cands` (None = every document), which
lets an AND hand the documents that passed its cheaper operands to its phrase and NEAR operands.
Each node's operator (`ops`) computes its set; the `Evaluator` holds the segment and what the
operators share: a term's documents (from postings or stored rows), a term's positions narrowed to
candidates, the documents of matched positions.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from sieve.engine import deadline
from sieve.engine.analysis.fields import ALL_MASK
from sieve.engine.format import bitset
from sieve.engine.format.ranges import ragged
from sieve.engine.query.ops.base import PlanNode
from sieve.engine.segment.reader import SegmentReader

# Filtering a term's positions to the candidate documents (a ragged gather over its postings) pays
# only for a term with this many positions or more, and candidates fewer than 1/_FILTER_SHARE of
# its documents (measured on man-sections: below that, searching all its positions is cheaper).
_FILTER_MIN_POSITIONS = 4096
_FILTER_SHARE = 16
# A term leaf inside an AND looks its candidates up in its postings (instead of scattering them all
# into a bitset) when they number fewer than 1/_FEW_SHARE of its postings.
_FEW_SHARE = 8


class Evaluator:
    """Bitset algebra over one index; reads a `Plan` (the limits were checked when it was made)."""

    def __init__(self, reader: SegmentReader, live: np.ndarray | None = None) -> None:
        """`live`: the documents that exist (a segment's, without its deleted ones); default all."""
        self.r = reader
        self.n = reader.n_docs
        self.universe = bitset.full(self.n) if live is None else live
        self._all_live = live is None

    def run(self, plan: Any, shared: bool = False) -> np.ndarray:
        """The exact admitted set of a plan, or of one of its nodes: an array the caller owns, or
        with `shared`, possibly a read-only row of the index (for a caller that only reads it)."""
        bits = self.eval(getattr(plan, "root", plan), None)
        # With nothing deleted the universe is every document, and no set holds a padding bit, so
        # the AND would only copy. Every writeable set here was made by this call; the one shared
        # set a leaf returns as it is, a dense row, is a read-only map and gets copied unless the
        # caller said it will not write.
        if self._all_live and (shared or bits.flags.writeable):
            return bits
        return bits & self.universe

    def eval(self, node: PlanNode, cands: np.ndarray | None) -> np.ndarray:
        """The documents `node` admits, by its operator: exact inside `cands` (None: all)."""
        deadline.check()
        return node.op.match(self, node, cands)

    # ------------------------------------------------------------ what the operators share

    def term(self, tid: int, fmask: int, cands: np.ndarray | None = None) -> np.ndarray:
        """The documents with term `tid` in fields `fmask` (exact inside `cands`, None: all)."""
        rows, docs = self.term_parts(tid, fmask, cands)
        if docs is None:
            return rows if rows is not None else bitset.empty(self.n)
        bits = bitset.from_ids(docs, self.n)
        return bits if rows is None else rows | bits

    def holders(self, tid: int) -> np.ndarray:
        """Every document holding term `tid` in any field, deleted ones too: the documents of its
        postings, as a set (from stored rows where a frequent term has them)."""
        return self.term(tid, ALL_MASK)

    def term_parts(
        self, tid: int, fmask: int, cands: np.ndarray | None
    ) -> tuple[np.ndarray | None, np.ndarray | None]:
        """`term`'s answer in two parts: (a set from stored rows, or None; the documents from
        postings, ascending, or None when the rows hold them all). An OR of terms scatters every
        part's list into one set."""
        r = self.r
        # Fields not asked for that some posting has: postings there alone must be filtered out (by
        # `rest`, which may also drop documents the rows below already hold).
        unasked = r.left_out(fmask)
        if not unasked:  # every field there is: a frequent term's documents may be one stored row
            whole = r.any_row(tid)
            if whole is not None:
                return whole, None
        acc, rest = None, fmask
        # Where the postings to read are: all of the term's, unless rows and rest postings stand in.
        docs_of, rest_masks = r.post_doc, None
        lo, hi = int(r.post_ptr[tid]), int(r.post_ptr[tid + 1])
        if r.dense_ptr is not None:
            a, b = int(r.dense_ptr[tid]), int(r.dense_ptr[tid + 1])
            if a < b:
                # Fields in which the term is frequent are stored
                # as bitsets; only the others need postings.
                covered = 0
                assert r.dense is not None and r.dense_field is not None  # rows a..b exist
                for row in range(a, b):
                    f = int(r.dense_field[row])
                    covered |= 1 << f
                    if fmask >> f & 1:
                        acc = r.dense[row] if acc is None else acc | r.dense[row]
                        rest &= ~(1 << f)
                if not rest:
                    return acc, None
                if r.rest_ptr is not None:
                    # The postings in the fields without rows, each with those fields' mask only.
                    docs_of, rest_masks = r.rest_doc, r.rest_mask
                    lo, hi = int(r.rest_ptr[a]), int(r.rest_ptr[b])
                    if lo == hi:  # no postings beyond the rows: the rows are the answer
                        return acc, None
                    unasked = r.left_out(covered | rest)
        docs = docs_of[lo:hi]
        if unasked:
            docs = docs[
                r.attrs.meets(lo, hi, rest)
                if rest_masks is None
                else (rest_masks[lo:hi] & rest) != 0
            ]
        if cands is not None and len(docs) * bitset.SPARSE >= self.n:
            # Scattering this many postings costs time in the segment's size; when the documents
            # still in question are few, look each of them up in the postings instead.
            few = self._few(cands, len(docs))
            if few is not None:
                at = docs.searchsorted(few)
                np.minimum(at, len(docs) - 1, out=at)
                docs = few[docs[at] == few]
        return acc, docs

    def _few(self, cands: np.ndarray, postings: int) -> np.ndarray | None:
        """The documents of `cands` when they are few next to `postings` (else None)."""
        if bitset.count(cands) * _FEW_SHARE > postings:
            return None
        return bitset.to_ids(cands, self.n)

    # ------------------------------------------------------------ positional

    def positions(self, tid: int, cands: np.ndarray | None) -> np.ndarray:
        """Positions of a term (index dtype), only in candidate documents when that is worth it."""
        if cands is None or self.r.position_count(tid) < _FILTER_MIN_POSITIONS:
            return self.r.positions(tid)
        plo, phi = int(self.r.post_ptr[tid]), int(self.r.post_ptr[tid + 1])
        if bitset.count(cands) * _FILTER_SHARE > phi - plo:
            # the candidates are not few next to the term's
            # documents: the filter costs more than it saves
            return self.r.positions(tid)
        docs, tf = self.r.post_doc[plo:phi], self.r.tf(plo, phi)
        keep = bitset.contains(cands, docs)
        ends = np.cumsum(tf)
        tf_k = tf[keep]
        starts_k = ends[keep] - tf_k
        total = int(tf_k.sum())
        if total == 0:
            # no positions, in the index's position dtype (decoding none)
            return self.r.unit_start[:0]
        return self.r.pos.at(tid, ragged(starts_k, tf_k))  # each kept posting's run of positions

    def docs_of(
        self, positions: np.ndarray, fmask: int, units: np.ndarray | None = None
    ) -> np.ndarray:
        """The documents of matches at `positions` (in `units`, when already
        looked up) in fields `fmask`."""
        if units is None:
            units = self.r.units_of(positions)
        if self.r.left_out(fmask):  # (a built-in term is in no declared field's unit)
            units = units[((np.uint8(1) << self.r.unit_field[units]) & fmask) != 0]
        return bitset.from_ids(self.r.docs_of_units(units), self.n)
