"""Embeddings beside an index: built by `sieve embed` (batched, resumable), memory-mapped,
searched exactly over small admitted sets and through a filtered HNSW graph over large ones.

Two units. `document`: one vector per document, from its title and the start of its text (the
model reads about 256 word pieces, so a long page is known by its start). `passage`: one vector per
passage, every section cut into passages of at most PASSAGE_WORDS words, each headed by the title
and the section's heading; a document's similarity is its best passage's.

Layout: INDEX/embeddings/<model slug>/ (document unit) or <model slug>@passages/, one such folder per
model side by side, with meta.json (model, its files' checksum, unit, dimension, rows, documents, the
fingerprint of the index generation they were computed from, file checksums), vectors.sva (float32, one unit-length row per document or passage),
owner.sva (passages: the document row of each passage, ascending) and hnsw.bin (hnswlib, inner
product). While embedding, vectors.partial and progress.json record what is done, so an
interrupted run resumes where it stopped.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import weakref
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

import numpy as np

from sieve.common import files as safe_files
from sieve.dense.encoder import (DEFAULT_MODEL, DenseUnavailableError, Encoder, EncoderMismatchError, loaded_encoder, model_fingerprint,
                                 model_name)
from sieve.corpus.documents import INTRO
from sieve.engine.format import bitset, storage
from sieve.engine.rank.search import top_k
from sieve.errors import IndexDamagedError, InvalidArgumentError

if TYPE_CHECKING:
    from sieve.index.index import Index

EXACT_MAX = 8_000  # admitted sets up to this size are scored exactly, larger ones through HNSW (measured crossover, bench_rank)
# How admitted sets are ranked: "approximate" is the above (sieve's default); "exact" scores every
# set exactly, whatever its size (the paper's exact inner product, the default of eval runs).
DENSE_SEARCH = ("exact", "approximate")
HNSW_M = 16
HNSW_EF_CONSTRUCTION = 200
HNSW_EF_SEARCH = 128
DOC_CHARS = 2000  # the model reads about 256 word pieces; more text only costs time
PASSAGE_WORDS = 128  # with its title and heading, a passage stays within the model's 256 word pieces (English prose: ~1.3 a word)
CHUNK = 256
UNITS = ("passage", "document")
PASSAGES_SUFFIX = "@passages"  # never in a model slug


def _dir_name(slug: str, unit: str) -> str:
    return slug + (PASSAGES_SUFFIX if unit == "passage" else "")


def embeddings_dir(index: "Index", model: str, unit: str) -> Path:
    return index.path / "embeddings" / _dir_name(model_slug(model_name(model)), unit)


def _same_model(meta: dict[str, Any], files: str | None) -> bool:
    """Whether embeddings recorded with `meta` came from a model whose files have this checksum
    (embeddings sealed before the checksum was recorded, or a model out of reach, cannot tell)."""
    recorded = meta.get("model_fingerprint")
    return recorded is None or files is None or recorded == files


def first_rows(owner: np.ndarray) -> np.ndarray:
    """Where each document's rows start, and the end: document row r has rows [out[r], out[r + 1])
    (owner ascends from 0 by steps of 0 or 1, so every document has a row)."""
    return np.append(np.flatnonzero(np.diff(owner, prepend=-1)), len(owner))


def model_slug(model: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "--", model).strip("-")


def fingerprint(index: "Index") -> str:
    """Identity of one index generation: its name and the checksum of its manifest file."""
    raw = storage.read_index_file(index.generation / storage.MANIFEST, storage.MANIFEST)
    return f"{index.generation.name}:{storage.crc32(raw):08x}"


def document_text(index: "Index", d: int) -> str:
    """What the encoder reads for a document: its title, then its sections' text."""
    r = index.reader
    parts = [r.meta(d)["title"]]
    size = len(parts[0])
    for j in range(r.section_count(d)):
        if size >= DOC_CHARS:
            break
        text = r.section_text(d, j)
        parts.append(text)
        size += len(text)
    return "\n".join(parts)[:DOC_CHARS]


def passages(index: "Index", d: int) -> list[str]:
    """What the encoder reads for a document, passage by passage: each section's text in pieces of
    at most PASSAGE_WORDS words, each headed by the title and the section's heading (a piece of
    a long section is about what its heading says). A document without text is its title."""
    r = index.reader
    title = r.meta(d)["title"]
    headings = r.headings(d)
    out = []
    for j in range(r.section_count(d)):
        words = r.section_text(d, j).split()
        head = title if headings[j] == INTRO else f"{title} \u2014 {headings[j]}"
        for a in range(0, len(words), PASSAGE_WORDS):
            out.append(head + "\n" + " ".join(words[a : a + PASSAGE_WORDS]))
    return out or [title]


def _pieces(unit: str) -> Callable[["Index", int], list[str]]:
    if unit not in UNITS:
        raise InvalidArgumentError(f"unknown embedding unit {unit!r}; known: {', '.join(UNITS)}")
    return passages if unit == "passage" else lambda index, d: [document_text(index, d)]


def _layout(index: "Index", docs: list[int], pieces: Callable[["Index", int], list[str]]) -> tuple[np.ndarray, np.ndarray]:
    """(owner, keys): the document row of every row to embed, and one 64-bit key per row, from the
    document's id and the row's text. A vector computed for a key can be reused by any later
    generation that has a document with the same id and text."""
    owner: list[int] = []
    keys: list[int] = []
    for row, d in enumerate(docs):
        prefix = index.reader.doc_id(d).encode() + b"\0"
        for text in pieces(index, d):
            owner.append(row)
            keys.append(int.from_bytes(hashlib.blake2b(prefix + text.encode(), digest_size=8).digest(), "little"))
    return np.asarray(owner, dtype=np.int32), np.asarray(keys, dtype=np.uint64)


class _Texts:
    """The texts of rows [a, b) of an embedding, recomputed a document at a time."""

    def __init__(self, index: "Index", docs: np.ndarray, owner: np.ndarray, pieces: Callable[["Index", int], list[str]]) -> None:
        self.index, self.docs, self.owner, self.pieces = index, docs, owner, pieces
        self.first = first_rows(owner)
        self._cached: tuple[int, list[str]] = (-1, [])

    def __call__(self, row: int) -> str:
        doc_row = int(self.owner[row])
        if self._cached[0] != doc_row:
            self._cached = (doc_row, self.pieces(self.index, int(self.docs[doc_row])))
        return self._cached[1][row - int(self.first[doc_row])]


def _reusable(directory: Path, dim: int, model: str, files: str | None) -> tuple[dict[int, int], Any] | None:
    """(key -> row, vectors) of finished embeddings of an earlier generation, if they check out
    and recorded their keys; None otherwise (then every vector is computed)."""
    try:
        meta = read_meta(directory)
        if meta.get("dim") != dim or meta.get("model") != model or not _same_model(meta, files) or "keys.sva" not in meta["files"]:
            return None
        keys = storage.open_array(directory / "keys.sva", "keys.sva", meta["files"]["keys.sva"], verify=True)
        vectors = storage.open_array(directory / "vectors.sva", "vectors.sva", meta["files"]["vectors.sva"], verify=True)
        return {int(k): i for i, k in enumerate(np.asarray(keys).tolist())}, vectors
    except (IndexDamagedError, OSError, KeyError):
        return None


def _write_json(path: Path, obj: dict[str, Any]) -> None:
    tmp = path.with_suffix(".tmp")
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write(json.dumps(obj, indent=1, sort_keys=True))
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)
    storage.fsync_dir(path.parent)


def _complete(directory: Path, fp: str, files: str | None) -> bool:
    """Whether `directory` holds finished embeddings of this generation, by a model with these files,
    whose every byte checks out."""
    try:
        meta = read_meta(directory)
        if meta.get("fingerprint") != fp or not _same_model(meta, files):
            return False
        storage.verify_array(directory / "vectors.sva", "vectors.sva", meta["files"]["vectors.sva"])
        if "owner.sva" in meta["files"]:
            storage.verify_array(directory / "owner.sva", "owner.sva", meta["files"]["owner.sva"])
        return _file_entry(directory / "hnsw.bin") == meta["files"]["hnsw.bin"]
    except (IndexDamagedError, OSError):
        return False


def _meta_crc(meta: dict[str, Any]) -> int:
    return storage.crc32(json.dumps(meta, sort_keys=True, separators=(",", ":")).encode())


def read_meta(directory: Path) -> dict[str, Any]:
    """meta.json of one embeddings directory, checked: its checksum, and the entries opening needs."""
    name = f"embeddings/{directory.name}/meta.json"
    try:
        meta = json.loads(safe_files.read_regular(directory / "meta.json", storage.MANIFEST_MAX_BYTES).decode("utf-8"))
        checksum = meta.pop("checksum")
    except (OSError, ValueError, UnicodeDecodeError, KeyError, TypeError, AttributeError, RecursionError):
        raise IndexDamagedError(name, "unreadable, or not what sieve embed writes") from None
    if checksum != _meta_crc(meta):
        raise IndexDamagedError(name, "checksum mismatch (the contents are damaged)")
    try:
        files = meta["files"]
        ok = all(isinstance(files[f]["size"], int) and isinstance(files[f]["crc32"], int) for f in ("vectors.sva", "hnsw.bin"))
        ok = ok and isinstance(meta["dim"], int) and isinstance(meta["rows"], int) and isinstance(meta["model"], str)
        ok = ok and meta.get("unit", "document") in UNITS and (meta.get("unit", "document") == "document" or "owner.sva" in files)
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
        raise IndexDamagedError("embeddings", f"cannot be listed ({safe_files.reason(e)})") from None


def verify_embeddings(root: Path) -> list[str]:
    """Every byte of every embeddings directory under an index; returns the files checked."""
    checked: list[str] = []
    for directory in embedding_dirs(root):
        meta = read_meta(directory)
        prefix = f"embeddings/{directory.name}/"
        storage.verify_array(directory / "vectors.sva", prefix + "vectors.sva", meta["files"]["vectors.sva"])
        try:
            entry = _file_entry(directory / "hnsw.bin")
        except OSError:
            raise IndexDamagedError(prefix + "hnsw.bin", "file is missing or unreadable") from None
        if entry != meta["files"]["hnsw.bin"]:
            raise IndexDamagedError(prefix + "hnsw.bin", "size or checksum does not match meta.json")
        checked += [prefix + n for n in ("meta.json", "vectors.sva", "hnsw.bin")]
        if "keys.sva" in meta["files"]:  # written since embeddings are reused across changes
            storage.verify_array(directory / "keys.sva", prefix + "keys.sva", meta["files"]["keys.sva"])
            checked.append(prefix + "keys.sva")
        if "owner.sva" in meta["files"]:  # passages
            storage.verify_array(directory / "owner.sva", prefix + "owner.sva", meta["files"]["owner.sva"])
            checked.append(prefix + "owner.sva")
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


def _held(root: Path, names: list[str], slug: str) -> str:
    """One model an index holds embeddings of, as an error names it: its name and width."""
    for name in (_dir_name(slug, u) for u in UNITS):
        if name in names:
            with contextlib.suppress(IndexDamagedError):
                meta = read_meta(root / name)
                return f"{meta['model']} ({meta['dim']} dimensions)"
    return slug


def _file_entry(path: Path) -> dict[str, int]:
    crc = 0
    with safe_files.open_binary(path) as fh:  # a FIFO in its place is refused, not waited on
        while chunk := fh.read(1 << 20):
            crc = storage.crc32(chunk, crc)
        return {"size": os.fstat(fh.fileno()).st_size, "crc32": crc}


def embed(
    index: "Index",
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
    pieces = _pieces(unit)
    with storage.WriteLock(index.path):
        return _embed(index, model, encoder, batch_size, force, progress, unit, pieces)


def _embed(index: "Index", model: str, encoder: Encoder | None, batch_size: int, force: bool, progress: Callable[[int, int], None] | None,
           unit: str, pieces: Callable[["Index", int], list[str]]) -> Path:
    model = model_name(model)
    out = embeddings_dir(index, model, unit)
    out.mkdir(parents=True, exist_ok=True)
    fp = fingerprint(index)
    files = model_fingerprint(model)  # the same name or folder may hold another model later: its vectors are not these
    meta_path, prog_path, partial = out / "meta.json", out / "progress.json", out / "vectors.partial"
    if not force and _complete(out, fp, files):
        return out
    encoder = encoder or loaded_encoder(model)
    docs = index.doc_numbers()  # the live documents, in index order: document rows
    owner, keys = _layout(index, docs.tolist(), pieces)  # once: matched against the earlier vectors, then stored with these
    texts = _Texts(index, docs, owner, pieces)
    dim, n = encoder.dim, len(owner)
    # After a change (sieve add/delete), the documents kept have the vectors they had: read them
    # before anything here changes. A forced embed computes everything.
    earlier = None if force or not meta_path.exists() else _reusable(out, dim, model, files)
    if meta_path.exists():
        meta_path.unlink()  # the files below are about to change: nothing may vouch for them meanwhile
        storage.fsync_dir(out)
    done = reused = 0
    if prog_path.exists() and partial.exists() and not force:
        prog = json.loads(prog_path.read_text())
        if (prog.get("fingerprint") == fp and prog.get("model") == model and prog.get("dim") == dim and prog.get("unit", "document") == unit
                and prog.get("model_fingerprint") == files):
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
                found = [(i, known.get(int(k))) for i, k in enumerate(keys[rows.start:rows.stop].tolist())]
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
            _write_json(prog_path, {"fingerprint": fp, "model": model, "model_fingerprint": files, "dim": dim, "rows": done, "unit": unit})
            if progress is not None:
                progress(done, n)
    vectors = np.fromfile(partial, dtype=np.float32).reshape(n, dim)
    entries = {"vectors.sva": storage.write_array(out / "vectors.sva.tmp", vectors),
               "keys.sva": storage.write_array(out / "keys.sva.tmp", keys)}
    names = ["vectors.sva", "keys.sva"]
    if unit == "passage":
        entries["owner.sva"] = storage.write_array(out / "owner.sva.tmp", owner)
        names.append("owner.sva")
    _build_hnsw(vectors, out / "hnsw.bin.tmp")
    entries["hnsw.bin"] = _file_entry(out / "hnsw.bin.tmp")
    with open(out / "hnsw.bin.tmp", "rb") as fh:
        os.fsync(fh.fileno())
    for name in names + ["hnsw.bin"]:
        os.replace(out / f"{name}.tmp", out / name)
    meta = {"model": model, "model_fingerprint": files, "dim": dim, "rows": n, "documents": len(docs), "unit": unit, "fingerprint": fp, "files": entries, "reused": reused,
            "backend": getattr(encoder, "backend", None)}  # the same model on either backend: recorded, not refused (sieve/dense/onnx.py)
    _write_json(meta_path, {**meta, "checksum": _meta_crc(meta)})
    partial.unlink()
    prog_path.unlink()
    return out


def _dot(vectors: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Each row's inner product with q, without BLAS. A matrix-vector product is memory-bound, and
    numpy's einsum runs it as fast as multi-threaded OpenBLAS here (6.6 against 7.3 ms for 100k x
    384), but OpenBLAS leaves its threads spinning afterwards, and on a 2-core machine they slowed
    the next query's encoding (torch) from 14 to 39 ms."""
    return np.einsum("ij,j->i", vectors, q)


def _build_hnsw(vectors: np.ndarray, path: Path) -> None:
    import hnswlib

    graph = hnswlib.Index(space="ip", dim=vectors.shape[1])
    graph.init_index(max_elements=max(1, len(vectors)), ef_construction=HNSW_EF_CONSTRUCTION, M=HNSW_M, random_seed=42)
    if len(vectors):
        graph.add_items(vectors, np.arange(len(vectors)))
    graph.save_index(str(path))


class DenseIndex:
    """Opened embeddings of one index; `top` ranks documents by cosine similarity to a text.

    Document row r is the r-th live document in index order (`docs[r]` is its internal number):
    after deletions the internal numbers have gaps, the rows none. With the document unit, vector
    row r is document row r; with passages, `owner[p]` is the document row of vector row p
    (ascending; every document has at least one passage) and a document's similarity is its best
    passage's. Arguments and results are internal numbers; None as `docs` means every document."""

    def __init__(self, index: "Index", directory: Path, meta: dict[str, Any], encoder: Encoder | None = None, search: str = "approximate") -> None:
        if search not in DENSE_SEARCH:
            raise InvalidArgumentError(f"unknown dense search {search!r}; known: {', '.join(DENSE_SEARCH)}")
        # Held weakly: the index holds this (its searcher's `dense`), and a reference back would
        # keep both, and every file they map, alive until the cyclic garbage collector ran.
        self._index = weakref.ref(index)
        self.dir = directory
        self.meta = meta
        self.unit = meta.get("unit", "document")
        self.vectors = storage.open_array(directory / "vectors.sva", "vectors.sva", meta["files"]["vectors.sva"])
        if encoder is not None and encoder.dim != meta["dim"]:
            raise EncoderMismatchError(f"the embeddings in {directory} have {meta['dim']} dimensions; the encoder given ({encoder.name}) gives {encoder.dim}")
        self._encoder = encoder
        self._graph: Any = None
        self._last_query: tuple[str, np.ndarray] | None = None
        self.search = search
        self.exact_max: float = EXACT_MAX if search == "approximate" else float("inf")
        self.docs = index.doc_numbers()
        self._identity = bool(index.snapshot.dense)  # internal number == row
        self.owner: np.ndarray | None = None
        self.starts = np.arange(len(self.docs) + 1)  # vector rows of document row r: starts[r]:starts[r + 1]
        if self.unit == "passage":
            owner = np.asarray(storage.open_array(directory / "owner.sva", "owner.sva", meta["files"]["owner.sva"]).whole(), dtype=np.intp)
            steps = np.diff(owner)
            if len(owner) != meta["rows"] or not len(owner) or owner[0] != 0 or owner[-1] != len(self.docs) - 1 or ((steps != 0) & (steps != 1)).any():
                raise IndexDamagedError(f"embeddings/{directory.name}/owner.sva", "does not give every document its passages in order")
            self.owner = owner
            self.starts = first_rows(owner)

    @property
    def index(self) -> "Index":
        index = self._index()
        if index is None:
            raise InvalidArgumentError("these embeddings' index was closed: open it again and call use_dense")
        return index

    def rows(self, docs: np.ndarray) -> np.ndarray:
        return docs if self._identity else np.searchsorted(self.docs, docs)

    @classmethod
    def open(cls, index: "Index", model: str | None = None, encoder: Encoder | None = None, unit: str | None = None,
             search: str = "approximate") -> "DenseIndex":
        """The embeddings of `model` (default: the bundled MiniLM, else the only model embedded) in
        `unit` (default: passages where they exist, else documents), ranked as `search` says
        (DENSE_SEARCH). Asking for a model the index has no embeddings of, while it has another's,
        is an EncoderMismatchError naming both."""
        if unit is not None and unit not in UNITS:
            raise InvalidArgumentError(f"unknown embedding unit {unit!r}; known: {', '.join(UNITS)}")
        root = index.path / "embeddings"
        names = [p.name for p in embedding_dirs(index.path)]
        models = list(dict.fromkeys(n.removesuffix(PASSAGES_SUFFIX) for n in names))
        if model is not None:
            model = model_name(model)
            slug = model_slug(model)
        elif model_slug(DEFAULT_MODEL) in models:
            slug = model_slug(DEFAULT_MODEL)
        elif len(models) == 1:
            slug = models[0]
        elif models:
            held = ", ".join(_held(root, names, m) for m in models)
            raise EncoderMismatchError(f"{index.path} holds embeddings of several models ({held}): say which with --embed-model")
        else:
            raise DenseUnavailableError(f"{index.path} has no embeddings: run `sieve embed {index.path}` first")
        if model is not None and slug not in models and models:
            held = ", ".join(_held(root, names, m) for m in models)
            raise EncoderMismatchError(f"{index.path} holds embeddings of {held}, not of {model}: embed it with `sieve embed {index.path} "
                                       f"--embed-model {model}` (or `sieve eval build ... --embed-model {model}`), or ask for the model it holds")
        units = [unit] if unit is not None else list(UNITS)
        wanted = next((_dir_name(slug, u) for u in units if _dir_name(slug, u) in names), None)
        if wanted is None:
            what = f"{model!r}" if model is not None else "the default model"
            raise DenseUnavailableError(f"{index.path} has no {unit or ''} embeddings for {what}: run `sieve embed {index.path}"
                                        + (f" --model {model}" if model else "") + (f" --unit {unit}" if unit else "") + "`")
        directory = root / wanted
        meta = read_meta(directory)
        if meta.get("fingerprint") != fingerprint(index):
            raise DenseUnavailableError(
                f"the embeddings in {directory} belong to an earlier build of this index; run `sieve embed {index.path}` again"
            )
        if meta.get("documents", meta.get("rows")) != len(index):
            raise IndexDamagedError(f"embeddings/{wanted}/meta.json", f"has {meta.get('documents', meta.get('rows'))} documents for {len(index)}")
        return cls(index, directory, meta, encoder, search)

    @property
    def identity(self) -> dict[str, Any]:
        """Which encoder made these embeddings, as runs record it: model, dimension, the checksum of
        its files (None where not recorded), unit, how they are searched, the backend that embedded
        the documents and the one encoding queries (None until loaded)."""
        return {"model": self.meta["model"], "dim": self.meta["dim"], "model_fingerprint": self.meta.get("model_fingerprint"),
                "unit": self.unit, "search": self.search, "backend": self.meta.get("backend"),
                "query_backend": getattr(self._encoder, "backend", None)}

    @property
    def encoder(self) -> Encoder:
        """The query encoder: the model that made the embeddings, refused (EncoderMismatchError) when
        its files or its width are no longer what they were when the documents were embedded."""
        if self._encoder is None:
            model = self.meta["model"]
            recorded, now = self.meta.get("model_fingerprint"), model_fingerprint(model)
            if not _same_model(self.meta, now):
                raise EncoderMismatchError(
                    f"the embeddings in {self.dir} were computed by {model} with files {recorded}, but {model} now has files {now}: "
                    f"embed again with `sieve embed {self.index.path} --embed-model {model} --force`")
            encoder = loaded_encoder(model)
            if encoder.dim != self.meta["dim"]:
                raise EncoderMismatchError(f"the embeddings in {self.dir} have {self.meta['dim']} dimensions, but {model} now gives {encoder.dim}: "
                                           f"embed again with `sieve embed {self.index.path} --embed-model {model} --force`")
            self._encoder = encoder
        return self._encoder

    @property
    def graph(self) -> Any:
        if self._graph is None:
            import hnswlib

            entry = self.meta["files"]["hnsw.bin"]
            path = self.dir / "hnsw.bin"
            try:
                found = _file_entry(path)
            except OSError:
                found = {}
            if found != entry:
                raise IndexDamagedError(f"embeddings/{self.dir.name}/hnsw.bin", "size or checksum does not match meta.json")
            graph = hnswlib.Index(space="ip", dim=int(self.meta["dim"]))
            graph.load_index(str(path), max_elements=max(1, len(self.vectors)))
            graph.set_ef(HNSW_EF_SEARCH)
            self._graph = graph
        return self._graph

    def query_vector(self, text: str) -> np.ndarray:
        # One search may ask twice for the same text (indri+dense: the top list, then similarities).
        last = self._last_query
        if last is not None and last[0] == text:
            return last[1]
        q = self.encoder.encode([text])[0]
        self._last_query = (text, q)
        return q

    def _row_similarity(self, q: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """Each document row's similarity: its vector's, or its best passage's."""
        if not len(rows):
            return np.zeros(0, dtype=np.float32)
        if self.owner is None:
            # Gathering rows costs more than scoring them all once the set is a sizeable share.
            return _dot(self.vectors.whole(), q)[rows] if len(rows) * 8 > len(self.vectors) else _dot(self.vectors[rows], q)
        lo, hi = self.starts[rows], self.starts[rows + 1]
        counts = hi - lo
        if counts.sum() * 8 > len(self.vectors):
            return np.maximum.reduceat(_dot(self.vectors.whole(), q), self.starts[:-1])[rows]
        offsets = np.concatenate(([0], np.cumsum(counts)[:-1]))
        idx = np.repeat(lo - offsets, counts) + np.arange(counts.sum())  # every passage of every row, in order
        return np.maximum.reduceat(_dot(self.vectors[idx], q), offsets)

    def exact(self, q: np.ndarray, docs: np.ndarray | None, k: int) -> tuple[np.ndarray, np.ndarray]:
        if docs is None:
            sims = _dot(self.vectors.whole(), q)
            if self.owner is not None:
                sims = np.maximum.reduceat(sims, self.starts[:-1])
            return top_k(self.docs, sims.astype(np.float64), k, self.index.snapshot.order)
        return top_k(docs, self._row_similarity(q, self.rows(docs)).astype(np.float64), k, self.index.snapshot.order)

    def approximate(self, q: np.ndarray, bits: np.ndarray | None, k: int) -> tuple[np.ndarray, np.ndarray]:
        n = len(self.docs)
        if bits is None:
            allowed = n
            flags = None
        else:
            keep = bitset.to_bool(bits, n) if self._identity else bitset.contains(bits, self.docs)
            allowed = int(keep.sum())
            flags = (keep if self.owner is None else keep[self.owner]).view(np.uint8).tobytes()
        k = min(k, allowed)
        if k == 0:
            return np.zeros(0, dtype=np.int64), np.zeros(0)
        total = len(self.vectors) if flags is None else flags.count(1)
        # Passages: ask for more than k, since one document may hold several of the best; widen
        # until k distinct documents come back (or every allowed passage has).
        want = k if self.owner is None else min(total, max(4 * k, k + 32))
        while True:
            labels, dist = self.graph.knn_query(q[None, :], k=want, num_threads=1, filter=None if flags is None else flags.__getitem__)
            rows = labels[0].astype(np.int64)
            sims = 1.0 - dist[0].astype(np.float64)
            if self.owner is not None:
                rows = self.owner[rows]
                rows, first = np.unique(rows, return_index=True)  # hnswlib answers nearest first: the first of a row is its best
                sims = sims[first]
            if len(rows) >= k or want >= total:
                return top_k(self.docs[rows], sims, k, self.index.snapshot.order)
            want = min(total, want * 4)

    def similarity(self, text: str, docs: np.ndarray) -> np.ndarray:
        """Cosine similarity of `text` to each of `docs` (exact; a document's best passage's)."""
        return self._row_similarity(self.query_vector(text), self.rows(np.asarray(docs, dtype=np.int64))).astype(np.float64)

    def top(self, text: str, docs: np.ndarray | None, bits: np.ndarray | None, k: int) -> tuple[np.ndarray, np.ndarray]:
        """The k documents (of `docs`, or of all) most similar to `text`, with cosine similarity."""
        q = self.query_vector(text)
        size = len(self.docs) if docs is None else len(docs)
        if size <= self.exact_max:
            return self.exact(q, docs, k)
        return self.approximate(q, bits, k)
