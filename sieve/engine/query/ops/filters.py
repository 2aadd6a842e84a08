"""Leaves that only admit or reject a document: a date range (`date[..]`, Indri's #dateafter and
the like) and a filter on a declared column (`year[2000..2010]`, `venue[=ACL]`). They hold no
words: they neither score nor show as matched."""

from __future__ import annotations

from typing import Any

import numpy as np

from sieve.engine.analysis.batch import NO_DATE
from sieve.engine.analysis.schema import filter_bounds
from sieve.engine.format import bitset
from sieve.engine.query.bql import ast
from sieve.engine.query.explanation import Explanation, Judge
from sieve.engine.query.ops.base import LeafOp, LeafPlan, PlanNode, Resolver
from sieve.engine.segment.reader import SegmentReader
from sieve.errors import BQLSyntaxError


class FilterOp(LeafOp):
    filters = True

    def admits(self, r: SegmentReader, leaf: LeafPlan) -> np.ndarray:
        """Whether each document of the segment passes (booleans)."""
        raise NotImplementedError(self.name)

    def match(self, ev: Any, leaf: LeafPlan, cands: np.ndarray | None) -> np.ndarray:
        return bitset.from_bool(self.admits(ev.r, leaf), ev.n)

    def relax(self, kind: str, leaf: LeafPlan) -> PlanNode | None:
        return None  # a filter has no field scope to widen


class DateOp(FilterOp):
    name = "date"
    nodes = (ast.DateRange,)

    def leaf(self, b: Resolver, node: Any) -> LeafPlan:
        return LeafPlan(node, DATE, dates=(node.lo, node.hi), size=b.r.n_docs)

    def admits(self, r: SegmentReader, leaf: LeafPlan) -> np.ndarray:
        col = np.asarray(r.dates)
        keep = col != NO_DATE
        lo, hi = leaf.dates
        if lo is not None:
            keep &= col >= lo
        if hi is not None:
            keep &= col <= hi
        return keep

    def explain(self, judge: Judge, leaf: LeafPlan, d: int, one: np.ndarray) -> Explanation:
        q = str(leaf.node)
        admits = judge.truth(leaf, d, one)
        value = int(np.asarray(judge.r.dates)[d])
        if value == NO_DATE:
            return Explanation(q, "date", admits, "the document has no date")
        day = f"{value // 10000:04d}-{value // 100 % 100:02d}-{value % 100:02d}"
        shown = judge.r.meta(d).get("date") or day
        return Explanation(
            q, "date", admits, f"its date {shown} is {'inside' if admits else 'outside'} the range"
        )


class ColumnOp(FilterOp):
    name = "column"
    nodes = (ast.Filter,)

    def leaf(self, b: Resolver, node: Any) -> LeafPlan:
        kind = b.r.schema.type_of(node.name)
        if kind is None:
            raise BQLSyntaxError(
                f"unknown filter field {node.name!r}", node.span[0], b.r.schema.describe()
            )
        try:
            bounds = filter_bounds(kind, node.spec)
        except ValueError as e:
            raise BQLSyntaxError(
                f"bad {kind} filter on {node.name}", node.spec_pos, str(e)
            ) from None
        return LeafPlan(node, COLUMN, column=node.name, bounds=bounds, size=b.r.n_docs)

    def admits(self, r: SegmentReader, leaf: LeafPlan) -> np.ndarray:
        return r.column_filter(leaf.column, *leaf.bounds)

    def explain(self, judge: Judge, leaf: LeafPlan, d: int, one: np.ndarray) -> Explanation:
        q = str(leaf.node)
        admits = judge.truth(leaf, d, one)
        value = (judge.r.meta(d).get("metadata") or {}).get(leaf.column)
        if value is None or value == "" or value == []:
            return Explanation(q, "column", admits, f"the document has no {leaf.column}")
        return Explanation(
            q,
            "column",
            admits,
            f"its {leaf.column} {value!r} is {'inside' if admits else 'outside'} the filter",
        )


DATE, COLUMN = DateOp(), ColumnOp()
