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

from dataclasses import dataclass, replace
from typing import Callable

import numpy as np

from sieve.engine import bitset
from sieve.engine.analysis import analyze
from sieve.engine.bql import ast
from sieve.engine.evaluate import Evaluator
from sieve.engine.plan import Limits, Plan, PlanNode
from sieve.engine.reader import IndexReader
from sieve.errors import BQLLimitError

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

    clauses: tuple[tuple[str, int], ...]  # (canonical clause, documents it admits alone), in query order
    relaxations: tuple[Relaxation, ...]  # those admitting documents, smallest change first

    def to_dict(self) -> dict[str, object]:
        return {"clauses": [{"clause": c, "count": n} for c, n in self.clauses],
                "relaxations": [{"kind": r.kind, "clause": r.clause, "replacement": r.replacement, "query": r.query, "count": r.count}
                                for r in self.relaxations]}


def _rewrite(node: ast.Node, leaf: Callable[[ast.Node], ast.Node]) -> ast.Node:
    """`node` with every leaf outside a NOT passed through `leaf` (under a NOT, kept as it is)."""
    if isinstance(node, ast.And):
        return ast.And(tuple(_rewrite(c, leaf) for c in node.children))
    if isinstance(node, ast.Or):
        return ast.Or(tuple(_rewrite(c, leaf) for c in node.children))
    if isinstance(node, ast.Not):
        return node
    return leaf(node)


def _widen(n: ast.Node) -> ast.Node:
    if isinstance(n, (ast.Term, ast.Prefix, ast.Phrase, ast.Near)) and n.fields is not None:
        return replace(n, fields=None)
    return n


def _words(n: ast.Node) -> ast.Node:
    if isinstance(n, ast.Phrase):
        words = analyze(n.text)  # analysed terms: plain words that print and parse back as themselves
        if len(words) > 1:
            return ast.And(tuple(ast.Term(w, n.fields) for w in dict.fromkeys(words)))
    return n


def _near_to_and(n: ast.Node) -> ast.Node:
    if isinstance(n, ast.Near):
        return ast.And((ast.Term(n.left, n.fields), ast.Term(n.right, n.fields)))
    return n


_LOOSEN: tuple[tuple[str, Callable[[ast.Node], ast.Node]], ...] = (("near-to-and", _near_to_and), ("phrase-to-words", _words), ("widen", _widen))


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


def diagnose(plan: Plan, reader: IndexReader, evaluator: Evaluator, limits: Limits = Limits(),
             clause_bits: list[np.ndarray] | None = None, most: int = 8) -> Diagnosis:
    """The diagnosis of a plan that admits nothing (`clause_bits`: its clauses' sets, if already
    evaluated). At most `most` relaxations are kept, smallest change first."""
    clauses: list[PlanNode] = list(plan.clauses)
    n = len(clauses)
    bits = clause_bits if clause_bits is not None else [evaluator.run(c) for c in clauses]
    counts = tuple((str(c.node), bitset.count(b)) for c, b in zip(clauses, bits))
    # before[i] = AND of clauses < i; after[i] = AND of clauses > i (None: nothing, the universe)
    before: list[np.ndarray | None] = [None] * n
    after: list[np.ndarray | None] = [None] * n
    for i in range(1, n):
        prev = before[i - 1]
        before[i] = bits[i - 1] if prev is None else prev & bits[i - 1]
    for i in range(n - 2, -1, -1):
        nxt = after[i + 1]
        after[i] = bits[i + 1] if nxt is None else nxt & bits[i + 1]

    def others(i: int) -> np.ndarray | None:
        b, a = before[i], after[i]
        if b is None:
            return a
        return b if a is None else b & a

    nodes = [c.node for c in clauses]
    found: list[Relaxation] = []
    for kind, loosen in _LOOSEN:
        for i, node in enumerate(nodes):
            looser = _flatten(_rewrite(node, loosen))
            if looser == node:
                continue
            rest = others(i)
            if rest is not None and not rest.any():
                continue  # the other clauses admit nothing together: no change to this one can help
            try:
                # Positional checks run only on what the other clauses admit (exact there, as `eval` promises).
                loose_bits = evaluator.eval(Plan.of(looser, reader, limits).root, rest) & evaluator.universe
            except BQLLimitError:
                continue  # a looser form too costly to run is not offered
            got = bitset.count(loose_bits if rest is None else loose_bits & rest)
            if got:
                found.append(Relaxation(kind, str(node), str(looser), _query(nodes[:i] + [looser] + nodes[i + 1:]), got))
    if n > 1:
        for i, node in enumerate(nodes):
            if all(isinstance(m, ast.Not) for j, m in enumerate(nodes) if j != i):
                continue  # what is left only excludes: no use to a searcher
            rest = others(i)
            got = bitset.count(rest) if rest is not None else 0
            if got:
                found.append(Relaxation("drop", str(node), None, _query(nodes[:i] + nodes[i + 1:]), got))
    return Diagnosis(counts, tuple(found[:most]))
