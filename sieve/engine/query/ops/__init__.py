"""Query operators, one module each (tantivy's query folder is the model): `base` (what every
operator is, the resolved leaf), `words` (a written word or phrase resolved to a term or phrase),
`term`, `phrase`, `prefix`, `near`, `filters` (date and column), `boolean` (AND, OR, NOT and their
plan nodes) and `indri` (the Indri language's own). May import the segment reader, the formats,
analysis and the syntax trees; the drivers (plan, evaluate, explain, decision, diagnose, the
rankers) import these, never the reverse.

`RESOLVERS` maps every syntax node class, BQL's and Indri's, to the operator that resolves it.
"""

from __future__ import annotations

from sieve.engine.query.ops.base import LeafOp, LeafPlan, Operator
from sieve.engine.query.ops.boolean import (
    AND,
    NOT,
    OR,
    AndPlan,
    BandPlan,
    FilterPlan,
    NotPlan,
    OrPlan,
)
from sieve.engine.query.ops.filters import COLUMN, DATE
from sieve.engine.query.ops.indri import BAND, COMBINE, FILREQ, INDRI_LEAF, ORDERED, SYN, UNORDERED
from sieve.engine.query.ops.near import NEAR
from sieve.engine.query.ops.phrase import PHRASE
from sieve.engine.query.ops.prefix import PREFIX
from sieve.engine.query.ops.term import TERM
from sieve.engine.query.ops.words import WORDS

# Every operator: those that resolve syntax nodes, and those their leaves run as.
OPERATORS: tuple[Operator, ...] = (
    WORDS,
    TERM,
    PHRASE,
    PREFIX,
    NEAR,
    DATE,
    COLUMN,
    AND,
    OR,
    NOT,
    COMBINE,
    BAND,
    FILREQ,
    INDRI_LEAF,
    ORDERED,
    UNORDERED,
    SYN,
)
RESOLVERS: dict[type, Operator] = {cls: op for op in OPERATORS for cls in op.nodes}

__all__ = [
    "OPERATORS",
    "RESOLVERS",
    "AndPlan",
    "BandPlan",
    "FilterPlan",
    "LeafOp",
    "LeafPlan",
    "NotPlan",
    "Operator",
    "OrPlan",
]
