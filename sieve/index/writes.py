"""Changing an index: add (upsert), replace and delete documents, committed atomically.

    with index.writer() as w:  # one writer at a time (IndexLockedError for a second)
        w.add({"id": "a", "title": "...", "text": "..."})  # a new id is added, a known id replaced
        w.delete("b")  # an unknown id is reported, not an error
    # committed on leaving the block (rolled back if it raised); `index` still reads its snapshot:
    index = index.reopen()

Semantics: the committed index holds the documents of the snapshot the writer started from, minus
those deleted or replaced, in their order, then the documents added, in the order of their last
`add`. A replaced document therefore moves to the end, as a delete plus an add. BM25 statistics are
those of the live documents, so every score equals a fresh build of the same documents in the same
order.

A commit writes the added documents as new segments and each touched segment's deletions as a new
bitset, then lists them in a new commit point switched in atomically (docs/index-format.md): a crash
at any point leaves the last committed state, and the cost follows the change, not the index.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from sieve.corpus.documents import Document, checked_document
from sieve.corpus.formats import CorpusReport, OnError, Source, read_documents
from sieve.engine.analysis.analyzers import Analyzer
from sieve.engine.analysis.schema import Schema
from sieve.engine.format import bitset, commits
from sieve.engine.segment.snapshot import CommitEntry, Snapshot, write_commit
from sieve.engine.segment.writer import DEFAULT_MEMORY_MB
from sieve.errors import DuplicateIdError, InvalidArgumentError
from sieve.index import merges
from sieve.index.batches import checked_fields
from sieve.index.build import build
from sieve.index.options import BuildOptions
from sieve.index.shards import refuse_sharded


@dataclass
class WriteSummary:
    """What a commit changed."""

    added: int = 0  # documents with a new id
    replaced: int = 0  # documents whose id was already there (the old one is gone)
    deleted: int = 0
    not_found: list[str] = field(default_factory=list)  # ids asked to delete that were not there
    skipped: int = 0  # bad records skipped (add_from with on_error="skip")
    kept: int = 0  # documents whose text under unknown keys was kept as metadata (lenient)
    documents: int = 0  # in the index after the commit
    generation: str = ""
    segments: int = 0  # in the index after the commit

    def to_dict(self) -> dict[str, Any]:
        return {
            "added": self.added,
            "replaced": self.replaced,
            "deleted": self.deleted,
            "not_found": self.not_found,
            "skipped": self.skipped,
            "kept": self.kept,
            "documents": self.documents,
            "generation": self.generation,
            "segments": self.segments,
        }


def _size(doc: Document) -> int:
    """Rough bytes a buffered document holds in memory (Python strings
    cost about twice their text)."""
    return 256 + 2 * (len(doc.title) + sum(len(s.heading) + len(s.text) for s in doc.sections))


class Writable(Protocol):
    """The opened index a writing session starts from (`sieve.Index` is one)."""

    path: Path
    commit_dir: Path
    snapshot: Snapshot
    reader: Snapshot
    analyzer: Analyzer
    schema: Schema

    @property
    def retired(self) -> bool: ...

    def __len__(self) -> int: ...

    def reopen(self) -> Writable: ...


class IndexWriter:
    """One writing session on an index: holds the index's write lock from creation to commit.

    Added documents are buffered; when the buffer passes half the memory budget they are written
    as a new segment (staged, invisible until the commit), so a session may add any number of
    documents in bounded memory."""

    def __init__(
        self,
        index: Writable,
        replace: bool = True,
        policy: merges.MergePolicy | None = None,
        memory_mb: int | None = None,
    ) -> None:
        self.path = index.path
        self.lock = commits.WriteLock(self.path)
        self.lock.acquire()
        try:
            # Start from the newest commit, whatever commit point `index` reads.
            self.base = index.reopen()
            refuse_sharded(self.base.path, self.base.snapshot, "changed")
        except BaseException:
            self.lock.release()
            raise
        self.replace = replace
        self.policy = (
            policy
            if policy is not None
            else merges.MergePolicy(
                memory_mb=memory_mb if memory_mb is not None else DEFAULT_MEMORY_MB
            )
        )
        self.memory_mb = memory_mb
        self.buffer_limit = ((memory_mb if memory_mb is not None else DEFAULT_MEMORY_MB) << 20) // 2
        self._added: dict[str, Document] = {}  # buffered, in order of their last add
        self._buffered = 0  # estimated bytes the buffer holds
        self._gone: set[str] = set()  # ids of the snapshot deleted or replaced
        self._commit: commits.Commit | None = None  # opened by the first flush
        self._flushed: list[CommitEntry] = []  # segments written by this session, in order
        # id -> (flushed segment, document), live ones
        self._flushed_ids: dict[str, tuple[int, int]] = {}
        self.summary = WriteSummary()
        self._open = True

    # ------------------------------------------------------------ changes

    def _check_open(self) -> None:
        if not self._open:
            raise InvalidArgumentError(
                "this writer has committed or rolled back; open another with index.writer()"
            )

    def _exists(self, doc_id: str) -> bool:
        return (
            doc_id in self._added
            or doc_id in self._flushed_ids
            or (doc_id not in self._gone and self.base.reader.doc_number(doc_id) >= 0)
        )

    def _forget_flushed(self, doc_id: str) -> bool:
        """Delete a document this session already wrote to a staged segment."""
        at = self._flushed_ids.pop(doc_id, None)
        if at is None:
            return False
        entry = self._flushed[at[0]]
        entry.deleted = bitset.add(entry.deleted, at[1], entry.documents)
        return True

    def add(self, record: dict[str, Any] | Document, lenient: bool = False) -> bool:
        """Add a document, or replace the one with its id (unless the writer was opened with
        `replace=False`: then DuplicateIdError). Returns whether it replaced one. A bad record
        raises CorpusError before anything changes (text under an unknown key too, unless
        `lenient`: then it is kept as metadata)."""
        self._check_open()
        doc = (
            record
            if isinstance(record, Document)
            else checked_document(record, None, None, lenient)
        )
        # a declared field's value must fit its type
        checked_fields(doc, self.base.schema, None, None)
        known = self._exists(doc.id)
        if known and not self.replace:
            raise DuplicateIdError(
                f"a document with id {doc.id!r} is already in the "
                "index, and this writer does not replace documents"
            )
        if doc.id in self._added:
            del self._added[doc.id]  # re-added in this session: the last version, at the end
        elif not self._forget_flushed(doc.id) and known:
            self._gone.add(doc.id)
        self._added[doc.id] = doc
        self._buffered += _size(doc)
        if self._buffered > self.buffer_limit:
            self._flush()
        return known

    def add_from(
        self,
        source: Source,
        on_error: OnError = "raise",
        report: CorpusReport | None = None,
        lenient: bool = False,
    ) -> tuple[int, int]:
        """Add every document of a corpus (a path or an iterable of records); (added, replaced)."""
        added = replaced = 0
        report = report if report is not None else CorpusReport()

        def check(doc: Document, name: str | None, line: int) -> None:
            checked_fields(doc, self.base.schema, name, line)

        for doc in read_documents(
            source,
            on_error=on_error,
            report=report,
            lenient=lenient,
            check=check if self.base.schema else None,
        ):
            if self.add(doc):
                replaced += 1
            else:
                added += 1
        self.summary.skipped += report.skipped
        self.summary.kept += report.kept
        return added, replaced

    def delete(self, doc_id: str) -> bool:
        """Delete the document with this id; False (and noted in the summary) when there is none."""
        self._check_open()
        doc_id = str(doc_id)
        if doc_id in self._added:
            del self._added[doc_id]
            return True
        if self._forget_flushed(doc_id):
            return True
        if doc_id not in self._gone and self.base.reader.doc_number(doc_id) >= 0:
            self._gone.add(doc_id)
            return True
        self.summary.not_found.append(doc_id)
        return False

    def _flush(self) -> None:
        """Write the buffered documents as a staged segment of this session."""
        if not self._added:
            return
        if self._commit is None:
            self._commit = commits.Commit(self.path, force=True, lock=self.lock)
        where, name = self._commit.new_segment()
        options = BuildOptions(
            jobs=1, memory_mb=self.memory_mb, analyzer=self.base.analyzer, schema=self.base.schema
        )
        manifest = build(self._added.values(), where, options, report=CorpusReport())
        j = len(self._flushed)
        self._flushed.append(CommitEntry(name, where, manifest, new=True))
        for d, doc_id in enumerate(self._added):
            self._flushed_ids[doc_id] = (j, d)
        self._added = {}
        self._buffered = 0

    # ------------------------------------------------------------ commit

    def commit(self) -> WriteSummary:
        """Write the changes as a new commit and switch to it atomically; releases the lock.

        The documents added become new segments (usually one); deletions (and replacements) become
        new deletion bitsets of the segments that held them; no existing segment is rewritten
        unless the merge policy (sieve.index.merges) merges it."""
        self._check_open()
        summary = self.summary
        snap = self.base.snapshot
        new_ids = len(self._added) + len(self._flushed_ids)
        kept = len(self.base) - len(self._gone)
        summary.replaced = sum(1 for i in self._gone if i in self._added or i in self._flushed_ids)
        summary.added = new_ids - summary.replaced
        summary.deleted = len(self._gone) - summary.replaced
        summary.documents = kept + new_ids
        try:
            if not self._added and not self._gone and not self._flushed:
                summary.generation = self.base.commit_dir.name
                summary.segments = len(snap.segments)
                return summary
            deleted = [None if seg.deleted is None else seg.deleted.copy() for seg in snap.segments]
            for doc_id in self._gone:
                j, d = snap.which(snap.doc_number(doc_id))
                deleted[j] = bitset.add(deleted[j], d, snap.segments[j].n)
            self._flush()
            if self._commit is None:
                self._commit = commits.Commit(self.path, force=True, lock=self.lock)
            commit = self._commit
            try:
                entries = [
                    CommitEntry.of(seg, deleted[j]) for j, seg in enumerate(snap.segments)
                ] + self._flushed
                entries = merges.settle(entries, commit, self.policy)
                write_commit(commit.commit_dir, entries)
            except BaseException:
                commit.abort()
                raise
            summary.generation = commit.commit(keep={e.name for e in entries if not e.new}).name
            summary.segments = len(entries)
            return summary
        except BaseException:
            if self._commit is not None:
                self._commit.abort()
            raise
        finally:
            self._open = False
            self.lock.release()

    def rollback(self) -> None:
        """Forget the changes (and any segment this session staged) and release the lock."""
        if self._open:
            self._open = False
            if self._commit is not None:
                self._commit.abort()
            self.lock.release()

    def __enter__(self) -> IndexWriter:
        return self

    def __exit__(self, exc_type: object, *rest: object) -> None:
        if exc_type is None:
            self.commit()
        else:
            self.rollback()
