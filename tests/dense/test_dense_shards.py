"""Dense and hybrid ranking over a sharded index opened locally: the same hits and similarities as
one index over the same corpus (the embeddings are the snapshot's, ties follow corpus order), for
document and passage embeddings."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

pytest.importorskip("hnswlib", reason="embeddings need the dense extra: pip install -e '.[dense]'")

from sieve import build_index  # noqa: E402
from sieve.corpus.demo import stdlib_documents  # noqa: E402
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


def test_dropping_an_index_with_embeddings_closes_its_files(tmp_path: Path) -> None:
    """The opened embeddings hold their index weakly (the index holds them): dropping the index
    frees both and closes every file they map, without the cyclic garbage collector."""
    import gc

    import sieve

    fds = Path("/proc/self/fd")
    if not fds.is_dir():
        pytest.skip("needs /proc/self/fd (Linux) to count open files")
    embed(build_index(list(stdlib_documents(limit=60)), tmp_path / "idx"), model="hash-64", encoder=HashEncoder())
    gc.collect()
    before = len(list(fds.iterdir()))
    gc.disable()
    try:
        ix = sieve.open_index(tmp_path / "idx")
        ix.use_dense(model="hash-64", encoder=HashEncoder())
        dense = ix.searcher.dense
        assert ix.search("read a file", k=3, ranker="hybrid").hits
        assert len(list(fds.iterdir())) > before + 20
        del ix
        with pytest.raises(sieve.InvalidArgumentError, match="index was closed"):
            dense.top("read a file", None, None, 3)  # kept by this test alone: its index is gone
        del dense
        assert len(list(fds.iterdir())) == before
    finally:
        gc.enable()
