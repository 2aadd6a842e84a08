"""The Indri query language (the subset sieve reads): `parse(text)` gives a canonical syntax tree
that `sieve.engine.query.plan.Plan.of` resolves like a BQL tree, for the Indri-style scorer
(indri.py)."""

from sieve.engine.query.indriql.parser import parse

__all__ = ["parse"]
