"""Compact vectors (int8 with a scale per row, float16) and the filtered HNSW search: what is
stored, that float32 folders of earlier versions still open, and that an approximate search never
leaves the admitted set and returns k documents whenever k are admitted."""

from __future__ import annotations

import copy
import json
import random
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("hnswlib", reason="embeddings need the dense extra: pip install -e '.[dense]'")

import sieve
from sieve.dense import compact, layout, store
from sieve.engine.format import bitset
from sieve.errors import IndexDamagedError, InvalidArgumentError

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "hardening"))
from synth import HashEncoder  # noqa: E402

WORDS = "river mill dawn bread salt copper engine harbor violin glacier tunnel lantern orchard compass ledger ash".split()


def _docs(n: int, seed: int = 5) -> list[dict[str, Any]]:
    r = random.Random(seed)
    return [
        {"id": f"d{i}", "title": f"doc {i}", "sections": [{"heading": "body", "text": " ".join(r.choice(WORDS) for _ in range(r.randint(3, 60)))}
                                                            for _ in range(r.randint(1, 3))]}
        for i in range(n)
    ]


def _brute(ix: sieve.Index, text: str, k: int) -> list[str]:
    """The k nearest documents by float32 cosine over every document's text, by hand."""
    from sieve.dense import units

    enc = HashEncoder(32)
    docs = ix.doc_numbers()
    sims = enc.encode([units.document_text(ix, d) for d in docs.tolist()]) @ enc.encode([text])[0]
    order = np.lexsort((docs, -sims))[:k]
    return [ix.reader.doc_id(int(docs[i])) for i in order]


def test_quantize_int8_is_per_row_and_close() -> None:
    rng = np.random.default_rng(0)
    v = rng.standard_normal((50, 384)).astype(np.float32)
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    codes, scales = compact.quantize(v, "int8")
    assert codes.dtype == np.int8 and scales is not None and scales.shape == (50,)
    assert (np.abs(codes).max(axis=1) == 127).all()  # every row uses the whole range
    again, s2 = compact.quantize(v[7:9], "int8")  # a row alone gets what it got among others
    assert np.array_equal(again, codes[7:9]) and np.array_equal(s2, scales[7:9])
    q = v[0]
    got = compact.Vectors(codes, scales)
    assert np.abs(got.dot(q) - v @ q).max() < 2e-3
    assert np.allclose(got.dot(q, np.array([3, 1, 40])), got.dot(q)[[3, 1, 40]], atol=1e-6)
    # the blocked scan covers every row, across block edges
    many = np.repeat(codes, 200, axis=0)
    assert np.allclose(compact.Vectors(many, np.repeat(scales, 200)).dot(q), np.repeat(got.dot(q), 200), atol=1e-6)
    zero, zs = compact.quantize(np.zeros((2, 4), dtype=np.float32), "int8")
    assert not zero.any() and (zs == 1).all()  # no division by zero


def test_int8_is_the_default_and_takes_a_quarter_of_float32(tmp_path: Path) -> None:
    docs = _docs(80)
    small = sieve.build_index(docs, tmp_path / "small")
    big = sieve.build_index(docs, tmp_path / "big")
    a = store.embed(small, model="hash-32", encoder=HashEncoder(32))
    b = store.embed(big, model="hash-32", encoder=HashEncoder(32), dtype="float32")
    ma, mb = layout.read_meta(a), layout.read_meta(b)
    assert (ma["dtype"], mb["dtype"]) == ("int8", "float32")
    assert "scales.sva" in ma["files"] and "scales.sva" not in mb["files"]
    stored = ma["files"]["vectors.sva"]["size"] + ma["files"]["scales.sva"]["size"]
    assert stored < 0.3 * mb["files"]["vectors.sva"]["size"]
    for ix in (small, big):
        ix.use_dense(model="hash-32", encoder=HashEncoder(32))
    for text in ("copper harbor", "violin ash glacier", "mill"):
        got = [h.doc_id for h in small.search(f"{text} OR NOT zzzz", k=10, ranker="dense").hits]
        want = [h.doc_id for h in big.search(f"{text} OR NOT zzzz", k=10, ranker="dense").hits]
        assert want == _brute(big, text, 10)
        assert len(set(got) & set(want)) >= 8  # int8 ranks as float32 does, but for near ties
    assert f"embeddings/{a.name}/scales.sva" in small.check()


def test_float16_is_stored_as_asked(tmp_path: Path) -> None:
    ix = sieve.build_index(_docs(30), tmp_path / "ix")
    out = store.embed(ix, model="hash-32", encoder=HashEncoder(32), dtype="float16")
    assert layout.read_meta(out)["dtype"] == "float16"
    ix.use_dense(model="hash-32", encoder=HashEncoder(32))
    assert ix.searcher.dense.vectors.stored.dtype == np.float16
    assert [h.doc_id for h in ix.search("copper OR NOT zzzz", k=5, ranker="dense").hits] == _brute(ix, "copper", 5)


def _as_older_version(directory: Path) -> None:
    """meta.json as sieve wrote it before compact storage: no dtype (float32 meant)."""
    meta = json.loads((directory / "meta.json").read_text())
    meta.pop("checksum")
    meta.pop("dtype")
    layout.write_json(directory / "meta.json", {**meta, "checksum": layout.meta_crc(meta)})


def test_float32_folders_of_earlier_versions_open_and_are_converted_without_encoding(tmp_path: Path) -> None:
    ix = sieve.build_index(_docs(40), tmp_path / "ix")
    out = store.embed(ix, model="hash-32", encoder=HashEncoder(32), dtype="float32")
    _as_older_version(out)
    ix.use_dense(model="hash-32", encoder=HashEncoder(32))
    assert ix.searcher.dense.vectors.dtype == "float32"
    assert [h.doc_id for h in ix.search("harbor OR NOT zzzz", k=5, ranker="dense").hits] == _brute(ix, "harbor", 5)
    assert f"embeddings/{out.name}/vectors.sva" in ix.check()

    class Refusing(HashEncoder):
        def encode(self, texts: list[str], batch_size: int = 32) -> Any:
            raise AssertionError(f"encoded {len(texts)} texts: the stored vectors should have been converted")

    store.embed(ix, model="hash-32", encoder=Refusing(32))  # the default dtype: int8, from the stored rows
    meta = layout.read_meta(out)
    assert meta["dtype"] == "int8" and meta["reused"] == 40


def test_unknown_or_inconsistent_dtypes_are_refused(tmp_path: Path) -> None:
    ix = sieve.build_index(_docs(10), tmp_path / "ix")
    with pytest.raises(InvalidArgumentError, match="unknown vector dtype 'int4'; known: int8, float16, float32"):
        store.embed(ix, model="hash-32", encoder=HashEncoder(32), dtype="int4")
    out = store.embed(ix, model="hash-32", encoder=HashEncoder(32))
    meta = json.loads((out / "meta.json").read_text())
    meta.pop("checksum")
    meta["dtype"] = "float32"  # but the file holds int8 codes and there is a scales.sva
    layout.write_json(out / "meta.json", {**meta, "checksum": layout.meta_crc(meta)})
    with pytest.raises(IndexDamagedError, match="missing entries"):
        layout.read_meta(out)
    del meta["files"]["scales.sva"]
    layout.write_json(out / "meta.json", {**meta, "checksum": layout.meta_crc(meta)})
    with pytest.raises(IndexDamagedError, match="is not the float32 array meta.json says"):
        ix.use_dense(model="hash-32", encoder=HashEncoder(32))


def test_damaged_scales_are_found(tmp_path: Path) -> None:
    ix = sieve.build_index(_docs(20), tmp_path / "ix")
    out = store.embed(ix, model="hash-32", encoder=HashEncoder(32))
    raw = bytearray((out / "scales.sva").read_bytes())
    raw[-8] ^= 0x55  # inside the payload's last block
    (out / "scales.sva").write_bytes(bytes(raw))
    with pytest.raises(IndexDamagedError, match="scales.sva"):
        ix.check()


@pytest.fixture(scope="module", params=["document", "passage"])
def graph_index(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> sieve.Index:
    ix = sieve.build_index(_docs(400, seed=9), tmp_path_factory.mktemp("graph") / "ix")
    store.embed(ix, model="hash-32", encoder=HashEncoder(32), unit=request.param)
    ix.use_dense(model="hash-32", encoder=HashEncoder(32), unit=request.param)
    return ix


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), share=st.sampled_from([0.0, 0.002, 0.01, 0.05, 0.3, 1.0]), k=st.sampled_from([1, 10, 50]))
def test_filtered_hnsw_stays_inside_the_admitted_set(graph_index: sieve.Index, seed: int, share: float, k: int) -> None:
    dense = graph_index.searcher.dense
    rng = np.random.default_rng(seed)
    docs = graph_index.doc_numbers()
    admitted = np.sort(rng.choice(docs, size=int(round(share * len(docs))), replace=False))
    bits = bitset.from_ids(admitted, graph_index.snapshot.capacity)
    q = dense.query_vector(" ".join(rng.choice(WORDS, 3)))
    got, sims = dense.approximate(q, bits, k)
    assert set(got.tolist()) <= set(admitted.tolist())
    assert len(got) == min(k, len(admitted)) == len(set(got.tolist()))
    # the graph holds the stored vectors decoded: its similarities are the exact scan's
    assert np.allclose(sims, dense._row_similarity(q, dense.rows(got)), atol=1e-5)


def test_cli_embed_takes_dtype(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from sieve.cli.main import main

    sieve.build_index(_docs(3), tmp_path / "ix")
    assert main(["embed", str(tmp_path / "ix"), "--dtype", "float16", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert layout.read_meta(Path(out["embeddings"]))["dtype"] == "float16"
    with pytest.raises(SystemExit) as info:
        main(["embed", str(tmp_path / "ix"), "--dtype", "int4"])
    assert info.value.code == 2


def test_exact_or_graph_is_chosen_by_the_measured_cost(graph_index: sieve.Index) -> None:
    dense = copy.copy(graph_index.searcher.dense)  # changed below: the fixture's stays as it is
    assert all(dense.prefers_exact(a, k) for a in (1, 100, 400) for k in (10, 1000))  # small collections: never the graph
    # as if the collection had 100,000 rows (bench_dense_scale measured the crossover there)
    dense.vectors = compact.Vectors(np.zeros((100_000, 4), dtype=np.int8), np.ones(100_000, dtype=np.float32))
    dense.docs, dense.owner = np.arange(100_000), None
    assert dense.prefers_exact(100, 10) and dense.prefers_exact(10_000, 10)
    assert not dense.prefers_exact(30_000, 10) and not dense.prefers_exact(100_000, 10)
    assert dense.prefers_exact(30_000, 1000)  # hybrid's pool of 1,000: the graph costs more for a large k
    dense.exact_max = 50_000  # a fixed crossover overrides the model
    assert dense.prefers_exact(30_000, 10) and not dense.prefers_exact(60_000, 1000)
