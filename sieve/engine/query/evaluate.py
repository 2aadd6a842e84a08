"""Executing a query plan over an opened index: bitset algebra, positional checks last.

`eval(node, cands)` returns a set that is exact inside `cands` (None = every document), which
lets an AND hand the documents that passed its cheaper operands to its phrase and NEAR operands.
"""

from __future__ import annotations

import numpy as np

from sieve.engine.format import bitset

from sieve.engine import deadline
from sieve.engine.analysis.batch import NO_DATE
from sieve.engine.analysis.fields import ALL_MASK
from sieve.engine.query.plan import AndPlan, LeafPlan, NotPlan, OrPlan, Plan, PlanNode
from sieve.engine.format.positions import RANGE_BITS, any_in_bitmap
from sieve.engine.format.ranges import ragged
from sieve.engine.segment.reader import IndexReader

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

    def __init__(self, reader: IndexReader, live: np.ndarray | None = None) -> None:
        """`live`: the documents that exist (a segment's, without its deleted ones); default all."""
        self.r = reader
        self.n = reader.n_docs
        self.universe = bitset.full(self.n) if live is None else live
        self._all_live = live is None

    def run(self, plan: Plan | PlanNode, shared: bool = False) -> np.ndarray:
        """The exact admitted set of a plan, or of one of its nodes: an array the caller owns, or
        with `shared`, possibly a read-only row of the index (for a caller that only reads it)."""
        bits = self.eval(plan.root if isinstance(plan, Plan) else plan, None)
        # With nothing deleted the universe is every document, and no set holds a padding bit, so
        # the AND would only copy. Every writeable set here was made by this call; the one shared
        # set a leaf returns as it is, a dense row, is a read-only map and gets copied unless the
        # caller said it will not write.
        if self._all_live and (shared or bits.flags.writeable):
            return bits
        return bits & self.universe

    def eval(self, node: PlanNode, cands: np.ndarray | None) -> np.ndarray:
        deadline.check()
        if isinstance(node, LeafPlan):
            return self.leaf(node, cands)
        if isinstance(node, NotPlan):
            return self.universe & ~self.eval(node.child, cands)
        if isinstance(node, OrPlan):
            return self.union(node, cands)
        return self.intersection(node, cands)

    def intersection(self, node: AndPlan, cands: np.ndarray | None) -> np.ndarray:
        """An AND, cheapest operands first, each evaluated inside what the earlier ones admitted.
        (Keeping what they admit as a list of documents while the operands are terms, instead of
        sets, was measured: no faster for AND, 6-8% slower for AND NOT.)"""
        acc_and: np.ndarray | None = None
        for child in node.by_cost:
            bits = self.eval(child, acc_and if acc_and is not None else cands)
            acc_and = bits if acc_and is None else acc_and & bits
            if not acc_and.any():
                break
        assert acc_and is not None
        return acc_and

    def union(self, node: OrPlan, cands: np.ndarray | None) -> np.ndarray:
        """An OR: its terms' document lists scattered into one set (a set of the segment's size
        made and packed once, not once a term), the other operands' sets added to it."""
        acc: np.ndarray | None = None
        lists: list[np.ndarray] = []
        for child in node.children:
            if type(child) is LeafPlan and child.kind == "term" and not child.unknown:
                deadline.check()
                bits, docs = self._term_parts(child.tids[0], child.mask, cands)
                if docs is not None:
                    lists.append(docs)
            else:
                bits = self.eval(child, cands)
            if bits is not None:
                # A stored row is read-only and shared: the first is copied by the first OR.
                acc = bits if acc is None else acc | bits
        if lists:
            scattered = bitset.from_ids(lists[0] if len(lists) == 1 else np.concatenate(lists), self.n)
            acc = scattered if acc is None else acc | scattered
        return acc if acc is not None else bitset.empty(self.n)

    def leaf(self, leaf: LeafPlan, cands: np.ndarray | None) -> np.ndarray:
        if leaf.kind == "date":
            return self.dates(*leaf.dates)
        if leaf.kind == "column":
            return bitset.from_bool(self.r.column_filter(leaf.column, *leaf.bounds), self.n)
        if leaf.unknown:
            return bitset.empty(self.n)
        if leaf.kind == "term":
            return self.term(leaf.tids[0], leaf.mask, cands)
        if leaf.kind == "prefix":
            return self.prefix(leaf.term_range, leaf.mask)
        if leaf.kind == "phrase":
            return self.phrase(leaf.tids, leaf.offsets, leaf.mask, cands)
        return self.near(leaf.tids[0], leaf.tids[1], leaf.distance, leaf.mask, cands)

    # ------------------------------------------------------------ leaves

    def term(self, tid: int, fmask: int, cands: np.ndarray | None = None) -> np.ndarray:
        """The documents with term `tid` in fields `fmask` (exact inside `cands`, None: all)."""
        rows, docs = self._term_parts(tid, fmask, cands)
        if docs is None:
            return rows if rows is not None else bitset.empty(self.n)
        bits = bitset.from_ids(docs, self.n)
        return bits if rows is None else rows | bits

    def holders(self, tid: int) -> np.ndarray:
        """Every document holding term `tid` in any field, deleted ones too: the documents of its
        postings, as a set (from stored rows where a frequent term has them)."""
        return self.term(tid, ALL_MASK)

    def _term_parts(self, tid: int, fmask: int, cands: np.ndarray | None) -> tuple[np.ndarray | None, np.ndarray | None]:
        """`term`'s answer in two parts: (a set from stored rows, or None; the documents from
        postings, ascending, or None when the rows hold them all). An OR of terms scatters every
        part's list into one set."""
        r = self.r
        # Fields not asked for that some posting has: postings there alone must be filtered out (by
        # `rest`, which may also drop documents the rows below already hold).
        unasked = r.left_out(fmask)
        if not unasked:  # every field there is: a frequent term's documents may be one stored row
            row = r.any_row(tid)
            if row is not None:
                return row, None
        acc, rest = None, fmask
        # Where the postings to read are: all of the term's, unless rows and rest postings stand in.
        docs_of, rest_masks = r.post_doc, None
        lo, hi = int(r.post_ptr[tid]), int(r.post_ptr[tid + 1])
        if r.dense_ptr is not None:
            a, b = int(r.dense_ptr[tid]), int(r.dense_ptr[tid + 1])
            if a < b:
                # Fields in which the term is frequent are stored as bitsets; only the others need postings.
                covered = 0
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
            docs = docs[r.attrs.meets(lo, hi, rest) if rest_masks is None else (rest_masks[lo:hi] & rest) != 0]
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

    def prefix(self, term_range: tuple[int, int], fmask: int) -> np.ndarray:
        lo, hi = term_range
        a, b = int(self.r.post_ptr[lo]), int(self.r.post_ptr[hi])
        # Terms sharing a prefix are neighbours in the sorted dictionary, so their postings are one slice.
        docs = self.r.post_doc[a:b]
        if self.r.left_out(fmask):
            docs = docs[self.r.attrs.meets(a, b, fmask)]
        return bitset.from_ids(docs, self.n)

    def dates(self, lo: int | None, hi: int | None) -> np.ndarray:
        col = np.asarray(self.r.dates)
        keep = col != NO_DATE
        if lo is not None:
            keep &= col >= lo
        if hi is not None:
            keep &= col <= hi
        return bitset.from_bool(keep, self.n)

    # ------------------------------------------------------------ positional

    def _positions(self, tid: int, cands: np.ndarray | None) -> np.ndarray:
        """Positions of a term (index dtype), only in candidate documents when that is worth it."""
        if cands is None or self.r.position_count(tid) < _FILTER_MIN_POSITIONS:
            return self.r.positions(tid)
        plo, phi = int(self.r.post_ptr[tid]), int(self.r.post_ptr[tid + 1])
        if bitset.count(cands) * _FILTER_SHARE > phi - plo:
            return self.r.positions(tid)  # the candidates are not few next to the term's documents: the filter costs more than it saves
        docs, tf = self.r.post_doc[plo:phi], self.r.tf(plo, phi)
        keep = bitset.contains(cands, docs)
        ends = np.cumsum(tf)
        tf_k = tf[keep]
        starts_k = ends[keep] - tf_k
        total = int(tf_k.sum())
        if total == 0:
            return self.r.unit_start[:0]  # no positions, in the index's position dtype (decoding none)
        return self.r.pos.at(tid, ragged(starts_k, tf_k))  # each kept posting's run of positions

    def _docs_of(self, positions: np.ndarray, fmask: int, units: np.ndarray | None = None) -> np.ndarray:
        """The documents of matches at `positions` (in `units`, when already looked up) in fields `fmask`."""
        if units is None:
            units = self.r.units_of(positions)
        if self.r.left_out(fmask):  # (a built-in term is in no declared field's unit)
            units = units[((np.uint8(1) << self.r.unit_field[units]) & fmask) != 0]
        return bitset.from_ids(self.r.docs_of_units(units), self.n)

    def phrase(self, tids: tuple[int, ...], offsets: tuple[int, ...], fmask: int, cands: np.ndarray | None) -> np.ndarray:
        """Documents where term i is at start + offsets[i], for some start, all in one unit of
        `fmask`'s fields."""
        freq = [self.r.position_count(t) for t in tids]
        order = sorted(range(len(tids)), key=freq.__getitem__)
        first = offsets[order[0]]
        rare = self._positions(tids[order[0]], cands)
        # Candidate phrase starts, in the index's position dtype so binary searches never copy.
        start = rare[rare >= first] - rare.dtype.type(first)
        for i in order[1:]:
            if not len(start):
                break
            step = start.dtype.type(offsets[i])
            start = self.r.pos.present(tids[i], start + step) - step
        start = start[self.r.within_units(start, offsets)]
        return self._docs_of(start, fmask)

    def near(self, ta: int, tb: int, n: int, fmask: int, cands: np.ndarray | None) -> np.ndarray:
        if ta == tb:
            pa = self._positions(ta, cands)
            close = np.flatnonzero(np.diff(pa.astype(np.int64)) <= n)
            units = self.r.units_of(pa[close])
            same = self.r.in_units(units, pa[close + 1])
            return self._docs_of(pa[close[same]], fmask, units[same])
        if self.r.position_count(ta) > self.r.position_count(tb):  # search the shorter list in the longer one
            ta, tb = tb, ta
        pa = self._positions(ta, cands)
        if not len(pa):
            return bitset.empty(self.n)
        wide = pa.astype(np.int64)
        bits = self.r.pos.bitmap_of(tb, len(pa)) if 2 * n + 1 <= RANGE_BITS else None
        if bits is not None:  # a frequent longer word: the bits within n of each position, read at once
            # (a window cut at position 0 reads a few bits too many: the test within units below is exact)
            near = any_in_bitmap(bits, np.maximum(wide - n, 0), 2 * n + 1)
            wide = wide[near]
            units = self.r.units_of(pa[near])
            lo = np.maximum(wide - n, self.r.unit_start[units].astype(np.int64))
            same = any_in_bitmap(bits, lo, np.clip(np.minimum(wide + n + 1, self.r.unit_ends(units)) - lo, 0, None))
            return self._docs_of(pa[near][same], fmask, units[same])
        # Of the longer list, only the blocks within n of a position of the shorter.
        pb = self.r.pos.covering(tb, wide - n, wide + n)
        if not len(pb):
            return bitset.empty(self.n)
        # Each position's nearest neighbours in the other list, right and left; only the pairs
        # within n are looked up in the unit table (a binary search each: the costly part).
        at = np.searchsorted(pb, pa)
        right = np.flatnonzero(at < len(pb))
        right = right[pb[at[right]].astype(np.int64) - wide[right] <= n]
        left = np.flatnonzero(at > 0)
        left = left[wide[left] - pb[at[left] - 1].astype(np.int64) <= n]
        mine = np.concatenate([right, left])
        theirs = np.concatenate([at[right], at[left] - 1])
        units = self.r.units_of(pa[mine])
        same = self.r.in_units(units, pb[theirs])
        return self._docs_of(pa[mine[same]], fmask, units[same])

