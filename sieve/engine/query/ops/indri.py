"""The Indri query language's operators (`sieve.engine.query.indriql`): its belief operators
resolve into the Boolean nodes BQL's do (#combine and #weight an AND with weights, #band and
#filreq/#filrej their own ANDs), its words and wildcards into BQL's term, phrase and prefix leaves
(so both languages mean the same by them), and it adds two leaves of its own: windows of any
number of words (`#odN`, `#uwN`) and `#syn`. Only the Indri-style scorer (rank/indri.py) ranks
by them."""

from __future__ import annotations

from typing import Any

import numpy as np

from sieve.engine.analysis.analyzers import STOP
from sieve.engine.analysis.fields import mask_of
from sieve.engine.format import bitset
from sieve.engine.query.bql import ast
from sieve.engine.query.indriql import ast as iql
from sieve.engine.query.ops.base import (
    LeafOp,
    LeafPlan,
    Operator,
    PlanNode,
    Resolver,
    positions_in_doc,
)
from sieve.engine.query.ops.boolean import AndPlan, BandPlan, FilterPlan, NotPlan
from sieve.engine.query.ops.filters import DATE
from sieve.engine.query.ops.prefix import PREFIX
from sieve.engine.query.ops.words import word_leaf
from sieve.engine.query.proximity import window_starts
from sieve.engine.segment.reader import SegmentReader
from sieve.errors import IndriSyntaxError


class CombineOp(Operator):
    """#combine and #weight: an AND whose children's beliefs are averaged (weighted)."""

    name = "combine"
    nodes = (iql.Combine,)

    def resolve(self, b: Resolver, node: Any, positive: bool) -> PlanNode:
        return AndPlan(node, tuple([b.build(c, positive) for c in node.children]), node.weights)


class BandOp(Operator):
    name = "band"
    nodes = (iql.Band,)

    def resolve(self, b: Resolver, node: Any, positive: bool) -> PlanNode:
        return BandPlan(node, tuple([b.build(c, positive) for c in node.children]))


class FilreqOp(Operator):
    """#filreq / #filrej: the filter only admits; its words do not rank (nor show as matched)."""

    name = "filreq"
    nodes = (iql.Filter,)

    def resolve(self, b: Resolver, node: Any, positive: bool) -> PlanNode:
        f = b.build(node.filter, False)
        return FilterPlan(
            node, (f if node.require else NotPlan(node.filter, f), b.build(node.query, positive))
        )


class IndriLeafOp(LeafOp):
    """Indri's words, wildcards and windows, resolved as BQL's leaves where they mean the same."""

    name = "indri-leaf"
    nodes = (iql.Word, iql.Wildcard, iql.Window, iql.Syn, iql.Dates)

    def resolve(self, b: Resolver, node: Any, positive: bool) -> PlanNode:
        return b.add_leaf(node, positive, indri_leaf, indri=True)


class _Occurring(LeafOp):
    """A leaf known by where it occurs: a document matches where it occurs in the leaf's fields."""

    def match(self, ev: Any, leaf: LeafPlan, cands: np.ndarray | None) -> np.ndarray:
        occ = self.occurrences(ev.r, leaf)
        return ev.docs_of(occ, leaf.mask) if len(occ) else bitset.empty(ev.n)


class WindowOp(_Occurring):
    positional = True

    def __init__(self, ordered: bool) -> None:
        self.ordered = ordered
        self.name = "ordered" if ordered else "unordered"

    def positions(self, r: SegmentReader, leaf: LeafPlan, d: int) -> np.ndarray:
        lists = {t: positions_in_doc(r, t, d).astype(np.int64) for t in set(leaf.tids)}
        return window_starts(r, [lists[t] for t in leaf.tids], leaf.distance or None, self.ordered)

    def occurrences(self, r: SegmentReader, leaf: LeafPlan) -> np.ndarray:
        if leaf.unknown:
            return np.zeros(0, dtype=np.int64)
        lists: dict[
            int, np.ndarray
        ] = {}  # a word written twice: one array, so the window needs it twice
        for tid in leaf.tids:
            if tid not in lists:
                lists[tid] = np.asarray(r.positions(tid)).astype(np.int64)
        return window_starts(r, [lists[t] for t in leaf.tids], leaf.distance or None, self.ordered)


class SynOp(_Occurring):
    """#syn: its operands' occurrences are its own."""

    name = "syn"

    def settle(self, leaf: LeafPlan) -> None:
        leaf.unknown = all(p.unknown for p in leaf.parts)

    def positions(self, r: SegmentReader, leaf: LeafPlan, d: int) -> np.ndarray:
        return np.concatenate([p.op.positions(r, p, d) for p in leaf.parts])

    def occurrences(self, r: SegmentReader, leaf: LeafPlan) -> np.ndarray:
        if leaf.unknown:
            return np.zeros(0, dtype=np.int64)
        return np.concatenate([p.op.occurrences(r, p) for p in leaf.parts])


COMBINE, BAND, FILREQ, INDRI_LEAF = CombineOp(), BandOp(), FilreqOp(), IndriLeafOp()
ORDERED, UNORDERED, SYN = WindowOp(True), WindowOp(False), SynOp()


def indri_leaf(b: Resolver, node: Any) -> LeafPlan:
    """The leaf of an Indri word, wildcard, window, #syn or date operator."""
    kind = type(node)
    if kind is iql.Word:
        return word_leaf(b, ast.Term(node.text, node.fields, node.span), node.text)
    if kind is iql.Wildcard:
        return PREFIX.leaf(b, ast.Prefix(node.stem, node.fields, node.span))
    if kind is iql.Dates:
        return DATE.leaf(b, node)
    if kind is iql.Syn:
        parts = tuple(indri_leaf(b, o) for o in node.operands)
        return LeafPlan(
            node,
            SYN,
            mask=mask_of(node.fields),
            text=" ".join(p.text for p in parts),
            parts=parts,
            volume=sum(p.volume for p in parts),
        )
    assert kind is iql.Window
    if node.ordered and node.width == 1:  # the phrase, stop words and split words as BQL's
        text = " ".join(w.text for w in node.words)
        return word_leaf(b, ast.Phrase(text, node.fields, node.span), text)
    terms = b.analysed(node, _window_terms)
    tids = b.ids(terms)
    volume = 0 if min(tids) < 0 else sum(b.r.position_count(t) for t in set(tids))
    return LeafPlan(
        node,
        ORDERED if node.ordered else UNORDERED,
        terms,
        tids,
        mask=mask_of(node.fields),
        distance=node.width or 0,
        volume=volume,
        text=" ".join(w.text for w in node.words),
    )


def _window_terms(b: Resolver, node: Any) -> tuple[str, ...]:
    """One term per word of a window wider than a phrase (a gap or a split word would have no
    place in it)."""
    out = []
    for w in node.words:
        analysed = b.analyzer.analyze(w.text)
        if len(analysed) == 1 and analysed[0] == STOP:
            raise IndriSyntaxError(
                f"{w.text!r} is a stop word, which this index does not index"
                f" (its analyzer: {b.analyzer.label})",
                w.span[0],
                "leave it out of the window",
            )
        if len(analysed) != 1:
            raise IndriSyntaxError(
                f"{w.text!r} is several words to this index"
                f" ({' '.join(t for t in analysed if t != STOP)})",
                w.span[0],
                "write its pieces as separate words of the window,"
                " or use #1(...) for the exact phrase",
            )
        out.append(analysed[0])
    return tuple(out)
