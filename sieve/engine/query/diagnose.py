"""Why a query admits nothing, and which one-step relaxations would admit documents.

For a conjunction of n top-level clauses with bitsets b1..bn, dropping clause i admits
AND(b_j, j != i): prefix and suffix ANDs give all n of them in O(n) bitset operations. Loosening
one clause (a field scope widened to every field, a phrase to its words ANDed, a NEAR to an AND)
re-evaluates only that clause and ANDs it with the others' prefix and suffix. Nothing is
estimated: each count is exactly what `match` of the relaxed query's canonical BQL returns.

The order is the size of the change: loosening one clause keeps every constraint the agent wrote,
so it comes before dropping one; ties in query order. Only relaxations that admit something are
reported. Clauses under a NOT are never loosened (that would tighten the query); dropping a NOT
clause is a drop like any other, but a drop that would leave only NOT clauses is not offered.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import numpy as np

from sieve.engine.format import bitset
from sieve.engine.query.bql import ast
from sieve.engine.query.evaluate import Evaluator
from sieve.engine.query.plan import LeafPlan, Plan, PlanNode

# Kinds, smallest change first.
KINDS = ("near-to-and", "phrase-to-words", "widen", "drop")


@dataclass(frozen=True)
class Relaxation:
    """One relaxed query that admits documents."""

    kind: str  # one of KINDS
    clause: str  # the clause changed or dropped, as canonical BQL
    replacement: str | None  # what it becomes (None: dropped)
    query: str  # the whole relaxed query, canonical BQL
    count: int  # documents it admits: `match(query).count`

    def describe(self) -> str:
        """In a few words, for a listing header: `14 without date[2020-01-01..]`,
        `3 with "heat plan" instead of "heat plan"[section]`."""
        if self.replacement is None:
            return f"{self.count:,} without {self.clause}"
        return f"{self.count:,} with {self.replacement} instead of {self.clause}"


@dataclass(frozen=True)
class Diagnosis:
    """A zero-hit query, explained: each top-level clause's count alone, and the relaxations."""

    # (canonical clause, documents it admits alone), in query order
    clauses: tuple[tuple[str, int], ...]
    relaxations: tuple[Relaxation, ...]  # those admitting documents, smallest change first

    def to_dict(self) -> dict[str, object]:
        return {
            "clauses": [{"clause": c, "count": n} for c, n in self.clauses],
            "relaxations": [
                {
                    "kind": r.kind,
                    "clause": r.clause,
                    "replacement": r.replacement,
                    "query": r.query,
                    "count": r.count,
                }
                for r in self.relaxations
            ],
        }


# Loosening works on the plan, reusing every resolved leaf (its terms and term ids): the query's
# words are analysed once, by the planner, and never again (tests/engine/test_plan.py). Each leaf's
# operator says how it loosens (`relax`), each node's how its children are loosened (`rewrite`).
Loosen = Callable[[LeafPlan], "PlanNode | None"]


def _loosen(kind: str) -> Loosen:
    return lambda leaf: leaf.op.relax(kind, leaf)


_LOOSEN: tuple[tuple[str, Loosen], ...] = tuple((kind, _loosen(kind)) for kind in KINDS[:-1])


def _flatten(node: ast.Node) -> ast.Node:
    """Nested ANDs merged (a phrase turned to words inside an AND stays one conjunction)."""
    if isinstance(node, ast.And):
        kids: list[ast.Node] = []
        for c in node.children:
            c = _flatten(c)
            kids.extend(c.children if isinstance(c, ast.And) else (c,))
        return ast.And(tuple(kids)) if len(kids) > 1 else kids[0]
    if isinstance(node, ast.Or):
        return ast.Or(tuple(_flatten(c) for c in node.children))
    return node


def _query(clauses: list[ast.Node]) -> str:
    return str(_flatten(ast.And(tuple(clauses)) if len(clauses) > 1 else clauses[0]))


def diagnose(
    plan: Plan, evaluator: Evaluator, clause_bits: list[np.ndarray] | None = None, most: int = 8
) -> Diagnosis:
    """The diagnosis of a plan that admits nothing (`clause_bits`: its clauses' sets, if already
    evaluated). At most `most` relaxations are kept, smallest change first."""
    return diagnose_parts([(plan, evaluator)], None if clause_bits is None else [clause_bits], most)


class _Part:
    """One segment's share of a diagnosis: its clauses' sets and their running intersections."""

    def __init__(self, plan: Plan, evaluator: Evaluator, bits: list[np.ndarray]) -> None:
        self.plan, self.evaluator, self.bits = plan, evaluator, bits
        n = len(bits)
        # before[i] = AND of clauses < i; after[i] = AND
        # of clauses > i (None: nothing, the universe)
        self.before: list[np.ndarray | None] = [None] * n
        self.after: list[np.ndarray | None] = [None] * n
        for i in range(1, n):
            prev = self.before[i - 1]
            self.before[i] = bits[i - 1] if prev is None else prev & bits[i - 1]
        for i in range(n - 2, -1, -1):
            nxt = self.after[i + 1]
            self.after[i] = bits[i + 1] if nxt is None else nxt & bits[i + 1]

    def others(self, i: int) -> np.ndarray | None:
        b, a = self.before[i], self.after[i]
        if b is None:
            return a
        return b if a is None else b & a

    def loosened(self, i: int, loosen: Loosen) -> tuple[PlanNode | None, int]:
        """(clause i loosened, documents it admits together with the other clauses)."""
        clause = self.plan.clauses[i]
        looser = clause.op.rewrite(clause, loosen)
        if looser is None:
            return None, 0
        rest = self.others(i)
        if rest is not None and not rest.any():
            # the other clauses admit nothing together: no change to this one can help
            return looser, 0
        # Positional checks run only on what the other
        # clauses admit (exact there, as `eval` promises).
        ev = self.evaluator
        loose_bits = ev.eval(looser, rest) & ev.universe
        return looser, bitset.count(loose_bits if rest is None else loose_bits & rest)


def diagnose_parts(
    parts: Sequence[tuple[Plan, Evaluator]],
    clause_bits: list[list[np.ndarray]] | None = None,
    most: int = 8,
) -> Diagnosis:
    """`diagnose` over an index of several segments: one (plan, evaluator) per segment, the same
    query resolved in each; every count is the sum over the segments."""
    split = [
        _Part(p, ev, clause_bits[j] if clause_bits is not None else [ev.run(c) for c in p.clauses])
        for j, (p, ev) in enumerate(parts)
    ]
    first = split[0].plan
    clauses: list[PlanNode] = list(first.clauses)
    n = len(clauses)
    counts = tuple(
        (str(c.node), sum(bitset.count(part.bits[i]) for part in split))
        for i, c in enumerate(clauses)
    )
    nodes = [c.node for c in clauses]
    found: list[Relaxation] = []
    for kind, loosen in _LOOSEN:
        for i, clause in enumerate(clauses):
            got, changed_node = 0, None
            for part in split:
                looser, c = part.loosened(i, loosen)
                if looser is None:
                    break  # the same tree in every segment: none loosens this way
                changed_node = looser.node
                got += c
            if got and changed_node is not None:
                changed = _flatten(changed_node)
                found.append(
                    Relaxation(
                        kind,
                        str(clause.node),
                        str(changed),
                        _query(nodes[:i] + [changed] + nodes[i + 1 :]),
                        got,
                    )
                )
    if n > 1:
        for i, node in enumerate(nodes):
            if all(isinstance(m, ast.Not) for j, m in enumerate(nodes) if j != i):
                continue  # what is left only excludes: no use to a searcher
            got = 0
            for part in split:
                rest = part.others(i)
                got += bitset.count(rest) if rest is not None else 0
            if got:
                found.append(
                    Relaxation("drop", str(node), None, _query(nodes[:i] + nodes[i + 1 :]), got)
                )
    return Diagnosis(counts, tuple(found[:most]))


ALL = 1 << 62  # `most` that keeps every relaxation: what a shard sends to be merged


def merge_diagnoses(parts: Sequence[Diagnosis], most: int = 8) -> Diagnosis:
    """The diagnosis of one query over several shards, from each shard's own diagnosis made with
    `most=ALL` (a shard lists exactly the relaxations that admit something there): counts summed,
    relaxations in the order one diagnosis of the whole collection lists them."""
    first = parts[0]
    clauses = tuple(
        (c, sum(p.clauses[i][1] for p in parts)) for i, (c, _) in enumerate(first.clauses)
    )
    rank = {kind: r for r, (kind, _) in enumerate(_LOOSEN)} | {"drop": len(_LOOSEN)}
    where: dict[str, int] = {}
    for i, (c, _) in enumerate(first.clauses):
        # a clause written twice: its first place (both give the same relaxed query)
        where.setdefault(c, i)
    totals: dict[tuple[str, str, str, int], list] = {}
    for p in parts:
        seen: dict[tuple[str, str, str], int] = {}
        for r in p.relaxations:
            key = (r.kind, r.clause, r.query)
            # the same relaxation twice in one list stays two
            seen[key] = nth = seen.get(key, -1) + 1
            got = totals.setdefault((*key, nth), [r, 0])
            got[1] += r.count
    merged = sorted(
        totals.items(), key=lambda kv: (rank[kv[0][0]], where.get(kv[0][1], 0), kv[0][3])
    )
    return Diagnosis(clauses, tuple(replace(r, count=n) for _, (r, n) in merged[:most]))
