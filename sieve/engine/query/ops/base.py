"""What every operator is, and the resolved leaf they share.

An operator (tantivy's Query + Weight, one object per kind of node) is the one home of everything
sieve does with one kind of query node: how a syntax node resolves against a segment (`resolve`),
which documents it admits (`match`), where it matched in one document and why not (`positions`,
`explain`), what a scorer counts (`occurrences`) and how a zero-hit diagnosis may loosen it
(`relax`). The drivers (`plan`, `evaluate`, `explain`, `decision`, `diagnose`, the Indri scorer)
walk the tree and call the node's operator; none of them asks what kind of node it holds.

A new operator is a grammar rule (`bql/parser.py`), a syntax node (`bql/ast.py`), an `Operator`
here (listed in `ops/__init__.py`) and its paragraph in docs/bql.md.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from sieve.engine.analysis.fields import ALL_MASK, Field
from sieve.engine.analysis.schema import DECLARED_FIELD, shown_term
from sieve.engine.query.explanation import Explanation, Judge
from sieve.engine.segment.reader import SegmentReader, search_sorted

if TYPE_CHECKING:  # the drivers import the operators, never the other way round
    from sieve.engine.analysis.analyzers import Analyzer


class Operator:
    """One kind of plan node. Subclasses override what their kind does differently."""

    name: str = ""
    nodes: tuple[type, ...] = ()  # the syntax node classes this operator resolves
    positional = False  # checks positions (phrase, NEAR, Indri's windows)
    filters = False  # only admits or rejects a document: no words, no score (a date, a column)

    def resolve(self, b: Resolver, node: Any, positive: bool) -> PlanNode:
        """The plan node of syntax node `node` in the segment `b` resolves against; `positive`:
        not under a NOT (its words rank and show as matched)."""
        raise NotImplementedError(f"{type(self).__name__} resolves no syntax node")

    def match(self, ev: Any, node: Any, cands: np.ndarray | None) -> np.ndarray:
        """The documents `node` admits: a bitset exact inside `cands` (None: every document)."""
        raise NotImplementedError(self.name)

    def explain(self, judge: Judge, node: Any, d: int, one: np.ndarray) -> Explanation:
        """`node` judged for document d (`one`: d alone, as a bitset)."""
        raise NotImplementedError(self.name)

    def rewrite(self, node: Any, loosen: Callable[[LeafPlan], PlanNode | None]) -> PlanNode | None:
        """`node` with every leaf outside a NOT loosened by `loosen` (None: nothing changed)."""
        return None


class LeafOp(Operator):
    """A leaf: a word, phrase, prefix, NEAR, date or column filter, Indri window or #syn."""

    def leaf(self, b: Resolver, node: Any) -> LeafPlan:
        """The resolved leaf of `node` (its terms analysed and looked up once)."""
        raise NotImplementedError(self.name)

    def resolve(self, b: Resolver, node: Any, positive: bool) -> PlanNode:
        return b.add_leaf(node, positive, self.leaf)

    def settle(self, leaf: LeafPlan) -> None:
        """Set what a new leaf derives from its fields: `unknown`, whether a term it needs is not
        in the segment (so it matches nothing)."""
        leaf.unknown = bool(leaf.tids) and min(leaf.tids) < 0

    def missing_here(self, leaf: LeafPlan) -> list[str]:
        """The leaf's words this segment's dictionary lacks, as shown to a reader."""
        return [shown_term(t) for t, tid in zip(leaf.terms, leaf.tids) if tid < 0]

    def scored(self, leaf: LeafPlan) -> zip[tuple[str, int]]:
        """(term, term id) of each term BM25 scores the leaf by: its words."""
        return zip(leaf.terms, leaf.tids)

    def stems(self, leaf: LeafPlan) -> tuple[str, ...]:
        """Stems whose words snippets mark (a prefix's)."""
        return ()

    def positions(self, r: SegmentReader, leaf: LeafPlan, d: int) -> np.ndarray:
        """Where the leaf matches in document d (int64, any field): a phrase's first word, each
        word of a NEAR with the other close, a window's starts, a #syn's operands."""
        raise NotImplementedError(self.name)

    def positions_many(
        self,
        r: SegmentReader,
        leaf: LeafPlan,
        docs: list[int],
        ragged: Callable[[int], Any],
        check: Callable[[], None],
    ) -> tuple[np.ndarray, np.ndarray]:
        """`positions` for several documents: (positions, index into `docs` of each). `ragged(tid)`
        gives a term's (positions, owners) in all of `docs` at once, shared between leaves."""
        return per_document(self, r, leaf, docs, check)

    def occurrences(self, r: SegmentReader, leaf: LeafPlan) -> np.ndarray:
        """Every global position at which the leaf occurs in the segment (what a scorer counts),
        in any field: `positions` over all documents at once."""
        raise NotImplementedError(self.name)

    def rewrite(self, node: Any, loosen: Callable[[LeafPlan], PlanNode | None]) -> PlanNode | None:
        return loosen(node)

    def relax(self, kind: str, leaf: LeafPlan) -> PlanNode | None:
        """The leaf loosened in the diagnosis's way `kind` (`diagnose.KINDS`), or None. Every
        scoped text leaf widens to every field; the phrase and NEAR operators add their own."""
        if kind != "widen" or leaf.declared or getattr(leaf.node, "fields", None) is None:
            return None
        return LeafPlan(
            replace(leaf.node, fields=None),
            leaf.op,
            leaf.terms,
            leaf.tids,
            leaf.term_range,
            ALL_MASK,
            leaf.distance,
            leaf.dates,
            leaf.volume,
            leaf.text,
            leaf.offsets,
        )

    # ------------------------------------------------------------ explanation

    def explain(self, judge: Judge, leaf: LeafPlan, d: int, one: np.ndarray) -> Explanation:
        q = str(leaf.node)
        admits = judge.truth(leaf, d, one)
        missing = judge.missing_words(leaf)
        if missing:
            where = f" in {leaf.declared}" if leaf.declared else ""
            return Explanation(
                q,
                leaf.kind,
                admits,
                f"no document in the index has {', '.join(repr(m) for m in missing)}{where}",
            )
        pos = self.positions(judge.r, leaf, d)
        places, n, every = judge.places(pos, d, leaf.mask)
        if admits:
            return Explanation(
                q,
                leaf.kind,
                True,
                f"matches in {', '.join(str(p) for p in places[:3])}"
                + (f" and {n - 3} more" if n > 3 else ""),
                tuple(places),
                n,
            )
        return Explanation(q, leaf.kind, False, self.why_not(judge, leaf, d, pos, every), (), 0)

    def why_not(
        self, judge: Judge, leaf: LeafPlan, d: int, pos: np.ndarray, every: set[int]
    ) -> str:
        """Why the leaf does not admit document d (`pos`: where it matches in any field)."""
        scope = fields_in_words(leaf.mask) if not leaf.declared else leaf.declared
        if len(pos):  # the leaf matches, but only outside its scope
            first, _, _ = judge.places(pos[:1], d, ALL_MASK)
            where = ", ".join(_label(f) for f in sorted(every))
            return f"only in {where} (first at {first[0]}), not in {scope}"
        absent = [
            shown_term(t)
            for t, tid in zip(leaf.terms, leaf.tids)
            if not len(positions_in_doc(judge.r, tid, d))
        ]
        if absent:
            return f"the document does not contain {', '.join(repr(t) for t in absent)}"
        return self.why_apart(judge.r, leaf, d)

    def why_apart(self, r: SegmentReader, leaf: LeafPlan, d: int) -> str:
        """Why the leaf does not match although every word of it is in document d."""
        return "no match"  # a term present in the document always has positions


def _label(f: int) -> str:
    return Field(f).label if f != DECLARED_FIELD else "a declared text field"


def fields_in_words(mask: int) -> str:
    """A field mask as a reader says it: `any field`, `title or body`."""
    return "any field" if mask == ALL_MASK else " or ".join(f.label for f in Field if mask & f.bit)


# ------------------------------------------------------------ the resolved leaf
# Plan nodes are built once per query and read many times; they are slotted, not frozen (a frozen
# dataclass's __init__ costs several microseconds a node, a query's whole plan about 30 us more).
# Nothing changes them after `Plan.of`.


@dataclass(slots=True, eq=False)
class LeafPlan:
    """One leaf, resolved against one segment. A word that analyses into several terms is a
    phrase here; a quoted phrase of one term is a term: consumers see what is executed, not how it
    was written. `op` is its operator; `kind` the operator's name."""

    node: Any  # what the user wrote (prints as canonical BQL)
    op: LeafOp
    terms: tuple[str, ...] = ()  # analysed: term 1, phrase 2+, near (left, right), prefix (stem,)
    tids: tuple[int, ...] = ()  # term ids of `terms` (-1: not in the index); none for a prefix
    term_range: tuple[int, int] = (0, 0)  # prefix: [lo, hi) of its terms in the sorted dictionary
    mask: int = ALL_MASK  # fields it may match in (posting mask bits)
    distance: int = 0  # near
    dates: tuple[int | None, int | None] = (None, None)  # date: inclusive YYYYMMDD bounds
    volume: int = 0  # positions a positional leaf examines (what the positions limit counts)
    text: str = ""  # the words as written (what a dense encoder reads)
    # phrase: each term's place relative to the first (0, 1, 2, ... unless stop words left gaps)
    offsets: tuple[int, ...] = ()
    column: str = ""  # column: the declared field it filters
    declared: str = (
        ""  # a text leaf scoped to a declared text field: its name (such a leaf only filters)
    )
    bounds: tuple[Any, Any] = (None, None)  # column: inclusive (lo, hi), or (keyword, None)
    # postings it reads in this segment (term, prefix; documents for a date or column): rarer
    # first in an AND
    size: int = 0
    parts: tuple[LeafPlan, ...] = ()  # syn: its operands (their occurrences are its own)
    kind: str = field(
        init=False
    )  # the operator's name: term, phrase, prefix, near, date, column, ordered, unordered, syn
    positional: bool = field(init=False)  # phrase or near: checks positions
    cost: int = field(
        init=False
    )  # cheap operands first in an AND, so positional ones only see documents that survived
    unknown: bool = field(init=False)  # a term it needs is not in the index, so it matches nothing

    def __post_init__(self) -> None:
        op = self.op
        self.kind = op.name
        self.positional = op.positional
        self.cost = 2 if op.positional or self.parts else 0
        op.settle(self)


PlanNode = Any  # a LeafPlan or one of `ops.boolean`'s nodes: each has `.node` and `.op`


class Resolver(Protocol):
    """What an operator's `resolve` may use of the plan builder (`plan._Builder`)."""

    r: SegmentReader
    limits: Any
    analyzer: Analyzer

    def build(self, node: Any, positive: bool) -> PlanNode:
        """The plan node of a child."""

    def add_leaf(
        self, node: Any, positive: bool, make: Callable[[Any, Any], LeafPlan], indri: bool = False
    ) -> LeafPlan:
        """`make(builder, node)` once per distinct node, recorded among the plan's leaves."""

    def analysed(self, node: Any, analyse: Callable[..., Any], *args: Any) -> Any:
        """`analyse(builder, node, *args)`, once per node for every segment of the index."""

    def scope(self, fields: Any) -> tuple[int, str, Callable[[str], str]]:
        """(posting mask, declared text field or "", what a term becomes) of a leaf's scope."""

    def ids(self, terms: tuple[str, ...]) -> tuple[int, ...]:
        """Term ids (-1: not in the segment)."""

    def df(self, tid: int) -> int:
        """Documents of a term in the segment (0 for -1)."""

    def all_stop(self, node: Any, written: str) -> Exception:
        """The error for a leaf of only stop words."""


# ------------------------------------------------------------ positions in one document


def _doc_range(r: SegmentReader, d: int) -> tuple[int, int]:
    start = int(r.unit_start[int(r.doc_units[d])])
    end = int(r.unit_start[int(r.doc_units[d + 1])]) if d + 1 < r.n_docs else 2**63 - 1
    return start, end


def positions_in_doc(r: SegmentReader, tid: int, d: int) -> np.ndarray:
    """Positions of a term inside document d (int64), by binary search on its position list."""
    if tid < 0:
        return np.zeros(0, dtype=np.int64)
    start, end = _doc_range(r, d)
    pos = r.pos.covering(tid, np.array([start]), np.array([end - 1]))
    a, b = search_sorted(pos, [start, min(end, np.iinfo(pos.dtype).max)])
    return pos[a:b]


def per_document(
    op: LeafOp, r: SegmentReader, leaf: LeafPlan, docs: list[int], check: Callable[[], None]
) -> tuple[np.ndarray, np.ndarray]:
    """(positions of the leaf in each of `docs`, index into `docs` of
    each), one document at a time."""
    pos, owner = [], []
    for i, d in enumerate(docs):
        check()
        p = op.positions(r, leaf, d)
        pos.append(np.asarray(p, dtype=np.int64))
        owner.append(np.full(len(p), i, dtype=np.int64))
    if not pos:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    return np.concatenate(pos), np.concatenate(owner)
