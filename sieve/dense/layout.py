"""The embeddings folders beside an index: INDEX/embeddings/<model slug>[@passages]/, their
checked meta.json, what a finished folder holds, and verifying every byte of them."""

from __future__ import annotations

import contextlib
import json
import os
import re
from pathlib import Path
from typing import Any

import numpy as np

from sieve.common import files as safe_files
from sieve.dense.compact import DTYPES, Vectors
from sieve.dense.encoder import model_name
from sieve.dense.units import UNITS, IndexView
from sieve.engine.format import storage
from sieve.errors import IndexDamagedError

PASSAGES_SUFFIX = "@passages"  # never in a model slug


def dir_name(slug: str, unit: str) -> str:
    return slug + (PASSAGES_SUFFIX if unit == "passage" else "")


def embeddings_dir(index: IndexView, model: str, unit: str) -> Path:
    return index.path / "embeddings" / dir_name(model_slug(model_name(model)), unit)


def same_model(meta: dict[str, Any], files: str | None) -> bool:
    """Whether embeddings recorded with `meta` came from a model whose files have this checksum
    (embeddings sealed before the checksum was recorded, or a model out of reach, cannot tell)."""
    recorded = meta.get("model_fingerprint")
    return recorded is None or files is None or recorded == files


def model_slug(model: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "--", model).strip("-")


def fingerprint(index: IndexView) -> str:
    """Identity of one index commit point: its name and the checksum of its manifest file."""
    raw = storage.read_index_file(index.commit_dir / storage.MANIFEST, storage.MANIFEST)
    return f"{index.commit_dir.name}:{storage.crc32(raw):08x}"


def vector_dtype(meta: dict[str, Any]) -> str:
    """How a folder's vectors are stored (folders written before compact storage: float32)."""
    return str(meta.get("dtype", "float32"))


def open_vectors(directory: Path, meta: dict[str, Any], verify: bool = False) -> Vectors:
    """The vectors of one embeddings folder (and their int8 scales), memory-mapped; every block
    checked now if `verify`, else when first read."""
    stored = storage.open_array(
        directory / "vectors.sva", "vectors.sva", meta["files"]["vectors.sva"], verify=verify
    )
    scales = None
    if "scales.sva" in meta["files"]:
        scales = storage.open_array(
            directory / "scales.sva", "scales.sva", meta["files"]["scales.sva"], verify=verify
        )
    if str(stored.dtype) != vector_dtype(meta) or (
        scales is not None and len(scales) != len(stored)
    ):
        raise IndexDamagedError(
            f"embeddings/{directory.name}/vectors.sva",
            f"is not the {vector_dtype(meta)} array meta.json says, with its scales",
        )
    return Vectors(stored, scales)


def reusable(
    directory: Path, dim: int, model: str, files: str | None
) -> tuple[dict[int, int], Vectors] | None:
    """(key -> row, vectors) of finished embeddings of an earlier commit point, if they check out
    and recorded their keys; None otherwise (then every vector is computed)."""
    try:
        meta = read_meta(directory)
        if (
            meta.get("dim") != dim
            or meta.get("model") != model
            or not same_model(meta, files)
            or "keys.sva" not in meta["files"]
        ):
            return None
        keys = storage.open_array(
            directory / "keys.sva", "keys.sva", meta["files"]["keys.sva"], verify=True
        )
        vectors = open_vectors(directory, meta, verify=True)
        return {int(k): i for i, k in enumerate(np.asarray(keys).tolist())}, vectors
    except (IndexDamagedError, OSError, KeyError):
        return None


def write_json(path: Path, obj: dict[str, Any]) -> None:
    tmp = path.with_suffix(".tmp")
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write(json.dumps(obj, indent=1, sort_keys=True))
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)
    storage.fsync_dir(path.parent)


def complete(directory: Path, fp: str, files: str | None, dtype: str | None = None) -> bool:
    """Whether `directory` holds finished embeddings of this commit point, by a model with these
    files, stored as `dtype` (None: any), whose every byte checks out."""
    try:
        meta = read_meta(directory)
        if (
            meta.get("fingerprint") != fp
            or not same_model(meta, files)
            or dtype not in (None, vector_dtype(meta))
        ):
            return False
        storage.verify_array(directory / "vectors.sva", "vectors.sva", meta["files"]["vectors.sva"])
        for name in ("owner.sva", "scales.sva"):
            if name in meta["files"]:
                storage.verify_array(directory / name, name, meta["files"][name])
        return file_entry(directory / "hnsw.bin") == meta["files"]["hnsw.bin"]
    except (IndexDamagedError, OSError):
        return False


def meta_crc(meta: dict[str, Any]) -> int:
    return storage.crc32(json.dumps(meta, sort_keys=True, separators=(",", ":")).encode())


def read_meta(directory: Path) -> dict[str, Any]:
    """meta.json of one embeddings directory, checked: its checksum, and the entries opening
    needs."""
    name = f"embeddings/{directory.name}/meta.json"
    try:
        meta = json.loads(
            safe_files.read_regular(directory / "meta.json", storage.MANIFEST_MAX_BYTES).decode(
                "utf-8"
            )
        )
        checksum = meta.pop("checksum")
    except (
        OSError,
        ValueError,
        UnicodeDecodeError,
        KeyError,
        TypeError,
        AttributeError,
        RecursionError,
    ):
        raise IndexDamagedError(name, "unreadable, or not what sieve embed writes") from None
    if checksum != meta_crc(meta):
        raise IndexDamagedError(name, "checksum mismatch (the contents are damaged)")
    try:
        files = meta["files"]
        ok = all(
            isinstance(files[f]["size"], int) and isinstance(files[f]["crc32"], int)
            for f in ("vectors.sva", "hnsw.bin")
        )
        ok = (
            ok
            and isinstance(meta["dim"], int)
            and isinstance(meta["rows"], int)
            and isinstance(meta["model"], str)
        )
        ok = (
            ok
            and meta.get("unit", "document") in UNITS
            and (meta.get("unit", "document") == "document" or "owner.sva" in files)
            and vector_dtype(meta) in DTYPES
            and (vector_dtype(meta) == "int8") == ("scales.sva" in files)
        )
    except (KeyError, TypeError):
        ok = False
    if not ok:
        raise IndexDamagedError(name, "missing entries")
    return meta


def embedding_dirs(root: Path) -> list[Path]:
    """The embeddings directories under an index (those with a meta.json), by name; none when it
    has no `embeddings` folder, IndexDamagedError when that cannot be listed."""
    base = root / "embeddings"
    if not os.path.isdir(base):
        return []
    try:
        return sorted(p for p in base.iterdir() if os.path.lexists(p / "meta.json"))
    except OSError as e:
        raise IndexDamagedError(
            "embeddings", f"cannot be listed ({safe_files.reason(e)})"
        ) from None


def verify_embeddings(root: Path) -> list[str]:
    """Every byte of every embeddings directory under an index; returns the files checked."""
    checked: list[str] = []
    for directory in embedding_dirs(root):
        meta = read_meta(directory)
        prefix = f"embeddings/{directory.name}/"
        storage.verify_array(
            directory / "vectors.sva", prefix + "vectors.sva", meta["files"]["vectors.sva"]
        )
        try:
            entry = file_entry(directory / "hnsw.bin")
        except OSError:
            raise IndexDamagedError(prefix + "hnsw.bin", "file is missing or unreadable") from None
        if entry != meta["files"]["hnsw.bin"]:
            raise IndexDamagedError(
                prefix + "hnsw.bin", "size or checksum does not match meta.json"
            )
        checked += [prefix + n for n in ("meta.json", "vectors.sva", "hnsw.bin")]
        if "keys.sva" in meta["files"]:  # written since embeddings are reused across changes
            storage.verify_array(
                directory / "keys.sva", prefix + "keys.sva", meta["files"]["keys.sva"]
            )
            checked.append(prefix + "keys.sva")
        for name in ("owner.sva", "scales.sva"):  # passages; int8 vectors
            if name in meta["files"]:
                storage.verify_array(directory / name, prefix + name, meta["files"][name])
                checked.append(prefix + name)
    return checked


def embedded_models(root: Path) -> list[str]:
    """The models an index folder holds finished embeddings of (any unit), by name."""
    base = Path(root) / "embeddings"
    found: list[str] = []
    for directory in sorted(base.iterdir()) if base.is_dir() else []:
        if (directory / "meta.json").exists():
            with contextlib.suppress(IndexDamagedError):
                found.append(read_meta(directory)["model"])
    return list(dict.fromkeys(found))


def held_model(root: Path, names: list[str], slug: str) -> str:
    """One model an index holds embeddings of, as an error names it: its name and width."""
    for name in (dir_name(slug, u) for u in UNITS):
        if name in names:
            with contextlib.suppress(IndexDamagedError):
                meta = read_meta(root / name)
                return f"{meta['model']} ({meta['dim']} dimensions)"
    return slug


def file_entry(path: Path) -> dict[str, int]:
    crc = 0
    with safe_files.open_binary(path) as fh:  # a FIFO in its place is refused, not waited on
        while chunk := fh.read(1 << 20):
            crc = storage.crc32(chunk, crc)
        return {"size": os.fstat(fh.fileno()).st_size, "crc32": crc}
