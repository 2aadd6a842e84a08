"""BQL: the fielded Boolean query language. `parse(text)` gives a canonical syntax tree (`ast`).

`lexer` (tokens), `parser` (the sly grammar of record, errors and limits), `descent` (the same
productions by recursive descent, for speed), `productions` (the nodes both build), `dates`,
`free_text` (plain text as a query) and `hints` (what a query in another engine's syntax meant).
"""

from sieve.engine.query.bql.ast import (
    CONSTRUCTS,
    And,
    DateRange,
    Filter,
    Near,
    Node,
    Not,
    Or,
    Phrase,
    Prefix,
    Term,
    constructs,
)
from sieve.engine.query.bql.parser import parse

__all__ = [
    "CONSTRUCTS",
    "And",
    "DateRange",
    "Filter",
    "Near",
    "Node",
    "Not",
    "Or",
    "Phrase",
    "Prefix",
    "Term",
    "constructs",
    "parse",
]
