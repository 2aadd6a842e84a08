"""BQL by recursive descent: the grammar's productions (`parser.BQLParser`) as plain Python over
`lexer.scan`'s tokens, building each node with the same functions (`productions`).

Why two parsers: over 400 realistic queries (bench_engine's classes on the stdlib corpus and the
oracle tests' trees) sly's LALR driver takes 24.7 us a query (median), this 10.7 us, and every
`match`, `search` and agent call parses (a term's whole `match` is about 50 us). The grammar stays
the grammar of record: its tables prove BQL unambiguous (a test asserts no conflicts) and every
error and limit message comes from it. This parser takes a query only if
the grammar gives it this very tree (tests/engine/test_bql_parser.py checks that against
generated grammatical and token-soup queries) and otherwise gives up, so the grammar speaks.
"""

from __future__ import annotations

from typing import Any

from sieve.engine.query.bql import ast
from sieve.engine.query.bql.lexer import BAD_CHAR, Tok, scan
from sieve.engine.query.bql.productions import (
    MAX_CLAUSES,
    MAX_DEPTH,
    MAX_NEGATIONS,
    MAX_QUERY_CHARS,
    _AndList,
    _date_item,
    _group_item,
    _Item,
    _near,
    _near_item,
    _nearcall,
    _negated,
    _or,
    _phrase_item,
    _word_item,
)
from sieve.errors import BQLSyntaxError

_STARTS = frozenset(
    {"NOT", "MINUS", "WORD", "PREFIX", "PHRASE", "NEARCALL", "LPAREN", "DATE"}
)  # what can begin a not_expr
_CLAUSES = frozenset({"WORD", "PREFIX", "PHRASE", "DATE", "NEARCALL"})


class _Fail(Exception):
    """Not a query `_Descent` takes: the grammar decides (and words the error)."""


class _Descent:
    """The grammar's productions as recursive descent over `scan`'s tokens, building each node
    with the same functions as `BQLParser`'s actions. sly's LALR driver costs 100-400 us a query
    in Python; this, a few. It takes a query only if the grammar gives it this very tree
    (tests/engine/test_bql_parser.py checks that against generated queries) and otherwise fails,
    so errors, limits and their messages stay the grammar's."""

    def __init__(self, toks: list[tuple[str, Tok]]) -> None:
        self.toks = toks
        self.kinds = [k for k, _ in toks] + [None]  # None: the end
        self.i = 0

    def peek(self) -> str | None:
        return self.kinds[self.i]

    def take(self, kind: str | None = None) -> Tok:
        i = self.i
        if self.kinds[i] is None or (kind is not None and self.kinds[i] != kind):
            raise _Fail
        self.i = i + 1
        return self.toks[i][1]

    def tag(self) -> Tok | None:
        return self.take() if self.peek() == "TAG" else None

    def query(self) -> ast.Node:
        node = self.or_expr()
        if self.i != len(self.toks):
            raise _Fail
        return node

    def or_expr(self) -> ast.Node:
        operands = [self.and_expr().node()]
        while self.kinds[self.i] == "OR":
            self.i += 1
            operands.append(self.and_expr().node())
        return operands[0] if len(operands) == 1 else _or(operands)

    def and_expr(self) -> _AndList:
        run = _AndList(self.not_expr()[0])
        while True:
            kind = self.peek()
            if kind == "AND":
                self.i += 1
                run.conjoin(self.not_expr()[0])
            elif kind in _STARTS:
                run.juxtapose(*self.not_expr())
            else:
                return run

    def not_expr(self) -> tuple[_Item, Any]:
        if self.peek() in ("NOT", "MINUS"):
            op = self.take()
            return _negated(op, self.not_expr()[0].node)
        return self.primary()

    def primary(self) -> tuple[_Item, Any]:
        kind = self.peek()
        t = self.take()
        if kind == "WORD" and self.peek() == "NEAR":
            op = self.take()
            right = self.take("WORD")
            return _near_item(_near(op, t, right, (t.pos, right.pos + len(right.text))), self.tag())
        if kind in ("WORD", "PREFIX"):
            return _word_item(t, self.tag())
        if kind == "PHRASE":
            return _phrase_item(t, self.tag())
        if kind == "NEARCALL":
            return _near_item(_nearcall(t), self.tag())
        if kind == "LPAREN":
            expr = self.or_expr()
            return _group_item(t, expr, self.take("RPAREN"), self.tag())
        if kind == "DATE":
            return _date_item(t)
        raise _Fail


def parse_fast(text: str) -> ast.Node | None:
    """The grammar's tree of `text` by recursive descent, or None where the grammar must speak:
    a syntax error, a limit, a control character (`parse_lalr` then raises the error)."""
    if len(text) > MAX_QUERY_CHARS or BAD_CHAR.search(text):
        return None
    toks = scan(text)
    if not toks:
        return None
    depth = negations = clauses = 0
    for kind, _ in toks:  # the limits `_prescan` enforces: over any of them, the grammar reports it
        if kind == "LPAREN":
            depth += 1
            if depth > MAX_DEPTH:
                return None
        elif kind == "RPAREN":
            depth -= 1
        elif kind in ("NOT", "MINUS"):
            negations += 1
        elif kind in _CLAUSES:
            clauses += 1
    if negations > MAX_NEGATIONS or clauses > MAX_CLAUSES:
        return None
    try:
        return _Descent(toks).query()
    except (_Fail, BQLSyntaxError, RecursionError):
        return None
