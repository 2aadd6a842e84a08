"""Dense and hybrid ranking over a sharded index opened locally: the same hits and similarities as
one index over the same corpus (the embeddings are the snapshot's, ties follow corpus order), for
document and passage embeddings."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

pytest.importorskip("hnswlib", reason="embeddings need the dense extra: pip install 'sieve-search[dense]'")

from sieve import build_index  # noqa: E402
from sieve.demo_corpus import stdlib_documents  # noqa: E402
from sieve.dense.store import embed  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "hardening"))
from synth import HashEncoder  # noqa: E402


@pytest.mark.parametrize("unit", ["document", "passage"])
def test_dense_and_hybrid_over_shards_equal_one_index(tmp_path: Path, unit: str) -> None:
    docs = list(stdlib_documents(limit=120))
    one, sharded = build_index(docs, tmp_path / "one"), build_index(docs, tmp_path / "sharded", shards=3)
    for ix in (one, sharded):
        embed(ix, model="hash-64", encoder=HashEncoder(), unit=unit)
        ix.use_dense(model="hash-64", encoder=HashEncoder(), unit=unit)
    for query in ["read a file", "json", "socket server", "file OR os", "zzqx AND file", "the"]:
        for ranker in ("dense", "hybrid"):
            a, b = one.search(query, k=8, ranker=ranker), sharded.search(query, k=8, ranker=ranker)
            assert [h.doc_id for h in b.hits] == [h.doc_id for h in a.hits] and b.fallback == a.fallback, (query, ranker)
            assert [h.score for h in b.hits] == [h.score for h in a.hits], (query, ranker)
            assert a.hits or query == "zzqx AND file"  # something was ranked, so the comparison has material
