"""Dense and hybrid ranking over a sharded index opened locally: the same hits and similarities as
one index over the same corpus (the embeddings are the snapshot's, ties follow corpus order)."""

from __future__ import annotations

from pathlib import Path

from sieve import build_index
from sieve.demo_corpus import stdlib_documents
from sieve.dense.store import embed


def test_dense_and_hybrid_over_shards_equal_one_index(tmp_path: Path) -> None:
    docs = list(stdlib_documents(limit=120))
    one, sharded = build_index(docs, tmp_path / "one"), build_index(docs, tmp_path / "sharded", shards=3)
    embed(one)
    embed(sharded)
    for query in ["read a file", "json", "socket server", "file OR os", "zzqx AND file"]:
        for ranker in ("dense", "hybrid"):
            a, b = one.search(query, k=8, ranker=ranker), sharded.search(query, k=8, ranker=ranker)
            assert [h.doc_id for h in b.hits] == [h.doc_id for h in a.hits] and b.fallback == a.fallback, (query, ranker)
            assert [h.score for h in b.hits] == [h.score for h in a.hits], (query, ranker)
