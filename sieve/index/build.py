"""The build pipeline: corpus -> analysed batches (in this process or in worker processes) ->
writer.

A plain JSONL file is read in pieces of lines, each parsed, validated and analysed as one batch:
by worker processes with `jobs > 1` (while this process assembles the index in line order), or
here; a folder of documents likewise, in runs of its files. Other sources (gzip, iterables, one
shard's share) are read record by record with `read_documents`. Either way every bad record is
reported with its line, exactly as `read_documents` would.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Generator, Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import numpy as np

from sieve.corpus.documents import Document
from sieve.corpus.folders import is_document_folder
from sieve.corpus.formats import (
    CorpusReport,
    IdRegistry,
    OnError,
    Source,
    corpus_file,
    duplicate_id,
    read_documents,
)
from sieve.engine.analysis.analyzers import Analyzer
from sieve.engine.analysis.batch import AnalyzedBatch, analyze_batch
from sieve.engine.analysis.schema import NO_FIELDS, Schema
from sieve.engine.analysis.vocabulary import Vocabulary
from sieve.engine.format import commits
from sieve.engine.segment.snapshot import CommitEntry, write_commit
from sieve.engine.segment.writer import DEFAULT_MEMORY_MB, SegmentWriter
from sieve.errors import CorpusError, InvalidArgumentError, SieveError
from sieve.index import batches as batching
from sieve.index.batches import (
    checked_fields,
    file_batches,
    folder_batches,
    parallel_batches,
)
from sieve.index.options import BuildOptions


def _local_batches(
    source: Source,
    on_error: OnError,
    report: CorpusReport,
    analyzer: Analyzer,
    lenient: bool,
    schema: Schema,
    select: Callable[[int, Any], bool] | None = None,
) -> Iterator[tuple[Any, AnalyzedBatch]]:
    vocab = Vocabulary(analyzer)
    docs: list[Document] = []
    values: list[list[Any]] = []  # each document's declared values, as the check found them
    # the last document checked, and its values (a later rule may still skip it)
    checked: list[Any] = [None, None]

    def check(doc: Document, name: str | None, line: int) -> None:
        checked[:] = [doc, checked_fields(doc, schema, name, line)]

    for doc in read_documents(
        source,
        on_error=on_error,
        report=report,
        lenient=lenient,
        check=check if schema else None,
        select=select,
    ):
        docs.append(doc)
        if schema:
            values.append(
                checked[1] if checked[0] is doc else checked_fields(doc, schema, None, None)
            )
        if len(docs) >= batching.BATCH_DOCS:
            yield "local", analyze_batch(docs, [], vocab, schema, values if schema else None)
            docs, values = [], []
    if docs:
        yield "local", analyze_batch(docs, [], vocab, schema, values if schema else None)


def _checked(
    batch: AnalyzedBatch, name: str, ids: IdRegistry, on_error: OnError, report: CorpusReport
) -> AnalyzedBatch:
    """Apply the corpus rules a worker cannot (duplicate ids across chunks) and report errors in
    line order."""
    problems = list(batch.errors)
    keep = np.ones(len(batch.ids), dtype=bool)
    for i, first in ids.first_lines(batch.ids, batch.lines, batch.id_keys or None):
        problems.append(duplicate_id(batch.ids[i], first, name, batch.lines[i]))
        keep[i] = False
    problems.sort(key=lambda e: e.line or 0)
    if problems and on_error == "raise":
        raise problems[0]
    for err in problems:
        report.note(err)
    report.documents += int(keep.sum())
    report.kept += batch.kept
    return batch if keep.all() else batch.drop(keep)


def _batches(
    source: Source,
    on_error: OnError,
    report: CorpusReport,
    jobs: int | None,
    analyzer: Analyzer,
    lenient: bool = False,
    schema: Schema = NO_FIELDS,
    select: Callable[[int, Any], bool] | None = None,
) -> Generator[tuple[Any, AnalyzedBatch], None, None]:
    """The corpus as analysed batches in corpus order, from worker processes for a large JSONL file
    (`select`: the records to read, see `read_documents`; always read in this process)."""
    if on_error not in ("raise", "skip"):  # now, not at the first batch
        raise InvalidArgumentError(f"on_error must be 'raise' or 'skip', not {on_error!r}")
    return _batch_stream(source, on_error, report, jobs, analyzer, lenient, schema, select)


def _batch_stream(
    source: Source,
    on_error: OnError,
    report: CorpusReport,
    jobs: int | None,
    analyzer: Analyzer,
    lenient: bool,
    schema: Schema,
    select: Callable[[int, Any], bool] | None = None,
) -> Generator[tuple[Any, AnalyzedBatch], None, None]:
    if select is not None:
        yield from _local_batches(source, on_error, report, analyzer, lenient, schema, select)
        return
    jobs = jobs if jobs is not None else min(os.cpu_count() or 1, 4)
    if isinstance(source, (str, os.PathLike)) and is_document_folder(source):
        yield from folder_batches(source, on_error, report, jobs, analyzer, lenient, schema)
        return
    path = (
        corpus_file(source)
        if isinstance(source, (str, os.PathLike)) and not is_document_folder(source)
        else None
    )
    if path is not None and path.suffix != ".gz":
        report.source = str(source)
        ids = IdRegistry()
        parallel = jobs > 1 and path.stat().st_size >= batching.PARALLEL_MIN_BYTES
        batches = (
            parallel_batches(path, jobs, analyzer, lenient, schema)
            if parallel
            else file_batches(path, analyzer, lenient, schema)
        )
        try:
            for key, batch in batches:
                yield key, _checked(batch, str(path), ids, on_error, report)
        finally:
            # Now, not when this frame goes: a traceback that keeps it (a caller's saved error)
            # would keep the workers' pool open, and at exit multiprocessing's terminate of it
            # can deadlock on the task queue's lock.
            batches.close()
    else:
        yield from _local_batches(source, on_error, report, analyzer, lenient, schema)


def nothing_to_index(report: CorpusReport) -> CorpusError:
    # An index of nothing answers every query with nothing: almost always a wrong path or format.
    what = (
        f"every record was skipped ({report.skipped:,}; first: {report.errors[0]})"
        if report.skipped
        else "the corpus has no records"
    )
    return CorpusError(f"nothing to index: {what}", report.source or None)


class _Segmenter:
    """Feeds batches to one segment writer after another: a writer is finished (its segment
    written) once its per-document and per-unit tables would need more than half the memory
    budget to write; the token stream within a segment is bounded by the writer's own spills."""

    def __init__(self, new_segment: Callable[[], Path], options: BuildOptions) -> None:
        self.new_segment = new_segment
        self.analyzer = options.analyzer
        self.schema = options.schema
        self.memory_mb = options.memory_mb
        budget = (self.memory_mb if self.memory_mb is not None else DEFAULT_MEMORY_MB) << 20
        self.segment_bytes = (
            options.segment_bytes if options.segment_bytes is not None else budget // 2
        )
        # made when a batch comes: a segment is never empty
        self.writer: SegmentWriter | None = None
        # the finished writer whose analysers' term ids still arrive
        self.seed: SegmentWriter | None = None
        self.finished: list[tuple[Path, dict[str, Any]]] = []
        self.documents = 0  # in finished segments
        self.bytes_in = 0

    def add(self, batch: AnalyzedBatch, key: Any) -> None:
        if self.writer is None:
            where = self.new_segment()
            self.writer = SegmentWriter(
                where,
                self.memory_mb if self.memory_mb is not None else DEFAULT_MEMORY_MB,
                self.analyzer,
                self.schema,
            )
            if self.seed is not None:
                self.writer.continue_from(self.seed)
                self.seed = None
        self.writer.add_batch(batch, key)
        if self.writer.table_bytes() > self.segment_bytes:
            self.flush({})

    def flush(self, extra: dict[str, Any]) -> None:
        old = self.writer
        if old is None:
            return
        self.finished.append((old.dir, old.finish(extra)))
        self.documents += old.documents
        self.bytes_in += old.bytes_in
        self.writer = None
        old.release()  # its tables: only the vocabulary is needed to go on
        self.seed = old

    @property
    def total(self) -> int:
        return self.documents + (self.writer.documents if self.writer is not None else 0)

    def progress_bytes(self) -> int:
        return self.bytes_in + (self.writer.bytes_in if self.writer is not None else 0)


def build_segments(
    source: Source,
    new_segment: Callable[[], Path],
    options: BuildOptions = BuildOptions(),
    report: CorpusReport | None = None,
    progress: Callable[[int, int], None] | None = None,
    select: Callable[[int, Any], bool] | None = None,
    allow_empty: bool = False,
) -> list[tuple[Path, dict[str, Any]]]:
    """Index `source` into as many segments as the memory budget of `options` needs, each in a
    directory `new_segment()` gives; returns (directory, manifest) of each, in order. The documents
    are split between segments in corpus order (index order is unchanged by the split). `select`:
    only these records (one shard's share, see `read_documents`); `allow_empty`: a source with
    no document gives one empty segment instead of an error (a shard that drew no id)."""
    report = report if report is not None else CorpusReport()
    o = options
    out = _Segmenter(new_segment, o)
    # Closed on the way out, error or not: a traceback kept by the caller must not keep the workers.
    with closing(
        _batches(source, o.on_error, report, o.jobs, o.analyzer, o.lenient, o.schema, select)
    ) as batches:
        for key, batch in batches:
            out.add(batch, key)
            if progress is not None:
                progress(out.total, out.progress_bytes())
    if not out.total:
        if not allow_empty:
            raise nothing_to_index(report)
        out.writer = SegmentWriter(
            new_segment(),
            o.memory_mb if o.memory_mb is not None else DEFAULT_MEMORY_MB,
            o.analyzer,
            o.schema,
        )
    out.flush({"source": report.source, "skipped": report.skipped})
    return out.finished


def build(
    source: Source,
    seg_dir: Path,
    options: BuildOptions = BuildOptions(),
    report: CorpusReport | None = None,
    progress: Callable[[int, int], None] | None = None,
    allow_empty: bool = False,
) -> dict[str, Any]:
    """Index `source` into one segment in `seg_dir`; returns its manifest. `progress(documents,
    bytes)` after each batch. An empty source is an error (a wrong path or format, almost always)
    unless `allow_empty` (a writer that deleted every document, a merge of nothing)."""
    report = report if report is not None else CorpusReport()
    o = options
    writer = SegmentWriter(
        seg_dir, o.memory_mb if o.memory_mb is not None else DEFAULT_MEMORY_MB, o.analyzer, o.schema
    )
    with closing(
        _batches(source, o.on_error, report, o.jobs, o.analyzer, schema=o.schema)
    ) as batches:
        for key, batch in batches:
            writer.add_batch(batch, key)
            if progress is not None:
                progress(writer.documents, writer.bytes_in)
    if not writer.documents and not allow_empty:
        raise nothing_to_index(report)
    return writer.finish({"source": report.source, "skipped": report.skipped})


def build_committed(
    source: Source,
    path: Path,
    options: BuildOptions,
    force: bool,
    report: CorpusReport | None,
    progress: Callable[[int, int], None] | None,
) -> None:
    """`build_index` to a path (not sharded): the segments built inside a new commit point, which
    is committed (atomically replacing an index there with `force`) or, on any error, removed."""
    commit = commits.Commit(path, force=force)
    try:
        names: dict[Path, str] = {}

        def new_segment() -> Path:
            where, name = commit.new_segment()
            names[where] = name
            return where

        report = report if report is not None else CorpusReport()
        built = build_segments(source, new_segment, options, report=report, progress=progress)
        write_commit(
            commit.commit_dir,
            [CommitEntry(names[where], where, manifest, new=True) for where, manifest in built],
            {"source": report.source, "skipped": report.skipped},
        )
    except SieveError:  # some are OSErrors too (IndexExistsError): they say what happened already
        commit.abort()
        raise
    # the corpus's own read errors are CorpusErrors by now: this is writing (a full disk)
    except OSError as e:
        commit.abort()
        raise commits.unwritable(Path(path), e) from None
    except BaseException:
        commit.abort()
        raise
    try:
        commit.commit()
    except SieveError:
        raise
    except OSError as e:
        raise commits.unwritable(Path(path), e) from None
