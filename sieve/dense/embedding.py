"""`sieve embed`: every document's (or passage's) vector computed in chunks, resumable after an
interruption, sealed with checksums, and the HNSW graph built over them (sieve.dense.store
describes the folder and searches it)."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

import numpy as np

from sieve.dense.encoder import (
    DEFAULT_MODEL,
    Encoder,
    EncoderMismatchError,
    loaded_encoder,
    model_fingerprint,
    model_name,
)
from sieve.dense.layout import (
    complete,
    embeddings_dir,
    file_entry,
    fingerprint,
    meta_crc,
    reusable,
    write_json,
)
from sieve.dense.models import static_base
from sieve.dense.units import IndexView, RowTexts, pieces_of, row_layout
from sieve.engine.format import commits, storage

HNSW_M = 16
HNSW_EF_CONSTRUCTION = 200
CHUNK = 256


def embed(
    index: IndexView,
    model: str = DEFAULT_MODEL,
    encoder: Encoder | None = None,
    batch_size: int = 32,
    force: bool = False,
    progress: Callable[[int, int], None] | None = None,
    unit: str = "document",
) -> Path:
    """Compute (or resume computing) the embeddings of every document (`unit="document"`) or of
    every passage (`unit="passage"`); returns their directory. `progress(done, total)` counts rows.

    Finished embeddings are left alone only if every byte checks out; anything incomplete or
    damaged (a run killed while sealing, say) is computed again, resuming from the last chunk saved.
    meta.json is written last and removed first, so it names only complete files. Holds the
    index's write lock (IndexLockedError while a build or another embed writes it)."""
    pieces = pieces_of(unit)
    with commits.WriteLock(index.path):
        return _embed(index, model, encoder, batch_size, force, progress, unit, pieces)


def _embed(
    index: IndexView,
    model: str,
    encoder: Encoder | None,
    batch_size: int,
    force: bool,
    progress: Callable[[int, int], None] | None,
    unit: str,
    pieces: Callable[[IndexView, int], list[str]],
) -> Path:
    model = model_name(model)
    out = embeddings_dir(index, model, unit)
    out.mkdir(parents=True, exist_ok=True)
    fp = fingerprint(index)
    # the same name or folder may hold another model later: its vectors are not these
    files = model_fingerprint(model)
    meta_path, prog_path, partial = (
        out / "meta.json",
        out / "progress.json",
        out / "vectors.partial",
    )
    if not force and complete(out, fp, files):
        return out
    encoder = encoder or loaded_encoder(model)
    if encoder.name != model and (static_base(encoder.name) or static_base(model)):
        # its vectors recorded under another model's name would be queried with that model's
        raise EncoderMismatchError(f"the encoder given is {encoder.name}, not {model}")
    docs = index.doc_numbers()  # the live documents, in index order: document rows
    # once: matched against the earlier vectors, then stored with these
    owner, keys = row_layout(index, docs.tolist(), pieces)
    texts = RowTexts(index, docs, owner, pieces)
    dim, n = encoder.dim, len(owner)
    # After a change (sieve add/delete), the documents kept have the vectors they had: read them
    # before anything here changes. A forced embed computes everything.
    earlier = None if force or not meta_path.exists() else reusable(out, dim, model, files)
    if meta_path.exists():
        # the files below are about to change: nothing may vouch for them meanwhile
        meta_path.unlink()
        storage.fsync_dir(out)
    done = reused = 0
    if prog_path.exists() and partial.exists() and not force:
        prog = json.loads(prog_path.read_text())
        if (
            prog.get("fingerprint") == fp
            and prog.get("model") == model
            and prog.get("dim") == dim
            and prog.get("unit", "document") == unit
            and prog.get("model_fingerprint") == files
        ):
            done = int(prog["rows"])
    with open(partial, "r+b" if done else "wb") as fh:
        fh.truncate(done * dim * 4)  # drop a half-written chunk from an interrupted run
        fh.seek(done * dim * 4)
        if progress is not None:
            progress(done, n)
        while done < n:
            rows = range(done, min(done + CHUNK, n))
            vecs = np.zeros((len(rows), dim), dtype=np.float32)
            todo = list(range(len(rows)))
            if earlier is not None:
                known, old = earlier
                found = [
                    (i, known.get(int(k)))
                    for i, k in enumerate(keys[rows.start : rows.stop].tolist())
                ]
                hit = [(i, j) for i, j in found if j is not None]
                if hit:
                    vecs[[i for i, _ in hit]] = old[np.asarray([j for _, j in hit], dtype=np.int64)]
                todo = [i for i, j in found if j is None]
                reused += len(hit)
            if todo:
                vecs[todo] = encoder.encode([texts(rows[i]) for i in todo], batch_size=batch_size)
            fh.write(np.ascontiguousarray(vecs, dtype=np.float32).tobytes())
            fh.flush()
            os.fsync(fh.fileno())
            done = rows.stop
            write_json(
                prog_path,
                {
                    "fingerprint": fp,
                    "model": model,
                    "model_fingerprint": files,
                    "dim": dim,
                    "rows": done,
                    "unit": unit,
                },
            )
            if progress is not None:
                progress(done, n)
    vectors = np.fromfile(partial, dtype=np.float32).reshape(n, dim)
    entries = {
        "vectors.sva": storage.write_array(out / "vectors.sva.tmp", vectors),
        "keys.sva": storage.write_array(out / "keys.sva.tmp", keys),
    }
    names = ["vectors.sva", "keys.sva"]
    if unit == "passage":
        entries["owner.sva"] = storage.write_array(out / "owner.sva.tmp", owner)
        names.append("owner.sva")
    _build_hnsw(vectors, out / "hnsw.bin.tmp")
    entries["hnsw.bin"] = file_entry(out / "hnsw.bin.tmp")
    with open(out / "hnsw.bin.tmp", "rb") as fh:
        os.fsync(fh.fileno())
    for name in names + ["hnsw.bin"]:
        os.replace(out / f"{name}.tmp", out / name)
    meta = {
        "model": model,
        "model_fingerprint": files,
        "dim": dim,
        "rows": n,
        "documents": len(docs),
        "unit": unit,
        "fingerprint": fp,
        "files": entries,
        "reused": reused,
        # the same model on either backend: recorded, not refused (sieve/dense/onnx.py)
        "backend": getattr(encoder, "backend", None),
    }
    write_json(meta_path, {**meta, "checksum": meta_crc(meta)})
    partial.unlink()
    prog_path.unlink()
    return out


def _build_hnsw(vectors: np.ndarray, path: Path) -> None:
    import hnswlib

    graph = hnswlib.Index(space="ip", dim=vectors.shape[1])
    graph.init_index(
        max_elements=max(1, len(vectors)),
        ef_construction=HNSW_EF_CONSTRUCTION,
        M=HNSW_M,
        random_seed=42,
    )
    if len(vectors):
        graph.add_items(vectors, np.arange(len(vectors)))
    graph.save_index(str(path))
