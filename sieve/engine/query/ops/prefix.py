"""`stem*`: every term of the dictionary that starts with the (analysed) stem."""

from __future__ import annotations

from typing import Any

import numpy as np

from sieve.engine.analysis.analyzers import Analyzer
from sieve.engine.analysis.schema import shown_term
from sieve.engine.format import bitset
from sieve.engine.query.bql import ast
from sieve.engine.query.explanation import Judge
from sieve.engine.query.ops.base import LeafOp, LeafPlan, Resolver, positions_in_doc
from sieve.engine.segment.reader import SegmentReader, search_sorted
from sieve.errors import BQLLimitError


class PrefixOp(LeafOp):
    name = "prefix"
    nodes = (ast.Prefix,)

    def leaf(self, b: Resolver, node: Any) -> LeafPlan:
        stem, mask, declared = b.analysed(node, _stem)
        lo, hi = b.r.terms.prefix_range(stem.encode())
        if hi - lo > b.limits.max_prefix_terms:
            raise BQLLimitError(
                "prefix expansion",
                hi - lo,
                b.limits.max_prefix_terms,
                f"{node.stem}* matches {hi - lo} terms; lengthen the stem",
            )
        size = int(b.r.post_ptr[hi]) - int(b.r.post_ptr[lo])
        return LeafPlan(
            node,
            PREFIX,
            (stem,),
            term_range=(lo, hi),
            mask=mask,
            text=node.stem,
            declared=declared,
            size=size,
        )

    def settle(self, leaf: LeafPlan) -> None:
        leaf.unknown = leaf.term_range[0] >= leaf.term_range[1]

    def scored(self, leaf: LeafPlan) -> zip[tuple[str, int]]:
        return zip((), ())  # a prefix adds no score (docs/bql.md, "Ranking")

    def stems(self, leaf: LeafPlan) -> tuple[str, ...]:
        return (leaf.terms[0],)

    def missing_here(self, leaf: LeafPlan) -> list[str]:
        return [shown_term(leaf.terms[0]) + "*"]

    def match(self, ev: Any, leaf: LeafPlan, cands: np.ndarray | None) -> np.ndarray:
        if leaf.unknown:
            return bitset.empty(ev.n)
        r = ev.r
        lo, hi = leaf.term_range
        a, b = int(r.post_ptr[lo]), int(r.post_ptr[hi])
        # Terms sharing a prefix are neighbours in the sorted dictionary, so their postings are
        # one slice.
        docs = r.post_doc[a:b]
        if r.left_out(leaf.mask):
            docs = docs[r.attrs.meets(a, b, leaf.mask)]
        return bitset.from_ids(docs, ev.n)

    def positions(self, r: SegmentReader, leaf: LeafPlan, d: int) -> np.ndarray:
        lo, hi = leaf.term_range
        a, b = int(r.post_ptr[lo]), int(r.post_ptr[hi])
        hits = np.flatnonzero(np.asarray(r.post_doc[a:b]) == d) + a
        if not len(hits):
            return np.zeros(0, dtype=np.int64)
        tids = search_sorted(r.post_ptr, hits, side="right") - 1
        return np.concatenate([positions_in_doc(r, int(t), d).astype(np.int64) for t in tids])

    def occurrences(self, r: SegmentReader, leaf: LeafPlan) -> np.ndarray:
        if leaf.unknown:
            return np.zeros(0, dtype=np.int64)
        lo, hi = leaf.term_range
        return np.asarray(r.pos.of_terms(lo, hi)).astype(np.int64)

    def why_not(
        self, judge: Judge, leaf: LeafPlan, d: int, pos: np.ndarray, every: set[int]
    ) -> str:
        if len(pos):
            return super().why_not(judge, leaf, d, pos, every)
        return f"no word starting with {shown_term(leaf.terms[0])!r} in the document"


PREFIX = PrefixOp()


def _stem(b: Resolver, node: Any) -> tuple[str, int, str]:
    # A stemming index holds stems, so the prefix is stemmed too: `running*` is `run*` and
    # admits every document `running` admits (docs/bql.md, "Analyzers"). A prefix is
    # never a stop word: `the*` is every indexed term starting with `the`.
    mask, declared, ns = b.scope(node.fields)
    return ns(b.analyzer.stem(Analyzer.words(node.stem), stop=False)[0]), mask, declared
