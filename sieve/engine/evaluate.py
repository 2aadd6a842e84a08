"""Executing a BQL tree over an opened index: bitset algebra, positional checks last.

`evaluate(node, cands)` returns a set that is exact inside `cands` (None = every document), which
lets an AND hand the documents that passed its cheaper operands to its phrase and NEAR operands.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sieve.engine import bitset
from sieve.engine.analysis import analyze
from sieve.engine.bql import ast
from sieve.engine.fields import ALL_MASK, mask_of
from sieve.engine.reader import IndexReader
from sieve.engine.batch import NO_DATE
from sieve.errors import BQLLimitError

# Below this many positions, filtering a term's positions to candidate documents costs more than it saves.
_FILTER_MIN_POSITIONS = 4096


@dataclass(frozen=True)
class Limits:
    """Caps that keep one query from taking seconds or gigabytes."""

    max_prefix_terms: int = 10_000
    max_positions: int = 50_000_000  # positions the phrases and NEARs of one query may examine, together


class Evaluator:
    def __init__(self, reader: IndexReader, limits: Limits = Limits()) -> None:
        self.r = reader
        self.n = reader.n_docs
        self.limits = limits
        self.universe = bitset.full(self.n)

    def run(self, node: ast.Node) -> np.ndarray:
        """The exact admitted set of `node`."""
        self._check_query_volume(node)
        return self.eval(node, None) & self.universe

    def _leaf_volume(self, leaf: ast.Node) -> int:
        """Positions a phrase, NEAR or multi-term word examines (as `_check_volume` counts them)."""
        if isinstance(leaf, ast.Near):
            tids = {self.r.term_id(analyze(leaf.left)[0]), self.r.term_id(analyze(leaf.right)[0])}
        elif isinstance(leaf, (ast.Term, ast.Phrase)):
            terms = analyze(leaf.word if isinstance(leaf, ast.Term) else leaf.text)
            if len(terms) < 2:
                return 0
            tids = {self.r.term_id(t) for t in terms}
            if -1 in tids:
                return 0
            return min(int(self.r.pos_ptr[t + 1] - self.r.pos_ptr[t]) for t in tids)  # only the rarest is scanned
        else:
            return 0
        if -1 in tids:
            return 0
        return sum(int(self.r.pos_ptr[t + 1] - self.r.pos_ptr[t]) for t in tids)

    def _check_query_volume(self, node: ast.Node) -> None:
        """The positions cap holds for the whole query: 500 NEARs over frequent words, each under
        the cap, would otherwise take half a minute together."""
        volumes = [(self._leaf_volume(leaf), leaf) for leaf in ast.leaves(node)]
        total = sum(v for v, _ in volumes)
        if total > self.limits.max_positions:
            most, leaf = max(volumes, key=lambda vl: vl[0])
            raise BQLLimitError(
                "positions", total, self.limits.max_positions,
                f"the phrases and NEARs of this query examine {total:,} positions together (the largest, {leaf}, {most:,}); use rarer words or fewer of them",
            )

    # ------------------------------------------------------------ dispatch

    def eval(self, node: ast.Node, cands: np.ndarray | None) -> np.ndarray:
        if isinstance(node, ast.Term):
            terms = analyze(node.word)
            if len(terms) == 1:
                return self.term(terms[0], node.fields)
            return self.phrase(terms, node.fields, cands)
        if isinstance(node, ast.Phrase):
            terms = analyze(node.text)
            if len(terms) == 1:
                return self.term(terms[0], node.fields)
            return self.phrase(terms, node.fields, cands)
        if isinstance(node, ast.Prefix):
            return self.prefix(analyze(node.stem)[0], node.stem, node.fields)
        if isinstance(node, ast.Near):
            return self.near(analyze(node.left)[0], analyze(node.right)[0], node.distance, node.fields, cands)
        if isinstance(node, ast.DateRange):
            return self.dates(node.lo, node.hi)
        if isinstance(node, ast.Not):
            return self.universe & ~self.eval(node.child, cands)
        if isinstance(node, ast.Or):
            acc = self.eval(node.children[0], cands)
            for child in node.children[1:]:
                acc = acc | self.eval(child, cands)
            return acc
        if isinstance(node, ast.And):
            acc: np.ndarray | None = None
            for child in sorted(node.children, key=_cost_class):
                bits = self.eval(child, acc if acc is not None else cands)
                acc = bits if acc is None else acc & bits
                if not acc.any():
                    break
            assert acc is not None
            return acc
        raise TypeError(f"not a BQL node: {node!r}")

    # ------------------------------------------------------------ leaves

    def term(self, term: str, fields: ast.Fields) -> np.ndarray:
        tid = self.r.term_id(term)
        if tid < 0:
            return bitset.empty(self.n)
        lo, hi = int(self.r.post_ptr[tid]), int(self.r.post_ptr[tid + 1])
        docs = self.r.post_doc[lo:hi]
        fmask = mask_of(fields)
        if fmask != ALL_MASK:
            docs = docs[(self.r.post_mask[lo:hi] & fmask) != 0]
        return bitset.from_ids(docs, self.n)

    def prefix(self, stem: str, written: str, fields: ast.Fields) -> np.ndarray:
        lo, hi = self.r.terms.prefix_range(stem.encode())
        if hi - lo > self.limits.max_prefix_terms:
            raise BQLLimitError("prefix expansion", hi - lo, self.limits.max_prefix_terms, f"{written}* matches {hi - lo} terms; lengthen the stem")
        a, b = int(self.r.post_ptr[lo]), int(self.r.post_ptr[hi])
        # Terms sharing a prefix are neighbours in the sorted dictionary, so their postings are one slice.
        docs = self.r.post_doc[a:b]
        fmask = mask_of(fields)
        if fmask != ALL_MASK:
            docs = docs[(self.r.post_mask[a:b] & fmask) != 0]
        return bitset.from_ids(docs, self.n)

    def dates(self, lo: int | None, hi: int | None) -> np.ndarray:
        col = self.r.dates
        keep = col != NO_DATE
        if lo is not None:
            keep &= col >= lo
        if hi is not None:
            keep &= col <= hi
        return bitset.from_bool(keep, self.n)

    # ------------------------------------------------------------ positional

    def _positions(self, tid: int, cands: np.ndarray | None) -> np.ndarray:
        """Positions of a term (index dtype), only in candidate documents when that is worth it."""
        lo, hi = int(self.r.pos_ptr[tid]), int(self.r.pos_ptr[tid + 1])
        pos = self.r.pos[lo:hi]
        if cands is None or hi - lo < _FILTER_MIN_POSITIONS:
            return pos
        docs, _, tf = self.r.postings(tid)
        keep = bitset.contains(cands, docs)
        ends = np.cumsum(tf)
        tf_k = tf[keep]
        starts_k = ends[keep] - tf_k
        total = int(tf_k.sum())
        if total == 0:
            return pos[:0]
        # Ragged gather: for each kept posting, its run of positions.
        idx = np.repeat(starts_k - np.concatenate(([0], np.cumsum(tf_k)[:-1])), tf_k) + np.arange(total)
        return pos[idx]

    def _check_volume(self, tids: list[int], what: str) -> None:
        volume = sum(int(self.r.pos_ptr[t + 1] - self.r.pos_ptr[t]) for t in tids)
        if volume > self.limits.max_positions:
            raise BQLLimitError("positions", volume, self.limits.max_positions, f"{what} over very frequent words; add a rarer word")

    def _docs_of(self, positions: np.ndarray, fields: ast.Fields) -> np.ndarray:
        units = self.r.units_of(positions)
        fmask = mask_of(fields)
        if fmask != ALL_MASK:
            units = units[((np.uint8(1) << self.r.unit_field[units]) & fmask) != 0]
        return bitset.from_ids(self.r.docs_of_units(units), self.n)

    def phrase(self, terms: list[str], fields: ast.Fields, cands: np.ndarray | None) -> np.ndarray:
        tids = [self.r.term_id(t) for t in terms]
        if min(tids) < 0:
            return bitset.empty(self.n)
        freq = [int(self.r.pos_ptr[t + 1] - self.r.pos_ptr[t]) for t in tids]
        order = sorted(range(len(tids)), key=freq.__getitem__)
        first = order[0]
        self._check_volume([tids[first]], f'the phrase "{" ".join(terms)}"')
        rare = self._positions(tids[first], cands)
        # Candidate phrase starts, in the index's position dtype so binary searches never copy.
        start = rare[rare >= first] - rare.dtype.type(first)
        for i in order[1:]:
            if not len(start):
                break
            pos = self.r.positions(tids[i])
            target = start + start.dtype.type(i)
            at = np.searchsorted(pos, target)
            ok = at < len(pos)
            ok[ok] = pos[at[ok]] == target[ok]
            start = start[ok]
        return self._docs_of(start, fields)

    def near(self, a: str, b: str, n: int, fields: ast.Fields, cands: np.ndarray | None) -> np.ndarray:
        ta, tb = self.r.term_id(a), self.r.term_id(b)
        if ta < 0 or tb < 0:
            return bitset.empty(self.n)
        self._check_volume([ta, tb] if ta != tb else [ta], f"NEAR/{n}({a}, {b})")
        pa = self._positions(ta, cands)
        if ta == tb:
            units = self.r.units_of(pa)
            ok = (np.diff(pa.astype(np.int64)) <= n) & (units[1:] == units[:-1])
            return self._docs_of(pa[:-1][ok], fields)
        pb = self._positions(tb, cands)
        if not len(pa) or not len(pb):
            return bitset.empty(self.n)
        if len(pa) > len(pb):  # search the shorter list in the longer one
            pa, pb = pb, pa
        ua = self.r.units_of(pa)
        at = np.searchsorted(pb, pa)
        hit = np.zeros(len(pa), dtype=bool)
        wide = pa.astype(np.int64)
        right = at < len(pb)
        r_pos = pb[at[right]]
        hit[right] = (r_pos.astype(np.int64) - wide[right] <= n) & (self.r.units_of(r_pos) == ua[right])
        left = at > 0
        l_pos = pb[at[left] - 1]
        hit[left] |= (wide[left] - l_pos.astype(np.int64) <= n) & (self.r.units_of(l_pos) == ua[left])
        return self._docs_of(pa[hit], fields)


def _cost_class(node: ast.Node) -> int:
    """Cheap operands first, so positional ones only look at documents that survived."""
    if isinstance(node, (ast.Phrase, ast.Near)):
        return 2
    if isinstance(node, ast.Term) and len(analyze(node.word)) > 1:
        return 2
    if isinstance(node, (ast.And, ast.Or, ast.Not)):
        return 1
    return 0
