"""The Indri-style control ranker: the BQL tree read as an inference network, scored over the whole
collection (no Boolean filter), as the paper's structured-executor control (its Table 6).

Every leaf is a belief per document, in log space, by Dirichlet-smoothed query likelihood over the
field extents the leaf is scoped to:

    log P = log((tf_F(d) + mu * P(F)) / (|d_F| + mu)),   P(F) = ctf_F / |C_F|

where tf_F(d) counts the leaf's occurrences in the fields F of d (an unscoped leaf: every field),
|d_F| is the length of those fields, and a leaf that occurs nowhere in F gets P(F) = 0.5 / |C_F|
(so no belief is zero). The operators, as Indri's query language names them:

| BQL | Indri | here |
|---|---|---|
| `a AND b` | `#combine(a b)` | mean of the children's log beliefs |
| `a OR b` | `#or(a b)` | 1 - prod(1 - P) |
| `NOT a` | `#not(a)` | 1 - P |
| `"a b"` (and a word the analyzer splits, `O_RDONLY`) | `#od1(a b)` | occurrences of the ordered
window as the leaf's tf | | `NEAR/n(a, b)` | `#uw(n+1)(a b)` | occurrences of either word with the
other at most n positions away in the same field value or section | | `stem*` | `#syn(...)` of the
expansions | the expansions' occurrences summed | | `date[..]` | `#filreq` | a filter: P = 1 inside
the range, 0 outside (an AND's dates filter it and are left out of its mean) |

The same scorer reads a query written in Indri's own language (`sieve.engine.query.indriql`, the
paper's Table 6 control proper): `#combine` and bare words as AND above, `#weight` as the weighted
mean, `#or`, `#not`, `#od1` as the phrase, and what BQL cannot say:

| Indri | here |
|---|---|
| `#odN(a b c)`, `#uwN(...)`, `#uw(...)` | occurrences of the window (sieve.engine.query.proximity)
as the leaf's tf | | `#syn(a b*)` | its operands' occurrences summed |
| `#band(a b)` | a filter: documents where every operand matches (`holds`), with #combine's belief;
elsewhere 0 (log: -inf) | | `#filreq(f q)`, `#filrej(f q)` | q's belief where f matches (does not
match), 0 elsewhere | | `#dateafter(d)` etc. | as `date[..]` |

A node *matches* a document (`holds`): a word, window or #syn where it occurs; #combine, #weight
and #or where any operand matches (and every date of a #combine); #band and #filreq where all do;
#not where its operand does not. Indri ranks the documents the whole query matches, not the
collection (`scores(candidates=True)`): a document with none of the words is no result.

Where sieve's Boolean semantics differ: a document that misses a word of an AND still gets a
belief (a smoothed one), so it can rank above documents that satisfy the whole query; NOT lowers a
document's belief instead of excluding it. Only dates exclude.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sieve.engine import deadline
from sieve.engine.analysis.fields import ALL_MASK, Field
from sieve.engine.query.plan import (
    AndPlan,
    BandPlan,
    FilterPlan,
    LeafPlan,
    NotPlan,
    OrPlan,
    Plan,
    PlanNode,
)
from sieve.engine.segment.reader import SegmentReader

NEG_INF = -np.inf


@dataclass(frozen=True)
class IndriParams:
    mu: float = 2500.0  # Dirichlet prior, Indri's default


@dataclass(frozen=True)
class IndriCollection:
    """Collection counts over the live documents of every segment, for one plan."""

    occurrences: dict[int, float]  # each text leaf's occurrences, by its place in plan.leaves
    lengths: dict[int, float]  # |C_F| of each field mask


@dataclass(frozen=True)
class _Context:
    collection: IndriCollection | None
    leaf_at: dict[int, int]  # id(leaf) -> its place in plan.leaves
    tfs: dict[int, np.ndarray] | None  # each text leaf's occurrences per document, already counted
    counted: dict[int, np.ndarray]  # id(leaf) -> its occurrences per document, counted in this call


class IndriScorer:
    """Scores every document of one index for a plan."""

    def __init__(
        self,
        reader: SegmentReader,
        params: IndriParams = IndriParams(),
        live: np.ndarray | None = None,
    ) -> None:
        """`live`: boolean flags of the documents that exist (a segment's, without its deleted
        ones; default all): only they count in `counts`."""
        self.r = reader
        self.params = params
        self._live = slice(None) if live is None else live
        # read on first use: opening an index reads no column it may never need
        self._flen: np.ndarray | None = None
        self._lengths: dict[int, tuple[np.ndarray, float]] = {}

    @property
    def flen(self) -> np.ndarray:
        if self._flen is None:
            self._flen = np.asarray(self.r.field_len, dtype=np.float64).reshape(
                self.r.n_docs, len(Field)
            )
        return self._flen

    def lengths(self, mask: int) -> tuple[np.ndarray, float]:
        """(|d_F| for every document, |C_F|) of the fields in `mask`."""
        got = self._lengths.get(mask)
        if got is None:
            cols = [int(f) for f in Field if mask & f.bit]
            per_doc = self.flen[:, cols].sum(axis=1)
            got = self._lengths[mask] = (per_doc, float(per_doc.sum()))
        return got

    def scores(
        self,
        plan: Plan,
        collection: IndriCollection | None = None,
        tfs: dict[int, np.ndarray] | None = None,
        candidates: bool = False,
    ) -> np.ndarray:
        """The root's log belief for every document (-inf: excluded by a date, a #band or a
        #filreq). `collection`: the collection counts when this reader is one segment of several
        (default: its own). `candidates`: -inf too where the query does not match (`holds`), as
        Indri ranks only the documents a query matches."""
        # Per call, not on self: one scorer serves every thread searching the index.
        ctx = _Context(collection, {id(leaf): i for i, leaf in enumerate(plan.leaves)}, tfs, {})
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            got = self._node(plan.root, ctx)
            if candidates:
                got[~self._holds(plan.root, ctx)] = NEG_INF
            return got

    def counts(
        self, plan: Plan
    ) -> tuple[dict[int, float], dict[int, float], dict[int, np.ndarray]]:
        """This reader's share of the collection counts of `plan`: (occurrences of each text leaf,
        by its place in `plan.leaves`; |C_F| of each field mask), over documents in `live`; and each
        leaf's occurrences per document, for `scores` to reuse."""
        occurrences: dict[int, float] = {}
        lengths: dict[int, float] = {}
        tfs: dict[int, np.ndarray] = {}
        for i, leaf in enumerate(plan.leaves):
            if not leaf.op.filters and not leaf.declared:
                tfs[i] = self.tf(leaf)
                occurrences[i] = float(tfs[i][self._live].sum())
                if leaf.mask not in lengths:
                    lengths[leaf.mask] = float(self.lengths(leaf.mask)[0][self._live].sum())
        return occurrences, lengths, tfs

    # ------------------------------------------------------------ operators

    def _node(self, node: PlanNode, ctx: _Context) -> np.ndarray:
        deadline.check()
        if isinstance(node, LeafPlan):
            return self._leaf(node, ctx)
        if isinstance(node, NotPlan):
            return np.log1p(-np.exp(self._node(node.child, ctx)))
        if isinstance(node, OrPlan):
            miss = np.ones(self.r.n_docs)
            for c in node.children:
                miss *= -np.expm1(self._node(c, ctx))  # 1 - P
            return np.log1p(-miss)
        if type(node) is BandPlan:
            return np.where(self._holds(node, ctx), self._mean(node, ctx), NEG_INF)
        if type(node) is FilterPlan:
            admit, query = node.children
            return np.where(self._holds(admit, ctx), self._node(query, ctx), NEG_INF)
        assert isinstance(node, AndPlan)
        return self._mean(node, ctx)

    def _mean(self, node: AndPlan, ctx: _Context) -> np.ndarray:
        """#combine (#weight with weights): the children's (weighted) mean log belief; a date
        among them filters and is left out of the mean."""
        n = self.r.n_docs
        total = np.zeros(n)
        beliefs = 0.0
        allowed = np.ones(n, dtype=bool)
        weights = node.weights or (1.0,) * len(node.children)
        for c, w in zip(node.children, weights):
            if _filters(c):
                allowed &= self._in_range(c)
                continue
            total += self._node(c, ctx) if w == 1.0 else w * self._node(c, ctx)
            beliefs += w
        mean = total / beliefs if beliefs else total
        return np.where(allowed, mean, NEG_INF)

    def holds(self, plan: Plan) -> np.ndarray:
        """Whether the query matches each document (the module's
        docstring says when a node does)."""
        ctx = _Context(None, {id(leaf): i for i, leaf in enumerate(plan.leaves)}, None, {})
        return self._holds(plan.root, ctx)

    def _holds(self, node: PlanNode, ctx: _Context) -> np.ndarray:
        if isinstance(node, LeafPlan):
            return self._in_range(node) if _filters(node) else self._tf(node, ctx) > 0
        if isinstance(node, NotPlan):
            return ~self._holds(node.child, ctx)
        n = self.r.n_docs
        if type(node) in (BandPlan, FilterPlan):
            out = np.ones(n, dtype=bool)
            for c in node.children:
                out &= self._holds(c, ctx)
            return out
        out = np.zeros(n, dtype=bool)
        need = np.ones(n, dtype=bool)
        some = False
        for c in node.children:  # an OR, or a #combine: any operand, and every date of a #combine
            if type(node) is not OrPlan and _filters(c):
                need &= self._in_range(c)
            else:
                out |= self._holds(c, ctx)
                some = True
        return (out if some else np.ones(n, dtype=bool)) & need

    # ------------------------------------------------------------ leaves

    def _leaf(self, leaf: LeafPlan, ctx: _Context) -> np.ndarray:
        if leaf.op.filters or leaf.declared:  # filters: admitted or not, no belief
            return np.where(self._in_range(leaf), 0.0, NEG_INF)
        tf = self._tf(leaf, ctx)
        dl, cl = self.lengths(leaf.mask)
        ctf = float(tf.sum())
        if ctx.collection is not None:
            cl, ctf = (
                ctx.collection.lengths[leaf.mask],
                ctx.collection.occurrences[ctx.leaf_at[id(leaf)]],
            )
        cl = cl or 1.0
        pc = ctf / cl if ctf > 0 else 0.5 / cl
        mu = self.params.mu
        return np.log((tf + mu * pc) / (dl + mu))

    def _tf(self, leaf: LeafPlan, ctx: _Context) -> np.ndarray:
        if ctx.tfs is not None:
            return ctx.tfs[ctx.leaf_at[id(leaf)]]
        got = ctx.counted.get(id(leaf))
        if got is None:
            got = ctx.counted[id(leaf)] = self.tf(leaf)
        return got

    def tf(self, leaf: LeafPlan) -> np.ndarray:
        """Occurrences of a text leaf in each document (float64), inside its fields."""
        r, n = self.r, self.r.n_docs
        positions = leaf.op.occurrences(r, leaf)
        if not len(positions):
            return np.zeros(n)
        units = r.units_of(positions)
        if leaf.mask != ALL_MASK:
            fields = np.asarray(r.unit_field)[units].astype(np.int64)
            units = units[((np.int64(1) << fields) & leaf.mask) != 0]
        return np.bincount(r.docs_of_units(units), minlength=n).astype(np.float64)

    def _in_range(self, leaf: LeafPlan) -> np.ndarray:
        """A filter leaf (a date, a declared column or text field): where it admits."""
        if leaf.declared:
            return self.tf(leaf) > 0
        return leaf.op.admits(self.r, leaf)  # type: ignore[attr-defined]  # a filter operator (ops.filters)


def _filters(node: PlanNode) -> bool:
    """A leaf that only admits or rejects (a date, a declared field): no belief of its own."""
    return isinstance(node, LeafPlan) and (node.op.filters or bool(node.declared))
