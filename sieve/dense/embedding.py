"""`sieve embed`: every document's (or passage's) vector computed in chunks, resumable after an
interruption, sealed with checksums, and the HNSW graph built over them (sieve.dense.store
describes the folder and searches it)."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

import numpy as np

from sieve.dense.compact import DEFAULT_DTYPE, DTYPES, Vectors, quantize
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
from sieve.dense.units import DEFAULT_UNIT, IndexView, RowTexts, pieces_of, row_layout
from sieve.engine.format import commits, storage
from sieve.errors import InvalidArgumentError

HNSW_M = 16
HNSW_EF_CONSTRUCTION = 200
# Rows are saved (and a run resumes) a CHUNK at a time; within a chunk they are encoded STEP at a
# time, longest first, so that the encoder's length-sorted batches pad little (passages vary in
# length: about 9% padding with chunks of 256 sorted alone, under 3% with 1024), and progress
# moves every STEP rows.
CHUNK = 1024
STEP = 256


def embed(
    index: IndexView,
    model: str = DEFAULT_MODEL,
    encoder: Encoder | None = None,
    batch_size: int = 32,
    force: bool = False,
    progress: Callable[[int, int], None] | None = None,
    unit: str = DEFAULT_UNIT,
    dtype: str = DEFAULT_DTYPE,
) -> Path:
    """Compute (or resume computing) the embeddings of every document (`unit="document"`) or of
    every passage (`unit="passage"`); returns their directory. `progress(done, total)` counts rows.
    `dtype` is how the vectors are stored (sieve.dense.compact: int8 with a scale per row by
    default, float16 or float32).

    Finished embeddings are left alone only if every byte checks out; anything incomplete or
    damaged (a run killed while sealing, say) is computed again, resuming from the last chunk saved.
    meta.json is written last and removed first, so it names only complete files. Holds the
    index's write lock (IndexLockedError while a build or another embed writes it)."""
    pieces = pieces_of(unit)
    if dtype not in DTYPES:
        raise InvalidArgumentError(f"unknown vector dtype {dtype!r}; known: {', '.join(DTYPES)}")
    with commits.WriteLock(index.path):
        return _embed(index, model, encoder, batch_size, force, progress, unit, pieces, dtype)


def _embed(
    index: IndexView,
    model: str,
    encoder: Encoder | None,
    batch_size: int,
    force: bool,
    progress: Callable[[int, int], None] | None,
    unit: str,
    pieces: Callable[[IndexView, int], list[str]],
    dtype: str,
) -> Path:
    model = model_name(model)
    out = embeddings_dir(index, model, unit)
    out.mkdir(parents=True, exist_ok=True)
    fp = fingerprint(index)
    # the same name or folder may hold another model later: its vectors are not these
    files = model_fingerprint(model)
    meta_path, prog_path, partial, scales_partial = (
        out / "meta.json",
        out / "progress.json",
        out / "vectors.partial",
        out / "scales.partial",
    )
    if not force and complete(out, fp, files, dtype):
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
            and prog.get("dtype", "float32") == dtype
            and (dtype != "int8" or scales_partial.exists())
        ):
            done = int(prog["rows"])
    # the partial files hold rows as stored: a row's codes and scale do not depend on its chunk
    width = np.dtype(dtype).itemsize * dim
    with (
        open(partial, "r+b" if done else "wb") as fh,
        open(scales_partial, "r+b" if done and dtype == "int8" else "wb") as sh,
    ):
        for f, size in ((fh, width), (sh, 4 if dtype == "int8" else 0)):
            f.truncate(done * size)  # drop a half-written chunk from an interrupted run
            f.seek(done * size)
        if progress is not None:
            progress(done, n)
        while done < n:
            rows = range(done, min(done + CHUNK, n))
            vecs = np.zeros((len(rows), dim), dtype=np.float32)
            todo = list(range(len(rows)))
            hit: list[tuple[int, int]] = []
            if earlier is not None:
                known = earlier[0]
                found = [
                    (i, known.get(int(k)))
                    for i, k in enumerate(keys[rows.start : rows.stop].tolist())
                ]
                hit = [(i, j) for i, j in found if j is not None]
                todo = [i for i, j in found if j is None]
                reused += len(hit)
            pending = [(i, texts(rows[i])) for i in todo]
            pending.sort(key=lambda row: -len(row[1]))
            for a in range(0, len(pending), STEP):
                step = pending[a : a + STEP]
                vecs[[i for i, _ in step]] = encoder.encode(
                    [t for _, t in step], batch_size=batch_size
                )
                if progress is not None and a + STEP < len(pending):
                    progress(rows.stop - len(pending) + a + len(step), n)
            codes, scales = quantize(vecs, dtype)
            if hit:  # the stored rows themselves: a kept document's vector is bit for bit as it was
                old, at = earlier[1], [i for i, _ in hit]  # type: ignore[index]
                was = np.asarray([j for _, j in hit], dtype=np.int64)
                if old.dtype == dtype:
                    codes[at] = old.stored[was]
                    if scales is not None:
                        scales[at] = np.asarray(old.scales[was])
                else:
                    codes[at], got = quantize(old.rows(was), dtype)
                    if scales is not None:
                        scales[at] = got
            fh.write(np.ascontiguousarray(codes).tobytes())
            if scales is not None:
                sh.write(scales.tobytes())
                sh.flush()
                os.fsync(sh.fileno())
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
                    "dtype": dtype,
                },
            )
            if progress is not None:
                progress(done, n)
    stored = np.fromfile(partial, dtype=dtype).reshape(n, dim)
    scales = np.fromfile(scales_partial, dtype=np.float32) if dtype == "int8" else None
    entries = {
        "vectors.sva": storage.write_array(out / "vectors.sva.tmp", stored),
        "keys.sva": storage.write_array(out / "keys.sva.tmp", keys),
    }
    names = ["vectors.sva", "keys.sva"]
    if scales is not None:
        entries["scales.sva"] = storage.write_array(out / "scales.sva.tmp", scales)
        names.append("scales.sva")
    if unit == "passage":
        entries["owner.sva"] = storage.write_array(out / "owner.sva.tmp", owner)
        names.append("owner.sva")
    # the graph holds the stored values decoded, so both searches give a row the same similarity
    _build_hnsw(Vectors(stored, scales).whole(), out / "hnsw.bin.tmp")
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
        "dtype": dtype,
        "fingerprint": fp,
        "files": entries,
        "reused": reused,
        # the same model on either backend: recorded, not refused (sieve/dense/onnx.py)
        "backend": getattr(encoder, "backend", None),
    }
    write_json(meta_path, {**meta, "checksum": meta_crc(meta)})
    partial.unlink()
    scales_partial.unlink()
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
