"""BQL: the fielded Boolean query language. `parse(text)` gives a canonical syntax tree."""

from sieve.engine.query.bql.ast import CONSTRUCTS, And, DateRange, Filter, Near, Node, Not, Or, Phrase, Prefix, Term, constructs
from sieve.engine.query.bql.parser import parse

__all__ = ["CONSTRUCTS", "And", "DateRange", "Filter", "Near", "Node", "Not", "Or", "Phrase", "Prefix", "Term", "constructs", "parse"]
