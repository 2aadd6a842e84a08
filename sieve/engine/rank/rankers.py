"""The rankers, by name: the one list the API, the CLI, the tools' manual, the MCP server and the
evaluation harness offer. BM25, dense and hybrid order only the documents a query admits
(searcher.py); the Indri-style rankers score the whole collection softly (indri.py), as the paper's
structured-executor control."""

from __future__ import annotations

from sieve.errors import InvalidArgumentError

RANKERS: dict[str, str] = {
    "bm25": "BM25 over the query's words",
    "dense": "closeness of meaning to the query's words (an embedding model)",
    "hybrid": "BM25 and closeness of meaning, fused",
    "indri": (
        "how well each document fits each part of the query, softly (Indri's query likelihood)"
    ),
    "indri+dense": (
        "how well each document fits each part of the query, softly (Indri's query likelihood),"
        " and closeness of meaning"
    ),
}
RANKER_NAMES: tuple[str, ...] = tuple(RANKERS)
# Rankers that score the whole collection by the query read as soft evidence: the Boolean filter
# only counts (a result need not satisfy the query); only dates exclude.
SOFT_RANKERS: tuple[str, ...] = ("indri", "indri+dense")
# Rankers that need embeddings attached (Index.use_dense).
DENSE_RANKERS: tuple[str, ...] = ("dense", "hybrid", "indri+dense")


def check_request(k: int, ranker: str) -> None:
    """Raise InvalidArgumentError unless `k` is a positive integer and `ranker` a known name."""
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise InvalidArgumentError(f"k must be a positive integer, got {k!r}")
    if ranker not in RANKER_NAMES:
        raise InvalidArgumentError(
            f"unknown ranker {ranker!r}; choose one of {', '.join(RANKER_NAMES)}"
        )


def check_fallback_ranker(name: str | None) -> None:
    """Raise InvalidArgumentError unless `name` is None or a ranker that can rank the whole
    collection by the query's terms (not a soft ranker: those never fall back)."""
    if name is not None and (name not in RANKER_NAMES or name in SOFT_RANKERS):
        hard = [r for r in RANKER_NAMES if r not in SOFT_RANKERS]
        raise InvalidArgumentError(
            f"unknown fallback ranker {name!r}; choose one of {', '.join(hard)}"
        )
