"""The encoder as part of an index's dense data: several models side by side, each recorded (name,
width, checksum of its files), a model the index does not hold or whose files changed refused, and
exact search that never touches the HNSW graph. The second model is real: the MiniLM's transformer
read through CLS pooling and cut to 256 dimensions (tests/support/encoders.py), written offline."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("sentence_transformers", reason="needs the dense extra: pip install torch==2.13.0 && pip install -e '.[dense]'")

from encoders import derived_model  # noqa: E402

import sieve  # noqa: E402
from sieve.cli.main import main  # noqa: E402
from sieve.corpus.demo import stdlib_documents  # noqa: E402
from sieve.dense import layout, onnx, store  # noqa: E402
from sieve.dense.encoder import DEFAULT_MODEL, EncoderMismatchError, loaded_encoder, model_fingerprint  # noqa: E402

MODULES = {"json", "gzip", "csv", "sqlite3", "socket", "random", "math", "datetime", "smtplib", "logging", "shutil", "re"}


@pytest.fixture(scope="module")
def small(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The second encoder's folder: CLS pooling, 256 dimensions."""
    return derived_model(tmp_path_factory.mktemp("models") / "minilm-cls-256", pooling="cls", dim=256)


@pytest.fixture(scope="module")
def docs() -> list[dict]:
    return [d for d in stdlib_documents() if d["id"] in MODULES]


def _brute(index: sieve.Index, model: str, text: str, k: int) -> list[str]:
    """The exact inner-product ranking, computed here from the model and the stored vectors."""
    dense = index.searcher.dense
    assert dense is not None
    q = loaded_encoder(model).encode([text])[0]
    sims = np.asarray(dense.vectors.whole()) @ q
    order = sorted(range(len(sims)), key=lambda i: (-sims[i], i))[:k]
    return [index.reader.doc_id(int(dense.docs[i])) for i in order]


def test_two_encoders_side_by_side_each_recorded(tmp_path: Path, docs: list[dict], small: Path) -> None:
    ix = sieve.build_index(docs, tmp_path / "idx")
    a = store.embed(ix)
    b = store.embed(ix, str(small))
    assert a != b and a.parent == b.parent == ix.path / "embeddings"
    assert layout.embedded_models(ix.path) == sorted([DEFAULT_MODEL, str(small)], key=lambda m: layout.model_slug(m))
    for model, dim in ((DEFAULT_MODEL, 384), (str(small), 256)):
        ix.use_dense(model=model)
        dense = ix.searcher.dense
        assert dense is not None
        fp = model_fingerprint(model)
        assert fp is not None and len(fp) == 16
        backend = "onnxruntime-fp32" if model == DEFAULT_MODEL and onnx.available() else "torch-fp32"
        assert dense.identity == {"model": model, "dim": dim, "model_fingerprint": fp, "unit": "document", "dtype": "int8", "search": "approximate",
                                  "backend": backend, "query_backend": None}
        assert dense.vectors.shape == (len(docs), dim)
        got = [h.doc_id for h in ix.search("NOT zzzz electronic mail", k=3, ranker="dense").hits]
        assert got == _brute(ix, model, "electronic mail", 3)
    assert model_fingerprint(DEFAULT_MODEL) != model_fingerprint(str(small))


def test_a_model_the_index_does_not_hold_is_refused_naming_both(tmp_path: Path, docs: list[dict], small: Path) -> None:
    ix = sieve.build_index(docs, tmp_path / "idx")
    store.embed(ix, str(small))
    with pytest.raises(EncoderMismatchError) as info:
        ix.use_dense(model=DEFAULT_MODEL)
    message = str(info.value)
    assert f"holds embeddings of {small} (256 dimensions), not of {DEFAULT_MODEL}" in message
    assert f"--embed-model {DEFAULT_MODEL}" in message
    ix.use_dense()  # no model asked: the one it holds
    assert ix.searcher.dense is not None and ix.searcher.dense.meta["model"] == str(small)
    store.embed(ix, str(derived_model(tmp_path / "max", pooling="max")))
    with pytest.raises(EncoderMismatchError, match="holds embeddings of several models .*: say which with --embed-model"):
        ix.use_dense()


def test_a_folder_named_from_elsewhere_is_the_same_model(tmp_path: Path, docs: list[dict], small: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ix = sieve.build_index(docs[:4], tmp_path / "idx")
    monkeypatch.chdir(small.parent)
    store.embed(ix, small.name)  # relative
    monkeypatch.chdir(tmp_path)
    ix.use_dense(model=str(small))  # absolute: the same embeddings
    assert ix.searcher.dense is not None and ix.searcher.dense.meta["model"] == str(small)


def test_another_model_behind_the_same_folder_is_refused_then_reembedded(tmp_path: Path, docs: list[dict]) -> None:
    folder = derived_model(tmp_path / "model", pooling="cls")
    ix = sieve.build_index(docs, tmp_path / "idx")
    store.embed(ix, str(folder))
    before = store.read_meta(layout.embeddings_dir(ix, str(folder), "document"))["model_fingerprint"]
    shutil.rmtree(folder)
    derived_model(folder, pooling="mean")  # same name, same width, another encoder
    now = model_fingerprint(str(folder))
    assert now != before
    reopened = sieve.open_index(tmp_path / "idx")
    reopened.use_dense(model=str(folder))
    with pytest.raises(EncoderMismatchError) as info:
        reopened.search("mail", ranker="dense")
    assert f"computed by {folder} with files {before}, but {folder} now has files {now}" in str(info.value)
    # `sieve embed` does not take the old vectors for the new model's: it computes them again.
    assert main(["embed", str(tmp_path / "idx"), "--embed-model", str(folder), "--quiet", "--json"]) == 0
    meta = store.read_meta(layout.embeddings_dir(reopened, str(folder), "document"))
    assert meta["model_fingerprint"] == now and meta["reused"] == 0
    fresh = sieve.open_index(tmp_path / "idx")
    fresh.use_dense(model=str(folder))
    assert [h.doc_id for h in fresh.search("NOT zzzz electronic mail", k=3, ranker="dense").hits] == _brute(fresh, str(folder), "electronic mail", 3)


def test_exact_search_never_reads_the_graph(tmp_path: Path, docs: list[dict], monkeypatch: pytest.MonkeyPatch) -> None:
    ix = sieve.build_index(docs, tmp_path / "idx")
    out = store.embed(ix)
    monkeypatch.setattr(store, "EXACT_MAX", 0)  # approximate search would take the graph for any admitted set
    raw = bytearray((out / "hnsw.bin").read_bytes())
    raw[len(raw) // 2] ^= 0xFF
    (out / "hnsw.bin").write_bytes(bytes(raw))  # damaged: reading it is an error
    ix.use_dense(search="exact")
    assert [h.doc_id for h in ix.search("NOT zzzz electronic mail", k=3, ranker="dense").hits] == _brute(ix, DEFAULT_MODEL, "electronic mail", 3)
    assert [h.doc_id for h in ix.search("NOT zzzz electronic mail", k=3, ranker="hybrid").hits]
    ix.use_dense(search="approximate")
    with pytest.raises(sieve.IndexDamagedError, match="hnsw.bin"):
        ix.search("NOT zzzz electronic mail", k=3, ranker="dense")
    with pytest.raises(sieve.SieveError, match="unknown dense search 'fast'"):
        ix.use_dense(search="fast")


def test_cli_embed_takes_embed_model(tmp_path: Path, docs: list[dict], small: Path, capsys: pytest.CaptureFixture[str]) -> None:
    sieve.build_index(docs[:3], tmp_path / "idx")
    assert main(["embed", str(tmp_path / "idx"), "--embed-model", str(small), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    meta = store.read_meta(Path(out["embeddings"]))
    assert (meta["model"], meta["dim"], meta["model_fingerprint"]) == (str(small), 256, model_fingerprint(str(small)))
