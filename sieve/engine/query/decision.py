"""Why one document is admitted or rejected by a query, clause by clause.

The query's canonical tree, with at every node whether this document satisfies it, and at every
leaf where it matched (field, section, word number) or why not: the term is absent, or present only
in another field; the phrase's words are there but never adjacent; a NEAR's words are too far apart
(with the nearest distance found); the date is outside the range or missing. Each node's operator
(`ops`) says which of these applies to its kind; this module holds what they share. A node's truth
value is the evaluator's own (each leaf evaluated for this one document, combined as AND/OR/NOT
combine), so an explanation can never disagree with `match`.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from sieve.engine.analysis.fields import Field
from sieve.engine.analysis.schema import DECLARED_FIELD
from sieve.engine.format import bitset
from sieve.engine.format.distinct import distinct
from sieve.engine.query.evaluate import Evaluator
from sieve.engine.query.explanation import Explanation, Place
from sieve.engine.query.plan import LeafPlan, Plan, PlanNode
from sieve.engine.segment.reader import SegmentReader

__all__ = ["MAX_PLACES", "Decider", "Explanation", "Place"]

MAX_PLACES = 10  # places listed per leaf (the count says how many there are)


def _missing_here(leaf: LeafPlan) -> list[str]:
    return leaf.op.missing_here(leaf) if leaf.unknown else []


class Decider:
    """Explains the decisions of one plan, document by document."""

    def __init__(
        self,
        reader: SegmentReader,
        evaluator: Evaluator,
        plan: Plan,
        missing: Callable[[LeafPlan], list[str]] | None = None,
    ) -> None:
        """`missing(leaf)`: the leaf's words (a prefix as `stem*`) no document of the whole index
        has, when `reader` is one segment of several (default: those this reader lacks)."""
        self.r = reader
        self.ev = evaluator
        self.plan = plan
        self.missing = missing if missing is not None else _missing_here

    def explain(self, d: int) -> Explanation:
        one = bitset.from_ids(np.array([d], dtype=np.int64), self.r.n_docs)
        return self.node(self.plan.root, d, one)

    def node(self, node: PlanNode, d: int, one: np.ndarray) -> Explanation:
        """`node` judged for document d, by its operator."""
        return node.op.explain(self, node, d, one)

    def truth(self, leaf: LeafPlan, d: int, one: np.ndarray) -> bool:
        bits = self.ev.eval(leaf, one)  # exact for the candidate, as evaluation promises
        return bool(bitset.contains(bits, np.array([d], dtype=np.int64))[0])

    def missing_words(self, leaf: LeafPlan) -> list[str]:
        """The leaf's words no document has (none asked when the leaf is known and this reader is
        the whole index)."""
        return self.missing(leaf) if leaf.unknown or self.missing is not _missing_here else []

    def places(self, pos: np.ndarray, d: int, mask: int) -> tuple[list[Place], int, set[int]]:
        """Places of the positions inside fields of `mask`, and the fields of all of them."""
        r = self.r
        if not len(pos):
            return [], 0, set()
        pos = distinct(pos.astype(np.int64))
        units = r.units_of(pos)
        ufield = np.asarray(r.unit_field)[units].astype(np.int64)
        every = set(ufield.tolist())
        keep = ((np.int64(1) << ufield) & mask) != 0
        headings = self.r.headings(d)
        places = []
        starts = np.asarray(r.unit_start)
        sections = np.asarray(r.unit_section)
        for p, u, f in zip(
            pos[keep][:MAX_PLACES].tolist(),
            units[keep][:MAX_PLACES].tolist(),
            ufield[keep][:MAX_PLACES].tolist(),
        ):
            sec = int(sections[u])
            if f == DECLARED_FIELD:  # a declared text field's unit holds the field's number
                places.append(Place(self.r.schema.fields[sec][0], None, int(p - starts[u]) + 1))
                continue
            fld = Field(f)
            name = (
                headings[sec]
                if sec >= 0 and fld in (Field.SECTION, Field.BODY) and sec < len(headings)
                else None
            )
            places.append(Place(fld.label, name, int(p - starts[u]) + 1))
        return places, int(keep.sum()), every
