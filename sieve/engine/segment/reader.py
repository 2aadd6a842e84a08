"""An opened segment: memory-mapped arrays and the lookups the evaluator and rankers use."""

from __future__ import annotations

import functools
import itertools
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
    BLOCK_FILES,
    EXCEPTION_FILES,
    PACKED_FILES,
    PACKED_FILES_ROWS,
    RAW_FILES,
    ROW_FILES,
    RawPositions,
)
from sieve.engine.format.store import CODEC, BlockReader, RawStream
from sieve.engine.format.strings import StringTable
from sieve.engine.segment.files import (
    ANY_FILES,
    DENSE_FILES,
    FILES,
    ID_FILES,
    REST_FILES,
    STORE_FILES,
    column_files,
    id_files,
)
from sieve.engine.segment.shapes import check_shapes
from sieve.errors import IndexDamagedError, InvalidArgumentError


def search_sorted(arr: Any, values: Any, side: str = "left") -> np.ndarray:
    """`np.searchsorted` with the values cast to the array's dtype first.

    numpy otherwise casts the (memory-mapped, possibly huge) array to the values' dtype on every
    call, turning a binary search into a full copy. Values must fit the array's dtype.
    """
    # an ArrayFile is verified whole first: a binary search reads anywhere in it
    a = np.asarray(arr)
    return np.searchsorted(a, np.asarray(values).astype(a.dtype, copy=False), side=side)  # type: ignore[call-overload]


# From this many ids in one call a segment decodes all of its ids once (`SegmentReader.id_table`):
# a gather then costs ~10 ns an id against ~400 ns looked up one by one.
BULK_IDS = 256


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
            + id_files("post.doc", files)
            + tuple(
                n
                for group in (DENSE_FILES, REST_FILES, ANY_FILES)
                if any(n in files for n in group)
                for n in group
            )
        )
        if any(n in files for n in REST_FILES):
            names += id_files("post.rest.doc", files)
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
        check_shapes(self)
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
        # the verified array takes the lazy file's place, as the readers index both alike
        self.pos_ptr = self.pos.ptr = arr  # type: ignore[assignment]

    # ------------------------------------------------------------ terms and postings

    def _term_id(self, term: str) -> int:
        return self.terms.find(term.encode())

    @functools.cached_property
    def fields_present(self) -> int:
        """The posting mask bits of the built-in fields that hold a term in some document: no
        posting, and no unit of a built-in term, has another field's bit. Read from the field
        lengths at first use (1 MB at 100,000 documents)."""
        flen = np.asarray(self.field_len)
        used = np.asarray(
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
