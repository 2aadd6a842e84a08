"""Embeddings beside an index: built by `sieve embed` (batched, resumable), memory-mapped,
searched exactly over small admitted sets and through a filtered HNSW graph over large ones.

Two units. `document`: one vector per document, from its title and the start of its text (the
model reads about 256 word pieces, so a long page is known by its start). `passage`: one vector per
passage, every section cut into passages of at most PASSAGE_WORDS words, each headed by the title
and the section's heading; a document's similarity is its best passage's.

Layout: INDEX/embeddings/<model slug>/ (document unit) or <model slug>@passages/, one such folder
per model side by side, with meta.json (model, its files' checksum, unit, dimension, rows,
documents, the fingerprint of the index commit point they were computed from, file checksums),
vectors.sva (float32, one unit-length row per document or passage), owner.sva (passages: the
document row of each passage, ascending) and hnsw.bin (hnswlib, inner product). While embedding,
vectors.partial and progress.json record what is done, so an interrupted run resumes where it
stopped.
"""

from __future__ import annotations

import weakref
from pathlib import Path
from typing import Any

import numpy as np

from sieve.dense.compact import Vectors
from sieve.dense.embedding import embed as embed  # callers find it here (sieve.dense.store.embed)
from sieve.dense.encoder import (
    DEFAULT_MODEL,
    DenseUnavailableError,
    Encoder,
    EncoderMismatchError,
    loaded_encoder,
    model_fingerprint,
    model_name,
)
from sieve.dense.layout import (
    PASSAGES_SUFFIX,
    dir_name,
    embedding_dirs,
    file_entry,
    fingerprint,
    held_model,
    model_slug,
    open_vectors,
    read_meta,
    same_model,
)
from sieve.dense.models import static_base
from sieve.dense.units import UNITS, IndexView, first_rows, passage_section
from sieve.engine.format import bitset, storage
from sieve.engine.rank.topk import top_k
from sieve.errors import IndexDamagedError, InvalidArgumentError

# How admitted sets are ranked: "approximate" scores a set exactly or through the HNSW graph,
# whichever the cost model below says is faster (sieve's default); "exact" scores every set
# exactly, whatever its size (the paper's exact inner product, the default of eval runs).
DENSE_SEARCH = ("exact", "approximate")
# A fixed crossover (admitted documents) in place of the cost model; None: the model.
EXACT_MAX: float | None = None
# The cost model, measured at 100,000 rows of 384 dimensions (bench_dense_scale, random vectors):
# an exact score costs about 0.3 us per admitted row gathered, or 0.16 us per row when every row
# is scanned; a filtered HNSW search about 1 ms times rows / admitted rows (the graph walks past
# the rows its filter refuses) times k / ef once k passes ef. They meet near 18,000 of 100,000.
EXACT_MS_PER_ROW = 3e-4
SCAN_MS_PER_ROW = 1.6e-4
HNSW_MS = 1.0
HNSW_EF_SEARCH = 128


class DenseIndex:
    """Opened embeddings of one index; `top` ranks documents by cosine similarity to a text.

    Document row r is the r-th live document in index order (`docs[r]` is its internal number):
    after deletions the internal numbers have gaps, the rows none. With the document unit, vector
    row r is document row r; with passages, `owner[p]` is the document row of vector row p
    (ascending; every document has at least one passage) and a document's similarity is its best
    passage's. Arguments and results are internal numbers; None as `docs` means every document."""

    def __init__(
        self,
        index: IndexView,
        directory: Path,
        meta: dict[str, Any],
        encoder: Encoder | None = None,
        search: str = "approximate",
    ) -> None:
        if search not in DENSE_SEARCH:
            raise InvalidArgumentError(
                f"unknown dense search {search!r}; known: {', '.join(DENSE_SEARCH)}"
            )
        # Held weakly: the index holds this (its searcher's `dense`), and a reference back would
        # keep both, and every file they map, alive until the cyclic garbage collector ran.
        self._index = weakref.ref(index)
        self.dir = directory
        self.meta = meta
        self.unit = meta.get("unit", "document")
        self.vectors: Vectors = open_vectors(directory, meta)
        if encoder is not None and (static_base(encoder.name) is None) != (
            static_base(meta["model"]) is None
        ):
            raise EncoderMismatchError(
                f"the embeddings in {directory} were computed by {meta['model']}; the encoder "
                f"given is {encoder.name}: a static model and a model are never mixed"
            )
        if encoder is not None and encoder.dim != meta["dim"]:
            raise EncoderMismatchError(
                f"the embeddings in {directory} have {meta['dim']} dimensions; the encoder given "
                f"({encoder.name}) gives {encoder.dim}"
            )
        self._encoder = encoder
        self._graph: Any = None
        self._last_query: tuple[str, np.ndarray] | None = None
        self.search = search
        self.exact_max: float | None = EXACT_MAX if search == "approximate" else float("inf")
        self.docs = index.doc_numbers()
        self._identity = bool(index.snapshot.dense)  # internal number == row
        self.owner: np.ndarray | None = None
        # vector rows of document row r: starts[r]:starts[r + 1]
        self.starts = np.arange(len(self.docs) + 1)
        if self.unit == "passage":
            owner = np.asarray(
                storage.open_array(
                    directory / "owner.sva", "owner.sva", meta["files"]["owner.sva"]
                ).whole(),
                dtype=np.intp,
            )
            steps = np.diff(owner)
            if (
                len(owner) != meta["rows"]
                or not len(owner)
                or owner[0] != 0
                or owner[-1] != len(self.docs) - 1
                or ((steps != 0) & (steps != 1)).any()
            ):
                raise IndexDamagedError(
                    f"embeddings/{directory.name}/owner.sva",
                    "does not give every document its passages in order",
                )
            self.owner = owner
            self.starts = first_rows(owner)

    @property
    def index(self) -> IndexView:
        index = self._index()
        if index is None:
            raise InvalidArgumentError(
                "these embeddings' index was closed: open it again and call use_dense"
            )
        return index

    def rows(self, docs: np.ndarray) -> np.ndarray:
        return docs if self._identity else np.searchsorted(self.docs, docs)

    @classmethod
    def open(
        cls,
        index: IndexView,
        model: str | None = None,
        encoder: Encoder | None = None,
        unit: str | None = None,
        search: str = "approximate",
    ) -> DenseIndex:
        """The embeddings of `model` (default: the bundled MiniLM, else the only model embedded) in
        `unit` (default: passages where they exist, else documents), ranked as `search` says
        (DENSE_SEARCH). Asking for a model the index has no embeddings of, while it has another's,
        is an EncoderMismatchError naming both."""
        if unit is not None and unit not in UNITS:
            raise InvalidArgumentError(
                f"unknown embedding unit {unit!r}; known: {', '.join(UNITS)}"
            )
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
            held = ", ".join(held_model(root, names, m) for m in models)
            raise EncoderMismatchError(
                f"{index.path} holds embeddings of several "
                f"models ({held}): say which with --embed-model"
            )
        else:
            raise DenseUnavailableError(
                f"{index.path} has no embeddings: run `sieve embed {index.path}` first"
            )
        if model is not None and slug not in models and models:
            held = ", ".join(held_model(root, names, m) for m in models)
            raise EncoderMismatchError(
                f"{index.path} holds embeddings of {held}, not of {model}: embed it "
                f"with `sieve embed {index.path} --embed-model {model}` (or `sieve "
                f"eval build ... --embed-model {model}`), or ask for the model it holds"
            )
        units = [unit] if unit is not None else list(UNITS)
        wanted = next((dir_name(slug, u) for u in units if dir_name(slug, u) in names), None)
        if wanted is None:
            what = f"{model!r}" if model is not None else "the default model"
            raise DenseUnavailableError(
                f"{index.path} has no {unit or ''} embeddings "
                f"for {what}: run `sieve embed {index.path}"
                + (f" --model {model}" if model else "")
                + (f" --unit {unit}" if unit else "")
                + "`"
            )
        directory = root / wanted
        meta = read_meta(directory)
        if meta.get("fingerprint") != fingerprint(index):
            raise DenseUnavailableError(
                f"the embeddings in {directory} belong to an earlier build of this index; run "
                f"`sieve embed {index.path}` again"
            )
        if meta.get("documents", meta.get("rows")) != len(index):
            raise IndexDamagedError(
                f"embeddings/{wanted}/meta.json",
                f"has {meta.get('documents', meta.get('rows'))} documents for {len(index)}",
            )
        return cls(index, directory, meta, encoder, search)

    @property
    def identity(self) -> dict[str, Any]:
        """Which encoder made these embeddings, as runs record it: model, dimension, the checksum of
        its files (None where not recorded), unit, how the vectors are stored and searched, the
        backend that embedded the documents and the one encoding queries (None until loaded)."""
        return {
            "model": self.meta["model"],
            "dim": self.meta["dim"],
            "model_fingerprint": self.meta.get("model_fingerprint"),
            "unit": self.unit,
            "dtype": self.vectors.dtype,
            "search": self.search,
            "backend": self.meta.get("backend"),
            "query_backend": getattr(self._encoder, "backend", None),
        }

    @property
    def encoder(self) -> Encoder:
        """The query encoder: the model that made the embeddings, refused (EncoderMismatchError)
        when its files or its width are no longer what they were when the documents were
        embedded."""
        if self._encoder is None:
            model = self.meta["model"]
            recorded, now = self.meta.get("model_fingerprint"), model_fingerprint(model)
            if not same_model(self.meta, now):
                raise EncoderMismatchError(
                    f"the embeddings in {self.dir} were computed by {model} with files "
                    f"{recorded}, but {model} now has files {now}: embed again with "
                    f"`sieve embed {self.index.path} --embed-model {model} --force`"
                )
            encoder = loaded_encoder(model)
            if encoder.dim != self.meta["dim"]:
                raise EncoderMismatchError(
                    f"the embeddings in {self.dir} have {self.meta['dim']} dimensions, "
                    f"but {model} now gives {encoder.dim}: embed again with `sieve "
                    f"embed {self.index.path} --embed-model {model} --force`"
                )
            self._encoder = encoder
        return self._encoder

    @property
    def graph(self) -> Any:
        if self._graph is None:
            import hnswlib

            entry = self.meta["files"]["hnsw.bin"]
            path = self.dir / "hnsw.bin"
            try:
                found = file_entry(path)
            except OSError:
                found = {}
            if found != entry:
                raise IndexDamagedError(
                    f"embeddings/{self.dir.name}/hnsw.bin",
                    "size or checksum does not match meta.json",
                )
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
            return (
                self.vectors.dot(q)[rows]
                if len(rows) * 8 > len(self.vectors)
                else self.vectors.dot(q, rows)
            )
        lo, hi = self.starts[rows], self.starts[rows + 1]
        counts = hi - lo
        if counts.sum() * 8 > len(self.vectors):
            return np.maximum.reduceat(self.vectors.dot(q), self.starts[:-1])[rows]
        offsets = np.concatenate(([0], np.cumsum(counts)[:-1]))
        # every passage of every row, in order
        idx = np.repeat(lo - offsets, counts) + np.arange(counts.sum())
        return np.maximum.reduceat(self.vectors.dot(q, idx), offsets)

    def exact(
        self, q: np.ndarray, docs: np.ndarray | None, k: int
    ) -> tuple[np.ndarray, np.ndarray]:
        if docs is None:
            sims = self.vectors.dot(q)
            if self.owner is not None:
                sims = np.maximum.reduceat(sims, self.starts[:-1])
            return top_k(self.docs, sims.astype(np.float64), k, self.index.snapshot.order)
        return top_k(
            docs,
            self._row_similarity(q, self.rows(docs)).astype(np.float64),
            k,
            self.index.snapshot.order,
        )

    def approximate(
        self, q: np.ndarray, bits: np.ndarray | None, k: int
    ) -> tuple[np.ndarray, np.ndarray]:
        n = len(self.docs)
        if bits is None:
            allowed = n
            flags = None
        else:
            keep = bitset.to_bool(bits, n) if self._identity else bitset.contains(bits, self.docs)
            allowed = int(keep.sum())
            # hnswlib calls the filter back in Python for every node it visits: none when all pass
            flags = (
                None
                if allowed == n
                else (keep if self.owner is None else keep[self.owner]).view(np.uint8).tobytes()
            )
        k = min(k, allowed)
        if k == 0:
            return np.zeros(0, dtype=np.int64), np.zeros(0)
        total = len(self.vectors) if flags is None else flags.count(1)
        # Passages: ask for more than k, since one document may hold several of the best; widen
        # until k distinct documents come back (or every allowed passage has).
        want = k if self.owner is None else min(total, max(4 * k, k + 32))
        while True:
            labels, dist = self.graph.knn_query(
                q[None, :],
                k=want,
                num_threads=1,
                filter=None if flags is None else flags.__getitem__,
            )
            rows = labels[0].astype(np.int64)
            sims = 1.0 - dist[0].astype(np.float64)
            if self.owner is not None:
                rows = self.owner[rows]
                # hnswlib answers nearest first: the first of a row is its best
                rows, first = np.unique(rows, return_index=True)
                sims = sims[first]
            if len(rows) >= k or want >= total:
                return top_k(self.docs[rows], sims, k, self.index.snapshot.order)
            want = min(total, want * 4)

    def similarity(self, text: str, docs: np.ndarray) -> np.ndarray:
        """Cosine similarity of `text` to each of `docs` (exact; a document's best passage's)."""
        return self._row_similarity(
            self.query_vector(text), self.rows(np.asarray(docs, dtype=np.int64))
        ).astype(np.float64)

    def best_sections(self, text: str, docs: list[int]) -> list[int | None]:
        """For each of `docs`, the number of the section whose passage is closest to `text` (where
        its similarity came from); None with the document unit, or for a document embedded as its
        title alone."""
        if self.owner is None:
            return [None] * len(docs)
        q = self.query_vector(text)
        out: list[int | None] = []
        for d, r in zip(docs, self.rows(np.asarray(docs, dtype=np.int64)).tolist()):
            rows = np.arange(self.starts[r], self.starts[r + 1])
            out.append(passage_section(self.index, d, int(np.argmax(self.vectors.dot(q, rows)))))
        return out

    def top(
        self, text: str, docs: np.ndarray | None, bits: np.ndarray | None, k: int
    ) -> tuple[np.ndarray, np.ndarray]:
        """The k documents (of `docs`, or of all) most similar to `text`, with cosine similarity."""
        q = self.query_vector(text)
        size = len(self.docs) if docs is None else len(docs)
        if self.prefers_exact(size, k):
            return self.exact(q, docs, k)
        return self.approximate(q, bits, k)

    def prefers_exact(self, admitted: int, k: int) -> bool:
        """Whether scoring `admitted` documents exactly is cheaper than the filtered graph search
        for their top k (`exact_max`, where set, decides instead)."""
        if self.exact_max is not None:
            return admitted <= self.exact_max
        n = len(self.vectors)
        rows = admitted * n / max(1, len(self.docs))  # passages: about as many per document
        exact = min(EXACT_MS_PER_ROW * rows, SCAN_MS_PER_ROW * n)
        graph = HNSW_MS * n / max(rows, 1.0) * max(k, HNSW_EF_SEARCH) / HNSW_EF_SEARCH
        return exact <= graph
