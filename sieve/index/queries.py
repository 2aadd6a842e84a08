"""What the `Index` and the shard service's `RayIndex` share to answer queries: BQL parsed and
memoised (`parse_query`), plain-language ranked search over anything that searches
(`ranked_search`), and a query's exact admitted set (`Match`)."""

from __future__ import annotations

from functools import lru_cache
from typing import Protocol

import numpy as np

from sieve.engine.analysis.analyzers import Analyzer
from sieve.engine.format import bitset
from sieve.engine.query.bql import Node
from sieve.engine.query.bql.free_text import free_text_query
from sieve.engine.query.bql.parser import parse_for
from sieve.engine.query.plan import Limits
from sieve.engine.rank.rankers import check_request
from sieve.engine.rank.results import Results
from sieve.engine.segment.snapshot import Snapshot
from sieve.errors import InvalidArgumentError


class Searchable(Protocol):
    """An opened index as `ranked_search` uses it (`Index`, `RayIndex`)."""

    analyzer: Analyzer
    limits: Limits

    def _search(
        self,
        query: str,
        k: int,
        ranker: str,
        fallback: bool,
        explain: bool,
        diagnose: bool,
        fallback_ranker: str | None = None,
    ) -> Results: ...


def parse_query(text: str, text_fields: frozenset[str] = frozenset()) -> Node:
    """`bql.parse`, memoised: agents repeat queries, and trees are immutable values. `text_fields`:
    the declared text fields of the index it is for (their tags are valid there only)."""
    return _parsed(text, text_fields)


@lru_cache(maxsize=4096)
def _parsed(text: str, text_fields: frozenset[str]) -> Node:
    return parse_for(text, text_fields)


def ranked_search(index: Searchable, text: str, k: int, ranker: str, explain: bool) -> Results:
    """`Index.ranked_search` for anything with an `analyzer`, `limits` and a `_search` (a RayIndex
    too)."""
    if not isinstance(text, str):
        raise InvalidArgumentError(f"ranked_search takes text, got {type(text).__name__}")
    check_request(k, ranker)
    # the text is what the caller wrote; the longer BQL made of it is sieve's
    index.limits.check_length(text)
    query = free_text_query(text, index.analyzer)
    if query is None:
        return Results([], 0, "", ranker=ranker, analyzer=index.analyzer)
    return index._search(query, k, ranker, False, explain, False)


class Match:
    """The exact admitted set of a query: `count`, `docs` and `ids` in index order, and the
    canonical `query`."""

    __slots__ = ("_capacity", "_docs", "_parts", "_reader", "count", "query")

    def __init__(
        self, query: str, parts: list[np.ndarray], capacity: int, reader: Snapshot
    ) -> None:
        """`parts`: each segment's admitted set, in the snapshot's order (read, never written:
        some may be the index's own read-only rows)."""
        self.query = query
        # Popcounts: a caller that wants only the count pays for nothing else (not even the join).
        self.count = sum(bitset.count(b) for b in parts)
        self._parts, self._capacity, self._reader = parts, capacity, reader
        self._docs: np.ndarray | None = None

    @property
    def docs(self) -> np.ndarray:
        """Internal document numbers in index order (ascending, but in a sharded index the order
        of its corpus); materialised on first use."""
        if self._docs is None:
            self._docs = self._reader.in_order(
                bitset.to_ids(self._reader.join(self._parts), self._capacity)
            )
        return self._docs

    @property
    def ids(self) -> list[str]:
        # Materialised on demand: a broad query admits most of the collection, and callers
        # that only need the count should not pay for a list of every id.
        return self._reader.doc_ids(self.docs)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Match):
            return NotImplemented
        return (
            self.query == other.query
            and self.count == other.count
            and np.array_equal(self.docs, other.docs)
        )

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"Match(query={self.query!r}, count={self.count})"
