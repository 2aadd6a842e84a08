"""Merging segments: which to merge (the policy) and how (their live documents, re-indexed in
order).

A merge replaces a run of *adjacent* segments with one segment holding their live documents in
the same order, so index order (segments in commit order, documents in insertion order) never
changes. The policy is logarithmic, as Lucene's LogMergePolicy: a segment's level is how many
powers of `factor` its live documents are above `floor`; whenever `factor` adjacent segments share a
level, they are merged into one of the next level, unless the result's tables would need more than
half the memory budget to write (the threshold at which a build starts a new segment, so no merge
needs more memory than a build) or it would pass `max_documents`. A segment more than half deleted
is rewritten on its own. Segments with no live document are dropped.

A merge reads the documents back from the segments' stores and indexes them again with the same
analyser: the new segment's files are exactly those a fresh build of those documents writes.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from sieve.corpus.documents import Document
from sieve.engine.analysis.analyzers import Analyzer
from sieve.engine.analysis.schema import Schema
from sieve.engine.format import commits
from sieve.engine.segment.reader import SegmentReader
from sieve.engine.segment.snapshot import CommitEntry, write_commit
from sieve.engine.segment.writer import BYTES_PER_DOCUMENT, BYTES_PER_UNIT, DEFAULT_MEMORY_MB
from sieve.errors import InvalidArgumentError
from sieve.index.opening import as_path, open_current
from sieve.index.options import BuildOptions
from sieve.index.shards import refuse_sharded


@dataclass(frozen=True)
class MergePolicy:
    factor: int = 10  # segments of one level merged together
    floor: int = 1000  # live documents below which every segment is level 0
    max_documents: int = 2_000_000  # no merge makes a segment larger (a forced merge may)
    max_deleted: float = 0.5  # a segment with a larger share deleted is rewritten alone
    # no merge makes a segment whose tables need more than half of it
    memory_mb: int = DEFAULT_MEMORY_MB

    def __post_init__(self) -> None:
        if (
            self.factor < 2
            or self.floor < 1
            or self.max_documents < 1
            or not 0 < self.max_deleted <= 1
            or self.memory_mb < 0
        ):
            raise InvalidArgumentError(
                "a merge policy needs factor >= 2, floor >= 1, max_documents >= 1, 0 < "
                f"max_deleted <= 1 and memory_mb >= 0: {self}"
            )

    def level(self, live: int) -> int:
        return int(math.log(max(live, self.floor) / self.floor, self.factor) + 1e-9)

    def fits(self, run: list[CommitEntry]) -> bool:
        """Whether one segment of the live documents of `run` is small enough to merge into."""
        live = sum(e.live for e in run)
        return (
            live <= self.max_documents
            and sum(table_bytes(e) for e in run) <= (self.memory_mb << 20) // 2
        )


def table_bytes(entry: CommitEntry) -> int:
    """What writing the tables of a segment's live documents needs (as the
    build's writer estimates it)."""
    stats = entry.manifest["stats"]
    units = int(stats.get("units", 0)) * entry.live // max(1, entry.documents)
    return BYTES_PER_DOCUMENT * entry.live + BYTES_PER_UNIT * units


def plan_merges(entries: list[CommitEntry], policy: MergePolicy) -> list[tuple[int, int]]:
    """The runs [a, b) of adjacent entries the policy merges now (disjoint, in order)."""
    out: list[tuple[int, int]] = []
    i, n = 0, len(entries)
    while i < n:
        e = entries[i]
        lvl = policy.level(e.live)
        j = i + 1
        while j < n and j - i < policy.factor and policy.level(entries[j].live) == lvl:
            j += 1
        if j - i == policy.factor and policy.fits(entries[i:j]):
            out.append((i, j))
            i = j
            continue
        if e.documents and e.n_deleted > policy.max_deleted * e.documents:
            out.append((i, i + 1))
        i += 1
    return out


def live_documents(entry: CommitEntry) -> Iterator[Document]:
    """The live documents of one segment, in order, read back from its store."""
    reader = entry.reader if entry.reader is not None else SegmentReader(entry.dir)
    for d in np.flatnonzero(entry.live_flags()).tolist():
        yield Document.stored(reader, d)


def _analyzer(entries: list[CommitEntry]) -> Analyzer:
    """The analyzer of an index's segments (its documents are analysed again, as they were)."""
    return Analyzer.of_manifest(entries[0].manifest, str(entries[0].dir))


def _schema(entries: list[CommitEntry]) -> Schema:
    """The declared fields of an index's segments (their columns are
    made again from the metadata)."""
    return Schema.of_manifest(entries[0].manifest)


def merge(
    run: list[CommitEntry],
    commit: commits.Commit,
    memory_mb: int | None = None,
    analyzer: Analyzer | None = None,
    schema: Schema | None = None,
) -> CommitEntry:
    """One new segment holding the live documents of `run` (adjacent entries), in order. `analyzer`:
    the index's (needed only for a run of nothing)."""
    from sieve.corpus.formats import CorpusReport
    from sieve.index.build import build

    def documents() -> Iterator[Document]:
        for e in run:
            yield from live_documents(e)

    where, name = commit.new_segment()
    analyzer = analyzer if analyzer is not None else _analyzer(run)
    schema = schema if schema is not None else _schema(run)
    options = BuildOptions(jobs=1, memory_mb=memory_mb, analyzer=analyzer, schema=schema)
    manifest = build(documents(), where, options, report=CorpusReport(), allow_empty=True)
    return CommitEntry(name, where, manifest, new=True)


def apply(
    entries: list[CommitEntry],
    runs: list[tuple[int, int]],
    commit: commits.Commit,
    memory_mb: int | None = None,
) -> list[CommitEntry]:
    """`entries` with each run replaced by its merged segment."""
    out: list[CommitEntry] = []
    i = 0
    for a, b in runs:
        out.extend(entries[i:a])
        out.append(merge(entries[a:b], commit, memory_mb))
        i = b
    out.extend(entries[i:])
    return out


def settle(
    entries: list[CommitEntry], commit: commits.Commit, policy: MergePolicy
) -> list[CommitEntry]:
    """What a commit lists: segments with live documents, merged as the policy says until it says
    no more, and never none (an index whose every document is deleted keeps one empty segment)."""
    analyzer, schema = _analyzer(entries), _schema(entries)
    entries = [e for e in entries if e.live]
    while True:
        runs = plan_merges(entries, policy)
        if not runs:
            break
        entries = apply(entries, runs, commit)
    if not entries:
        entries = [merge([], commit, analyzer=analyzer, schema=schema)]
    return entries


def force_plan(entries: list[CommitEntry], max_segments: int) -> list[tuple[int, int]]:
    """Runs that bring `entries` down to `max_segments` by merging the adjacent pair of smallest
    combined size, again and again (as one merge per resulting run)."""
    groups = [[i] for i in range(len(entries))]
    size = [entries[i].live for i in range(len(entries))]
    while len(groups) > max_segments:
        k = min(range(len(groups) - 1), key=lambda i: size[i] + size[i + 1])
        groups[k : k + 2] = [groups[k] + groups[k + 1]]
        size[k : k + 2] = [size[k] + size[k + 1]]
    # A segment left alone is still rewritten when it
    # carries deletions: a forced merge expunges them.
    return [(g[0], g[-1] + 1) for g in groups if len(g) > 1 or entries[g[0]].n_deleted]


def merge_index(
    path: str | os.PathLike, max_segments: int = 1, memory_mb: int | None = None
) -> dict[str, Any]:
    """Merge an index's segments down to at most `max_segments` (expunging deleted documents from
    every segment it rewrites); commits atomically. Returns segments before and after."""
    if isinstance(max_segments, bool) or not isinstance(max_segments, int) or max_segments < 1:
        raise InvalidArgumentError(f"max_segments must be a positive integer, got {max_segments!r}")
    lock = commits.WriteLock(Path(path))
    lock.acquire()
    try:
        # The commit point and its segments, as `open_index` reads them (under the lock, no build
        # can switch CURRENT meanwhile).
        commit_dir, snap = open_current(as_path(path, "an index path"), verify=False)
        refuse_sharded(Path(path), snap, "merged")
        entries = [CommitEntry.of(s, s.deleted) for s in snap.segments]
        before = len(entries)
        runs = force_plan(entries, max_segments)
        if not runs:
            return {
                "before": before,
                "after": before,
                "documents": snap.n_live,
                "generation": commit_dir.name,
            }
        commit = commits.Commit(path, force=True, lock=lock)
        try:
            entries = [e for e in apply(entries, runs, commit, memory_mb) if e.live] or [
                merge([], commit)
            ]
            write_commit(commit.commit_dir, entries)
        except BaseException:
            commit.abort()
            raise
        gen = commit.commit(keep={e.name for e in entries if not e.new})
        return {
            "before": before,
            "after": len(entries),
            "documents": snap.n_live,
            "generation": gen.name,
        }
    finally:
        lock.release()
