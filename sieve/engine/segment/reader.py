"""An opened segment: memory-mapped arrays and the lookups the evaluator and rankers use."""

from __future__ import annotations

import bisect
import functools
import itertools
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from sieve.common import jsonio
from sieve.engine.analysis.analyzers import Analyzer
from sieve.engine.analysis.fields import ALL_MASK
from sieve.engine.analysis.schema import Schema
from sieve.engine.format import attributes, commits, docids, storage, weak
from sieve.engine.format.position_blocks import BlockPositions
from sieve.engine.format.positions import (
    BLOCK,
    BLOCK_FILES,
    EXCEPTION_FILES,
    PACKED_COLUMNS,
    PACKED_FILES,
    PACKED_FILES_ROWS,
    RAW_FILES,
    ROW_FILES,
    RawPositions,
)
from sieve.engine.format.store import CODEC, BlockReader, RawStream
from sieve.errors import IndexDamagedError, InvalidArgumentError

FILES = (
    "terms.blob.sva",
    "terms.off.sva",
    "post.ptr.sva",
    "pos.ptr.sva",
    "unit.start.sva",
    "unit.field.sva",
    "unit.section.sva",
    "doc.units.sva",
    "doc.date.sva",
    "doc.flen.sva",
    "doc.len.sva",
    "store.meta.sva",
    "store.meta.off.sva",
    "store.text.sva",
    "store.text.off.sva",
    "store.sections.sva",
    "ids.blob.sva",
    "ids.off.sva",
    "ids.doc.sva",
    "ids.rank.sva",
    "terms.df.sva",
)
# Written since format 4; a segment without them (format 2 or 3) has no dense rows and an
# uncompressed document store.
DENSE_FILES = ("post.bits.sva", "post.bits.ptr.sva", "post.bits.field.sva")
STORE_FILES = ("store.meta.blocks.sva", "store.text.blocks.sva")
# Written since format 6: the postings of terms with dense rows in their other fields. A segment
# without them reads all of such a term's postings when a leaf reaches past its rows.
REST_FILES = ("post.rest.ptr.sva", "post.rest.mask.sva")
# Written since sieve 0.2.0 (format 7 still: a reader without them reads the rows and postings
# instead and answers the same): for each frequent term, one bitset of its documents in any field.
ANY_FILES = ("post.any.sva", "post.any.terms.sva")
# Document ids of postings (`post.doc`) and of rest postings (`post.rest.doc`): split in two
# (sieve.engine.format.docids) since format 7, one raw int32 array (`{prefix}.sva`) before.
# Positions: in packed blocks since format 9, in blocks of whole widths since format 5, one raw
# array before. Postings' counts: two in a byte since format 9, a byte each before
# (sieve.engine.format.attributes). WRITTEN: what this version writes in a segment.
WRITTEN = (
    FILES
    + docids.files("post.doc")
    + DENSE_FILES
    + REST_FILES
    + ANY_FILES
    + docids.files("post.rest.doc")
    + STORE_FILES
    + attributes.PACKED_FILES
    + PACKED_FILES
)


def column_files(schema: Schema) -> tuple[str, ...]:
    """The files of a segment's declared-field columns
    (sieve.engine.segment.writer._put_columns)."""
    out: list[str] = []
    for i, (_, kind) in enumerate(schema.fields):
        if kind in ("number", "date"):
            out.append(f"col.{i}.sva")
        elif kind == "keyword":
            out += [f"col.{i}.{part}.sva" for part in ("blob", "off", "ptr", "ids")]
    return tuple(out)


def _id_files(prefix: str, files: dict[str, Any]) -> tuple[str, ...]:
    """The files that hold the document ids stored under `prefix` in a segment listing `files`."""
    return docids.files(prefix) if prefix + ".low.sva" in files else (prefix + ".sva",)


def search_sorted(arr: Any, values: Any, side: str = "left") -> np.ndarray:
    """`np.searchsorted` with the values cast to the array's dtype first.

    numpy otherwise casts the (memory-mapped, possibly huge) array to the values' dtype on every
    call, turning a binary search into a full copy. Values must fit the array's dtype.
    """
    # an ArrayFile is verified whole first: a binary search reads anywhere in it
    a = np.asarray(arr)
    return np.searchsorted(a, np.asarray(values).astype(a.dtype, copy=False), side=side)  # type: ignore[call-overload]


# Where a document's id is read from (its place in the sorted ids, their offsets, their bytes).
ID_FILES = ("ids.rank.sva", "ids.off.sva", "ids.blob.sva")
# From this many ids in one call a segment decodes all of its ids once (`SegmentReader.id_table`):
# a gather then costs ~10 ns an id against ~400 ns looked up one by one.
BULK_IDS = 256


class StringTable(Sequence[bytes]):
    """A sorted table of byte strings in one blob, searched by bisection without loading it.

    Every 64th entry is kept in memory, so a lookup bisects a Python list (in C) and then one
    block of at most 64 entries, instead of slicing the memory map at every bisection step.
    """

    BLOCK = 64

    def __init__(self, blob: np.ndarray, off: np.ndarray) -> None:
        # Memoryviews slice in a fraction of a numpy slice's time: a lookup makes two.
        self._blobv, self._offv = (
            memoryview(np.ascontiguousarray(blob)),
            memoryview(np.ascontiguousarray(off)),
        )
        self._n = len(off) - 1
        starts = off[: self._n : self.BLOCK].tolist()
        ends = off[1 : self._n + 1][:: self.BLOCK].tolist()
        raw = blob.tobytes() if len(starts) > 4096 else None  # one copy beats thousands of slices
        self._sample = [
            (raw[a:b] if raw is not None else blob[a:b].tobytes()) for a, b in zip(starts, ends)
        ]

    def __len__(self) -> int:
        return self._n

    def __getitem__(self, i: int) -> bytes:  # type: ignore[override]
        if not 0 <= i < self._n:
            raise IndexError(i)
        return self._blobv[self._offv[i] : self._offv[i + 1]].tobytes()

    def _block(self, key: bytes) -> tuple[int, list[int], bytes] | None:
        """(first entry, offsets, bytes) of the block that holds `key` if the table does; None
        when `key` sorts before every entry."""
        b = bisect.bisect_right(self._sample, key) - 1
        if b < 0:
            return None
        lo = b * self.BLOCK
        offs = self._offv[lo : min(lo + self.BLOCK, self._n) + 1].tolist()
        return lo, offs, self._blobv[offs[0] : offs[-1]].tobytes()

    def _bisect(self, key: bytes) -> int:
        """bisect_left of `key` over the whole table."""
        block = self._block(key)
        if block is None:
            return 0
        lo, offs, raw = block
        base = offs[0]
        # Six probes slice the block; cutting all of its 64 entries first cost more than the search.
        return lo + bisect.bisect_left(
            range(len(offs) - 1), key, key=lambda i: raw[offs[i] - base : offs[i + 1] - base]
        )

    def find(self, key: bytes) -> int:
        """Index of `key`, or -1."""
        if not key:
            i = self._bisect(key)
            return i if i < self._n and self[i] == key else -1
        block = self._block(key)
        if block is None:
            return -1
        lo, offs, raw = block
        # Entries are concatenated, so `key` may also occur inside or across entries: an occurrence
        # counts only where an entry of exactly its length starts (the last of the entries starting
        # there: any before it are empty).
        base, k = offs[0], len(key)
        o = raw.find(key)
        while o != -1:
            i = bisect.bisect_right(offs, base + o) - 1
            if offs[i] == base + o and i + 1 < len(offs) and offs[i + 1] == base + o + k:
                return lo + i
            o = raw.find(key, o + 1)
        return -1

    def prefix_range(self, prefix: bytes) -> tuple[int, int]:
        """[lo, hi) of the entries that start with `prefix`."""
        # 0xff never occurs in UTF-8, so prefix+0xff sorts after every extension of prefix.
        return self._bisect(prefix), self._bisect(prefix + b"\xff")


class SegmentReader:
    """Read-only view of one segment. Safe to share between threads: nothing here mutates."""

    def __init__(self, seg_dir: Path, verify: bool = False, label: str = "") -> None:
        """`label`: prefixed to file names in errors (a segment's name, in an index of several)."""
        self.dir = seg_dir
        self.label = label
        try:
            self.manifest = m = commits.read_manifest(seg_dir)
        except IndexDamagedError as e:
            raise IndexDamagedError(label + e.file, e.reason) from None
        self.analyzer = Analyzer.of_manifest(m, str(seg_dir))
        try:
            self.schema = Schema.of_manifest(m)
        except InvalidArgumentError as e:
            raise IndexDamagedError(
                label + storage.MANIFEST, f"its declared fields are not valid ({e})"
            ) from None
        files = m.get("files")
        if not isinstance(files, dict):
            raise IndexDamagedError(label + storage.MANIFEST, "has no file list")
        a: dict[str, storage.ArrayFile] = {}
        names = (
            FILES
            + _id_files("post.doc", files)
            + tuple(
                n
                for group in (DENSE_FILES, REST_FILES, ANY_FILES)
                if any(n in files for n in group)
                for n in group
            )
        )
        if any(n in files for n in REST_FILES):
            names += _id_files("post.rest.doc", files)
        names += STORE_FILES if any(n in files for n in STORE_FILES) else ()
        names += attributes.PACKED_FILES if "post.tfs.sva" in files else attributes.BYTE_FILES
        names += (
            PACKED_FILES
            if EXCEPTION_FILES[0] in files
            else BLOCK_FILES
            if any(n in files for n in BLOCK_FILES)
            else RAW_FILES
        )
        names += column_files(self.schema)
        for name in names:
            entry = files.get(name)
            if not isinstance(entry, dict) or not {"size", "crc32"} <= entry.keys():
                raise IndexDamagedError(label + name, "not listed in the manifest")
            a[name] = storage.open_array(seg_dir / name, label + name, entry, verify=verify)
        self.n_docs = int(m["stats"]["documents"])
        # The tables sample every 64th entry when opened: verified whole, then read as plain arrays.
        self.terms = StringTable(a["terms.blob.sva"].whole(), a["terms.off.sva"].whole())
        self.text_df = a["terms.df.sva"]  # documents with the term in title, headings or body
        self.post_ptr, self.post_doc = a["post.ptr.sva"], self._ids(a, "post.doc")
        self.attrs = attributes.Attributes(a)  # each posting's field mask and counts
        self.pos_ptr = a["pos.ptr.sva"]
        self.unit_start, self.unit_field, self.unit_section = (
            a["unit.start.sva"],
            a["unit.field.sva"],
            a["unit.section.sva"],
        )
        self.doc_units, self.dates, self.field_len, self.doc_len = (
            a["doc.units.sva"],
            a["doc.date.sva"],
            a["doc.flen.sva"],
            a["doc.len.sva"],
        )
        self.meta_blob, self.meta_off = a["store.meta.sva"], a["store.meta.off.sva"]
        self.text_blob, self.text_off, self.doc_sections = (
            a["store.text.sva"],
            a["store.text.off.sva"],
            a["store.sections.sva"],
        )
        self.ids = StringTable(a["ids.blob.sva"].whole(), a["ids.off.sva"].whole())
        self.id_doc, self.id_rank = a["ids.doc.sva"], a["ids.rank.sva"]
        # Frequent (term, field) pairs as bitsets: term t's rows are
        # dense[dense_ptr[t]:dense_ptr[t + 1]], row i holding the documents with the term in field
        # dense_field[i]. None: no such rows.
        self.dense_ptr = self.dense = self.dense_field = None
        if "post.bits.sva" in a:
            self.dense, self.dense_ptr, self.dense_field = (
                a["post.bits.sva"],
                a["post.bits.ptr.sva"].whole(),
                a["post.bits.field.sva"].whole(),
            )
        # A term with rows: its postings in the fields without rows are rest_doc/rest_mask (masks
        # of those fields only) from rest_ptr[dense_ptr[t]] to rest_ptr[dense_ptr[t + 1]]. None:
        # a segment written before format 6, whose leaves read all the postings instead.
        self.rest_ptr = self.rest_doc = self.rest_mask = None
        if "post.rest.ptr.sva" in a:
            self.rest_ptr, self.rest_doc, self.rest_mask = (
                a["post.rest.ptr.sva"].whole(),
                self._ids(a, "post.rest.doc"),
                a["post.rest.mask.sva"],
            )
        # A term's row of documents in any field: any[i] for the term any_terms[i] (ascending).
        # None: a segment written before them.
        self.any = self.any_terms = None
        self._any_row: dict[int, int] = {}
        if "post.any.sva" in a:
            self.any, self.any_terms = a["post.any.sva"], a["post.any.terms.sva"].whole()
            # a few hundred a segment
            self._any_row = {t: i for i, t in enumerate(self.any_terms.tolist())}
        self.files = a
        self._columns = a
        self._keyword_tables: dict[int, tuple[StringTable, np.ndarray]] = {}
        if "pos.data.sva" in a:
            self.pos: RawPositions | BlockPositions = RawPositions(
                a["pos.ptr.sva"], a["pos.data.sva"]
            )
        else:
            packed = EXCEPTION_FILES[0] in a
            exceptions = None
            if packed:
                e0, e1, e2 = EXCEPTION_FILES
                exceptions = (a[e0], a[e1], a[e2])
            self.pos = BlockPositions(
                a["pos.ptr.sva"],
                a["pos.blocks.ptr.sva"],
                a["pos.first.sva"],
                a["pos.dir.sva"],
                tuple(a[n] for n in (PACKED_FILES_ROWS if packed else ROW_FILES)),
                a["pos.tail.sva"],
                int(m["stats"]["tokens"]),
                exceptions,
            )
        # Hot tables are read through their wrappers until every block is verified, then directly.
        for attr, name in (
            ("text_df", "terms.df.sva"),
            ("post_ptr", "post.ptr.sva"),
            ("pos_ptr", "pos.ptr.sva"),
            ("unit_start", "unit.start.sva"),
            ("unit_field", "unit.field.sva"),
            ("unit_section", "unit.section.sva"),
            ("doc_units", "doc.units.sva"),
            ("dates", "doc.date.sva"),
            ("doc_len", "doc.len.sva"),
            ("id_doc", "ids.doc.sva"),
            ("id_rank", "ids.rank.sva"),
            ("doc_sections", "store.sections.sva"),
        ):
            if not a[name].verified:
                a[name].on_verified = weak.setter(self, attr)
            else:  # verified when opened (small, or verify=True)
                setattr(self, attr, a[name].a)
        # the positions read the pointer table too: hand them the plain array as well
        if not a["pos.ptr.sva"].verified:
            a["pos.ptr.sva"].on_verified = weak.method_callback(self, "_pos_ptr_verified")
        else:
            self.pos.ptr = self.pos_ptr
        self._check_shapes()
        # One query looks each term up three times (filter, scorer, explanation) and agents repeat
        # words across queries; the table is immutable, so a bounded cache is always right.
        self.term_id = weak.cached_method(self, "_term_id", 1 << 16)
        # Every hit needs its headings (matched sections by name, card outlines, one section's
        # read); a tuple is immutable, so sharing it between callers is safe.
        self.headings = weak.cached_method(self, "_headings", 1 << 13)

    def _ids(self, a: dict[str, storage.ArrayFile], prefix: str) -> Any:
        """The document ids under `prefix`: sliced as an int array either way (`ids[lo:hi]`)."""
        if prefix + ".sva" in a:
            return a[prefix + ".sva"]
        low, runs, high = docids.files(prefix)
        return docids.SplitIds(a[low], a[runs], a[high], self.n_docs, self.label + runs)

    def post_docs_at(self, at: np.ndarray) -> np.ndarray:
        """The documents of postings `at` (ascending, int64): `post_doc[a:b]` picked, without the
        slice."""
        if isinstance(self.post_doc, docids.SplitIds):
            return self.post_doc.take(at)
        return np.asarray(self.post_doc[at]).astype(np.intp)

    def check_values(self) -> None:
        """The checks opening leaves to first use (the document ids' run tables, by value);
        raises IndexDamagedError."""
        for ids in (self.post_doc, self.rest_doc):
            if isinstance(ids, docids.SplitIds):
                ids.tables()

    def _pos_ptr_verified(self, arr: np.ndarray) -> None:
        self.pos_ptr = self.pos.ptr = arr

    def _check_shapes(self) -> None:
        n, t = self.n_docs, len(self.terms)
        checks = [
            ("post.ptr.sva", len(self.post_ptr) == t + 1),
            ("terms.df.sva", len(self.text_df) == t),
            ("pos.ptr.sva", len(self.pos_ptr) == t + 1),
            ("post.mask.sva", len(self.attrs) == len(self.post_doc)),
            (
                "post.tfs.sva" if self.attrs.packed is not None else "post.tf.sva",
                self.attrs.agree(),
            ),
            ("doc.units.sva", len(self.doc_units) == n + 1),
            ("doc.date.sva", len(self.dates) == n),
            ("doc.len.sva", len(self.doc_len) == n),
            ("store.meta.off.sva", len(self.meta_off) == n + 1),
            ("store.sections.sva", len(self.doc_sections) == n + 1),
            ("ids.doc.sva", len(self.id_doc) == n),
            ("ids.rank.sva", len(self.id_rank) == n),
            ("ids.off.sva", len(self.ids) == n),
            ("unit.field.sva", len(self.unit_field) == len(self.unit_start)),
            ("unit.section.sva", len(self.unit_section) == len(self.unit_start)),
        ]
        if isinstance(self.pos, BlockPositions):
            # Lengths only (every token has one position): no table is read before a query needs it.
            p, tokens = self.pos, int(self.manifest["stats"]["tokens"])
            checks += [
                ("pos.blocks.ptr.sva", len(p.blocks_ptr) == t + 1),
                ("pos.dir.sva", len(p.dir) == len(p.first)),
                ("pos.tail.sva", len(p.tail) + BLOCK * len(p.first) == tokens),
            ]
            if p.exceptions is None:
                checks += [
                    (name, r.ndim == 2 and (r.shape[0] == 0 or r.shape[1] == BLOCK - 1))
                    for name, r in zip(ROW_FILES, p.rows)
                ]
            else:
                checks += [
                    (name, r.ndim == 2 and (r.shape[0] == 0 or r.shape[1] == cols))
                    for name, r, cols in zip(PACKED_FILES_ROWS, p.rows, PACKED_COLUMNS)
                ]
                ptr, at, val = p.exceptions
                checks += [
                    ("pos.exc.ptr.sva", len(ptr) == len(p.first) + 1),
                    ("pos.exc.val.sva", len(val) == len(at)),
                ]
        if self.dense is not None:
            # set together (opening, not a hot path)
            assert self.dense_ptr is not None and self.dense_field is not None
            rows = len(self.dense_field)
            checks += [
                (
                    "post.bits.ptr.sva",
                    len(self.dense_ptr) == t + 1
                    and int(self.dense_ptr[-1]) == rows
                    and bool(np.all(np.diff(self.dense_ptr.astype(np.int64)) >= 0)),
                ),
                (
                    "post.bits.sva",
                    len(self.dense) == rows
                    and (rows == 0 or self.dense.shape[1] == (n + 63) // 64),
                ),
                ("post.bits.field.sva", bool(np.all(self.dense_field < 8))),
            ]
        if self.any is not None:
            assert self.any_terms is not None  # set together
            rows = len(self.any_terms)
            checks += [
                (
                    "post.any.sva",
                    len(self.any) == rows and (rows == 0 or self.any.shape[1] == (n + 63) // 64),
                ),
                (
                    "post.any.terms.sva",
                    rows == 0
                    or (
                        int(self.any_terms[-1]) < t
                        and bool(np.all(np.diff(self.any_terms.astype(np.int64)) > 0))
                    ),
                ),
            ]
        for prefix, ids in (("post.doc", self.post_doc), ("post.rest.doc", self.rest_doc)):
            if isinstance(ids, docids.SplitIds):
                checks.append((prefix + ".runs.sva", ids.tables_agree()))
        if self.rest_ptr is not None:
            assert self.rest_doc is not None and self.rest_mask is not None  # set together
            ends = self.rest_ptr.astype(np.int64)
            checks += [
                (
                    "post.rest.ptr.sva",
                    self.dense is not None
                    and len(ends) == len(self.dense_field) + 1
                    and int(ends[0]) == 0
                    and int(ends[-1]) == len(self.rest_doc)
                    and bool(np.all(np.diff(ends) >= 0)),
                ),
                ("post.rest.mask.sva", len(self.rest_mask) == len(self.rest_doc)),
            ]
        for name, ok in checks:
            if not ok:
                raise IndexDamagedError(self.label + name, "length disagrees with the other files")

    # ------------------------------------------------------------ terms and postings

    def _term_id(self, term: str) -> int:
        return self.terms.find(term.encode())

    @functools.cached_property
    def fields_present(self) -> int:
        """The posting mask bits of the built-in fields that hold a term in some document: no
        posting, and no unit of a built-in term, has another field's bit. Read from the field
        lengths at first use (1 MB at 100,000 documents)."""
        flen = np.asarray(self.field_len)
        used = (
            flen.any(axis=0)
            if len(flen)
            else np.zeros(flen.shape[1] if flen.ndim == 2 else 0, dtype=bool)
        )
        return sum(1 << i for i, u in enumerate(used.tolist()) if u)

    def left_out(self, fmask: int) -> int:
        """The fields this segment has that the scope `fmask` leaves out: the postings (and units)
        to filter away. 0 for a scope that takes every field there is (`word[title,section,body]`
        in a segment with no author or infobox values), which filters nothing."""
        return ALL_MASK & ~fmask & self.fields_present

    def any_row(self, tid: int) -> np.ndarray | None:
        """The bitset of every document holding term `tid` in any field, where the segment stores
        one (frequent terms whose documents no single field row holds); else None."""
        i = self._any_row.get(tid)
        return None if i is None else self.any[i]  # type: ignore[index]

    def postings(self, tid: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(documents, field masks, term frequencies) of one term, by ascending document."""
        lo, hi = int(self.post_ptr[tid]), int(self.post_ptr[tid + 1])
        return self.post_doc[lo:hi], self.attrs.masks(lo, hi), self.tf(lo, hi)

    def tf(self, lo: int, hi: int, sel: np.ndarray | None = None) -> np.ndarray:
        """Term frequencies (int64) of postings lo..hi (or lo + sel, sel ascending)."""
        return self.attrs.tf(lo, hi, sel)

    def text_tf(
        self, lo: int, hi: int, sel: np.ndarray | None = None, dtype: Any = np.int64
    ) -> np.ndarray:
        """Term frequencies in title, headings and body only (what BM25 counts), int64 or
        `dtype`."""
        return self.attrs.text_tf(lo, hi, sel, dtype)

    def position_count(self, tid: int) -> int:
        """Positions of a term (0 for -1: not in the index)."""
        return int(self.pos_ptr[tid + 1] - self.pos_ptr[tid]) if tid >= 0 else 0

    def positions(self, tid: int) -> np.ndarray:
        """Every position of a term, ascending (index dtype)."""
        return self.pos.all(tid)

    def column_filter(self, name: str, lo: Any, hi: Any) -> np.ndarray:
        """Documents (a bool per document) whose declared field `name` is within [lo, hi] (None:
        open end); for a keyword field, `lo` is the value (folded) and `hi` unused."""
        i = self.schema.number_of(name)
        kind = self.schema.fields[i][1]
        if kind != "keyword":
            col = np.asarray(self._columns[f"col.{i}.sva"].whole())
            keep = ~np.isnan(col) if kind == "number" else col != -1
            if lo is not None:
                keep &= col >= lo
            if hi is not None:
                keep &= col <= hi
            return keep
        values, owner = self._keywords(i)
        keep = np.zeros(self.n_docs, dtype=bool)
        j = values.find(lo.encode())
        if j >= 0:
            keep[owner[np.asarray(self._columns[f"col.{i}.ids.sva"].whole()) == j]] = True
        return keep

    def _keywords(self, i: int) -> tuple[StringTable, np.ndarray]:
        """A keyword field's value table, and the document of each stored value (made once per
        reader: the column is immutable, and expanding its pointers cost more than the filter)."""
        found = self._keyword_tables.get(i)
        if found is None:
            values = StringTable(
                self._columns[f"col.{i}.blob.sva"].whole(),
                self._columns[f"col.{i}.off.sva"].whole(),
            )
            ptr = np.asarray(self._columns[f"col.{i}.ptr.sva"].whole(), dtype=np.int64)
            found = self._keyword_tables[i] = (
                values,
                np.repeat(np.arange(self.n_docs, dtype=np.int32), np.diff(ptr)),
            )
        return found

    def units_of(self, positions: np.ndarray) -> np.ndarray:
        return search_sorted(self.unit_start, positions, side="right") - 1

    def unit_ends(self, units: np.ndarray) -> np.ndarray:
        """Where each unit ends (int64, exclusive): the next unit's first position, or past every
        position for the last unit."""
        start = self.unit_start
        after = np.minimum(units + 1, len(start) - 1)
        return np.where(after == units, np.int64(2**62), start[after].astype(np.int64))

    def in_units(self, units: np.ndarray, positions: np.ndarray) -> np.ndarray:
        """Whether each of `positions` lies in unit `units[i]` (the units of other positions
        nearby): gathers from the unit table instead of a second binary search in it."""
        return (positions >= self.unit_start[units]) & (positions < self.unit_ends(units))

    def within_units(self, starts: np.ndarray, offsets: tuple[int, ...]) -> np.ndarray:
        """Which phrase `starts` have all of the phrase's `offsets` in one unit. A phrase without a
        gap always does (the unused position after every unit breaks it, so nothing is computed);
        one with a stop word inside spans more, and could otherwise join the end of one unit to
        the start of the next."""
        span = offsets[-1] if offsets else 0
        if span <= len(offsets) - 1 or not len(starts):
            return np.ones(len(starts), dtype=bool)
        return self.in_units(self.units_of(starts), starts.astype(np.int64) + span)

    def docs_of_units(self, units: np.ndarray) -> np.ndarray:
        return search_sorted(self.doc_units, units, side="right") - 1

    # ------------------------------------------------------------ documents

    def doc_number(self, doc_id: str) -> int:
        """Internal number of a document id, or -1."""
        # ids are valid Unicode: a surrogate finds none
        i = self.ids.find(doc_id.encode("utf-8", "surrogatepass"))
        return int(self.id_doc[i]) if i >= 0 else -1

    def doc_id(self, d: int) -> str:
        try:
            return self.ids[int(self.id_rank[d])].decode()
        except (IndexError, UnicodeDecodeError):
            raise self.damaged(ID_FILES, f"id of document {d} is unreadable") from None

    def doc_ids(self, docs: np.ndarray) -> list[str]:
        """The ids of documents `docs` (an int array): a few looked up one by one, many (or any
        once `id_table` is made) by one gather from every id decoded."""
        if len(docs) >= BULK_IDS or "id_table" in self.__dict__:
            return self.id_table[docs].tolist()
        ids = self.ids
        try:
            return [ids[i].decode() for i in np.asarray(self.id_rank[docs]).tolist()]
        except (IndexError, UnicodeDecodeError):
            raise self.damaged(ID_FILES, "an id of the documents asked for is unreadable") from None

    @functools.cached_property
    def id_table(self) -> np.ndarray:
        """Every document's id by document number (an object array of str), decoded once when a
        call first asks for many: `match(q).ids` then costs a gather, not a lookup per id (about
        70 bytes an id, kept while the segment is open)."""
        off = np.asarray(self.ids._offv).astype(np.int64).tolist()
        raw = self.ids._blobv.tobytes()
        try:
            if raw.isascii():  # one decode, then str slices (a character is a byte)
                text = raw.decode()
                sorted_ids = [text[a:b] for a, b in itertools.pairwise(off)]
            else:
                sorted_ids = [raw[a:b].decode() for a, b in itertools.pairwise(off)]
        except UnicodeDecodeError:
            raise self.damaged(ID_FILES, "an id is unreadable") from None
        rank = np.asarray(self.id_rank)
        if len(rank) and (int(rank.min()) < 0 or int(rank.max()) >= len(sorted_ids)):
            raise self.damaged(ID_FILES, "an id's place in the sorted ids is out of range")
        table = np.empty(len(sorted_ids), dtype=object)
        table[:] = sorted_ids
        return table[rank]

    def meta(self, d: int) -> dict[str, Any]:
        raw = self._meta.read(int(self.meta_off[d]), int(self.meta_off[d + 1]))
        try:
            return jsonio.loads(raw)
        except (ValueError, UnicodeDecodeError):
            raise self.damaged(
                ("store.meta.off.sva", "store.meta.sva"), f"record of document {d} is unreadable"
            ) from None

    # The store's streams, compressed in blocks (format 4) or not: opened on first read, which
    # checks each block table against its offsets.
    @functools.cached_property
    def _meta(self) -> BlockReader | RawStream:
        return self._stream("store.meta", self.meta_off)

    @functools.cached_property
    def _text(self) -> BlockReader | RawStream:
        return self._stream("store.text", self.text_off)

    def _stream(self, name: str, offsets: storage.ArrayFile) -> BlockReader | RawStream:
        blob = self.files[f"{name}.sva"]
        if f"{name}.blocks.sva" not in self.files:
            return RawStream(blob)
        spec = self.manifest.get("store_blocks", {}).get(name)
        shift = spec.get("shift") if isinstance(spec, dict) else None
        if not isinstance(shift, int) or not 8 <= shift <= 24:
            raise IndexDamagedError(
                self.label + storage.MANIFEST, f"no valid block size for {name}"
            )
        if spec.get("codec") != CODEC:
            raise IndexDamagedError(
                self.label + storage.MANIFEST,
                f"{name}: unknown codec {spec.get('codec')!r} (written by a newer sieve?)",
            )
        return BlockReader(
            blob,
            self.files[f"{name}.blocks.sva"].whole(),
            int(offsets[-1]),
            self.label + f"{name}.sva",
            shift,
        )

    def _headings(self, d: int) -> tuple[str, ...]:
        return tuple(self.meta(d)["headings"])

    def section_text(self, d: int, j: int) -> str:
        k = int(self.doc_sections[d]) + j
        raw = self._text.read(int(self.text_off[k]), int(self.text_off[k + 1]))
        try:
            return raw.decode()
        except UnicodeDecodeError:
            raise self.damaged(
                ("store.sections.sva", "store.text.off.sva", "store.text.sva"),
                f"section {j} of document {d} is unreadable",
            ) from None

    def damaged(self, names: tuple[str, ...], reason: str) -> IndexDamagedError:
        """The error for a record that cannot be read from `names` (its offsets first, its blob
        last): the first of those files that fails its checksum, else the last one with `reason`."""
        for name in names:
            try:
                storage.verify_array(
                    self.dir / name, self.label + name, self.manifest["files"][name]
                )
            except IndexDamagedError as e:
                return e
        return IndexDamagedError(self.label + names[-1], reason)

    def section_count(self, d: int) -> int:
        return int(self.doc_sections[d + 1] - self.doc_sections[d])
