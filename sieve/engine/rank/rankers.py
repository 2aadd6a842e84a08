"""The rankers, by name: the one list the API, the CLI, the tools' manual, the MCP server and the
evaluation harness offer. BM25, dense and hybrid order only the documents a query admits
(search.py); the Indri-style rankers score the whole collection softly (indri.py), as the paper's
structured-executor control."""

from __future__ import annotations

RANKERS: dict[str, str] = {
    "bm25": "BM25 over the query's words",
    "dense": "closeness of meaning to the query's words (an embedding model)",
    "hybrid": "BM25 and closeness of meaning, fused",
    "indri": "how well each document fits each part of the query, softly (Indri's query likelihood)",
    "indri+dense": "how well each document fits each part of the query, softly (Indri's query likelihood), and closeness of meaning",
}
RANKER_NAMES: tuple[str, ...] = tuple(RANKERS)
# Rankers that score the whole collection by the query read as soft evidence: the Boolean filter
# only counts (a result need not satisfy the query); only dates exclude.
SOFT_RANKERS: tuple[str, ...] = ("indri", "indri+dense")
# Rankers that need embeddings attached (Index.use_dense).
DENSE_RANKERS: tuple[str, ...] = ("dense", "hybrid", "indri+dense")
