"""A query resolved against one opened index: the step between the syntax tree and execution.

The syntax tree (`bql.ast`) is immutable and index-independent, as Lucene's Query and tantivy's
Query are. `Plan.of(node, reader)` resolves it once against one index, as their Weight does: every
leaf is analysed and looked up exactly once (its terms, term ids or prefix range, field mask, cost
and position volume), the limits are checked, and what the rankers, the explanation, the snippets
and the zero-hit report need from the whole query is computed here. Everything after this step
(evaluate, explain, search) reads the plan and never analyses a query word again.

This module is the only place that dispatches on the kinds of syntax node: a new operator is a
grammar rule, an AST node, a case in `_build`, and its execution. It resolves the Indri query
language's trees (`sieve.engine.query.indriql`) too, into the same plan nodes plus the few Indri has of
its own (windows of any number of words, #syn, #weight, #band, #filreq); only the Indri-style
scorer (indri.py) reads those.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any, Callable, Literal, Union

from sieve.engine.analysis.analyzers import STOP, Analyzer
from sieve.engine.query.bql import ast
from sieve.engine.query.indriql import ast as iql
from sieve.engine.analysis.fields import ALL_MASK, mask_of
from sieve.engine.segment.reader import IndexReader
from sieve.engine.analysis.schema import DECLARED_BIT, filter_bounds, namespaced
from sieve.engine.query.bql.parser import MAX_QUERY_CHARS
from sieve.errors import BQLLimitError, BQLSyntaxError, IndriSyntaxError, InvalidArgumentError

LeafKind = Literal["term", "phrase", "prefix", "near", "date", "column", "ordered", "unordered", "syn"]


@dataclass(frozen=True)
class Limits:
    """Caps that keep one query from taking seconds or gigabytes: one place for every caller (the
    API, the command line, the agent's tools, the MCP server, the web view). Each one passed is a
    `BQLLimitError` naming it, the value and the cap; the time budget, a `DeadlineExceededError`."""

    max_prefix_terms: int = 10_000
    max_positions: int = 50_000_000  # positions the phrases and NEARs of one query may examine, together
    # Characters of a query as written (BQL, or ranked_search's plain text). Agents and people write
    # a few dozen; a pasted passage is not a search. The language itself allows MAX_QUERY_CHARS.
    max_query_chars: int = 2_000
    max_phrase_words: int = 64  # words of one phrase (a quoted one, or a word that analyses into several)
    # Wall time of one match, search (zero-hit fallback and diagnosis included) or explanation; None: no limit.
    seconds: float | None = 10.0

    def __post_init__(self) -> None:
        for name, least in (("max_prefix_terms", 1), ("max_positions", 1), ("max_query_chars", 1), ("max_phrase_words", 2)):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < least:
                raise InvalidArgumentError(f"Limits.{name} must be a whole number of at least {least}, got {value!r}")
        if self.max_query_chars > MAX_QUERY_CHARS:
            raise InvalidArgumentError(f"Limits.max_query_chars must be at most {MAX_QUERY_CHARS:,} (the query language's own limit), "
                                       f"got {self.max_query_chars:,}")
        if self.seconds is not None and (isinstance(self.seconds, bool) or not isinstance(self.seconds, (int, float)) or not self.seconds > 0):
            raise InvalidArgumentError(f"Limits.seconds must be a positive number of seconds, or None for no limit, got {self.seconds!r}")

    def check_length(self, query: object) -> None:
        """BQLLimitError if `query` (a string; anything else is the parser's to refuse) is longer than `max_query_chars`."""
        if isinstance(query, str) and len(query) > self.max_query_chars:
            raise BQLLimitError("query length", len(query), self.max_query_chars, "characters; shorten the query", pos=self.max_query_chars)


# Plan nodes are built once per query and read many times; they are slotted, not frozen (a frozen
# dataclass's __init__ costs several microseconds a node, a query's whole plan about 30 us more).
# Nothing changes them after `Plan.of`.


@dataclass(slots=True, eq=False)
class LeafPlan:
    """One leaf, resolved. A word that analyses into several terms is a `phrase` here; a quoted
    phrase of one term is a `term`: consumers see what is executed, not how it was written."""

    node: ast.Node  # what the user wrote (prints as canonical BQL)
    kind: LeafKind
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
    declared: str = ""  # a text leaf scoped to a declared text field: its name (such a leaf only filters)
    bounds: tuple[Any, Any] = (None, None)  # column: inclusive (lo, hi), or (keyword, None)
    size: int = 0  # postings it reads in this segment (term, prefix; documents for a date or column): rarer first in an AND
    parts: tuple["LeafPlan", ...] = ()  # syn: its operands (their occurrences are its own)
    positional: bool = field(init=False)  # phrase or near: checks positions
    cost: int = field(init=False)  # cheap operands first in an AND, so positional ones only see documents that survived
    unknown: bool = field(init=False)  # a term it needs is not in the index, so it matches nothing

    def __post_init__(self) -> None:
        self.positional = self.kind in ("phrase", "near", "ordered", "unordered")
        self.cost = 2 if self.positional or self.parts else 0
        self.unknown = self.term_range[0] >= self.term_range[1] if self.kind == "prefix" else bool(self.tids) and min(self.tids) < 0
        if self.kind == "syn":
            self.unknown = all(p.unknown for p in self.parts)
        if self.kind == "phrase" and not self.offsets:
            self.offsets = tuple(range(len(self.terms)))


@dataclass(slots=True, eq=False)
class AndPlan:
    node: ast.Node
    children: tuple["PlanNode", ...]  # as written
    weights: tuple[float, ...] | None = None  # Indri's #weight: each child's weight in the mean (None: equal)
    by_cost: tuple["PlanNode", ...] = field(init=False)  # cheapest first (stable: as written among equals)
    cost: int = field(init=False, default=1)

    def __post_init__(self) -> None:
        self.by_cost = tuple(sorted(self.children, key=_order))


@dataclass(slots=True, eq=False)
class OrPlan:
    node: ast.Node
    children: tuple["PlanNode", ...]
    cost: int = field(init=False, default=1)


@dataclass(slots=True, eq=False)
class NotPlan:
    node: ast.Node
    child: "PlanNode"
    cost: int = field(init=False, default=1)


@dataclass(slots=True, eq=False)
class BandPlan(AndPlan):
    """Indri's #band: a Boolean AND (as an AndPlan to the Boolean evaluator); the Indri-style
    scorer admits only the documents where every child matches and gives them #combine's belief."""


@dataclass(slots=True, eq=False)
class FilterPlan(AndPlan):
    """Indri's #filreq / #filrej: `children` is (the filter, the query), the filter already negated
    for #filrej; the Indri-style scorer ranks by the query the documents the filter admits."""


PlanNode = Union[LeafPlan, AndPlan, OrPlan, NotPlan]  # BandPlan and FilterPlan are AndPlans


def _order(node: PlanNode) -> tuple[int, int]:
    """An AND's operands: cheap kinds first, and of leaves of a kind the rarer first, so the later
    ones are read only inside the documents the earlier admitted (and an empty one stops it)."""
    return node.cost, node.size if type(node) is LeafPlan else 0


@dataclass(slots=True, eq=False)
class Plan:
    """A whole query resolved against one index."""

    root: PlanNode
    query: str  # canonical form
    leaves: tuple[LeafPlan, ...]  # every leaf, in query order
    positive: tuple[LeafPlan, ...]  # the text leaves not under a NOT, in query order
    clauses: tuple[PlanNode, ...]  # the top-level conjuncts (what the zero-hit report names)
    volume: int = 0
    _derived: tuple[tuple[str, ...], tuple[int, ...], tuple[str, ...], str] | None = field(init=False, default=None, repr=False)
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
            words = {leaf.terms[0] for leaf in operands
                     if type(leaf) is LeafPlan and leaf.kind == "term" and leaf.mask == ALL_MASK and not leaf.declared}
            self._admits_holders = bool(words) and words.issuperset(self.terms)
        return self._admits_holders

    def _derive(self) -> tuple[tuple[str, ...], tuple[int, ...], tuple[str, ...], str]:
        if self._derived is None:
            ids: dict[str, int] = {}
            atoms = [p for leaf in self.positive for p in (leaf.parts or (leaf,))]  # a #syn's operands
            for leaf in atoms:
                if leaf.kind != "prefix":
                    for t, tid in zip(leaf.terms, leaf.tids):
                        ids.setdefault(t, tid)
            stems = dict.fromkeys(leaf.terms[0] for leaf in atoms if leaf.kind == "prefix")
            self._derived = (tuple(ids), tuple(ids.values()), tuple(stems), " ".join(leaf.text for leaf in self.positive))
        return self._derived

    @classmethod
    def of(cls, node: ast.Node, reader: IndexReader, limits: Limits = Limits(), shared: "_Shared | None" = None) -> "Plan":
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
    def of(cls, node: ast.Node, readers: "list[IndexReader]", limits: Limits = Limits()) -> "Plans":
        """Resolve `node` against every segment's reader. The positions cap holds for the whole
        query over all segments; the prefix cap for each segment's dictionary."""
        shared = _Shared(node)  # each leaf analysed once, whatever the number of segments
        parts = tuple(Plan.of(node, r, limits, shared) for r in readers)
        if len(parts) > 1:
            whole = Plan(parts[0].root, parts[0].query, parts[0].leaves, parts[0].positive, parts[0].clauses,
                         volume=sum(p.volume for p in parts))
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

    __slots__ = ("query", "leaves")

    def __init__(self, node: ast.Node) -> None:
        self.query = str(node)
        self.leaves: dict[ast.Node, Any] = {}


class _Builder:
    def __init__(self, reader: IndexReader, limits: Limits, memo: "dict[ast.Node, Any]") -> None:
        self.r = reader
        self.limits = limits
        self.analyzer = reader.analyzer
        self.leaves: list[LeafPlan] = []
        self.positive: list[LeafPlan] = []
        self._resolved: dict[ast.Node, LeafPlan] = {}  # equal leaves are analysed and looked up once
        # A leaf's analysis depends on the index's analyzer and schema, which every segment shares:
        # segments after the first only look its terms up (an index of 13 segments analysed each
        # word 13 times before).
        self._memo = memo

    def build(self, node: ast.Node, positive: bool) -> PlanNode:
        kind = type(node)
        if kind is ast.Term:  # the most common node by far: resolved here in the fewest steps
            leaf = self._resolved.get(node)
            if leaf is None:
                leaf = self._resolved[node] = self._word(node, node.word)  # type: ignore[arg-type, union-attr]
            self.leaves.append(leaf)
            if positive and not leaf.declared:
                self.positive.append(leaf)
            return leaf
        if kind is ast.And:
            return AndPlan(node, tuple([self.build(c, positive) for c in node.children]))  # type: ignore[union-attr]
        if kind is ast.Or:
            return OrPlan(node, tuple([self.build(c, positive) for c in node.children]))  # type: ignore[union-attr]
        if kind is ast.Not:
            return NotPlan(node, self.build(node.child, False))  # type: ignore[union-attr]
        if kind in _INDRI_OPERATORS:
            return self._indri(node, positive)
        leaf = self._resolved.get(node)
        if leaf is None:
            leaf = self._resolved[node] = self._leaf(node)
        self.leaves.append(leaf)
        if positive and leaf.kind not in ("date", "column") and not leaf.declared:
            self.positive.append(leaf)
        return leaf

    # ------------------------------------------------------------ Indri's query language

    def _indri(self, node: Any, positive: bool) -> PlanNode:
        """An Indri operator: the belief operators become the plan nodes BQL's do (#combine and
        #weight an AndPlan, #or an OrPlan, #not a NotPlan) and Indri's own; leaves resolve as BQL's
        (a word as a Term, #od1 as a Phrase, a wildcard as a Prefix), so both languages mean the
        same by them."""
        kind = type(node)
        if kind is iql.Combine:
            return AndPlan(node, tuple([self.build(c, positive) for c in node.children]), node.weights)
        if kind is iql.Or:
            return OrPlan(node, tuple([self.build(c, positive) for c in node.children]))
        if kind is iql.Not:
            return NotPlan(node, self.build(node.child, False))
        if kind is iql.Band:
            return BandPlan(node, tuple([self.build(c, positive) for c in node.children]))
        if kind is iql.Filter:
            # The filter only admits: its words do not rank (nor show as matched on a card).
            f = self.build(node.filter, False)
            return FilterPlan(node, (f if node.require else NotPlan(node.filter, f), self.build(node.query, positive)))
        leaf = self._resolved.get(node)
        if leaf is None:
            leaf = self._resolved[node] = self._indri_leaf(node)
        self.leaves.append(leaf)
        if positive and leaf.kind != "date":
            self.positive.append(leaf)
        return leaf

    def _indri_leaf(self, node: Any) -> LeafPlan:
        kind = type(node)
        if kind is iql.Word:
            return self._leaf(ast.Term(node.text, node.fields, node.span))
        if kind is iql.Wildcard:
            return self._leaf(ast.Prefix(node.stem, node.fields, node.span))
        if kind is iql.Dates:
            return LeafPlan(node, "date", dates=(node.lo, node.hi), size=self.r.n_docs)
        if kind is iql.Syn:
            parts = tuple(self._indri_leaf(o) for o in node.operands)
            return LeafPlan(node, "syn", mask=mask_of(node.fields), text=" ".join(p.text for p in parts), parts=parts,
                            volume=sum(p.volume for p in parts))
        assert kind is iql.Window
        if node.ordered and node.width == 1:  # the phrase, stop words and split words as BQL's
            return self._leaf(ast.Phrase(" ".join(w.text for w in node.words), node.fields, node.span))
        terms = self._analysed(node, self._window_terms)
        tids = self._ids(terms)
        volume = 0 if min(tids) < 0 else sum(self.r.position_count(t) for t in set(tids))
        return LeafPlan(node, "ordered" if node.ordered else "unordered", terms, tids, mask=mask_of(node.fields),
                        distance=node.width or 0, volume=volume, text=" ".join(w.text for w in node.words))

    def _window_terms(self, node: Any) -> tuple[str, ...]:
        """One term per word of a window wider than a phrase (a gap or a split word would have no
        place in it)."""
        out = []
        for w in node.words:
            analysed = self.analyzer.analyze(w.text)
            if len(analysed) == 1 and analysed[0] == STOP:
                raise IndriSyntaxError(f"{w.text!r} is a stop word, which this index does not index (its analyzer: {self.analyzer.label})",
                                       w.span[0], "leave it out of the window")
            if len(analysed) != 1:
                raise IndriSyntaxError(f"{w.text!r} is several words to this index ({' '.join(t for t in analysed if t != STOP)})",
                                       w.span[0], "write its pieces as separate words of the window, or use #1(...) for the exact phrase")
            out.append(analysed[0])
        return tuple(out)

    def _all_stop(self, node: ast.Node, written: str) -> BQLSyntaxError:
        """A leaf that could match nothing but what is not indexed: an error, not an empty answer."""
        what = "a stop word" if len(Analyzer.words(written)) == 1 else "only stop words"
        return BQLSyntaxError(
            f"{written!r} is {what}, which this index does not index (its analyzer: {self.analyzer.label})", node.span[0],  # type: ignore[attr-defined]
            "leave it out; inside a quoted phrase a stop word stands for any one word",
        )

    def _scope(self, fields: ast.Fields) -> tuple[int, str, Callable[[str], str]]:
        """(posting mask, declared text field's name or "", what a term becomes) of a leaf's scope."""
        if fields and any(isinstance(f, str) for f in fields):
            (name,) = fields  # the parser allows one declared field per tag, alone
            number = self.r.schema.number_of(name)  # type: ignore[arg-type]
            return DECLARED_BIT, name, functools.partial(namespaced, number)  # type: ignore[return-value]
        return mask_of(fields), "", _same  # type: ignore[arg-type]

    def _analysed(self, node: ast.Node, analyse: Callable[[Any], Any]) -> Any:
        got = self._memo.get(node)
        if got is None:
            got = self._memo[node] = analyse(node)
        return got

    def _word(self, node: ast.Term | ast.Phrase, written: str) -> LeafPlan:
        """The leaf of a word or a phrase: one term, or the phrase of the terms it analyses into."""
        terms, offsets, mask, declared = self._analysed(node, self._words)
        words = offsets[-1] + 1  # stop words inside count: each stands for a word
        if words > self.limits.max_phrase_words:
            raise BQLLimitError("phrase length", words, self.limits.max_phrase_words,
                                "words in one phrase; quote its rarest few words, or leave the quotes off to find the words anywhere",
                                pos=node.span[0])  # type: ignore[union-attr]
        tids = self._ids(terms)
        if len(terms) == 1:
            return LeafPlan(node, "term", terms, tids, mask=mask, text=written, declared=declared, size=self._df(tids[0]))
        # Only the rarest term's positions are scanned; the others are probed by binary search.
        volume = 0 if min(tids) < 0 else min(self.r.position_count(t) for t in tids)
        return LeafPlan(node, "phrase", terms, tids, mask=mask, volume=volume, text=written, offsets=offsets, declared=declared)

    def _words(self, node: ast.Term | ast.Phrase) -> tuple[tuple[str, ...], tuple[int, ...], int, str]:
        """(terms, each one's place relative to the first, mask, declared field) of a word or phrase."""
        written = node.word if isinstance(node, ast.Term) else node.text
        analysed = self.analyzer.analyze(written)
        if len(analysed) == 1 and analysed[0] != STOP:  # one term (most words): no places to list and shift
            mask, declared, ns = self._scope(node.fields)
            return (ns(analysed[0]),), (0,), mask, declared
        # Stop words are not indexed: at either end of a phrase they are dropped, inside one
        # they stand for any one word (their place is kept), as in Lucene (docs/bql.md).
        placed = [(i, t) for i, t in enumerate(analysed) if t != STOP]
        if not placed:
            raise self._all_stop(node, written)
        mask, declared, ns = self._scope(node.fields)
        return tuple(ns(t) for _, t in placed), tuple(i - placed[0][0] for i, _ in placed), mask, declared

    def _stem(self, node: ast.Prefix) -> tuple[str, int, str]:
        # A stemming index holds stems, so the prefix is stemmed too: `running*` is `run*` and
        # admits every document `running` admits (docs/bql.md, "Analyzers"). A prefix is
        # never a stop word: `the*` is every indexed term starting with `the`.
        mask, declared, ns = self._scope(node.fields)
        return ns(self.analyzer.stem(Analyzer.words(node.stem), stop=False)[0]), mask, declared

    def _pair(self, node: ast.Near) -> tuple[tuple[str, ...], int, str]:
        terms = [self.analyzer.analyze(node.left)[0], self.analyzer.analyze(node.right)[0]]
        if STOP in terms:
            raise self._all_stop(node, node.left if terms[0] == STOP else node.right)
        mask, declared, ns = self._scope(node.fields)
        return tuple(ns(t) for t in terms), mask, declared

    def _df(self, tid: int) -> int:
        return 0 if tid < 0 else int(self.r.post_ptr[tid + 1]) - int(self.r.post_ptr[tid])

    def _ids(self, terms: tuple[str, ...]) -> tuple[int, ...]:
        return tuple(map(self.r.term_id, terms))

    def _leaf(self, node: ast.Node) -> LeafPlan:
        if isinstance(node, ast.DateRange):
            return LeafPlan(node, "date", dates=(node.lo, node.hi), size=self.r.n_docs)
        if isinstance(node, ast.Filter):
            kind = self.r.schema.type_of(node.name)
            if kind is None:
                raise BQLSyntaxError(f"unknown filter field {node.name!r}", node.span[0], self.r.schema.describe())
            try:
                bounds = filter_bounds(kind, node.spec)
            except ValueError as e:
                raise BQLSyntaxError(f"bad {kind} filter on {node.name}", node.spec_pos, str(e)) from None
            return LeafPlan(node, "column", column=node.name, bounds=bounds, size=self.r.n_docs)
        if isinstance(node, (ast.Term, ast.Phrase)):
            return self._word(node, node.word if isinstance(node, ast.Term) else node.text)
        if isinstance(node, ast.Prefix):
            stem, mask, declared = self._analysed(node, self._stem)
            lo, hi = self.r.terms.prefix_range(stem.encode())
            if hi - lo > self.limits.max_prefix_terms:
                raise BQLLimitError("prefix expansion", hi - lo, self.limits.max_prefix_terms, f"{node.stem}* matches {hi - lo} terms; lengthen the stem")
            size = int(self.r.post_ptr[hi]) - int(self.r.post_ptr[lo])
            return LeafPlan(node, "prefix", (stem,), term_range=(lo, hi), mask=mask, text=node.stem, declared=declared, size=size)
        if isinstance(node, ast.Near):
            terms, mask, declared = self._analysed(node, self._pair)
            tids = self._ids(terms)
            volume = 0 if min(tids) < 0 else sum(self.r.position_count(t) for t in set(tids))
            return LeafPlan(node, "near", terms, tids, mask=mask, distance=node.distance, volume=volume,
                            text=f"{node.left} {node.right}", declared=declared)
        raise TypeError(f"not a BQL node: {node!r}")


_INDRI_OPERATORS = frozenset({iql.Combine, iql.Or, iql.Not, iql.Band, iql.Filter, iql.Word, iql.Wildcard, iql.Window, iql.Syn, iql.Dates})


def _same(term: str) -> str:
    return term


def _check_volume(plan: Plan, limits: Limits) -> None:
    """The positions cap holds for the whole query: 500 NEARs over frequent words, each under the
    cap, would otherwise take half a minute together."""
    if plan.volume <= limits.max_positions:
        return  # the usual case: no leaf's BQL need be printed
    check_volume([(str(leaf.node), leaf.volume) for leaf in plan.leaves], limits)


def check_volume(leaves: "list[tuple[str, int]]", limits: Limits) -> None:
    """BQLLimitError when the leaves' positional volumes (each leaf's BQL and volume, summed over
    every segment or shard that resolved it) pass the positions cap together."""
    total = sum(v for _, v in leaves)
    if total > limits.max_positions:
        node, volume = max(leaves, key=lambda leaf: leaf[1])
        raise BQLLimitError(
            "positions", total, limits.max_positions,
            f"the phrases and NEARs of this query examine {total:,} positions together (the largest, {node}, {volume:,}); "
            "use rarer words or fewer of them",
        )
