"""Zero-hit recovery: when a query admits nothing, which top-level clauses match no document, the
one-step relaxations that would admit some (`sieve.engine.query.diagnose`), and by which ranker
the whole collection is ranked instead (the query's positive terms, the same scorer)."""

from __future__ import annotations

from dataclasses import dataclass

from sieve.engine.query.diagnose import Diagnosis, diagnose_parts
from sieve.engine.query.evaluate import Evaluator
from sieve.engine.query.plan import Plan, Plans


@dataclass(frozen=True)
class Recovery:
    missing: list[str]  # the top-level clauses no document matches
    diagnosis: Diagnosis | None  # None unless asked for
    ranker: str | None  # what ranks the whole collection instead; None: no fallback


def recover(
    pairs: list[tuple[Plan, Evaluator]],
    plans: Plans,
    ranker: str,
    fallback: bool,
    diagnose: bool,
    fallback_ranker: str | None,
) -> Recovery:
    """What to say and do for a query that admits nothing, each segment's (plan, evaluator) in
    `pairs`: `fallback_ranker` (None: `ranker`) ranks the whole collection when `fallback` is on
    and the query has positive terms or text to rank by."""
    clause_bits = [[ev.run(c) for c in plan.clauses] for plan, ev in pairs]
    missing = [
        str(c.node)
        for i, c in enumerate(plans.clauses)
        if not any(cb[i].any() for cb in clause_bits)
    ]
    why = diagnose_parts(pairs, clause_bits) if diagnose else None
    if not fallback or not (plans.terms or plans.text):
        return Recovery(missing, why, None)
    return Recovery(missing, why, fallback_ranker or ranker)
