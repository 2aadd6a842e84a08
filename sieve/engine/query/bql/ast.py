"""BQL syntax tree: frozen values that print as canonical BQL (`parse(str(node)) == node`).

Words keep the spelling the user typed (analysis happens in the planner); field scopes are pushed
down to the leaves by the parser, so `(a OR b)[title]` prints as `a[title] OR b[title]`.
A leaf scope of None means any text field.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field

from sieve.engine.analysis.fields import ALL_FIELDS, Field

Fields = frozenset[Field] | frozenset[str] | None  # a str: a declared text field's name
Span = tuple[int, int]


# 31 possible scopes; sorting enum members costs microseconds a word
@functools.lru_cache(maxsize=64)
def _tag(fields: Fields) -> str:
    if fields is None:
        return ""
    if fields == ALL_FIELDS:
        return "[all]"
    return "[" + ",".join(f.label if isinstance(f, Field) else f for f in sorted(fields)) + "]"  # type: ignore[misc]  # sorted() of a union of sets


@dataclass(frozen=True)
class Term:
    """A bare word. One that analyses into several terms (`O_RDONLY`) matches as their phrase."""

    word: str
    fields: Fields = None
    span: Span = field(default=(0, 0), compare=False, repr=False)

    def __str__(self) -> str:
        return self.word + _tag(self.fields)


@dataclass(frozen=True)
class Prefix:
    """`stem*`: any term that starts with the stem's single term."""

    stem: str
    fields: Fields = None
    span: Span = field(default=(0, 0), compare=False, repr=False)

    def __str__(self) -> str:
        return self.stem + "*" + _tag(self.fields)


@dataclass(frozen=True)
class Phrase:
    """`"words"`: the terms adjacent and in order inside one section
    text, heading or field value."""

    text: str
    fields: Fields = None
    span: Span = field(default=(0, 0), compare=False, repr=False)

    def __str__(self) -> str:
        return '"' + self.text + '"' + _tag(self.fields)


@dataclass(frozen=True)
class Near:
    """`NEAR/n(a, b)`: both words at most n positions apart (adjacent = 1), any order, one unit."""

    left: str
    right: str
    distance: int
    fields: Fields = None
    span: Span = field(default=(0, 0), compare=False, repr=False)

    def __str__(self) -> str:
        return f"NEAR/{self.distance}({self.left}, {self.right})" + _tag(self.fields)


@dataclass(frozen=True)
class DateRange:
    """`date[lo..hi]`: inclusive bounds as YYYYMMDD integers; None is an open end."""

    lo: int | None
    hi: int | None
    span: Span = field(default=(0, 0), compare=False, repr=False)

    def __str__(self) -> str:
        def day(v: int | None) -> str:
            return "" if v is None else f"{v // 10000:04d}-{v // 100 % 100:02d}-{v % 100:02d}"

        if self.lo is not None and self.lo == self.hi:
            return f"date[{day(self.lo)}]"
        return f"date[{day(self.lo)}..{day(self.hi)}]"


@dataclass(frozen=True)
class Filter:
    """`name[spec]` on a declared field (sieve.engine.analysis.schema): a number or date range, or
    `=value` for a keyword. The spec is read when the query meets an index,
    which knows the field's type."""

    name: str
    spec: str
    span: Span = field(default=(0, 0), compare=False, repr=False)
    # where the spec starts in the query
    spec_pos: int = field(default=0, compare=False, repr=False)

    def __str__(self) -> str:
        return f"{self.name}[{self.spec}]"


@dataclass(frozen=True)
class Not:
    child: Node
    span: Span = field(default=(0, 0), compare=False, repr=False)

    def __str__(self) -> str:
        inner = str(self.child)
        if isinstance(self.child, (And, Or)):
            inner = f"({inner})"
        return "NOT " + inner


@dataclass(frozen=True)
class And:
    children: tuple[Node, ...]
    span: Span = field(default=(0, 0), compare=False, repr=False)

    def __str__(self) -> str:
        return " AND ".join(f"({c})" if isinstance(c, Or) else str(c) for c in self.children)


@dataclass(frozen=True)
class Or:
    children: tuple[Node, ...]
    span: Span = field(default=(0, 0), compare=False, repr=False)

    def __str__(self) -> str:
        return " OR ".join(str(c) for c in self.children)


Leaf = Term | Prefix | Phrase | Near
Node = Term | Prefix | Phrase | Near | DateRange | Filter | Not | And | Or


CONSTRUCTS = ("phrase", "field", "boolean", "wildcard", "date", "near")


def constructs(node: Node) -> set[str]:
    """Which of CONSTRUCTS a query uses (for statistics of how agents write queries)."""
    out: set[str] = set()
    for n in walk(node):
        if isinstance(n, (And, Or, Not)):
            out.add("boolean")
        elif isinstance(n, (DateRange, Filter)):
            out.add("date")
        else:
            out.update(
                kind
                for kind, cls in (("phrase", Phrase), ("wildcard", Prefix), ("near", Near))
                if isinstance(n, cls)
            )
            if n.fields is not None:
                out.add("field")
    return out


def walk(node: Node) -> list[Node]:
    """Every node of a tree, `node` first."""
    out: list[Node] = []
    stack = [node]
    while stack:
        n = stack.pop()
        out.append(n)
        if isinstance(n, (And, Or)):
            stack.extend(n.children)
        elif isinstance(n, Not):
            stack.append(n.child)
    return out


_walk = walk
