"""A query resolved against one opened index: the step between the syntax tree and execution.

The syntax tree (`bql.ast`) is immutable and index-independent, as Lucene's Query and tantivy's
Query are. `Plan.of(node, reader)` resolves it once against one index, as their Weight does: every
leaf is analysed and looked up exactly once (its terms, term ids or prefix range, field mask, cost
and position volume), the limits are checked, and what the rankers, the explanation, the snippets
and the zero-hit report need from the whole query is computed here. Everything after this step
(evaluate, explain, search) reads the plan and never analyses a query word again.

Each kind of syntax node is resolved by its operator (`ops.RESOLVERS`), BQL's and the Indri
language's (`sieve.engine.query.indriql`) alike; this module walks the tree and keeps the books
(the leaves, the positive ones, the limits).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from sieve.engine.analysis.analyzers import Analyzer
from sieve.engine.analysis.fields import ALL_MASK, mask_of
from sieve.engine.analysis.schema import DECLARED_BIT, namespaced
from sieve.engine.query.bql import ast
from sieve.engine.query.bql.parser import MAX_QUERY_CHARS
from sieve.engine.query.ops import RESOLVERS
from sieve.engine.query.ops.base import LeafPlan, PlanNode
from sieve.engine.query.ops.boolean import AndPlan, BandPlan, FilterPlan, NotPlan, OrPlan
from sieve.engine.query.ops.term import TERM
from sieve.engine.segment.reader import SegmentReader
from sieve.errors import BQLLimitError, BQLSyntaxError, InvalidArgumentError

__all__ = [
    "AndPlan",
    "BandPlan",
    "FilterPlan",
    "LeafPlan",
    "Limits",
    "NotPlan",
    "OrPlan",
    "Plan",
    "PlanNode",
    "Plans",
    "check_volume",
]


@dataclass(frozen=True)
class Limits:
    """Caps that keep one query from taking seconds or gigabytes: one place for every caller (the
    API, the command line, the agent's tools, the MCP server, the web view). Each one passed is a
    `BQLLimitError` naming it, the value and the cap; the time budget, a `DeadlineExceededError`."""

    max_prefix_terms: int = 10_000
    # positions the phrases and NEARs of one query may examine, together
    max_positions: int = 50_000_000
    # Characters of a query as written (BQL, or ranked_search's plain text). Agents and people write
    # a few dozen; a pasted passage is not a search. The language itself allows MAX_QUERY_CHARS.
    max_query_chars: int = 2_000
    # words of one phrase (a quoted one, or a word that analyses into several)
    max_phrase_words: int = 64
    # Wall time of one match, search (zero-hit fallback and
    # diagnosis included) or explanation; None: no limit.
    seconds: float | None = 10.0

    def __post_init__(self) -> None:
        for name, least in (
            ("max_prefix_terms", 1),
            ("max_positions", 1),
            ("max_query_chars", 1),
            ("max_phrase_words", 2),
        ):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < least:
                raise InvalidArgumentError(
                    f"Limits.{name} must be a whole number of at least {least}, got {value!r}"
                )
        if self.max_query_chars > MAX_QUERY_CHARS:
            raise InvalidArgumentError(
                f"Limits.max_query_chars must be at most {MAX_QUERY_CHARS:,} "
                f"(the query language's own limit), got {self.max_query_chars:,}"
            )
        if self.seconds is not None and (
            isinstance(self.seconds, bool)
            or not isinstance(self.seconds, (int, float))
            or not self.seconds > 0
        ):
            raise InvalidArgumentError(
                "Limits.seconds must be a positive number of "
                f"seconds, or None for no limit, got {self.seconds!r}"
            )

    def check_length(self, query: object) -> None:
        """BQLLimitError if `query` (a string; anything else is the parser's to refuse) is longer
        than `max_query_chars`."""
        if isinstance(query, str) and len(query) > self.max_query_chars:
            raise BQLLimitError(
                "query length",
                len(query),
                self.max_query_chars,
                "characters; shorten the query",
                pos=self.max_query_chars,
            )


@dataclass(slots=True, eq=False)
class Plan:
    """A whole query resolved against one index."""

    root: PlanNode
    query: str  # canonical form
    leaves: tuple[LeafPlan, ...]  # every leaf, in query order
    positive: tuple[LeafPlan, ...]  # the text leaves not under a NOT, in query order
    clauses: tuple[PlanNode, ...]  # the top-level conjuncts (what the zero-hit report names)
    volume: int = 0
    _derived: tuple[tuple[str, ...], tuple[int, ...], tuple[str, ...], str] | None = field(
        init=False, default=None, repr=False
    )
    _admits_holders: bool | None = field(init=False, default=None, repr=False)

    # What ranking, snippets and dense search need from the whole query: computed on first use
    # (a `match` needs none of it).
    @property
    def terms(self) -> tuple[str, ...]:
        """The positive analysed terms, each once, in query order: what BM25 scores."""
        return self._derive()[0]

    @property
    def term_ids(self) -> tuple[int, ...]:
        """The ids of `terms` (-1: not in the index)."""
        return self._derive()[1]

    @property
    def stems(self) -> tuple[str, ...]:
        """The positive prefix stems (snippets mark the words that start with them)."""
        return self._derive()[2]

    @property
    def text(self) -> str:
        """The positive words as written: what a dense encoder reads."""
        return self._derive()[3]

    @property
    def admits_holders(self) -> bool:
        """Whether every document holding one of `terms`, in any field, is admitted: the root is
        an unscoped word, or an OR with an unscoped word among its operands for each of `terms`
        (an agent's plain `a OR b OR c`). Then a ranker need not test its scored documents
        against the admitted set (in a segment with nothing deleted)."""
        if self._admits_holders is None:
            root = self.root
            operands = root.children if type(root) is OrPlan else (root,)
            words = {
                leaf.terms[0]
                for leaf in operands
                if type(leaf) is LeafPlan
                and leaf.op is TERM
                and leaf.mask == ALL_MASK
                and not leaf.declared
            }
            self._admits_holders = bool(words) and words.issuperset(self.terms)
        return self._admits_holders

    def _derive(self) -> tuple[tuple[str, ...], tuple[int, ...], tuple[str, ...], str]:
        if self._derived is None:
            ids: dict[str, int] = {}
            # a #syn's operands
            atoms = [p for leaf in self.positive for p in (leaf.parts or (leaf,))]
            stems: dict[str, None] = {}
            for leaf in atoms:
                for t, tid in leaf.op.scored(leaf):
                    ids.setdefault(t, tid)
                stems.update(dict.fromkeys(leaf.op.stems(leaf)))
            self._derived = (
                tuple(ids),
                tuple(ids.values()),
                tuple(stems),
                " ".join(leaf.text for leaf in self.positive),
            )
        return self._derived

    @classmethod
    def of(
        cls,
        node: ast.Node,
        reader: SegmentReader,
        limits: Limits = Limits(),
        shared: _Shared | None = None,
    ) -> Plan:
        """Resolve `node` against `reader`. Raises BQLLimitError for a prefix that expands past the
        cap or a query whose phrases and NEARs would examine too many positions together. `shared`:
        what another segment of the same index already worked out for this query (filled here)."""
        shared = _Shared(node) if shared is None else shared
        builder = _Builder(reader, limits, shared.leaves)
        root = builder.build(node, positive=True)
        plan = cls(
            root=root,
            query=shared.query,
            leaves=tuple(builder.leaves),
            positive=tuple(builder.positive),
            clauses=root.children if isinstance(root, AndPlan) else (root,),
            volume=sum(leaf.volume for leaf in builder.leaves),
        )
        _check_volume(plan, limits)
        return plan


@dataclass(frozen=True, eq=False)
class Plans:
    """A query resolved against each segment of an index: the same tree, one `Plan` per segment
    (term ids and prefix ranges are a segment's own). What does not depend on a segment (the
    canonical query, its terms, clauses and leaves as written) is read from the first."""

    parts: tuple[Plan, ...]

    @classmethod
    def of(cls, node: ast.Node, readers: list[SegmentReader], limits: Limits = Limits()) -> Plans:
        """Resolve `node` against every segment's reader. The positions cap holds for the whole
        query over all segments; the prefix cap for each segment's dictionary."""
        shared = _Shared(node)  # each leaf analysed once, whatever the number of segments
        parts = tuple(Plan.of(node, r, limits, shared) for r in readers)
        if len(parts) > 1:
            whole = Plan(
                parts[0].root,
                parts[0].query,
                parts[0].leaves,
                parts[0].positive,
                parts[0].clauses,
                volume=sum(p.volume for p in parts),
            )
            _check_volume(whole, limits)
        return cls(parts)

    @property
    def first(self) -> Plan:
        return self.parts[0]

    @property
    def query(self) -> str:
        return self.parts[0].query

    @property
    def terms(self) -> tuple[str, ...]:
        return self.parts[0].terms

    @property
    def stems(self) -> tuple[str, ...]:
        return self.parts[0].stems

    @property
    def text(self) -> str:
        return self.parts[0].text

    @property
    def clauses(self) -> tuple[PlanNode, ...]:
        return self.parts[0].clauses

    @property
    def leaves(self) -> tuple[LeafPlan, ...]:
        return self.parts[0].leaves

    @property
    def positive(self) -> tuple[LeafPlan, ...]:
        return self.parts[0].positive


class _Shared:
    """What a query's plans for the segments of one index have in common: its canonical form and
    each leaf's analysis (the segments share the analyzer and the declared fields)."""

    __slots__ = ("leaves", "query")

    def __init__(self, node: ast.Node) -> None:
        self.query = str(node)
        self.leaves: dict[ast.Node, Any] = {}


class _Builder:
    """Walks a syntax tree, each node resolved by its operator (`ops.base.Resolver` is what the
    operators may use of it)."""

    def __init__(self, reader: SegmentReader, limits: Limits, memo: dict[Any, Any]) -> None:
        self.r = reader
        self.limits = limits
        self.analyzer = reader.analyzer
        self.leaves: list[LeafPlan] = []
        self.positive: list[LeafPlan] = []
        self._resolved: dict[Any, LeafPlan] = {}  # equal leaves are analysed and looked up once
        # A leaf's analysis depends on the index's analyzer and schema, which every segment shares:
        # segments after the first only look its terms up (an index of 13 segments analysed each
        # word 13 times before).
        self._memo = memo

    def build(self, node: Any, positive: bool) -> PlanNode:
        op = RESOLVERS.get(type(node))
        if op is None:
            raise TypeError(f"not a query node: {node!r}")
        return op.resolve(self, node, positive)

    def add_leaf(
        self, node: Any, positive: bool, make: Callable[[Any, Any], LeafPlan], indri: bool = False
    ) -> LeafPlan:
        leaf = self._resolved.get(node)
        if leaf is None:
            leaf = self._resolved[node] = make(self, node)
        self.leaves.append(leaf)
        # A leaf that only filters does not rank, nor does (in BQL) a word of a declared text field.
        if positive and not leaf.op.filters and (indri or not leaf.declared):
            self.positive.append(leaf)
        return leaf

    def all_stop(self, node: Any, written: str) -> BQLSyntaxError:
        """A leaf that could match nothing but what is not indexed: an
        error, not an empty answer."""
        what = "a stop word" if len(Analyzer.words(written)) == 1 else "only stop words"
        return BQLSyntaxError(
            f"{written!r} is {what}, which this index does "
            f"not index (its analyzer: {self.analyzer.label})",
            node.span[0],
            "leave it out; inside a quoted phrase a stop word stands for any one word",
        )

    def scope(self, fields: ast.Fields) -> tuple[int, str, Callable[[str], str]]:
        """(posting mask, declared text field's name or "", what a term
        becomes) of a leaf's scope."""
        if fields and any(isinstance(f, str) for f in fields):
            (name,) = fields  # the parser allows one declared field per tag, alone
            number = self.r.schema.number_of(name)  # type: ignore[arg-type]  # a declared field: a str
            return DECLARED_BIT, name, functools.partial(namespaced, number)  # type: ignore[return-value]  # name: a str (see above)
        return mask_of(fields), "", _same

    def analysed(self, node: Any, analyse: Callable[..., Any], *args: Any) -> Any:
        got = self._memo.get(node)
        if got is None:
            got = self._memo[node] = analyse(self, node, *args)
        return got

    def df(self, tid: int) -> int:
        return 0 if tid < 0 else int(self.r.post_ptr[tid + 1]) - int(self.r.post_ptr[tid])

    def ids(self, terms: tuple[str, ...]) -> tuple[int, ...]:
        return tuple(map(self.r.term_id, terms))


def _same(term: str) -> str:
    return term


def _check_volume(plan: Plan, limits: Limits) -> None:
    """The positions cap holds for the whole query: 500 NEARs over frequent words, each under the
    cap, would otherwise take half a minute together."""
    if plan.volume <= limits.max_positions:
        return  # the usual case: no leaf's BQL need be printed
    check_volume([(str(leaf.node), leaf.volume) for leaf in plan.leaves], limits)


def check_volume(leaves: list[tuple[str, int]], limits: Limits) -> None:
    """BQLLimitError when the leaves' positional volumes (each leaf's BQL and volume, summed over
    every segment or shard that resolved it) pass the positions cap together."""
    total = sum(v for _, v in leaves)
    if total > limits.max_positions:
        node, volume = max(leaves, key=lambda leaf: leaf[1])
        raise BQLLimitError(
            "positions",
            total,
            limits.max_positions,
            f"the phrases and NEARs of this query examine {total:,} positions together (the "
            f"largest, {node}, {volume:,}); "
            "use rarer words or fewer of them",
        )
