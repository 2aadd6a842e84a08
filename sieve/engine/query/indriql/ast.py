"""Syntax tree of the Indri query language subset sieve reads: frozen values that print as canonical
Indri (`parse(str(node)) == node`), each with the character span it was read from.

Words keep their spelling (analysis happens in the planner, as for BQL). A field restriction written
on an operator (`#combine[title](a b)`, `#od2(a b).title`) is pushed down to its words by the
parser, so `fields` on a word is where it may match; None means any text field.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field, replace
from typing import Literal

from sieve.engine.analysis.fields import ALL_FIELDS, Field

Fields = frozenset[Field] | None
Span = tuple[int, int]


@functools.lru_cache(maxsize=64)
def restriction(fields: Fields) -> str:
    """`.title`, `.(title,body)` or nothing: a field restriction as Indri writes it after a word."""
    if fields is None:
        return ""
    if fields == ALL_FIELDS:
        return ".all"
    labels = [f.label for f in sorted(fields)]
    return "." + labels[0] if len(labels) == 1 else ".(" + ",".join(labels) + ")"


def _word_text(text: str) -> str:
    """A word as written in canonical form: quoted when it holds a character the grammar reads."""
    plain = text and not any(c.isspace() or c in '()[]#."*' for c in text)
    return text if plain else '"' + text + '"'


@dataclass(frozen=True)
class Word:
    """A query word (`dog`, `dog.title`, `"U.S."`). One the analyzer splits into several terms
    matches as their phrase, as in BQL."""

    text: str
    fields: Fields = None
    span: Span = field(default=(0, 0), compare=False, repr=False)

    def __str__(self) -> str:
        return _word_text(self.text) + restriction(self.fields)


@dataclass(frozen=True)
class Wildcard:
    """`stem*`: every term that starts with the stem's term (Indri's wildcard)."""

    stem: str
    fields: Fields = None
    span: Span = field(default=(0, 0), compare=False, repr=False)

    def __str__(self) -> str:
        return _word_text(self.stem) + "*" + restriction(self.fields)


@dataclass(frozen=True)
class Window:
    """`#odN(...)` (also `#N(...)`): the words in order, each at most N positions after the one
    before; `#uwN(...)`: all the words, any order, inside N consecutive positions; `#uw(...)`
    (width None): all of them in one field value or section. Always inside one field value or
    section text."""

    ordered: bool
    width: int | None
    words: tuple[Word, ...]
    fields: Fields = None
    span: Span = field(default=(0, 0), compare=False, repr=False)

    def __str__(self) -> str:
        op = ("#od" if self.ordered else "#uw") + ("" if self.width is None else str(self.width))
        return (
            op
            + "("
            + " ".join(_word_text(w.text) for w in self.words)
            + ")"
            + restriction(self.fields)
        )


@dataclass(frozen=True)
class Syn:
    """`#syn(...)`: its operands counted as one term (their occurrences summed)."""

    operands: tuple[Word | Wildcard | Window, ...]
    fields: Fields = None
    span: Span = field(default=(0, 0), compare=False, repr=False)

    def __str__(self) -> str:
        def bare(op: Word | Wildcard | Window) -> str:
            # the restriction is printed once, on the #syn
            return str(op.__class__(**{**op.__dict__, "fields": None}))

        return "#syn(" + " ".join(bare(o) for o in self.operands) + ")" + restriction(self.fields)


DateOp = Literal["after", "before", "between", "equals"]


@dataclass(frozen=True)
class Dates:
    """`#dateafter(d)`, `#datebefore(d)`, `#datebetween(a b)`, `#dateequals(d)`: a filter on the
    document's date. `lo`, `hi`: inclusive YYYYMMDD bounds (None: open); `written`: the dates as
    given (printed back, so a partial date keeps its span)."""

    op: DateOp
    lo: int | None
    hi: int | None
    written: tuple[str, ...]
    span: Span = field(default=(0, 0), compare=False, repr=False)

    def __str__(self) -> str:
        return f"#date{self.op}(" + " ".join(self.written) + ")"


@dataclass(frozen=True)
class Combine:
    """`#combine(...)`: the mean of the operands' log beliefs; `#weight(w1 q1 w2 q2 ...)`
    (`weights` given): their weighted mean. `extent` is the `[field]` written after the operator
    name (already pushed down to the words; kept to print it back)."""

    children: tuple[Node, ...]
    weights: tuple[float, ...] | None = None
    extent: Fields = None
    span: Span = field(default=(0, 0), compare=False, repr=False)

    def __str__(self) -> str:
        ext = "" if self.extent is None else "[" + restriction(self.extent)[1:].strip("()") + "]"
        if self.weights is None:
            return (
                f"#combine{ext}("
                + " ".join(str(c) for c in _unscoped(self.children, self.extent))
                + ")"
            )
        pairs = (f"{w:g} {c}" for w, c in zip(self.weights, _unscoped(self.children, self.extent)))
        return f"#weight{ext}(" + " ".join(pairs) + ")"


@dataclass(frozen=True)
class Or:
    """`#or(...)`: 1 - the product of (1 - belief)."""

    children: tuple[Node, ...]
    span: Span = field(default=(0, 0), compare=False, repr=False)

    def __str__(self) -> str:
        return "#or(" + " ".join(str(c) for c in self.children) + ")"


@dataclass(frozen=True)
class Not:
    """`#not(q)`: 1 - belief."""

    child: Node
    span: Span = field(default=(0, 0), compare=False, repr=False)

    def __str__(self) -> str:
        return f"#not({self.child})"


@dataclass(frozen=True)
class Band:
    """`#band(...)`: Boolean AND. Only documents where every operand matches take part; there, the
    mean of the operands' beliefs, as #combine."""

    children: tuple[Node, ...]
    span: Span = field(default=(0, 0), compare=False, repr=False)

    def __str__(self) -> str:
        return "#band(" + " ".join(str(c) for c in self.children) + ")"


@dataclass(frozen=True)
class Filter:
    """`#filreq(f q)`: the documents where `f` matches, ranked by `q`; `#filrej(f q)` (`require`
    False): those where `f` does not match."""

    require: bool
    filter: Node
    query: Node
    span: Span = field(default=(0, 0), compare=False, repr=False)

    def __str__(self) -> str:
        return f"#fil{'req' if self.require else 'rej'}({self.filter} {self.query})"


Leaf = Word | Wildcard | Window | Syn | Dates
Node = Word | Wildcard | Window | Syn | Dates | Combine | Or | Not | Band | Filter


def _unscoped(children: tuple[Node, ...], extent: Fields) -> list[Node]:
    """Children as written inside an extent: the extent's fields taken off the words it scoped."""
    if extent is None:
        return list(children)
    return [strip(c, extent) for c in children]


def strip(node: Node, fields: frozenset[Field]) -> Node:
    """`node` with `fields` taken off every leaf scoped exactly to them (the inverse of scoping)."""
    from dataclasses import replace

    if isinstance(node, (Word, Wildcard, Window, Syn)):
        return replace(node, fields=None) if node.fields == fields else node
    if isinstance(node, Dates):
        return node
    if isinstance(node, Not):
        return replace(node, child=strip(node.child, fields))
    if isinstance(node, Filter):
        return replace(node, filter=strip(node.filter, fields), query=strip(node.query, fields))
    if isinstance(node, Combine) and node.extent is not None:
        return node  # its own extent already printed its words unscoped
    return replace(node, children=tuple(strip(c, fields) for c in node.children))


def scoped(node: Node, fields: frozenset[Field]) -> Node:
    """`node` with `fields` given to every word, wildcard, window and #syn without a restriction of
    its own (inner restrictions win), as an extent `#combine[title](...)` scopes its operands."""
    if isinstance(node, (Word, Wildcard, Window)):
        return node if node.fields is not None else replace(node, fields=fields)
    if isinstance(node, Syn):
        if node.fields is not None:
            return node
        return replace(
            node, fields=fields, operands=tuple(replace(o, fields=fields) for o in node.operands)
        )
    if isinstance(node, Dates):
        return node
    if isinstance(node, Not):
        return replace(node, child=scoped(node.child, fields))
    if isinstance(node, Filter):
        return replace(node, filter=scoped(node.filter, fields), query=scoped(node.query, fields))
    return replace(node, children=tuple(scoped(c, fields) for c in node.children))
