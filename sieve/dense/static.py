"""A static embedding model distilled from the default one: a table of one vector per word piece.

The idea is model2vec's (the code is sieve's own). Once, offline, every entry of the model's
word-piece vocabulary is run through the model on ONNX Runtime as the text `[CLS] piece [SEP]`
(the exported graph's own pooling and normalisation); the rows are centred and reduced by PCA
(numpy's SVD) to DIMS dimensions, then each is weighted by the log of its rank among the
vocabulary's whole words (BERT's word pieces are listed roughly from the most frequent, so a rare
word weighs more, as in SIF weighting; no corpus frequencies are needed). A text's vector is the
normalised sum of its word pieces' rows: numpy and the tokenizer only, no torch and no ONNX Runtime,
microseconds a query, hundreds of times faster than the model on a CPU, and less accurate
(benchmarks/bench_dense.py measures both).

The static model is a model of its own, `static:<model>` (sieve.dense.models.static_name): its
embeddings sit beside the model's, are recorded under that name, and are never queried with the
model's vectors or the other way round. The table is built on first use (ONNX Runtime, and torch if
the model was never exported) and kept in $XDG_CACHE_HOME/sieve/static (else ~/.cache/...), keyed
by the recipe and the model files' checksum, written under a temporary name, renamed into place
and sealed with its size and CRC32 like the ONNX graph; a partial or damaged table is rebuilt.
"""

from __future__ import annotations

import importlib.util
import json
import os
import tempfile
from itertools import chain
from pathlib import Path
from typing import Any

import numpy as np

from sieve.dense import onnx
from sieve.dense.models import (
    STATIC_RECIPE,
    DenseUnavailableError,
    model_files,
    model_fingerprint,
    static_base,
    static_name,
)
from sieve.engine.format import storage

DIMS = 256  # part of STATIC_RECIPE: changing it names another model
_BATCH = 1024  # vocabulary entries the model reads at once while distilling
_TOKENS = 1 << 16  # word pieces gathered at once while encoding (64 MiB of float32 rows)


def available() -> bool:
    """Whether the tokenizers package is installed (all a static encoder needs besides numpy)."""
    return importlib.util.find_spec("tokenizers") is not None


def _tokenizer(model: str) -> Any:
    from tokenizers import Tokenizer

    root = model_files(model)
    if root is None or not (root / "tokenizer.json").is_file():
        raise DenseUnavailableError(f"embedding model {model!r} has no tokenizer.json")
    tok = Tokenizer.from_file(str(root / "tokenizer.json"))
    tok.no_padding()
    tok.no_truncation()  # every word counts, and a long text costs only its length
    return tok


def _weights(vocab: dict[str, int]) -> np.ndarray:
    """log(1 + rank) of each entry among the whole words: BERT lists its special tokens, then single
    characters, then words from the most frequent; everything before the first word ranks first."""
    first = min(
        (i for s, i in vocab.items() if len(s) > 1 and s.isalpha()),
        default=0,
    )
    ranks = np.maximum(np.arange(len(vocab), dtype=np.float64) - first, 0.0) + 1.0
    return np.log1p(ranks)


def distil(model: str, threads: int | None = None, entries: int | None = None) -> np.ndarray:
    """The static table of `model` (the base model's name): one float32 row of DIMS per vocabulary
    entry (of the first `entries` only, if given: a quick table for tests), weighted. Needs ONNX
    Runtime (and torch the first time the model is exported)."""
    if not onnx.available():
        raise DenseUnavailableError(
            "building the static encoder's table needs onnxruntime and tokenizers once "
            "(the dense extra): pip install onnxruntime tokenizers"
        )
    import onnxruntime as ort

    tok = _tokenizer(model)
    vocab: dict[str, int] = tok.get_vocab()
    cls, sep = vocab.get("[CLS]"), vocab.get("[SEP]")
    if cls is None or sep is None:
        raise DenseUnavailableError(f"embedding model {model!r} has no [CLS] and [SEP] tokens")
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads or os.cpu_count() or 1
    session = ort.InferenceSession(
        str(onnx.exported(model)), options, providers=["CPUExecutionProvider"]
    )
    size = min(len(vocab), entries or len(vocab))
    rows = np.empty((size, session.get_outputs()[0].shape[1] or 384), dtype=np.float64)
    for a in range(0, size, _BATCH):
        ids = np.arange(a, min(size, a + _BATCH), dtype=np.int64)
        # A piece alone in the model's usual frame: [CLS] piece [SEP] measured better than the
        # piece by itself (MRR@10 0.29 against 0.13 on man pages, unweighted).
        x = np.stack([np.full_like(ids, cls), ids, np.full_like(ids, sep)], axis=1)
        feeds = {"input_ids": x, "attention_mask": np.ones_like(x), "token_type_ids": 0 * x}
        rows[a : a + len(ids)] = session.run(None, feeds)[0]
    rows -= rows.mean(axis=0)
    _, _, axes = np.linalg.svd(rows, full_matrices=False)
    axes = axes[:DIMS]
    # An axis's sign is arbitrary (another BLAS may flip it): fix it, so that a table rebuilt
    # elsewhere gives the vectors its embeddings were computed with.
    axes *= np.sign(axes[np.arange(len(axes)), np.abs(axes).argmax(axis=1)])[:, None]
    table = rows @ axes.T
    return np.ascontiguousarray(table * _weights(vocab)[:size, None], dtype=np.float32)


def cache_root() -> Path:
    """Where static tables are kept: $XDG_CACHE_HOME/sieve/static, else ~/.cache/sieve/static."""
    return onnx.cache_root().parent / "static"


def table_path(model: str, entries: int | None = None) -> Path:
    """The cached table of `model` (the base model's name; `entries` as `distil`'s, kept apart),
    distilled on first use and again whenever the cached one is missing, partial or damaged, or
    the model's files changed."""
    files = model_fingerprint(model)
    if files is None:
        raise DenseUnavailableError(f"the files of embedding model {model!r} are not installed")
    part = f"-first{entries}" if entries else ""
    folder = cache_root() / f"{Path(model).name or 'model'}-{files}-{STATIC_RECIPE}{part}"
    onnx._private(folder)
    path = folder / "table.npy"
    if onnx._intact(path):
        return path
    table = distil(model, entries=entries)
    # A unique temporary name: two processes building at once each finish their own.
    with tempfile.TemporaryDirectory(dir=folder, prefix=".build-") as tmp:
        built = Path(tmp) / "table.npy"
        with open(built, "wb") as fh:
            np.save(fh, table, allow_pickle=False)
            fh.flush()
            os.fsync(fh.fileno())
        size, crc = onnx._file_crc(built)
        path.with_suffix(".json").unlink(missing_ok=True)  # nothing vouches for it while replaced
        os.replace(built, path)
        seal = Path(tmp) / "seal.json"
        seal.write_text(json.dumps({"size": size, "crc32": crc, "model": model, "files": files}))
        os.replace(seal, path.with_suffix(".json"))
        storage.fsync_dir(folder)
    return path


class StaticEncoder:
    """The static model distilled from `model` (its name with or without the `static:` prefix):
    unit-length float32 vectors, each the normalised sum of its text's word-piece rows; a text with
    no word piece is known by the unknown token's row."""

    def __init__(self, model: str) -> None:
        if not available():
            raise DenseUnavailableError(
                "the static encoder needs the tokenizers package: pip install tokenizers"
            )
        self.name = static_name(model)
        base = static_base(self.name)
        assert base is not None  # static_name always gives a static name
        self.backend = "static"
        self._tokenizer = _tokenizer(base)
        path = table_path(base)
        try:
            table = np.load(path, allow_pickle=False)
        except (OSError, ValueError):
            # Sealed yet unreadable (written by another numpy, say): build it again.
            path.with_suffix(".json").unlink(missing_ok=True)
            table = np.load(table_path(base), allow_pickle=False)
        self._table: np.ndarray = table
        self.dim = int(table.shape[1])
        unk = self._tokenizer.token_to_id("[UNK]")
        self._unk = [0 if unk is None else int(unk)]

    def encode(self, texts: list[str], batch_size: int = 32) -> np.ndarray:
        """Unit-length float32 vectors of `texts`, in their order (`batch_size` is not used: the
        texts are gathered by word pieces instead)."""
        found = self._tokenizer.encode_batch(list(texts), add_special_tokens=False)
        ids = [e.ids or self._unk for e in found]
        lengths = np.fromiter(map(len, ids), dtype=np.int64, count=len(ids))
        flat = np.fromiter(chain.from_iterable(ids), dtype=np.int64, count=int(lengths.sum()))
        ends = np.cumsum(lengths)
        out = np.empty((len(ids), self.dim), dtype=np.float32)
        a = 0
        while a < len(ids):
            # as many texts as fit in _TOKENS word pieces (at least one)
            b = max(a + 1, int(np.searchsorted(ends, ends[a] - lengths[a] + _TOKENS, "right")))
            lo = int(ends[a] - lengths[a])
            starts = np.concatenate(([0], ends[a : b - 1] - lo))
            out[a:b] = np.add.reduceat(self._table[flat[lo : ends[b - 1]]], starts, axis=0)
            a = b
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        out /= np.maximum(norms, np.float32(1e-12))
        return out
