"""A snapshot of an index: the commit point CURRENT names, its segments and their deletions.

A commit point (format 3, `gen-N/manifest.json`) lists immutable segments in order; each segment is
a directory of the array files of its documents (what a whole `gen-N` directory held in format 2). A
segment's deleted documents are a bitset file in the commit's own directory, so deleting documents
writes a new commit and never touches a segment.

Internal document numbers run across the segments in commit order: segment i's document d is
`base_i + d`, where every base is a multiple of 64 (so the segments' bitsets concatenate into the
snapshot's bitset word by word; the few numbers between a segment's end and the next base are
never live). Ascending internal number is the index order: segments in commit order, documents
in insertion order. Statistics (document count, BM25's N, document frequencies and average
length, Indri's collection counts) are over live documents only.
"""

from __future__ import annotations

import bisect
import functools
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from sieve.engine.analysis.schema import shown_term
from sieve.engine.format import bitset, commits, storage
from sieve.engine.segment.reader import SegmentReader, search_sorted
from sieve.errors import IndexDamagedError

COMMIT_KIND = "commit"


def manifest_crc(segment_dir: Path) -> int:
    """CRC32 of a segment's manifest file: a commit names each segment by it."""
    return storage.crc32(
        storage.read_index_file(
            segment_dir / storage.MANIFEST, f"{segment_dir.name}/{storage.MANIFEST}"
        )
    )


def deletes_name(segment: str) -> str:
    return f"{segment}.del.sva"


def order_name(segment: str) -> str:
    """The file of a sharded index's segment that gives each of its documents its order key."""
    return f"{segment}.order.sva"


@dataclass(eq=False)
class Segment:
    """One segment as a snapshot sees it: its reader, where its numbers start, what is deleted."""

    name: str
    reader: SegmentReader
    base: int
    deleted: np.ndarray | None  # bitset of deleted local documents; None: none deleted
    live: np.ndarray = field(init=False)  # bitset of live local documents
    n_live: int = field(init=False)

    def __post_init__(self) -> None:
        n = self.reader.n_docs
        self.live = bitset.full(n) if self.deleted is None else bitset.full(n) & ~self.deleted
        self.n_live = n if self.deleted is None else bitset.count(self.live)
        self._df: dict[int, int] = {}

    @property
    def n(self) -> int:
        return self.reader.n_docs

    def is_live(self, d: int) -> bool:
        return self.deleted is None or not bool(bitset.contains(self.deleted, np.array([d]))[0])

    @functools.cached_property
    def live_flags(self) -> np.ndarray:
        """The live documents as a boolean array over local numbers."""
        return bitset.to_bool(self.live, self.n)

    def text_df(self, tid: int) -> int:
        """Live documents with term `tid` in title, headings or body (BM25's df)."""
        r = self.reader
        if self.deleted is None:
            return int(r.text_df[tid])
        got = self._df.get(tid)
        # counted once per term: the segment is immutable, its deletions fixed for this snapshot
        if got is None:
            lo, hi = int(r.post_ptr[tid]), int(r.post_ptr[tid + 1])
            gone = self.deleted_ids
            if len(gone) * 16 < hi - lo:
                # Few deletions, a long list: find the deleted documents in it (binary search) and
                # subtract those the term counts for, instead of reading every posting.
                pdocs = r.post_doc[lo:hi]
                at = search_sorted(pdocs, gone)
                ok = at < hi - lo
                ok[ok] = pdocs[at[ok]] == gone[ok]
                got = int(r.text_df[tid]) - int(np.count_nonzero(r.text_tf(lo, hi, at[ok]) > 0))
            else:
                docs = np.asarray(r.post_doc[lo:hi])
                got = int(np.count_nonzero((r.text_tf(lo, hi) > 0) & self.live_flags[docs]))
            self._df[tid] = got
        return got

    @functools.cached_property
    def deleted_ids(self) -> np.ndarray:
        """The deleted documents' local numbers, ascending."""
        return (
            np.zeros(0, dtype=np.int64)
            if self.deleted is None
            else bitset.to_ids(self.deleted, self.n)
        )

    @functools.cached_property
    def live_len(self) -> int:
        """Total BM25 length (title, headings, body tokens) of the live documents."""
        lens = np.asarray(self.reader.doc_len).astype(np.int64)
        return int(lens.sum() if self.deleted is None else lens[self.live_flags].sum())


def _padded(n: int) -> int:
    return (n + 63) // 64 * 64


class Snapshot:
    """The segments of one commit point, opened; document-level reads by internal number."""

    def __init__(
        self, root: Path, gen: Path, verify: bool = False, shard: int | None = None
    ) -> None:
        """`shard`: of a sharded index, only that shard's segments (what one shard's server reads;
        its statistics are then the shard's own, not the collection's)."""
        self.root = root
        self.gen = gen
        self.manifest = m = commits.read_manifest(gen)
        segments: list[Segment] = []
        keys: list[np.ndarray] = []
        base = 0
        self.shards = 0  # a sharded index's shard count (its segments are grouped by shard)
        if m.get("kind") != COMMIT_KIND:  # format 2: the gen-N directory is its one segment
            segments.append(Segment(gen.name, SegmentReader(gen, verify=verify), 0, None))
        else:
            entries = m.get("segments")
            if not isinstance(entries, list) or not entries:
                raise IndexDamagedError(storage.MANIFEST, "lists no segments")
            self.shards = int(m.get("shards") or 0)
            if shard is not None and not 0 <= shard < self.shards:
                raise IndexDamagedError(
                    storage.MANIFEST, f"has no shard {shard} (it has {self.shards})"
                )
            for e in entries:
                if (
                    not isinstance(e, dict)
                    or not {"name", "documents", "manifest_crc32", "deletes"} <= e.keys()
                ):
                    raise IndexDamagedError(storage.MANIFEST, "has a malformed segment entry")
                if self.shards and (
                    not isinstance(e.get("shard"), int)
                    or not 0 <= e["shard"] < self.shards
                    or not isinstance(e.get("order"), dict)
                ):
                    raise IndexDamagedError(
                        storage.MANIFEST, f"segment {e['name']} names no shard or no order keys"
                    )
                if shard is not None and e["shard"] != shard:
                    continue
                where = root / str(e["name"])
                if manifest_crc(where) != e["manifest_crc32"]:
                    raise IndexDamagedError(
                        f"{e['name']}/{storage.MANIFEST}",
                        "is not the one this commit names (checksum mismatch)",
                    )
                reader = SegmentReader(
                    where, verify=verify, label=f"{e['name']}/" if len(entries) > 1 else ""
                )
                if reader.n_docs != e["documents"]:
                    raise IndexDamagedError(
                        f"{e['name']}/{storage.MANIFEST}",
                        f"has {reader.n_docs} documents, the commit says {e['documents']}",
                    )
                deleted = None
                if e["deletes"] is not None:
                    name = deletes_name(str(e["name"]))
                    deleted = storage.open_array(
                        gen / name, name, e["deletes"], verify=True
                    ).whole()
                    if len(deleted) != bitset.words(reader.n_docs):
                        raise IndexDamagedError(name, "length disagrees with its segment")
                if self.shards:
                    name = order_name(str(e["name"]))
                    key = storage.open_array(gen / name, name, e["order"], verify=True).whole()
                    if len(key) != reader.n_docs or (len(key) > 1 and not (np.diff(key) > 0).all()):
                        raise IndexDamagedError(
                            name, "does not give each document of its segment an ascending key"
                        )
                    keys.append(key)
                segments.append(Segment(str(e["name"]), reader, base, deleted))
                base += _padded(reader.n_docs)
        self.segments = segments
        self.analyzer = segments[0].reader.analyzer
        self.schema = segments[0].reader.schema  # the declared fields
        for seg in segments:
            # every writer takes the commit's analyzer: only damage or tampering does this
            if seg.reader.analyzer != self.analyzer:
                raise IndexDamagedError(
                    f"{seg.name}/{storage.MANIFEST}",
                    f"analyzer {seg.reader.analyzer.name} differs "
                    f"from the index's {self.analyzer.name}",
                )
            if seg.reader.schema != self.schema:
                raise IndexDamagedError(
                    f"{seg.name}/{storage.MANIFEST}", "its declared fields differ from the index's"
                )
        # internal numbers are 0 .. capacity - 1 (not all of them live)
        self.capacity = segments[-1].base + segments[-1].n
        self.n_live = sum(s.n_live for s in segments)
        self._bases = [s.base for s in segments]
        self.total_len = sum(s.live_len for s in segments)
        self.order: np.ndarray | None = None  # None: index order is ascending internal number
        if keys:
            # A sharded index: each document's position in the corpus it was cut from (numbers
            # between segments are never live; they sort last).
            order = np.full(self.capacity, np.iinfo(np.int64).max, dtype=np.int64)
            for seg, key in zip(segments, keys):
                order[seg.base : seg.base + seg.n] = key
            self.order = order

    # ------------------------------------------------------------ numbering

    @property
    def n_docs(self) -> int:
        """The size of the internal numbering (documents a bitset over this snapshot covers)."""
        return self.capacity

    @property
    def dense(self) -> bool:
        """Whether this is one segment with nothing deleted: its own statistics are the
        collection's, and every internal number is a live document."""
        return len(self.segments) == 1 and self.capacity == self.n_live

    def which(self, g: int) -> tuple[int, int]:
        """(segment's place in `segments`, local number) of internal number `g`."""
        # a list: np.searchsorted would convert it on every call
        j = bisect.bisect_right(self._bases, g) - 1
        return j, g - self._bases[j]

    def locate(self, g: int) -> tuple[Segment, int]:
        """(segment, local number) of internal number `g`."""
        j, d = self.which(g)
        return self.segments[j], d

    def join(self, bits: list[np.ndarray]) -> np.ndarray:
        """One bitset over the snapshot from each segment's bitset (bases are whole words apart)."""
        return bits[0] if len(bits) == 1 else np.concatenate(bits)

    @functools.cached_property
    def live_bits(self) -> np.ndarray:
        return self.join([s.live for s in self.segments])

    @functools.cached_property
    def live_ids(self) -> np.ndarray:
        """Every live document's internal number, ascending."""
        return bitset.to_ids(self.live_bits, self.capacity)

    def in_order(self, docs: np.ndarray) -> np.ndarray:
        """`docs` (internal numbers, ascending) in index order: the same, but in a sharded index
        (whose segments are grouped by shard) the order of the corpus the shards were cut from."""
        return docs if self.order is None else docs[np.argsort(self.order[docs], kind="stable")]

    # ------------------------------------------------------------ documents

    def doc_number(self, doc_id: str) -> int:
        """Internal number of the live document with this id, or -1."""
        for seg in reversed(self.segments):  # a replaced document's live copy is in a later segment
            d = seg.reader.doc_number(doc_id)
            if d >= 0 and seg.is_live(d):
                return seg.base + d
        return -1

    def doc_id(self, g: int) -> str:
        seg, d = self.locate(g)
        return seg.reader.doc_id(d)

    def doc_ids(self, gs: np.ndarray) -> list[str]:
        """The ids of internal numbers `gs` (a hit list's: one gather when there is one segment)."""
        if len(self.segments) == 1:
            return self.segments[0].reader.doc_ids(gs)
        if len(gs) < 2 * len(self.segments):
            return [self.doc_id(g) for g in gs.tolist()]
        # Each segment's share in one call (`gs` need not ascend: a sharded index's order).
        out = np.empty(len(gs), dtype=object)
        place = np.searchsorted(np.asarray(self._bases), gs, side="right") - 1
        for j, seg in enumerate(self.segments):
            at = np.flatnonzero(place == j)
            if len(at):
                out[at] = seg.reader.doc_ids(gs[at] - seg.base)
        return out.tolist()

    def meta(self, g: int) -> dict[str, Any]:
        seg, d = self.locate(g)
        return seg.reader.meta(d)

    def headings(self, g: int) -> tuple[str, ...]:
        seg, d = self.locate(g)
        return seg.reader.headings(d)

    def section_text(self, g: int, j: int) -> str:
        seg, d = self.locate(g)
        return seg.reader.section_text(d, j)

    def section_count(self, g: int) -> int:
        seg, d = self.locate(g)
        return seg.reader.section_count(d)

    def field_lengths(self) -> np.ndarray:
        """Tokens per field of every live document (rows in index order)."""
        parts = [
            np.asarray(s.reader.field_len)[s.live_flags if s.deleted is not None else slice(None)]
            for s in self.segments
        ]
        return parts[0] if len(parts) == 1 else np.concatenate(parts)

    def _live_postings(self, seg: Segment, a: int, b: int) -> bool:
        """Whether postings a..b of `seg` hold a live document."""
        if a >= b:
            return False
        return seg.deleted is None or bool(
            seg.live_flags[np.asarray(seg.reader.post_doc[a:b])].any()
        )

    def missing(self, leaf: Any) -> list[str]:
        """The words of a plan leaf (a prefix as `stem*`) that no live document has, in any field:
        what a fresh build of the live documents would not have in its dictionary."""
        if leaf.kind == "date":
            return []
        if leaf.kind == "prefix":
            stem = leaf.terms[0]
            for seg in self.segments:
                lo, hi = seg.reader.terms.prefix_range(stem.encode())
                if lo < hi and self._live_postings(
                    seg, int(seg.reader.post_ptr[lo]), int(seg.reader.post_ptr[hi])
                ):
                    return []
            return [shown_term(stem) + "*"]
        out = []
        for t in leaf.terms:
            for seg in self.segments:
                tid = seg.reader.term_id(t)
                if tid >= 0 and self._live_postings(
                    seg, int(seg.reader.post_ptr[tid]), int(seg.reader.post_ptr[tid + 1])
                ):
                    break
            else:
                out.append(shown_term(t))
        return out

    @property
    def avgdl(self) -> float:
        """Average BM25 length of the live documents (as a fresh build of them computes it)."""
        return self.total_len / self.n_live if self.n_live else 1.0

    def text_df(self, term_ids: list[int]) -> int:
        """Live documents holding a term, given its id in each segment (-1: absent there)."""
        return sum(s.text_df(t) for s, t in zip(self.segments, term_ids) if t >= 0)

    # ------------------------------------------------------------ files

    def files(self) -> list[tuple[Path, str, dict[str, int]]]:
        """(path, name for messages, manifest entry) of every array file of this snapshot."""
        listed = {e["name"]: e for e in self.manifest.get("segments", [])}
        out = []
        for s in self.segments:
            # Named as the reader's errors name them; with several segments, the segment says which.
            prefix = "" if len(self.segments) == 1 else f"{s.name}/"
            for name in s.reader.files:
                out.append((s.reader.dir / name, prefix + name, s.reader.manifest["files"][name]))
            entry = listed.get(s.name, {})  # format 2: no entries, and nothing deleted
            if s.deleted is not None:
                name = deletes_name(s.name)
                out.append((self.gen / name, name, entry["deletes"]))
            if self.order is not None:
                name = order_name(s.name)
                out.append((self.gen / name, name, entry["order"]))
        return out


def commit_body(
    analyzer: dict[str, Any], entries: list[dict[str, Any]], stats: dict[str, int]
) -> dict[str, Any]:
    """The manifest of a commit point listing `entries` (segment name, documents, manifest CRC,
    deletes); `analyzer`: its segments' analysis keys (`Analyzer.manifest_fields`,
    `Schema.manifest_fields`)."""
    return {
        "format": storage.FORMAT_NAME,
        "version": storage.FORMAT_VERSION,
        "kind": COMMIT_KIND,
        **analyzer,
        "segments": entries,
        "stats": stats,
    }


@dataclass
class CommitEntry:
    """One segment of a commit being written: where its files are now, its manifest, its
    deletions."""

    name: str
    dir: Path
    manifest: dict[str, Any]
    deleted: np.ndarray | None = None  # bitset of deleted local documents
    reader: SegmentReader | None = None  # open, when the segment is already part of the index
    new: bool = False  # written by this commit
    # more keys of its entry (a sharded index's shard and order keys)
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def documents(self) -> int:
        return int(self.manifest["stats"]["documents"])

    @property
    def n_deleted(self) -> int:
        return 0 if self.deleted is None else bitset.count(self.deleted)

    @property
    def live(self) -> int:
        return self.documents - self.n_deleted

    def dated(self) -> int:
        if self.deleted is None:
            return int(self.manifest["stats"].get("dated", 0))
        from sieve.engine.analysis.batch import NO_DATE

        reader = self.reader if self.reader is not None else SegmentReader(self.dir)
        return int(np.count_nonzero((np.asarray(reader.dates) != NO_DATE) & self.live_flags()))

    def live_flags(self) -> np.ndarray:
        """The live documents as a boolean array over local numbers."""
        return (
            bitset.to_bool(bitset.full(self.documents) & ~self.deleted, self.documents)
            if self.deleted is not None
            else np.ones(self.documents, dtype=bool)
        )

    @classmethod
    def of(cls, seg: Segment, deleted: np.ndarray | None) -> CommitEntry:
        """An existing segment as the next commit lists it, with `deleted` as its deletions."""
        return cls(seg.name, seg.reader.dir, seg.reader.manifest, deleted, seg.reader)


SUMMED_STATS = ("terms", "tokens", "postings", "units", "sections")


def write_commit(
    commit_dir: Path, entries: list[CommitEntry], extra: dict[str, Any] | None = None
) -> dict[str, Any]:
    """Write the commit point listing `entries` (in index order) and their deletion files;
    `extra`: more manifest keys (a build's source and skipped records)."""
    listed = []
    for e in entries:
        item: dict[str, Any] = {
            "name": e.name,
            "documents": e.documents,
            "manifest_crc32": manifest_crc(e.dir),
            "deletes": None,
            **e.extra,
        }
        if e.n_deleted:
            item["deletes"] = storage.write_array(commit_dir / deletes_name(e.name), e.deleted)
        listed.append(item)
    stats = {
        "documents": sum(e.live for e in entries),
        "deleted": sum(e.n_deleted for e in entries),
        "segments": len(entries),
        "dated": sum(e.dated() for e in entries),
    }
    for key in SUMMED_STATS:
        stats[key] = sum(int(e.manifest["stats"].get(key, 0)) for e in entries)
    analyzer: dict[str, Any] = {
        k: entries[0].manifest[k]
        for k in ("analyzer", "stopwords", "fields")
        if k in entries[0].manifest
    }
    body = {**commit_body(analyzer, listed, stats), **(extra or {})}
    if body.get("shards"):
        body["version"] = max(storage.FORMAT_VERSION, storage.SHARDED_VERSION)
    commits.write_manifest(commit_dir, body)
    return body
