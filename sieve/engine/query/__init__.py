"""Query languages and Boolean evaluation: BQL (`bql`) and the Indri-style language (`indriql`)
parsed to syntax trees, `plan` (a tree resolved against a snapshot), `evaluate` (the admitted set by
bitset algebra), `proximity`, `explain`, `decision` (one document's verdict) and `diagnose` (zero-hit
relaxations). Reads segments; knows nothing of ranking.
"""
