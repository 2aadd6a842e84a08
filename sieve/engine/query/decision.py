"""Why one document is admitted or rejected by a query, clause by clause.

The query's canonical tree, with at every node whether this document satisfies it, and at every
leaf where it matched (field, section, word number) or why not: the term is absent, or present only
in another field; the phrase's words are there but never adjacent; a NEAR's words are too far apart
(with the nearest distance found); the date is outside the range or missing. A node's truth value is
the evaluator's own (each leaf evaluated for this one document, combined as AND/OR/NOT combine), so
an explanation can never disagree with `match`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from sieve.engine.format import bitset
from sieve.engine.format.distinct import distinct
from sieve.engine.query.evaluate import Evaluator
from sieve.engine.query.explain import leaf_positions, positions_in_doc
from sieve.engine.analysis.fields import ALL_MASK, Field
from sieve.engine.query.plan import AndPlan, LeafPlan, NotPlan, OrPlan, Plan, PlanNode
from sieve.engine.analysis.batch import NO_DATE
from sieve.engine.segment.reader import IndexReader, search_sorted
from sieve.engine.analysis.schema import DECLARED_FIELD, shown_term
from sieve.common.terminal import visible

MAX_PLACES = 10  # places listed per leaf (the count says how many there are)


@dataclass(frozen=True)
class Place:
    """Where a leaf matched: a field, the section heading (body and headings only), the word number in that unit."""

    field: str
    section: str | None
    word: int

    def __str__(self) -> str:
        # A heading is document text: on one line, and nothing in it acts on a terminal.
        where = f"{self.field}" + (f' § "{visible(self.section, one_line=True)}"' if self.section is not None else "")
        return f"{where} word {self.word}"


@dataclass(frozen=True)
class Explanation:
    """One node of the query, judged for one document."""

    query: str  # the node, as canonical BQL
    kind: str  # and, or, not, term, phrase, prefix, near, date
    admits: bool  # whether the document satisfies this node
    reason: str  # in words: where it matched, or why not
    places: tuple[Place, ...] = ()  # leaves: where it matched (at most MAX_PLACES)
    matches: int = 0  # leaves: how many places in all
    children: tuple["Explanation", ...] = field(default=())

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"query": self.query, "kind": self.kind, "admits": self.admits, "reason": self.reason}
        if self.kind not in ("and", "or", "not"):
            out["matches"] = self.matches
            out["places"] = [{"field": p.field, "section": p.section, "word": p.word} for p in self.places]
        else:
            out["children"] = [c.to_dict() for c in self.children]
        return out

    def render(self, indent: int = 0) -> str:
        """An indented tree, one node per line: `yes`/`no`, the node, and the reason."""
        mark = "yes" if self.admits else "no "
        line = f"{'  ' * indent}{mark}  {self.query}" + (f"  ({self.reason})" if self.reason else "")
        return "\n".join([line] + [c.render(indent + 1) for c in self.children])


def _fields_of(mask: int) -> list[str]:
    return [f.label for f in Field if mask & f.bit]


def _scope(mask: int) -> str:
    return "any field" if mask == ALL_MASK else " or ".join(_fields_of(mask))


def _missing_here(leaf: LeafPlan) -> list[str]:
    if not leaf.unknown:
        return []
    return [shown_term(t) for t, tid in zip(leaf.terms, leaf.tids) if tid < 0] if leaf.kind != "prefix" else [shown_term(leaf.terms[0]) + "*"]


class Decider:
    """Explains the decisions of one plan, document by document."""

    def __init__(self, reader: IndexReader, evaluator: Evaluator, plan: Plan,
                 missing: Callable[[LeafPlan], list[str]] | None = None) -> None:
        """`missing(leaf)`: the leaf's words (a prefix as `stem*`) no document of the whole index
        has, when `reader` is one segment of several (default: those this reader lacks)."""
        self.r = reader
        self.ev = evaluator
        self.plan = plan
        self.missing = missing if missing is not None else _missing_here

    def explain(self, d: int) -> Explanation:
        one = bitset.from_ids(np.array([d], dtype=np.int64), self.r.n_docs)
        return self._node(self.plan.root, d, one)

    def _node(self, node: PlanNode, d: int, one: np.ndarray) -> Explanation:
        if isinstance(node, LeafPlan):
            return self._leaf(node, d, one)
        if isinstance(node, NotPlan):
            child = self._node(node.child, d, one)
            why = "the excluded part does not match" if not child.admits else "the excluded part matches"
            return Explanation(str(node.node), "not", not child.admits, why, children=(child,))
        kids = tuple(self._node(c, d, one) for c in node.children)
        if isinstance(node, AndPlan):
            failed = sum(1 for k in kids if not k.admits)
            why = f"{failed} of {len(kids)} parts {'does' if failed == 1 else 'do'} not match" if failed else f"all {len(kids)} parts match"
            return Explanation(str(node.node), "and", not failed, why, children=kids)
        assert isinstance(node, OrPlan)
        held = sum(1 for k in kids if k.admits)
        why = f"{held} of {len(kids)} alternatives match" if held else f"none of {len(kids)} alternatives matches"
        return Explanation(str(node.node), "or", bool(held), why, children=kids)

    # ------------------------------------------------------------ leaves

    def _truth(self, leaf: LeafPlan, d: int, one: np.ndarray) -> bool:
        bits = self.ev.eval(leaf, one)  # exact for the candidate, as evaluation promises
        return bool(bitset.contains(bits, np.array([d], dtype=np.int64))[0])

    def _places(self, pos: np.ndarray, d: int, mask: int) -> tuple[list[Place], int, set[int]]:
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
        for p, u, f in zip(pos[keep][:MAX_PLACES].tolist(), units[keep][:MAX_PLACES].tolist(), ufield[keep][:MAX_PLACES].tolist()):
            sec = int(sections[u])
            if f == DECLARED_FIELD:  # a declared text field's unit holds the field's number
                places.append(Place(self.r.schema.fields[sec][0], None, int(p - starts[u]) + 1))
                continue
            fld = Field(f)
            name = headings[sec] if sec >= 0 and fld in (Field.SECTION, Field.BODY) and sec < len(headings) else None
            places.append(Place(fld.label, name, int(p - starts[u]) + 1))
        return places, int(keep.sum()), every

    def _leaf(self, leaf: LeafPlan, d: int, one: np.ndarray) -> Explanation:
        kind = leaf.kind
        q = str(leaf.node)
        if kind == "date":
            return self._date(leaf, d, one, q)
        if kind == "column":
            return self._column(leaf, d, one, q)
        admits = self._truth(leaf, d, one)
        missing = self.missing(leaf) if leaf.unknown or self.missing is not _missing_here else []
        if missing:
            where = f" in {leaf.declared}" if leaf.declared else ""
            return Explanation(q, kind, admits, f"no document in the index has {', '.join(repr(m) for m in missing)}{where}")
        pos = leaf_positions(self.r, leaf, d)
        places, n, every = self._places(pos, d, leaf.mask)
        if admits:
            return Explanation(q, kind, True, f"matches in {', '.join(str(p) for p in places[:3])}" + (f" and {n - 3} more" if n > 3 else ""),
                               tuple(places), n)
        return Explanation(q, kind, False, self._why_not(leaf, d, pos, every), (), 0)

    @staticmethod
    def _label(f: int) -> str:
        return Field(f).label if f != DECLARED_FIELD else "a declared text field"

    def _why_not(self, leaf: LeafPlan, d: int, pos: np.ndarray, every: set[int]) -> str:
        scope = _scope(leaf.mask) if not leaf.declared else leaf.declared
        if len(pos):  # the leaf matches, but only outside its scope
            first, _, _ = self._places(pos[:1], d, ALL_MASK)
            return f"only in {', '.join(self._label(f) for f in sorted(every))} (first at {first[0]}), not in {scope}"
        words = [(t, tid) for t, tid in zip(leaf.terms, leaf.tids)] if leaf.kind != "prefix" else []
        if leaf.kind == "prefix":
            return f"no word starting with {shown_term(leaf.terms[0])!r} in the document"
        absent = [shown_term(t) for t, tid in words if not len(positions_in_doc(self.r, tid, d))]
        if absent:
            return f"the document does not contain {', '.join(repr(t) for t in absent)}"
        if leaf.kind == "phrase":
            return "the words are all in the document, but never next to each other in this order in one field value or section"
        if leaf.kind == "near":
            nearest = self._nearest(leaf.tids[0], leaf.tids[1], d)
            if nearest is None:
                return "both words are in the document, but never in the same field value or section"
            return f"the nearest the two words come in one field value or section is {nearest} apart; at most {leaf.distance} asked"
        return "no match"  # a term present in the document always has positions

    def _nearest(self, a_tid: int, b_tid: int, d: int) -> int | None:
        a = positions_in_doc(self.r, a_tid, d).astype(np.int64)
        b = positions_in_doc(self.r, b_tid, d).astype(np.int64)
        ua, ub = self.r.units_of(a), self.r.units_of(b)
        best: int | None = None
        for unit in set(ua.tolist()) & set(ub.tolist()):
            x, y = a[ua == unit], b[ub == unit]
            at = np.clip(search_sorted(y, x), 0, len(y) - 1)
            gaps = np.minimum(np.abs(y[at] - x), np.abs(y[np.maximum(at - 1, 0)] - x))
            gaps = gaps[gaps > 0]
            if len(gaps):
                best = int(gaps.min()) if best is None else min(best, int(gaps.min()))
        return best

    def _column(self, leaf: LeafPlan, d: int, one: np.ndarray, q: str) -> Explanation:
        admits = self._truth(leaf, d, one)
        value = (self.r.meta(d).get("metadata") or {}).get(leaf.column)
        if value is None or value == "" or value == []:
            return Explanation(q, "column", admits, f"the document has no {leaf.column}")
        return Explanation(q, "column", admits, f"its {leaf.column} {value!r} is {'inside' if admits else 'outside'} the filter")

    def _date(self, leaf: LeafPlan, d: int, one: np.ndarray, q: str) -> Explanation:
        admits = self._truth(leaf, d, one)
        value = int(np.asarray(self.r.dates)[d])
        if value == NO_DATE:
            return Explanation(q, "date", admits, "the document has no date")
        day = f"{value // 10000:04d}-{value // 100 % 100:02d}-{value % 100:02d}"
        shown = self.r.meta(d).get("date") or day
        return Explanation(q, "date", admits, f"its date {shown} is {'inside' if admits else 'outside'} the range")
