"""Sharded indexes: one index whose segments are grouped into N shards by a stable hash of the
document id, built in parallel (local processes, or Ray tasks on a cluster), answered exactly as
one index over the same documents.

A sharded index is an ordinary commit point (docs/index-format.md) whose manifest says
`"shards": N` and whose every segment names its shard and has an order-key file: each document's
position in the corpus the shards were cut from. Opened locally, it is one snapshot over all the
shards' segments: collection statistics are the whole collection's (as for any multi-segment
index), and index order and ties in ranking follow the order keys, so ids and scores equal those
of an unsharded build of the same corpus (tests/engine/test_shards.py). Served by Ray, each shard
is one actor reading only its own segments (sieve.index.shard_service).

Partition: shard = blake2b-64(id, UTF-8) mod N, so the same id always lands in the same shard, on
every machine and Python version (Python's own `hash` of a string is salted per process). A
record with no usable id goes to shard (position - 1) mod N, which reports the error.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import hashlib
import itertools
import multiprocessing
import os
import re
import shutil
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from sieve.corpus.documents import Document
from sieve.corpus.formats import MAX_ERRORS, CorpusReport, Source
from sieve.engine.format import commits, storage
from sieve.engine.segment.reader import SegmentReader
from sieve.engine.segment.snapshot import CommitEntry, Snapshot, order_name, write_commit
from sieve.errors import CorpusError, InvalidArgumentError
from sieve.index.options import BuildOptions

PARTITION = "blake2b-64(id) mod shards"
MAX_SHARDS = 1024


def shard_of(doc_id: str, shards: int) -> int:
    """The shard of the document `doc_id` among `shards`."""
    digest = hashlib.blake2b(doc_id.encode("utf-8", "surrogatepass"), digest_size=8).digest()
    return int.from_bytes(digest, "little") % shards


def routing_id(rec: Any) -> str | None:
    """The id a record will have as a document (`document_from_record`'s rule), or None when it
    has no usable one (the record is then refused by whichever shard reads it)."""
    if isinstance(rec, Document):
        return rec.id
    if not isinstance(rec, dict):
        return None
    for key in ("id", "_id"):
        v = rec.get(key)
        if v is not None and v != "" and not isinstance(v, bool) and isinstance(v, (str, int)):
            return str(v)
    return None


# A line that opens with a string id free of escapes: its id without parsing the line. Only the
# first key counts (a nested "id" never comes first), and only when "id" appears once (JSON's last
# duplicate key wins, so a second one could be the real id).
_LEADING_ID = re.compile(r'\s*\{\s*"id"\s*:\s*"([^"\\]+)"')


class ShardSelector:
    """`select` for `read_documents`: this shard's records, remembering
    where each id was first seen."""

    def unread(self, line: str) -> bool:
        """Whether a JSON line certainly belongs to another shard (then it is not even parsed: each
        shard's build reads the whole corpus, and parsing every line would
        cost each shard a full pass)."""
        m = _LEADING_ID.match(line)
        if m is None or line.count('"id"') != 1:
            return False
        return shard_of(m.group(1), self.shards) != self.shard

    def __init__(self, shard: int, shards: int) -> None:
        self.shard, self.shards = shard, shards
        self.first: dict[str, int] = {}

    def __call__(self, position: int, rec: Any) -> bool:
        doc_id = routing_id(rec)
        if doc_id is None:
            return (position - 1) % self.shards == self.shard
        if shard_of(doc_id, self.shards) != self.shard:
            return False
        # a later duplicate is refused or skipped: the first is the one kept
        self.first.setdefault(doc_id, position)
        return True


def check_shards(shards: object) -> int:
    if isinstance(shards, bool) or not isinstance(shards, int) or not 1 <= shards <= MAX_SHARDS:
        raise InvalidArgumentError(
            f"shards must be an integer from 1 to {MAX_SHARDS}, got {shards!r}"
        )
    return shards


@dataclass
class ShardTask:
    """One shard's build, as a worker (a process or a Ray task) receives it: plain values only."""

    source: Any
    stage: str  # a directory this shard's segments are written under
    shard: int
    shards: int
    options: BuildOptions  # one worker's: jobs 1, its share of the memory budget


@dataclass
class ShardBuilt:
    """What one shard's build gives back: its segments (directory,
    manifest, order keys) and report."""

    shard: int
    segments: list[tuple[str, dict[str, Any], np.ndarray]] = field(default_factory=list)
    documents: int = 0
    skipped: int = 0
    kept: int = 0
    # (line, message) of its first bad records
    errors: list[tuple[int, str]] = field(default_factory=list)
    # a folder's files passed over (every shard walks the same folder)
    unread: dict[str, int] = field(default_factory=dict)
    unread_files: list[str] = field(default_factory=list)
    # a CorpusError's message, file and line
    failure: tuple[str, str | None, int | None] | None = None


def build_shard(task: ShardTask) -> ShardBuilt:
    """Build one shard's segments under `task.stage` (runs in a worker)."""
    from sieve.index.build import build_segments

    select = ShardSelector(task.shard, task.shards)
    report = _LinedReport()
    parts = itertools.count(1)

    def new_segment() -> Path:
        where = Path(task.stage) / f"part-{next(parts):06d}"
        where.mkdir()
        return where

    out = ShardBuilt(task.shard)
    note = _progress_writer(task.stage)
    try:
        built = build_segments(
            task.source,
            new_segment,
            task.options,
            report=report,
            select=select,
            allow_empty=True,
            progress=note,
        )
    # returned, not raised: the parent raises the first
    # bad record of the corpus, whichever shard met it
    except CorpusError as e:
        out.failure = (e.message, e.file, e.line)
        return out
    for where, manifest in built:
        reader = SegmentReader(where)
        keys = np.fromiter(
            (select.first[reader.doc_id(d)] for d in range(reader.n_docs)),
            dtype=np.int64,
            count=reader.n_docs,
        )
        out.segments.append((str(where), manifest, keys))
        out.documents += reader.n_docs
    # the final count, whatever the last note said
    (Path(task.stage) / PROGRESS_FILE).write_text(str(out.documents))
    out.skipped, out.kept, out.errors = report.skipped, report.kept, report.lined
    out.unread, out.unread_files = report.unread, report.unread_files
    return out


class _LinedReport(CorpusReport):
    """A report that keeps where each of its first errors is, so the shards'
    can be put in corpus order."""

    def __init__(self) -> None:
        super().__init__()
        self.lined: list[tuple[int, str]] = []

    def note(self, err: CorpusError) -> None:
        kept = len(self.errors)
        super().note(err)
        if len(self.errors) > kept:
            self.lined.append((err.line or 0, self.errors[-1]))


PROGRESS_FILE = "progress"  # in a shard's stage: the documents its build has indexed so far
PROGRESS_EVERY_S = 0.5


def _progress_writer(stage: str) -> Callable[[int, int], None]:
    """A build's progress callback that leaves its count in the stage for the parent to read
    (processes and Ray tasks alike; a whole file, replaced, so never read half-written)."""
    last = [0.0]

    def note(documents: int, _bytes: int) -> None:
        now = time.monotonic()
        if now - last[0] >= PROGRESS_EVERY_S:
            last[0] = now
            tmp = Path(stage) / (PROGRESS_FILE + ".tmp")
            tmp.write_text(str(documents))
            os.replace(tmp, Path(stage) / PROGRESS_FILE)

    return note


def _indexed(stages: list[Path]) -> int:
    total = 0
    for stage in stages:
        with contextlib.suppress(OSError, ValueError):  # not started, or not reporting yet
            total += int((stage / PROGRESS_FILE).read_text())
    return total


def _run_local(tasks: list[ShardTask], workers: int, tick: Callable[[], None]) -> list[ShardBuilt]:
    if workers <= 1 or len(tasks) == 1:
        results = []
        for t in tasks:
            results.append(build_shard(t))
            tick()
        return results
    # fork: the workers start at once and share the analyzer's tables; each builds whole shards.
    ctx = multiprocessing.get_context(
        "fork" if "fork" in multiprocessing.get_all_start_methods() else None
    )
    with ProcessPoolExecutor(max_workers=workers, mp_context=ctx) as pool:
        futures = [pool.submit(build_shard, t) for t in tasks]
        while concurrent.futures.wait(futures, timeout=PROGRESS_EVERY_S).not_done:
            tick()
        tick()
        return [f.result() for f in futures]


def _run_ray(tasks: list[ShardTask], address: str, tick: Callable[[], None]) -> list[ShardBuilt]:
    from sieve.index.cluster import connect

    ray = connect(address)
    remote = ray.remote(num_cpus=1, max_retries=2)(build_shard)
    refs = [remote.remote(t) for t in tasks]
    pending = list(refs)
    while pending:
        _, pending = ray.wait(pending, num_returns=len(pending), timeout=PROGRESS_EVERY_S)
        tick()
    return ray.get(refs)


def build_sharded(
    source: Source,
    path: Path,
    shards: int,
    options: BuildOptions,
    *,
    force: bool = False,
    report: CorpusReport | None = None,
    progress: Callable[[int, int], None] | None = None,
    ray: str | None = None,
) -> None:
    """Write a sharded index of `source` at `path` (see the module docstring and `build_index`).
    Each shard reads the whole corpus and keeps its own records, so `source` must be readable more
    than once: a path, or a list of records (not a generator)."""
    check_shards(shards)
    if not isinstance(source, (str, os.PathLike, list, tuple)):
        raise InvalidArgumentError(
            "a sharded build reads its corpus once per shard: give a "
            f"path or a list of records, not a {type(source).__name__}"
        )
    if options.on_error not in ("raise", "skip"):
        raise InvalidArgumentError(f"on_error must be 'raise' or 'skip', not {options.on_error!r}")
    report = report if report is not None else CorpusReport()
    report.source = str(source) if isinstance(source, (str, os.PathLike)) else "<iterable>"
    jobs, memory_mb = options.jobs, options.memory_mb
    workers = max(1, min(shards, jobs if jobs is not None else min(os.cpu_count() or 1, 4)))
    # The memory budget is the whole build's: each worker gets its share.
    each = replace(
        options, jobs=1, memory_mb=None if memory_mb is None else max(64, memory_mb // workers)
    )
    commit = commits.Commit(path, force=force)
    try:
        stages = [
            Path(tempfile.mkdtemp(prefix=f".shard-{j:04d}.building-", dir=commit.stage))
            for j in range(shards)
        ]
        tasks = [ShardTask(source, str(stages[j]), j, shards, each) for j in range(shards)]

        def tick() -> None:
            if progress is not None:
                progress(_indexed(stages), 0)

        results = _run_ray(tasks, ray, tick) if ray else _run_local(tasks, workers, tick)
        failures = [r.failure for r in results if r.failure is not None]
        if failures:  # the first bad record in the corpus, as an unsharded build would name it
            message, file, line = min(failures, key=lambda f: f[2] if f[2] is not None else 0)
            raise CorpusError(message, file, line)
        report.documents = sum(r.documents for r in results)
        report.skipped = sum(r.skipped for r in results)
        report.kept = sum(r.kept for r in results)
        report.unread, report.unread_files = results[0].unread, results[0].unread_files
        # Each shard kept its first bad records, so the corpus's first ones are among them.
        report.errors = [
            e for _, e in sorted((e for r in results for e in r.errors), key=lambda e: e[0])
        ][:MAX_ERRORS]
        if not report.documents:
            from sieve.index.build import nothing_to_index

            raise nothing_to_index(report)
        entries = []
        for r in results:
            for where, manifest, keys in r.segments:
                final, name = commit.new_segment()
                os.rmdir(final)
                os.rename(where, final)
                order = storage.write_array(commit.commit_dir / order_name(name), keys)
                entries.append(
                    CommitEntry(
                        name, final, manifest, new=True, extra={"shard": r.shard, "order": order}
                    )
                )
        for stage in stages:
            shutil.rmtree(stage, ignore_errors=True)
        write_commit(
            commit.commit_dir,
            entries,
            {
                "source": report.source,
                "skipped": report.skipped,
                "shards": shards,
                "partition": PARTITION,
            },
        )
    except BaseException:
        commit.abort()
        raise
    commit.commit()


def refuse_sharded(path: Path, snapshot: Snapshot, what: str) -> None:
    """A sharded index (at `path`, opened as `snapshot`) is built whole: adding, deleting or merging
    would have to keep every document in its shard and order; refused with a clear way forward."""
    if snapshot.shards:
        raise InvalidArgumentError(
            f"{path} is a sharded index ({snapshot.shards} shards); it cannot be {what} in place: "
            f"rebuild it from the changed corpus (sieve index CORPUS {path} --shards "
            f"{snapshot.shards} --force)"
        )
