"""AND, OR and NOT: the plan nodes with children, and how each combines its children's answers.

An AND evaluates its operands cheapest first, each inside what the earlier ones admitted; an OR
scatters its terms' document lists into one set; NOT is the complement within the live documents.
Indri's #combine and #weight are ANDs here (with weights), #band and #filreq/#filrej too
(`BandPlan`, `FilterPlan`): to Boolean evaluation they are conjunctions, and only the Indri-style
scorer (rank/indri.py) reads them differently.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from sieve.engine import deadline
from sieve.engine.format import bitset
from sieve.engine.query.bql import ast
from sieve.engine.query.explanation import Explanation, Judge
from sieve.engine.query.indriql import ast as iql
from sieve.engine.query.ops.base import LeafPlan, Operator, PlanNode, Resolver
from sieve.engine.query.ops.term import TERM


class AndOp(Operator):
    name = "and"
    nodes = (ast.And,)

    def resolve(self, b: Resolver, node: Any, positive: bool) -> PlanNode:
        return AndPlan(node, tuple([b.build(c, positive) for c in node.children]))

    def match(self, ev: Any, node: AndPlan, cands: np.ndarray | None) -> np.ndarray:
        """Cheapest operands first, each evaluated inside what the earlier ones admitted.
        (Keeping what they admit as a list of documents while the operands are terms, instead of
        sets, was measured: no faster for AND, 6-8% slower for AND NOT.)"""
        acc_and: np.ndarray | None = None
        for child in node.by_cost:
            bits = ev.eval(child, acc_and if acc_and is not None else cands)
            acc_and = bits if acc_and is None else acc_and & bits
            if not acc_and.any():
                break
        assert acc_and is not None
        return acc_and

    def explain(self, judge: Judge, node: Any, d: int, one: np.ndarray) -> Explanation:
        kids = tuple(judge.node(c, d, one) for c in node.children)
        failed = sum(1 for k in kids if not k.admits)
        why = (
            f"{failed} of {len(kids)} parts {'does' if failed == 1 else 'do'} not match"
            if failed
            else f"all {len(kids)} parts match"
        )
        return Explanation(str(node.node), "and", not failed, why, children=kids)

    def rewrite(self, node: Any, loosen: Callable[[LeafPlan], PlanNode | None]) -> PlanNode | None:
        new = _rewritten(node, loosen)
        return None if new is None else AndPlan(ast.And(tuple(c.node for c in new)), new)


class OrOp(Operator):
    name = "or"
    nodes = (ast.Or, iql.Or)

    def resolve(self, b: Resolver, node: Any, positive: bool) -> PlanNode:
        return OrPlan(node, tuple([b.build(c, positive) for c in node.children]))

    def match(self, ev: Any, node: OrPlan, cands: np.ndarray | None) -> np.ndarray:
        """Its terms' document lists scattered into one set (a set of the segment's size made and
        packed once, not once a term), the other operands' sets added to it."""
        acc: np.ndarray | None = None
        lists: list[np.ndarray] = []
        for child in node.children:
            if type(child) is LeafPlan and child.op is TERM and not child.unknown:
                deadline.check()
                bits, docs = ev.term_parts(child.tids[0], child.mask, cands)
                if docs is not None:
                    lists.append(docs)
            else:
                bits = ev.eval(child, cands)
            if bits is not None:
                # A stored row is read-only and shared: the first is copied by the first OR.
                acc = bits if acc is None else acc | bits
        if lists:
            scattered = bitset.from_ids(
                lists[0] if len(lists) == 1 else np.concatenate(lists), ev.n
            )
            acc = scattered if acc is None else acc | scattered
        return acc if acc is not None else bitset.empty(ev.n)

    def explain(self, judge: Judge, node: Any, d: int, one: np.ndarray) -> Explanation:
        kids = tuple(judge.node(c, d, one) for c in node.children)
        held = sum(1 for k in kids if k.admits)
        why = (
            f"{held} of {len(kids)} alternatives match"
            if held
            else f"none of {len(kids)} alternatives matches"
        )
        return Explanation(str(node.node), "or", bool(held), why, children=kids)

    def rewrite(self, node: Any, loosen: Callable[[LeafPlan], PlanNode | None]) -> PlanNode | None:
        new = _rewritten(node, loosen)
        return None if new is None else OrPlan(ast.Or(tuple(c.node for c in new)), new)


class NotOp(Operator):
    name = "not"
    nodes = (ast.Not, iql.Not)

    def resolve(self, b: Resolver, node: Any, positive: bool) -> PlanNode:
        return NotPlan(node, b.build(node.child, False))

    def match(self, ev: Any, node: NotPlan, cands: np.ndarray | None) -> np.ndarray:
        return ev.universe & ~ev.eval(node.child, cands)

    def explain(self, judge: Judge, node: Any, d: int, one: np.ndarray) -> Explanation:
        child = judge.node(node.child, d, one)
        why = (
            "the excluded part does not match" if not child.admits else "the excluded part matches"
        )
        return Explanation(str(node.node), "not", not child.admits, why, children=(child,))

    # rewrite: None, the default: under a NOT, loosening would tighten


def _rewritten(
    node: Any, loosen: Callable[[LeafPlan], PlanNode | None]
) -> tuple[PlanNode, ...] | None:
    kids = [c.op.rewrite(c, loosen) for c in node.children]
    if all(k is None for k in kids):
        return None
    return tuple(k if k is not None else c for k, c in zip(kids, node.children))


AND, OR, NOT = AndOp(), OrOp(), NotOp()


def _order(node: PlanNode) -> tuple[int, int]:
    """An AND's operands: cheap kinds first, and of leaves of a kind the rarer first, so the later
    ones are read only inside the documents the earlier admitted (and an empty one stops it)."""
    return node.cost, node.size if type(node) is LeafPlan else 0


@dataclass(slots=True, eq=False)
class AndPlan:
    node: Any
    children: tuple[PlanNode, ...]  # as written
    weights: tuple[float, ...] | None = (
        None  # Indri's #weight: each child's weight in the mean (None: equal)
    )
    by_cost: tuple[PlanNode, ...] = field(
        init=False
    )  # cheapest first (stable: as written among equals)
    cost: int = field(init=False, default=1)
    op: ClassVar[Operator] = AND

    def __post_init__(self) -> None:
        self.by_cost = tuple(sorted(self.children, key=_order))


@dataclass(slots=True, eq=False)
class OrPlan:
    node: Any
    children: tuple[PlanNode, ...]
    cost: int = field(init=False, default=1)
    op: ClassVar[Operator] = OR


@dataclass(slots=True, eq=False)
class NotPlan:
    node: Any
    child: PlanNode
    cost: int = field(init=False, default=1)
    op: ClassVar[Operator] = NOT


@dataclass(slots=True, eq=False)
class BandPlan(AndPlan):
    """Indri's #band: a Boolean AND (as an AndPlan to the Boolean evaluator); the Indri-style
    scorer admits only the documents where every child matches and gives them #combine's belief."""


@dataclass(slots=True, eq=False)
class FilterPlan(AndPlan):
    """Indri's #filreq / #filrej: `children` is (the filter, the query), the filter already negated
    for #filrej; the Indri-style scorer ranks by the query the documents the filter admits."""


def and_of(kids: tuple[PlanNode, ...]) -> PlanNode:
    """The AND of resolved nodes (the one node itself when alone)."""
    return AndPlan(ast.And(tuple(k.node for k in kids)), kids) if len(kids) > 1 else kids[0]
