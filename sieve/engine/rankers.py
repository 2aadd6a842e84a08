"""The rankers, by name: the one list the API, the CLI, the tools' manual, the MCP server and the
evaluation harness offer. Each orders only the documents a query admits (search.py)."""

from __future__ import annotations

RANKERS: dict[str, str] = {
    "bm25": "BM25 over the query's words",
    "dense": "closeness of meaning to the query's words (an embedding model)",
    "hybrid": "BM25 and closeness of meaning, fused",
}
RANKER_NAMES: tuple[str, ...] = tuple(RANKERS)
