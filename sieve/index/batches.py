"""Analysed batches for a build: a JSONL file's spans of lines and a folder's runs of files,
parsed, checked and analysed in this process or by worker processes (`jobs > 1`), always handed
on in corpus order; the same batches whatever the number of jobs."""

from __future__ import annotations

import multiprocessing
import os
from collections import deque
from collections.abc import Callable, Generator, Iterable, Iterator
from pathlib import Path
from typing import Any

from sieve.corpus.documents import Document, checked_document, unknown_keys
from sieve.corpus.folders import KINDS, Entry, Folder, PassedOver, walked
from sieve.corpus.folders import read as read_file
from sieve.corpus.formats import (
    CorpusReport,
    OnError,
    Source,
    id_key,
    line_spans,
    parse_line,
    span_lines,
)
from sieve.engine.analysis.analyzers import Analyzer
from sieve.engine.analysis.batch import AnalyzedBatch, analyze_batch
from sieve.engine.analysis.schema import NO_FIELDS, Schema
from sieve.engine.analysis.vocabulary import Vocabulary
from sieve.errors import CorpusError

BATCH_DOCS = 1000
PARALLEL_MIN_BYTES = 8 << 20  # below this, starting workers costs more than it saves

_WORKER_VOCAB: Vocabulary | None = None


_WORKER_LENIENT = False
_WORKER_SCHEMA = NO_FIELDS


def _init_worker(analyzer: Analyzer, lenient: bool, schema: Schema) -> None:
    global _WORKER_VOCAB, _WORKER_LENIENT, _WORKER_SCHEMA
    _WORKER_VOCAB = Vocabulary(analyzer)
    _WORKER_LENIENT = lenient
    _WORKER_SCHEMA = schema


def checked_fields(doc: Document, schema: Schema, name: str | None, line: int | None) -> list[Any]:
    """The values of `doc`'s declared fields (`Schema.values`); CorpusError at `name`:`line` when
    one does not fit its type."""
    if not schema:
        return []
    try:
        return schema.values(doc.metadata)
    except CorpusError as e:
        raise CorpusError(e.message, name, line) from None


def _analyze_lines(
    name: str, lines: list[tuple[int, str | CorpusError]]
) -> tuple[int, AnalyzedBatch]:
    """Worker: `analyze_lines` with this process's vocabulary."""
    assert _WORKER_VOCAB is not None
    return os.getpid(), analyze_lines(name, lines, _WORKER_VOCAB, _WORKER_LENIENT, _WORKER_SCHEMA)


def analyze_lines(
    name: str,
    lines: list[tuple[int, str | CorpusError]],
    vocab: Vocabulary,
    lenient: bool,
    schema: Schema,
) -> AnalyzedBatch:
    """Parse, validate and analyse a chunk of lines (`span_lines`) into one batch; the records
    left out are in its `errors` (duplicate ids are `_checked` later, across batches)."""
    records = [
        (name, n, t if isinstance(t, CorpusError) else parse_line(name, n, t)) for n, t in lines
    ]
    return analyze_records(records, vocab, lenient, schema)


def analyze_records(
    records: list[tuple[str, int, Any]], vocab: Vocabulary, lenient: bool, schema: Schema
) -> AnalyzedBatch:
    """Validate and analyse (file, line, record or CorpusError) into one batch, the records left
    out in its `errors`, in the order given."""
    docs, numbers, errors, values = [], [], [], []
    kept = 0
    for name, lineno, rec in records:
        try:
            if isinstance(rec, CorpusError):
                raise rec
            doc = checked_document(rec, name, lineno, lenient)
            values.append(checked_fields(doc, schema, name, lineno))
            docs.append(doc)
            kept += bool(lenient and unknown_keys(rec))
            numbers.append(lineno)
        except CorpusError as err:
            errors.append(err)
    batch = analyze_batch(docs, numbers, vocab, schema, values)
    batch.errors = errors
    batch.kept = kept
    # Digested here, on a worker when there are workers: the process that checks ids for
    # duplicates then only looks the digests up (a tenth of its time with two workers).
    batch.id_keys = b"".join(map(id_key, batch.ids))
    return batch


def _analyze_span(name: str, offset: int, length: int, first: int) -> tuple[int, AnalyzedBatch]:
    """Worker: `_analyze_lines` of a piece of the file it reads itself (sending it the text cost
    this process more than reading it)."""
    return _analyze_lines(name, span_lines(Path(name), offset, length, first))


def parallel_batches(
    path: Path, jobs: int, analyzer: Analyzer, lenient: bool, schema: Schema
) -> Generator[tuple[Any, AnalyzedBatch], None, None]:
    name = str(path)
    spans = ((name, *span) for span in line_spans(path, BATCH_DOCS))
    return _pooled(jobs, analyzer, lenient, schema, _analyze_span, spans)


def _pooled(
    jobs: int,
    analyzer: Analyzer,
    lenient: bool,
    schema: Schema,
    work: Callable[..., Any],
    tasks: Iterable[tuple[Any, ...]],
) -> Generator[Any, None, None]:
    """`work(*task)` of each task (taken as needed), on `jobs` worker processes, in task order."""
    pool = multiprocessing.Pool(
        jobs, initializer=_init_worker, initargs=(analyzer, lenient, schema)
    )
    try:
        pending: deque[Any] = deque()
        for task in tasks:
            pending.append(pool.apply_async(work, task))
            if len(pending) >= 2 * jobs:  # bounded read-ahead: memory stays a few chunks
                yield pending.popleft().get()
        while pending:
            yield pending.popleft().get()
    except GeneratorExit:
        # The consumer stopped (a bad record, a writer error): let the few chunks in flight finish
        # and the workers exit. Pool.terminate() here was seen to hang for good, deadlocked with a
        # worker that held the task queue's lock.
        pool.close()
        pool.join()
        raise
    except BaseException:  # an interrupt or a worker's error: stop the workers now
        pool.terminate()
        pool.join()
        raise
    else:
        pool.close()
        pool.join()


def file_batches(
    path: Path, analyzer: Analyzer, lenient: bool, schema: Schema
) -> Generator[tuple[Any, AnalyzedBatch], None, None]:
    """What `parallel_batches` gives, made in this process: a batch per piece of lines, not a
    generator step per record (a one-process build of 100k man-sections records: 5.8 -> 4.9 s)."""
    vocab = Vocabulary(analyzer)
    for span in line_spans(path, BATCH_DOCS):
        yield "local", analyze_lines(str(path), span_lines(path, *span), vocab, lenient, schema)


# A folder's files are read, parsed and analysed in batches, as a JSONL file's lines are: by
# worker processes with `jobs > 1`, each batch a run of the walk's entries (those passed over
# too, so that they are counted in the walk's order).
FOLDER_BATCH_FILES = 100  # a progress step; a worker's task
FOLDER_BATCH_BYTES = 1 << 20
# Markdown read by sieve's own block scanner (sieve.corpus.mdblocks) costs about one and a half
# times JSON, byte for byte (markdown-it-py cost ten times). On two idle cores two workers build
# 5 MB of man pages in 0.50 s against 0.68 s in one process (JSONL: 0.41 s), so workers start at
# 1 MiB; on a loaded machine they gain nothing (2.3 s against 1.9 s was measured under load).
# HTML (Python's HTML parser) still costs about six times as much, and counts so.
FOLDER_PARALLEL_MIN_BYTES = 1 << 20
HTML_COST = 6


def folder_kind(path: Path) -> str | None:
    """markdown, html or text: how a folder's file is read (by its extension)."""
    return KINDS.get(path.suffix.lower())


def _folder_chunks(entries: list[Entry]) -> Iterator[list[Entry]]:
    chunk: list[Entry] = []
    size = 0
    for entry in entries:
        chunk.append(entry)
        size += entry.st.st_size if entry.st is not None else 0
        if len(chunk) >= FOLDER_BATCH_FILES or size >= FOLDER_BATCH_BYTES:
            yield chunk
            chunk, size = [], 0
    if chunk:
        yield chunk


def _analyze_files(
    folder: Folder,
    base: str,
    entries: list[Entry],
    vocab: Vocabulary,
    lenient: bool,
    schema: Schema,
) -> tuple[AnalyzedBatch, list[PassedOver]]:
    """Read, parse and analyse a run of a folder's entries (`folders.read`): one batch, and the
    files passed over."""
    reads = [read_file(entry, folder, base) for entry in entries]
    passed = [got for _, _, got in reads if isinstance(got, PassedOver)]
    records = [r for r in reads if not isinstance(r[2], PassedOver)]
    return analyze_records(records, vocab, lenient, schema), passed


def _analyze_files_here(
    folder: Folder, base: str, entries: list[Entry]
) -> tuple[Any, AnalyzedBatch, list[PassedOver]]:
    """Worker: `_analyze_files` with this process's vocabulary."""
    assert _WORKER_VOCAB is not None
    vocab, lenient, schema = _WORKER_VOCAB, _WORKER_LENIENT, _WORKER_SCHEMA
    batch, passed = _analyze_files(folder, base, entries, vocab, lenient, schema)
    return os.getpid(), batch, passed


def folder_batches(
    source: Source,
    on_error: OnError,
    report: CorpusReport,
    jobs: int,
    analyzer: Analyzer,
    lenient: bool,
    schema: Schema,
) -> Iterator[tuple[Any, AnalyzedBatch]]:
    """A document folder's batches in path order, the same whatever `jobs`; every error and
    file passed over reported as `read_documents` reports them."""
    folder, base, entries = walked(source)  # type: ignore[arg-type]  # a folder path here
    report.source = str(source)
    size = sum(
        e.st.st_size * (HTML_COST if folder_kind(e.path) == "html" else 1)
        for e in entries
        if e.st is not None
    )
    chunks = _folder_chunks(entries)
    results: Generator[tuple[Any, AnalyzedBatch, list[PassedOver]], None, None]
    if jobs > 1 and size >= FOLDER_PARALLEL_MIN_BYTES:
        tasks = ((folder, base, chunk) for chunk in chunks)
        results = _pooled(jobs, analyzer, lenient, schema, _analyze_files_here, tasks)
    else:
        vocab = Vocabulary(analyzer)
        results = (
            ("local", *_analyze_files(folder, base, chunk, vocab, lenient, schema))
            for chunk in chunks
        )
    try:
        for key, batch, passed in results:
            for p in passed:
                report.pass_over(p.why, p.note)
            # Ids are paths, never twice: only the errors (in path order) are left to report.
            if batch.errors and on_error == "raise":
                raise batch.errors[0]
            for err in batch.errors:
                report.note(err)
            report.documents += len(batch.ids)
            report.kept += batch.kept
            yield key, batch
    finally:
        results.close()  # the workers go now (see _batch_stream)
