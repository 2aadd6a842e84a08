"""Passage-level embeddings: every section in pieces, a document scored as its best passage.

Exactness runs with a deterministic hashed bag-of-words encoder (its vectors are checked by hand);
what passages are for (a long page known past its start) runs with the real offline model."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("hnswlib", reason="embeddings need the dense extra: pip install -e '.[dense]'")

import sieve
from sieve.dense import layout, store, units

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "hardening"))
from synth import HashEncoder  # noqa: E402
from sieve.dense.encoder import DenseUnavailableError
from sieve.engine.format import bitset, storage
from sieve.errors import IndexDamagedError, InvalidArgumentError

WORDS = "river mill dawn bread salt copper engine harbor violin glacier tunnel lantern orchard compass ledger".split()


def _docs(n: int, seed: int = 3) -> list[dict[str, Any]]:
    r = random.Random(seed)
    out = []
    for i in range(n):
        secs = [{"heading": f"part {j}", "text": " ".join(r.choice(WORDS) for _ in range(r.randint(0, 400)))} for j in range(r.randint(0, 4))]
        out.append({"id": f"d{i}", "title": f"doc {i} " + r.choice(WORDS), "sections": secs})
    return out


@pytest.fixture
def index(tmp_path: Path) -> sieve.Index:
    ix = sieve.build_index(_docs(60), tmp_path / "ix")
    # float32: the scores below are compared exactly (int8 storage is tested in test_compact.py)
    store.embed(ix, model="hash-64", encoder=HashEncoder(), unit="passage", dtype="float32")
    ix.use_dense(model="hash-64", encoder=HashEncoder())
    return ix


def _best_passage(ix: sieve.Index, text: str) -> dict[str, float]:
    enc = HashEncoder()
    q = enc.encode([text])[0]
    out = {}
    for d in ix.doc_numbers().tolist():
        out[ix.reader.doc_id(d)] = float((enc.encode(units.passages(ix, d)) @ q).max())
    return out


def test_passages_cover_every_section_in_pieces(index: sieve.Index) -> None:
    for d in index.doc_numbers().tolist():
        pieces = units.passages(index, d)
        title = index.reader.meta(d)["title"]
        words = [w for j in range(index.reader.section_count(d)) for w in index.reader.section_text(d, j).split()]
        assert all(p.startswith(title) for p in pieces)
        assert all(len(p.split("\n", 1)[1].split()) <= units.PASSAGE_WORDS for p in pieces if "\n" in p)
        assert [w for p in pieces if "\n" in p for w in p.split("\n", 1)[1].split()] == words  # nothing lost, nothing repeated
        assert pieces == [title] if not words else True


@pytest.mark.parametrize("query", ["copper harbor", "violin glacier lantern", "doc"])
def test_a_document_scores_as_its_best_passage(index: sieve.Index, query: str) -> None:
    want = _best_passage(index, query)
    docs, sims = index.searcher.dense.top(query, None, None, 60)  # the whole collection, exactly
    assert len(docs) == 60
    for d, sim in zip(docs.tolist(), sims.tolist()):
        assert sim == pytest.approx(want[index.reader.doc_id(d)], abs=1e-5)
    assert sims.tolist() == sorted(sims.tolist(), reverse=True)
    admitted = index.match("copper").ids
    r = index.search("copper", k=100, ranker="dense")
    assert sorted(h.doc_id for h in r.hits) == sorted(admitted)  # never leaves the admitted set
    for h in r.hits:
        assert h.score == pytest.approx(_best_passage(index, "copper")[h.doc_id], abs=1e-5)


def test_hnsw_agrees_with_exact_over_passages(index: sieve.Index) -> None:
    dense = index.searcher.dense
    q = dense.query_vector("orchard compass ledger")
    docs = index.match("river OR mill").docs
    for subset, bits in ((None, None), (docs, bitset.from_ids(docs, index.snapshot.capacity))):
        exact = dense.exact(q, subset, 10)
        approx = dense.approximate(q, bits, 10)
        assert list(approx[0]) == list(exact[0])  # 60 documents: the graph finds them all
        assert np.allclose(approx[1], exact[1], atol=1e-5)


def test_units_are_chosen_and_kept_apart(tmp_path: Path) -> None:
    ix = sieve.build_index(_docs(20), tmp_path / "ix")
    with pytest.raises(DenseUnavailableError, match="--unit passage"):
        ix.use_dense(model="hash-64", encoder=HashEncoder(), unit="passage")
    store.embed(ix, model="hash-64", encoder=HashEncoder(), unit="document")
    ix.use_dense(model="hash-64", encoder=HashEncoder())
    assert ix.searcher.dense.unit == "document"
    out = store.embed(ix, model="hash-64", encoder=HashEncoder(), unit="passage")
    meta = store.read_meta(out)
    assert out.name == "hash-64@passages" and meta["unit"] == "passage" and meta["documents"] == 20 and meta["rows"] > 20
    ix.use_dense(model="hash-64", encoder=HashEncoder())
    assert ix.searcher.dense.unit == "passage"  # passages preferred when both exist
    ix.use_dense(model="hash-64", encoder=HashEncoder(), unit="document")
    assert ix.searcher.dense.unit == "document"
    with pytest.raises(InvalidArgumentError, match="known: passage, document"):
        store.embed(ix, model="hash-64", encoder=HashEncoder(), unit="sentence")
    assert "embeddings/hash-64@passages/owner.sva" in ix.check()


def test_passage_embedding_resumes_and_reuses(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ix = sieve.build_index(_docs(30), tmp_path / "ix")
    full = store.embed(ix, model="hash-64", encoder=HashEncoder(), unit="passage")
    want = np.asarray(store.DenseIndex.open(ix, model="hash-64", encoder=HashEncoder()).vectors.whole()).copy()
    monkeypatch.setattr("sieve.dense.embedding.CHUNK", 8)

    class Failing(HashEncoder):
        calls = 0

        def encode(self, texts: list[str], batch_size: int = 32) -> Any:
            Failing.calls += 1
            if Failing.calls == 3:
                raise KeyboardInterrupt
            return super().encode(texts, batch_size)

    with pytest.raises(KeyboardInterrupt):
        store.embed(ix, model="hash-64", encoder=Failing(), unit="passage", force=True)
    assert json.loads((full / "progress.json").read_text())["rows"] == 16
    store.embed(ix, model="hash-64", encoder=HashEncoder(), unit="passage")
    assert np.array_equal(np.asarray(store.DenseIndex.open(ix, model="hash-64", encoder=HashEncoder()).vectors.whole()), want)
    with ix.writer() as w:  # one document changes: only its passages are computed again
        w.add({"id": "d3", "title": "changed", "text": "copper " * 300})
    ix = ix.reopen()
    out = store.embed(ix, model="hash-64", encoder=HashEncoder(), unit="passage")
    meta = store.read_meta(out)
    assert meta["rows"] - meta["reused"] == 3  # 300 words: three passages


def test_damaged_owner_table_is_named(tmp_path: Path) -> None:
    ix = sieve.build_index(_docs(10), tmp_path / "ix")
    out = store.embed(ix, model="hash-64", encoder=HashEncoder(), unit="passage")
    meta = store.read_meta(out)
    owner = np.asarray(storage.open_array(out / "owner.sva", "owner.sva", meta["files"]["owner.sva"]).whole()).copy()
    owner[[0, -1]] = owner[[-1, 0]]
    meta["files"]["owner.sva"] = storage.write_array(out / "owner.sva", owner)
    body = {k: v for k, v in meta.items() if k != "checksum"}
    (out / "meta.json").write_text(json.dumps({**body, "checksum": layout.meta_crc(body)}, indent=1, sort_keys=True))
    with pytest.raises(IndexDamagedError, match="owner.sva"):
        ix.use_dense(model="hash-64", encoder=HashEncoder())


def test_long_pages_are_found_past_their_start(tmp_path: Path) -> None:
    """With the real model: the answer sits deep in a long page, where document embeddings never look."""
    pytest.importorskip("sentence_transformers", reason="needs the dense extra")
    from sieve.dense.encoder import SentenceTransformerEncoder

    filler = " ".join(["The committee met again to review routine budget paperwork and approve the minutes."] * 40)
    docs = [
        {"id": "long", "title": "Town records", "sections": [{"heading": "Minutes", "text": filler},
                                                             {"heading": "Wildlife", "text": "A family of otters built a den under the old stone bridge."}]},
        {"id": "fish", "title": "River notes", "text": "Trout and salmon swim upstream in the autumn."},
        {"id": "birds", "title": "Garden birds", "text": "Robins and sparrows visit the feeder every morning."},
    ]
    enc = SentenceTransformerEncoder()
    ix = sieve.build_index(docs, tmp_path / "ix")
    store.embed(ix, encoder=enc, unit="document")
    store.embed(ix, encoder=enc, unit="passage")
    question = "where do the otters live"
    ix.use_dense(encoder=enc, unit="document")
    by_document = [h.doc_id for h in ix.ranked_search(question, k=3, ranker="dense").hits]
    ix.use_dense(encoder=enc, unit="passage")
    by_passage = [h.doc_id for h in ix.ranked_search(question, k=3, ranker="dense").hits]
    assert by_passage[0] == "long"
    assert by_document[0] != "long"


def test_cli_embed_passages(tmp_path: Path) -> None:
    corpus = tmp_path / "c.jsonl"
    corpus.write_text("".join(json.dumps(d) + "\n" for d in _docs(5)))
    sieve.build_index(corpus, tmp_path / "ix").close()
    p = subprocess.run([sys.executable, "-m", "sieve", "embed", str(tmp_path / "ix"), "--unit", "sentence"], capture_output=True, text=True)
    assert p.returncode == 2 and "invalid choice" in p.stderr


def test_a_loaded_model_stays_loaded(tmp_path: Path) -> None:
    """Long-lived processes load the model once: every index and embed shares it."""
    pytest.importorskip("sentence_transformers", reason="needs the dense extra")
    from sieve.dense.encoder import loaded_encoder

    a = sieve.build_index(_docs(4), tmp_path / "a")
    b = sieve.build_index(_docs(5, seed=9), tmp_path / "b")
    store.embed(a)
    store.embed(b, unit="passage")
    a.use_dense()
    b.use_dense()
    assert a.searcher.dense.encoder is b.searcher.dense.encoder is loaded_encoder()
    assert a.search("river", ranker="dense").hits and b.search("river", ranker="dense").hits
