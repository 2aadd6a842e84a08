"""The public `Index`: build, open, match, and read documents back."""

from __future__ import annotations

import os
import shutil
import tempfile
import weakref
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, overload

import numpy as np

from sieve.corpus.documents import Document, Section
from sieve.corpus.formats import CorpusReport, OnError, Source
from sieve.engine import deadline
from sieve.engine.analysis.analyzers import get_analyzer
from sieve.engine.analysis.schema import declare
from sieve.engine.format import commits, weak
from sieve.engine.query.bql import parse
from sieve.engine.query.decision import Decider, Explanation
from sieve.engine.query.indriql import parse as parse_indri
from sieve.engine.query.plan import Limits, Plans
from sieve.engine.rank.bm25 import BM25Params
from sieve.engine.rank.rankers import DENSE_RANKERS, check_request
from sieve.engine.rank.results import Results
from sieve.engine.rank.searcher import Searcher
from sieve.engine.segment.snapshot import Segment
from sieve.index.opening import as_path, damage_guard, later_of, open_current, verify_open
from sieve.index.options import BuildOptions
from sieve.index.queries import Match, parse_query, ranked_search

if TYPE_CHECKING:
    from sieve.dense.encoder import Encoder
    from sieve.index.merges import MergePolicy
    from sieve.index.shard_service import RayIndex
    from sieve.index.writes import IndexWriter
from sieve.errors import (
    IndexDirectoryError,
    InvalidArgumentError,
    UnknownDocumentError,
)


class Index:
    """An opened, read-only index. Safe to share between threads."""

    def __init__(
        self,
        path: str | os.PathLike,
        verify: bool = False,
        limits: Limits = Limits(),
        bm25: BM25Params = BM25Params(),
    ) -> None:
        self.path = as_path(path, "an index path")
        if not isinstance(limits, Limits):
            raise InvalidArgumentError(
                f"limits must be a sieve.Limits, got {type(limits).__name__}"
            )
        self.commit_dir, self.snapshot = open_current(self.path, verify)
        # Document-level reads by internal number (ids, records, sections) across every segment.
        self.reader = self.snapshot
        self.limits = limits
        self.searcher = Searcher(self.snapshot, bm25)
        self.searcher.later = later_of(self)
        self.manifest = self.snapshot.manifest
        self.analyzer = self.snapshot.analyzer  # every query is analysed as the documents were
        self.schema = self.snapshot.schema  # declared fields: name[...] filters
        # set for a temporary index (build_index without a path)
        self._cleanup: weakref.finalize | None = None
        # Agents repeat queries; a plan is immutable and belongs to this reader, so caching is
        # always right.
        self._plans = weak.cached_method(self, "_plan_of", 1024)

    def __len__(self) -> int:
        return self.snapshot.n_live

    @property
    def segments(self) -> list[Segment]:
        """The segments of the commit this Index reads, in index order."""
        return self.snapshot.segments

    def doc_numbers(self) -> np.ndarray:
        """Every document's internal number, ascending (index order, but in a sharded index see
        `Match.docs`). After deletions the numbers have gaps: they are positions in the index, not a
        count."""
        return self.snapshot.live_ids

    def writer(
        self, replace: bool = True, policy: MergePolicy | None = None, memory_mb: int | None = None
    ) -> IndexWriter:
        """A writing session (add, replace, delete; see sieve.index.writes), committed when its
        `with` block ends. Holds the index's write lock until then: IndexLockedError if another has
        it. `replace=False` makes adding a known id an error instead of a replacement. `policy`:
        when to merge segments (sieve.index.merges.MergePolicy; the default suits most indexes).
        `memory_mb`: past half of it (default 1,024), added documents are written to a staged
        segment, so a session may add any number of them."""
        from sieve.index.writes import IndexWriter

        return IndexWriter(self, replace=replace, policy=policy, memory_mb=memory_mb)

    def merge(self, max_segments: int = 1) -> dict[str, int]:
        """Merge this index's segments down to `max_segments`, dropping deleted documents from
        those rewritten, in one atomic commit (`sieve merge`). This Index keeps reading its
        snapshot; `reopen()` sees the result."""
        from sieve.index.merges import merge_index

        return merge_index(self.path, max_segments)

    def reopen(self) -> Index:
        """This index at its newest commit (self if nothing was committed since it was opened)."""
        return (
            Index(self.path, limits=self.limits, bm25=self.searcher.params)
            if self.retired
            else self
        )

    @classmethod
    def from_documents(cls, source: Source) -> Index:
        """A temporary index of `source` (records, documents, or a corpus path):
        `build_index(source)`."""
        return build_index(source)

    @property
    def temporary(self) -> bool:
        """Whether this index lives only as long as this object (built without a path)."""
        return self._cleanup is not None and self._cleanup.alive

    def close(self) -> None:
        """Remove a temporary index's folder now (an index on disk is left as it is). The object
        must not be used afterwards."""
        if self._cleanup is not None:
            self._cleanup()

    def __enter__(self) -> Index:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Index({str(self.path)!r}, documents={len(self)})"

    @property
    def stats(self) -> dict[str, int]:
        """documents (live), dated, segments, deleted (not yet merged away), and the segments'
        terms, tokens, postings, units and sections (summed; deleted documents count until
        merged)."""
        return dict(self.manifest["stats"])

    def plan(self, query: str) -> Plans:
        """The BQL `query` parsed and resolved against this index's segments (cached). Raises
        BQLSyntaxError / BQLLimitError (`limits`: the query's length, its phrases, prefixes,
        positions)."""
        self.limits.check_length(query)
        return self._planned(query)

    def _planned(self, query: str) -> Plans:
        if not isinstance(query, str):
            parse(query)  # refuses a non-string with a BQLSyntaxError; the cache cannot hash a list
        return self._plans(query)

    def _plan_of(self, query: str) -> Plans:
        return Plans.of(
            parse_query(query, self.schema.text_fields),
            [s.reader for s in self.segments],
            self.limits,
        )

    @damage_guard
    def match(self, query: str) -> Match:
        """Documents that satisfy the BQL `query` exactly. Raises BQLSyntaxError / BQLLimitError,
        and DeadlineExceededError past `limits.seconds`."""
        with deadline.within(self.limits.seconds):
            plans = self.plan(query)
            return Match(
                plans.query,
                self.searcher.segment_bits(plans, shared=True),
                self.snapshot.capacity,
                self.snapshot,
            )

    @damage_guard
    def _later(self, work: Callable[[], Any]) -> Any:
        """Work a search leaves until its result is read (each hit's matched fields and sections),
        under this index's time budget and damage check, as the search itself ran."""
        with deadline.within(self.limits.seconds):
            return work()

    @damage_guard
    def explain(self, query: str, doc_id: str) -> Explanation:
        """Why the document `doc_id` is admitted or rejected by `query`: the query's canonical
        tree, each node judged for this document, each leaf with where it matched or why not.
        Raises UnknownDocumentError, BQLSyntaxError, BQLLimitError, DeadlineExceededError."""
        g = self.snapshot.doc_number(doc_id) if isinstance(doc_id, str) else -1
        if g < 0:
            raise UnknownDocumentError(str(doc_id))
        with deadline.within(self.limits.seconds):
            plans = self.plan(query)
            j, d = self.snapshot.which(g)
            seg = self.segments[j]
            missing = None if self.snapshot.dense else self.snapshot.missing
            return Decider(
                seg.reader, self.searcher.parts[j].evaluator, plans.parts[j], missing
            ).explain(d)

    @damage_guard
    def search(
        self,
        query: str,
        k: int = 5,
        ranker: str = "bm25",
        fallback: bool = True,
        explain: bool = True,
        diagnose: bool = True,
        fallback_ranker: str | None = None,
    ) -> Results:
        """Rank the documents `query` admits by its positive terms; best `k` first.

        If the filter admits nothing and `fallback` is on, the whole collection is ranked by the
        positive terms instead (`Results.fallback` is True and `Results.missing` lists the top-level
        clauses that match no document), by `fallback_ranker` (None: `ranker`; "bm25" is the paper's
        fallback). A non-empty admitted set is never broadened. For a query
        that admits nothing, `Results.diagnosis` (unless `diagnose=False`) gives each top-level
        clause's count alone and the one-step relaxations that would admit documents, smallest
        change first, each with its canonical BQL and exact count.
        `explain=False` leaves each hit's `fields` and `sections` empty; with `explain` they are
        found (from the hits' positions) at the first read of any hit's, for every hit at once, so
        a caller that reads ids and scores only pays nothing for them.

        Bounded by `limits` (`sieve.engine.query.plan.Limits`): a query past a cap raises
        BQLLimitError, and the whole call (fallback and diagnosis included) past `limits.seconds`
        DeadlineExceededError.
        """
        check_request(k, ranker)
        self.limits.check_length(query)
        return self._search(query, k, ranker, fallback, explain, diagnose, fallback_ranker)

    def _search(
        self,
        query: str,
        k: int,
        ranker: str,
        fallback: bool,
        explain: bool,
        diagnose: bool,
        fallback_ranker: str | None = None,
    ) -> Results:
        """`search` of a query whose length its caller checked (`ranked_search` checks the text it
        made it from)."""
        with deadline.within(self.limits.seconds):
            plan = self._planned(query)
            if ranker in DENSE_RANKERS or fallback_ranker in DENSE_RANKERS:
                self._attach_dense()
            return self.searcher.search(
                plan, k, ranker, fallback, explain, diagnose, fallback_ranker
            )

    @damage_guard
    def indri_search(
        self, query: str, k: int = 5, ranker: str = "indri", explain: bool = True
    ) -> Results:
        """Rank by a query in Indri's own language (`sieve.engine.query.indriql`: `#combine`,
        `#weight`, `#band`, `#or`, `#not`, `#odN`, `#uwN`, `#syn`, `#filreq`, `#date...`,
        `word.title`) with an Indri-style ranker (`indri`, `indri+dense`): the documents the query
        matches, best `k` first (sieve/engine/rank/indri.py says what matches). Raises
        IndriSyntaxError, BQLLimitError."""
        check_request(k, ranker)
        plans = Plans.of(
            parse_indri(query),  # type: ignore[arg-type]  # Plans compiles Indri's nodes too
            [s.reader for s in self.segments],
            self.limits,
        )
        if ranker in DENSE_RANKERS:
            self._attach_dense()
        return self.searcher.indri_search(plans, k, ranker, explain)

    @damage_guard
    def ranked_search(
        self, text: str, k: int = 5, ranker: str = "bm25", explain: bool = True
    ) -> Results:
        """Rank by plain language (a question, some keywords), with no BQL semantics: every document
        whose title or body holds any of the words is ranked, best `k` first; operators and special
        characters in `text` are words like any other. `Results.query` shows the BQL that ran (an OR
        of the quoted words, stop words left out); a text with no word gives no hits. What `sieve
        search --ranked` and the baselines' `ranked_search` tool run."""
        return ranked_search(self, text, k, ranker, explain)

    def _attach_dense(self) -> None:
        if self.searcher.dense is None:
            self.use_dense()

    def use_dense(
        self,
        model: str | None = None,
        encoder: Encoder | None = None,
        unit: str | None = None,
        search: str = "approximate",
    ) -> None:
        """Rank with the embeddings of `model` (default: the bundled MiniLM, else the only one
        built) in `unit` ("passage" or "document"; default: passages where `sieve embed --unit
        passage` made them, else documents), optionally with an already loaded `encoder`;
        `search="exact"` scores every admitted set exactly (default: exactly or through HNSW,
        whichever is cheaper for the set's size). Raises if `sieve embed` has not been run, or
        (EncoderMismatchError) if it was run with other models only."""
        from sieve.dense.store import DenseIndex

        self.searcher.dense = DenseIndex.open(
            self, model=model, encoder=encoder, unit=unit, search=search
        )

    @damage_guard
    def document(self, doc_id: str) -> Document:
        """The stored document with this id; raises UnknownDocumentError."""
        d = self.reader.doc_number(str(doc_id))
        if d < 0:
            raise UnknownDocumentError(str(doc_id))
        return self._document(d)

    def _document(self, d: int) -> Document:
        return Document.stored(self.snapshot, d)

    @damage_guard
    def section(self, doc_id: str, j: int) -> Section:
        """One section of a document, read without the rest of it."""
        d = self.reader.doc_number(str(doc_id))
        if d < 0:
            raise UnknownDocumentError(str(doc_id))
        headings = self.reader.headings(d)
        if isinstance(j, bool) or not isinstance(j, int) or not 0 <= j < len(headings):
            raise InvalidArgumentError(
                f"document {doc_id!r} has {len(headings)} "
                f"section{'s' if len(headings) != 1 else ''}, "
                f"numbered from 0; there is no section {j!r}"
            )
        return Section(headings[j], self.reader.section_text(d, j))

    @property
    def retired(self) -> bool:
        """True once a newer build has replaced the commit point this Index reads (it keeps
        answering from its open files; open the index again to see the new one)."""
        try:
            return commits.current_commit(self.path) != self.commit_dir
        except IndexDirectoryError:
            return True

    def check(self) -> list[str]:
        """Verify every byte of every file, and the values opening leaves to first use; returns
        the names checked, raises IndexDamagedError.

        CURRENT and the manifests are read again, so damage done since the index was opened is
        found too. If a newer commit has retired this Index's (see `retired`), the files it still
        has open are verified instead: they are what it answers from."""
        return verify_open(self.path, self.commit_dir, self.manifest, self.snapshot, self.retired)


@overload
def open_index(
    path: str | os.PathLike, verify: bool = ..., limits: Limits = ..., ray: None = None
) -> Index: ...
@overload
def open_index(
    path: str | os.PathLike, verify: bool = ..., limits: Limits = ..., *, ray: str
) -> RayIndex: ...
@overload
def open_index(
    path: str | os.PathLike, verify: bool = ..., limits: Limits = ..., ray: str | None = None
) -> Index | RayIndex: ...
def open_index(
    path: str | os.PathLike, verify: bool = False, limits: Limits = Limits(), ray: str | None = None
) -> Index | RayIndex:
    """Open an index directory (memory-mapped; cheap). `verify=True` checks every byte first.
    `limits`: the caps on each of its queries and their time (`sieve.Limits`; docs/bql.md,
    "Limits"). `ray`: serve a sharded index from one actor per shard on the Ray cluster at that
    address (HOST:PORT, `auto`, or `local`) instead: a `sieve.index.shard_service.RayIndex`."""
    if ray is not None:
        from sieve.index.shard_service import open_ray_index

        return open_ray_index(path, ray, limits=limits)
    return Index(path, verify=verify, limits=limits)


def build_index(
    source: Source,
    path: str | os.PathLike | None = None,
    *,
    force: bool = False,
    on_error: OnError = "raise",
    progress: Callable[[int, int], None] | None = None,
    report: CorpusReport | None = None,
    jobs: int | None = None,
    memory_mb: int | None = None,
    segment_bytes: int | None = None,
    analyzer: str = "plain",
    stopwords: str | Iterable[str] | None = None,
    fields: Mapping[str, str] | Iterable[str] | None = None,
    lenient: bool = False,
    shards: int | None = None,
    ray: str | None = None,
) -> Index:
    """Build an index at `path` from a JSONL file, a BEIR folder, or an iterable of records.

    Refuses an existing `path` unless `force`; then the new index replaces the old one atomically.
    A bad record raises CorpusError naming its line, or with `on_error="skip"` is skipped and
    counted in `report` (and in the manifest). `jobs` worker processes analyse a large JSONL
    file in parallel (default: the CPU count, at most 4). `memory_mb` bounds the memory the
    token stream may take to sort (default 1,024): past it, the stream is sorted in runs on disk
    and merged; the files are the same. A collection whose per-document tables would pass half of
    that budget is written as several segments, in corpus order (`segment_bytes` sets that
    threshold instead, in bytes; for tests): its answers are the same as one segment's.
    `analyzer`: how text becomes terms, for the documents and every later query (`plain`: folded
    words, the default; `english` or another Snowball algorithm's name: stemmed words; see
    docs/bql.md). `stopwords`: words not indexed (their places are kept, so phrases still span
    them): a built-in list's name (`english`: the 33 words Lucene and tantivy use), a file of one
    word per line, or the words; default none. Both are recorded in the index; changing them
    means rebuilding.
    `fields`: metadata keys kept as filter columns, `{"year": "number", "venue": "keyword",
    "published": "date"}` (or `["year:number", ...]`), queried as `year[2000..2010]`,
    `venue[=ACL]` (sieve.engine.analysis.schema); a value that does not fit its type is a
    CorpusError. Text written under keys the corpus format does not know (`Title` for `title`, a
    section's `body`) is a CorpusError naming the key, or with `lenient` is kept as metadata
    (counted in `report.kept`).

    `shards`: split the documents into that many shards by a hash of their ids, built in
    parallel (`jobs` processes, or Ray tasks on the cluster at `ray`); the index opens and answers
    as an unsharded one does (sieve.index.shards). `source` must then be a path or a list.

    Without `path`, the index is temporary: built by the same code in a private folder (in
    memory, /dev/shm, where the system has it) that is removed when the Index is closed or
    garbage-collected, or when the interpreter exits. For tests and small throwaway collections.
    """
    from sieve.index.build import build_committed

    if not isinstance(source, (str, os.PathLike)) and not hasattr(source, "__iter__"):
        raise InvalidArgumentError(
            f"a corpus must be a path or an iterable of records, got {type(source).__name__}"
        )
    chosen = get_analyzer(analyzer, stopwords)  # an unknown name fails before anything is written
    options = BuildOptions(
        on_error, jobs, memory_mb, segment_bytes, chosen, declare(fields), lenient
    )
    if path is None:
        return _temporary_index(
            source,
            on_error=on_error,
            progress=progress,
            report=report,
            jobs=jobs,
            memory_mb=memory_mb,
            analyzer=analyzer,
            stopwords=stopwords,
            fields=fields,
            lenient=lenient,
            shards=shards,
            ray=ray,
        )
    if shards is not None or ray is not None:
        from sieve.index.shards import build_sharded

        build_sharded(
            source,
            as_path(path, "an index path"),
            shards if shards is not None else 1,
            options,
            force=force,
            report=report,
            progress=progress,
            ray=ray,
        )
        return Index(path)
    build_committed(source, as_path(path, "an index path"), options, force, report, progress)
    return Index(path)


def _temporary_index(source: Source, **options: Any) -> Index:
    shm = Path("/dev/shm")
    root = Path(
        tempfile.mkdtemp(
            prefix="sieve-", dir=shm if shm.is_dir() and os.access(shm, os.W_OK) else None
        )
    )
    try:
        built = build_index(source, root / "index", **options)
    except BaseException:
        shutil.rmtree(root, ignore_errors=True)
        raise
    # The folder goes with the object: closed, collected, or at exit, whichever comes first.
    built._cleanup = weakref.finalize(built, shutil.rmtree, str(root), True)
    return built
