"""Query languages and Boolean evaluation: BQL (`bql`) and the Indri-style language (`indriql`)
parsed to syntax trees; `ops`, one operator object per kind of node (how it resolves, matches,
explains, what a scorer counts, how a diagnosis loosens it); and the drivers that walk a tree and
ask each node's operator: `plan` (a tree resolved against a segment), `evaluate` (the admitted set
by bitset algebra), `explain` (where a query's words matched), `decision` (one document's verdict,
with `explanation`'s values) and `diagnose` (zero-hit relaxations); `proximity` (Indri's windows).
Reads segments; knows nothing of ranking.
"""
