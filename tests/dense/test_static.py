"""The static encoder (`sieve embed --encoder static`): a word-piece table distilled from the
bundled MiniLM gives unit-length, deterministic vectors that put related texts closer; it is a model
of its own (never queried with MiniLM's vectors, nor MiniLM's embeddings with it); its table is
cached and sealed (a damaged one rebuilt); and a query with it imports neither torch nor ONNX
Runtime. The full table is distilled once for this module (into a cache of its own); the cache's
own behaviour is tested on a table of the vocabulary's first entries, which distils in seconds."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

REASON = "needs the dense extra: pip install torch==2.13.0 && pip install -e '.[dense]'"
pytest.importorskip("onnxruntime", reason=REASON)
pytest.importorskip("onnx", reason=REASON + " (the ONNX export needs onnx)")
pytest.importorskip("tokenizers", reason=REASON)

import sieve  # noqa: E402
from sieve.cli.main import main  # noqa: E402
from sieve.corpus.demo import stdlib_documents  # noqa: E402
from sieve.dense import layout, onnx, static, store  # noqa: E402
from sieve.dense.encoder import (  # noqa: E402
    DEFAULT_MODEL,
    EncoderMismatchError,
    loaded_encoder,
    model_fingerprint,
    model_label,
)
from sieve.dense.models import static_name  # noqa: E402
from sieve.errors import InvalidArgumentError  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
STATIC = static_name(DEFAULT_MODEL)
SMALL = 1024  # vocabulary entries of the quick table


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A cache folder of this module's own, the full static table distilled into it once."""
    base = tmp_path_factory.mktemp("xdg")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("XDG_CACHE_HOME", str(base))
        mp.delenv("SIEVE_ENCODER", raising=False)
        static.table_path(DEFAULT_MODEL)
        yield base


@pytest.fixture(scope="module")
def encoder(cache: Path) -> static.StaticEncoder:
    return static.StaticEncoder(DEFAULT_MODEL)


@pytest.fixture(scope="module")
def docs() -> list[dict]:
    wanted = {"json", "smtplib", "csv", "socket", "gzip", "zipfile"}
    return [d for d in stdlib_documents() if d["id"] in wanted]


TEXTS = [
    "send electronic mail",
    "an smtp client for email messages",
    "read and write csv files",
    "compress data with gzip",
    "",
    "x",
]


def test_vectors_are_unit_length_and_deterministic(
    encoder: static.StaticEncoder, monkeypatch: pytest.MonkeyPatch
) -> None:
    got = encoder.encode(TEXTS)
    assert got.shape == (len(TEXTS), 256) and got.dtype == np.float32 and encoder.dim == 256
    assert np.allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-5)
    # the same texts alone, in another order, by another instance: the same vectors
    again = static.StaticEncoder(STATIC)
    assert np.array_equal(again.encode(TEXTS[::-1])[::-1], got)
    assert np.allclose(np.vstack([encoder.encode([t]) for t in TEXTS]), got, atol=1e-6)
    # Texts gathered a few word pieces at a time (one text per group, several groups per text
    # boundary): the same vectors as all at once.
    monkeypatch.setattr(static, "_TOKENS", 3)
    assert np.allclose(encoder.encode(TEXTS), got, atol=1e-6)
    assert encoder.encode([]).shape == (0, 256)
    assert encoder.name == STATIC and encoder.backend == "static"


def test_related_texts_are_closer_than_unrelated(encoder: static.StaticEncoder) -> None:
    for text, near, far in [
        ("send electronic mail", "an smtp client for email messages", "read and write csv files"),
        ("compress data with gzip", "gzip compression of files", "network sockets"),
        ("parse json documents", "encode and decode json", "send electronic mail"),
    ]:
        v = encoder.encode([text, near, far])
        assert v[0] @ v[1] > v[0] @ v[2] + 0.2, (text, near, far)


def test_the_static_model_is_a_model_of_its_own(cache: Path) -> None:
    assert STATIC == "static:" + DEFAULT_MODEL and static_name(STATIC) == STATIC
    assert model_label(STATIC) == "static:all-MiniLM-L6-v2"
    files = model_fingerprint(STATIC)
    assert files is not None and files != model_fingerprint(DEFAULT_MODEL)
    assert loaded_encoder(backend="static") is loaded_encoder(STATIC)
    assert loaded_encoder(STATIC).name == STATIC
    with pytest.raises(InvalidArgumentError, match="static model"):
        loaded_encoder(STATIC, backend="torch")
    with pytest.raises(InvalidArgumentError, match="default model only"):
        loaded_encoder(str(cache), backend="static")


def test_sieve_encoder_static_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    """SIEVE_ENCODER picks a model's backend; static would silently swap the model."""
    monkeypatch.setenv("SIEVE_ENCODER", "static")
    with pytest.raises(InvalidArgumentError, match="model of its own"):
        loaded_encoder()


def test_cli_embed_then_search_end_to_end(
    cache: Path, tmp_path: Path, docs: list[dict], capsys: pytest.CaptureFixture[str]
) -> None:
    ix = sieve.build_index(docs, tmp_path / "idx")
    assert main(["embed", str(ix.path), "--encoder", "static", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["model"] == STATIC and summary["vectors"] == len(docs)
    where = layout.embeddings_dir(ix, STATIC, "document")
    meta = store.read_meta(where)
    assert (meta["model"], meta["dim"], meta["backend"]) == (STATIC, 256, "static")
    assert meta["model_fingerprint"] == model_fingerprint(STATIC)
    assert not layout.embeddings_dir(ix, DEFAULT_MODEL, "document").exists()
    # The only model embedded is found without being named, and ranks by the static vectors.
    ix = sieve.open_index(ix.path)
    ix.use_dense()
    got = [h.doc_id for h in ix.search("NOT zzzz electronic mail", k=6, ranker="dense").hits]
    dense = ix.searcher.dense
    assert dense is not None and dense.identity["query_backend"] == "static"
    q = static.StaticEncoder(DEFAULT_MODEL).encode(["electronic mail"])[0]
    sims = np.asarray(dense.vectors.whole()) @ q
    order = np.argsort(-sims, kind="stable")
    assert got == [ix.reader.doc_id(int(dense.docs[i])) for i in order]
    assert got[0] == "smtplib"
    hybrid = ix.search("NOT zzzz electronic mail", k=3, ranker="hybrid").hits
    assert hybrid[0].doc_id == "smtplib"
    capsys.readouterr()
    assert main(["search", str(ix.path), "compress data", "--ranker", "dense", "-k", "2"]) == 0
    assert "gzip" in capsys.readouterr().out
    # passages too: the document a query's best passage belongs to comes first
    assert main(["embed", str(ix.path), "--encoder", "static", "--unit", "passage", "--quiet"]) == 0
    passages = store.read_meta(layout.embeddings_dir(ix, STATIC, "passage"))
    assert passages["model"] == STATIC and passages["rows"] > len(docs)
    ix = sieve.open_index(ix.path)
    ix.use_dense(model=STATIC, unit="passage")
    assert ix.search("NOT zzzz electronic mail", k=1, ranker="dense").hits[0].doc_id == "smtplib"


def test_static_and_minilm_vectors_are_never_mixed(
    cache: Path, tmp_path: Path, docs: list[dict]
) -> None:
    ix = sieve.build_index(docs, tmp_path / "idx")
    # static vectors filed under MiniLM's name, or MiniLM's under the static name: refused
    with pytest.raises(EncoderMismatchError, match=STATIC):
        store.embed(ix, model=DEFAULT_MODEL, encoder=loaded_encoder(backend="static"))
    with pytest.raises(EncoderMismatchError, match=STATIC):
        store.embed(ix, model=STATIC, encoder=loaded_encoder(backend="onnx"))
    store.embed(ix, model=STATIC)
    # an index holding only static embeddings, asked for MiniLM's: refused, naming both
    with pytest.raises(EncoderMismatchError, match="static:"):
        ix.use_dense(model=DEFAULT_MODEL)
    # static embeddings queried with MiniLM's encoder: refused
    with pytest.raises(EncoderMismatchError, match="never mixed"):
        ix.use_dense(encoder=loaded_encoder(backend="onnx"))
    # and MiniLM's embeddings with the static encoder
    store.embed(ix, encoder=loaded_encoder(backend="onnx"))
    with pytest.raises(EncoderMismatchError, match="never mixed"):
        ix.use_dense(model=DEFAULT_MODEL, encoder=loaded_encoder(backend="static"))
    # both side by side: each found by its name
    ix.use_dense(model=STATIC)
    assert ix.searcher.dense is not None and ix.searcher.dense.meta["dim"] == 256
    ix.use_dense()
    assert ix.searcher.dense is not None and ix.searcher.dense.meta["model"] == DEFAULT_MODEL


@pytest.mark.parametrize("damage", ["truncate", "seal"])
def test_a_damaged_table_is_rebuilt(cache: Path, damage: str) -> None:
    path = static.table_path(DEFAULT_MODEL, entries=SMALL)
    assert path.is_relative_to(cache / "sieve" / "static") and SMALL != 30522
    assert path != static.table_path(DEFAULT_MODEL)  # a quick table is kept apart
    good = np.load(path)
    assert good.shape == (SMALL, 256)
    before = path.stat().st_mtime_ns
    assert static.table_path(DEFAULT_MODEL, entries=SMALL) == path
    assert path.stat().st_mtime_ns == before  # intact: reused
    if damage == "truncate":  # a build killed while writing
        with open(path, "r+b") as fh:
            fh.truncate(path.stat().st_size // 2)
    else:
        path.with_suffix(".json").write_text("{not json")
    assert static.table_path(DEFAULT_MODEL, entries=SMALL) == path
    assert onnx._intact(path)
    # distilled again, the same table: the distillation is deterministic
    assert np.allclose(np.load(path), good, atol=1e-5)


def test_a_static_query_imports_neither_torch_nor_onnxruntime(
    cache: Path, tmp_path: Path, docs: list[dict]
) -> None:
    ix = sieve.build_index(docs, tmp_path / "idx")
    store.embed(ix, model=STATIC)
    script = (
        "import sys, sieve\n"
        f"ix = sieve.open_index({str(ix.path)!r})\n"
        "ix.use_dense()\n"
        "hits = ix.search('NOT zzzz electronic mail', k=2, ranker='hybrid').hits\n"
        "print(hits[0].doc_id, ix.searcher.dense.identity['query_backend'],"
        " 'torch' in sys.modules, 'onnxruntime' in sys.modules)\n"
    )
    env = {**os.environ, "XDG_CACHE_HOME": str(cache), "PYTHONPATH": str(ROOT)}
    env.pop("SIEVE_ENCODER", None)
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=300,
        check=True,
    ).stdout.split()
    assert out == ["smtplib", "static", "False", "False"]
