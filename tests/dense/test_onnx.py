"""The default model on ONNX Runtime: its vectors are sentence-transformers' (cosine >= 0.999 on
real texts), its export is cached per model checksum (reused; a changed model exported again; a
partial or damaged graph rebuilt, not crashed on), it is the default backend and recorded as such,
and a process that only asks dense queries never imports torch."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

REASON = "needs the dense extra: pip install torch==2.13.0 && pip install -e '.[dense]'"
pytest.importorskip("onnxruntime", reason=REASON)
pytest.importorskip("onnx", reason=REASON + " (the ONNX export needs onnx)")
pytest.importorskip("sentence_transformers", reason=REASON)

import sieve
from sieve.corpus.demo import stdlib_documents
from sieve.dense import layout, onnx, store
from sieve.dense.encoder import (
    DEFAULT_MODEL,
    DenseUnavailableError,
    SentenceTransformerEncoder,
    loaded_encoder,
    model_files,
)
from sieve.errors import InvalidArgumentError

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A cache folder of this module's own, the default model exported into it once."""
    base = tmp_path_factory.mktemp("xdg")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("XDG_CACHE_HOME", str(base))
        mp.delenv("SIEVE_ENCODER", raising=False)
        onnx.exported(DEFAULT_MODEL)
        yield base


@pytest.fixture(scope="module")
def texts() -> list[str]:
    docs = list(stdlib_documents())[:40]
    pages = [d["title"] + "\n" + "\n".join(s["text"] for s in d["sections"])[:2000] for d in docs]
    return pages + ["electronic mail", "x", ""]


def test_vectors_agree_with_sentence_transformers(cache: Path, texts: list[str]) -> None:
    fast = onnx.OnnxEncoder(DEFAULT_MODEL)
    ref = SentenceTransformerEncoder(DEFAULT_MODEL).encode(texts)
    got = fast.encode(texts, batch_size=8)  # several batches of different widths, sorted by length
    assert got.shape == ref.shape == (len(texts), 384) and got.dtype == np.float32
    assert np.allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-5)
    assert (got * ref).sum(axis=1).min() >= 0.999
    assert fast.encode([]).shape == (0, 384)


def test_the_exported_graph_runs_fused_layers(cache: Path) -> None:
    """Each layer's attention and its residual LayerNorms are single kernels (the unfused export
    ran at torch's speed): one Attention per layer, two SkipLayerNormalization, no Softmax."""
    import onnx as onnx_format

    root = model_files(DEFAULT_MODEL)
    assert root is not None
    layers = json.loads((root / "config.json").read_text())["num_hidden_layers"]
    ops = [n.op_type for n in onnx_format.load(str(onnx.exported(DEFAULT_MODEL))).graph.node]
    assert ops.count("Attention") == layers and ops.count("SkipLayerNormalization") == 2 * layers
    assert "Softmax" not in ops and ops.count("EmbedLayerNormalization") == 1


def test_runs_hold_about_run_tokens_word_pieces(cache: Path, texts: list[str]) -> None:
    """Long texts go through the graph a few at a time (activations stay in cache), short ones
    many at a time, whatever the batch size asked; the vectors are those of one big run."""
    fast = onnx.OnnxEncoder(DEFAULT_MODEL)
    shapes: list[tuple[int, int]] = []
    session = fast._session

    class Watching:  # the real session, its runs' input shapes noted
        def run(self, names: Any, feeds: dict[str, np.ndarray]) -> Any:
            shapes.append(feeds["input_ids"].shape)
            return session.run(names, feeds)

    fast._session = Watching()  # type: ignore[assignment]
    got = fast.encode(texts, batch_size=32)
    rows = [r for r, w in shapes]
    assert sum(rows) == len(texts) and max(r * w for r, w in shapes) <= onnx.RUN_TOKENS
    assert max(w for _, w in shapes) == 256 and rows[0] == onnx.RUN_TOKENS // 256
    assert shapes[-1][1] < 16 and rows[-1] >= 3  # the three short texts share one run
    fast._session = session
    onnx_one = np.vstack([fast.encode([t]) for t in texts])
    assert np.allclose(got, onnx_one, atol=1e-5)


def test_int8_is_the_fused_graph_quantised(cache: Path, texts: list[str]) -> None:
    """The opt-in int8 quantises the fused graph's Attention and MatMul weights: approximate
    (cosine at least 0.985 with float32 on pages, 0.97 on one-word and empty texts), and labelled
    as such."""
    import onnx as onnx_format

    ops = [n.op_type for n in onnx_format.load(str(onnx.exported(DEFAULT_MODEL, "int8"))).graph.node]
    assert "QAttention" in ops and "MatMul" not in ops
    fast = loaded_encoder(backend="onnx-int8")
    assert fast.backend == "onnxruntime-int8"
    cos = (fast.encode(texts) * SentenceTransformerEncoder(DEFAULT_MODEL).encode(texts)).sum(1)
    assert cos[:-3].min() >= 0.985 and cos.min() >= 0.97 and cos.mean() < 0.9999


def test_export_is_reused_and_redone_for_a_changed_model(cache: Path, tmp_path: Path) -> None:
    graph = onnx.exported(DEFAULT_MODEL)
    assert graph.is_relative_to(cache / "sieve" / "onnx")
    before = graph.stat().st_mtime_ns
    assert onnx.exported(DEFAULT_MODEL) == graph and graph.stat().st_mtime_ns == before
    # The same weights behind another configuration file: another checksum, another export.
    src = model_files(DEFAULT_MODEL)
    assert src is not None
    copy = tmp_path / "minilm"
    shutil.copytree(src, copy, symlinks=True, ignore=shutil.ignore_patterns("model.safetensors"))
    (copy / "model.safetensors").symlink_to(src / "model.safetensors")
    config = json.loads((copy / "config.json").read_text())
    (copy / "config.json").write_text(json.dumps({**config, "note": "changed"}))
    other = onnx.exported(str(copy))
    assert other.parent != graph.parent and other.is_file()
    assert onnx.exported(DEFAULT_MODEL) == graph and graph.stat().st_mtime_ns == before


@pytest.mark.parametrize("damage", ["truncate", "seal"])
def test_a_damaged_cached_graph_is_rebuilt(cache: Path, texts: list[str], damage: str) -> None:
    graph = onnx.exported(DEFAULT_MODEL)
    good = onnx.OnnxEncoder(DEFAULT_MODEL).encode(texts[:3])
    if damage == "truncate":  # an export killed while writing
        with open(graph, "r+b") as fh:
            fh.truncate(graph.stat().st_size // 2)
    else:
        graph.with_suffix(".json").write_text("{not json")
    again = onnx.OnnxEncoder(DEFAULT_MODEL).encode(texts[:3])
    assert np.allclose(again, good, atol=1e-6)
    assert onnx._intact(graph)


def test_onnx_is_the_default_and_recorded(cache: Path, tmp_path: Path) -> None:
    assert loaded_encoder().backend == "onnxruntime-fp32"
    assert loaded_encoder(backend="torch").backend == "torch-fp32"
    with pytest.raises(InvalidArgumentError, match="known: auto, torch"):
        loaded_encoder(backend="tpu")
    with pytest.raises(InvalidArgumentError, match="default model only"):
        loaded_encoder(str(tmp_path), backend="onnx")
    wanted = {"json", "smtplib", "csv", "socket", "gzip"}
    docs = [d for d in stdlib_documents() if d["id"] in wanted]
    ix = sieve.build_index(docs, tmp_path / "idx")
    # Embedded by torch, queried through ONNX Runtime: the same model, the same ranking.
    store.embed(ix, encoder=loaded_encoder(backend="torch"))
    ix.use_dense()
    dense = ix.searcher.dense
    assert dense is not None and dense.identity["backend"] == "torch-fp32"
    got = [h.doc_id for h in ix.search("NOT zzzz electronic mail", k=5, ranker="dense").hits]
    assert dense.identity["query_backend"] == "onnxruntime-fp32"
    ref = loaded_encoder(backend="torch").encode(["electronic mail"])[0]
    sims = np.asarray(dense.vectors.whole()) @ ref
    assert got == [ix.reader.doc_id(int(dense.docs[i])) for i in np.argsort(-sims, kind="stable")]


def test_a_dense_query_does_not_import_torch(cache: Path, tmp_path: Path) -> None:
    docs = [d for d in stdlib_documents() if d["id"] in {"json", "smtplib", "csv", "socket"}]
    ix = sieve.build_index(docs, tmp_path / "idx")
    store.embed(ix)
    script = ("import sys, sieve\n"
              f"ix = sieve.open_index({str(ix.path)!r})\n"
              "ix.use_dense()\n"
              "hits = ix.search('NOT zzzz electronic mail', k=2, ranker='hybrid').hits\n"
              "print(hits[0].doc_id, 'torch' in sys.modules,"
              " 'sentence_transformers' in sys.modules)\n")
    env = {**os.environ, "XDG_CACHE_HOME": str(cache), "PYTHONPATH": str(ROOT)}
    env.pop("SIEVE_ENCODER", None)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env,
                         timeout=300, check=True).stdout.split()
    assert out == ["smtplib", "False", "False"]


def test_cli_embed_records_the_backend_asked_for(cache: Path, tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    from sieve.cli.main import main

    docs = [d for d in stdlib_documents() if d["id"] in {"json", "csv"}]
    ix = sieve.build_index(docs, tmp_path / "idx")
    assert main(["embed", str(ix.path), "--encoder", "torch", "--quiet"]) == 0
    where = layout.embeddings_dir(ix, DEFAULT_MODEL, "document")
    assert store.read_meta(where)["backend"] == "torch-fp32"
    assert main(["embed", str(ix.path), "--force", "--jobs", "1", "--quiet"]) == 0
    assert store.read_meta(where)["backend"] == "onnxruntime-fp32"
    capsys.readouterr()
    assert main(["embed", str(ix.path), "--embed-model", str(tmp_path), "--encoder", "onnx"]) == 1
    assert "default model only" in capsys.readouterr().err


def test_a_cache_folder_others_can_write_is_refused(cache: Path) -> None:
    """A graph planted in a shared cache (with a seal that matches it) would be loaded as the model:
    a cache folder owned by another user, or writable by others, is refused, naming it."""
    onnx.exported(DEFAULT_MODEL)
    root = onnx.cache_root()
    root.chmod(0o777)
    with pytest.raises(DenseUnavailableError, match="belongs to another user or others can write"):
        onnx.exported(DEFAULT_MODEL)
    root.chmod(0o700)
    graph = onnx.exported(DEFAULT_MODEL)
    assert graph.is_file()
    if os.getuid() == 0:  # only root can give a folder away
        folder = graph.parent
        os.chown(folder, 65534, 65534)
        try:
            with pytest.raises(DenseUnavailableError, match=re.escape(str(folder))):
                onnx.exported(DEFAULT_MODEL)
        finally:
            os.chown(folder, 0, 0)
