"""BQL: the fielded Boolean query language. `parse(text)` gives a canonical syntax tree."""

from sieve.engine.bql.ast import And, DateRange, Near, Node, Not, Or, Phrase, Prefix, Term, leaves, positive_leaves
from sieve.engine.bql.parser import parse

__all__ = ["And", "DateRange", "Near", "Node", "Not", "Or", "Phrase", "Prefix", "Term", "leaves", "parse", "positive_leaves"]
