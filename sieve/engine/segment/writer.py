"""Building an index: analyse documents into a token stream, then sort it into postings on disk.

Positions are global: every unit (title, one author name, one infobox value, one heading, one
section text) occupies consecutive positions followed by one unused gap position, so adjacent
positions never straddle two units and a phrase can never span two sections. A stop word takes its
position in the stream and is then left out: it has no postings and does not count in a field's
length (BM25's), as in Lucene.
"""

from __future__ import annotations

import shutil
from array import array
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from sieve.engine.analysis.analyzers import PLAIN, STOP, Analyzer
from sieve.engine.analysis.batch import NO_DATE, AnalyzedBatch
from sieve.engine.analysis.fields import Field
from sieve.engine.analysis.schema import NO_FIELDS, Schema
from sieve.engine.analysis.vocabulary import Vocabulary
from sieve.engine.format import attributes, commits, docids, storage
from sieve.engine.format.positions import PositionsWriter
from sieve.engine.format.store import CODEC, SHIFTS, BlockWriter
from sieve.engine.segment.pages import small_pages
from sieve.engine.segment.rows import put_rows
from sieve.engine.segment.runs import Postings, Runs, by_key, key_start_near_middle, postings

N_FIELDS = len(Field)


DEFAULT_MEMORY_MB = 1024
# Bytes the sort of one buffered token needs at its peak (the stream, the sort order, positions,
# units, and the sorted copies): the buffer is spilled
# as a run before the sort would pass the budget.
BYTES_PER_TOKEN = 48
# Peak bytes per document and per unit of a segment's tables when it is written: Python id strings,
# their encoded copies and sort order, offsets; unit starts, documents and fields as int64.
BYTES_PER_DOCUMENT = 320
BYTES_PER_UNIT = 48


def _write_positions(
    writer: PositionsWriter, values: np.ndarray, counts: np.ndarray
) -> dict[str, dict[str, int]]:
    """Every term's positions (`counts[i]` each) into `writer`'s files; their manifest entries."""
    writer.append(values, counts)
    return writer.close()


class SegmentWriter:
    """Assembles analysed batches in document order, then `finish()` writes one segment.

    The token stream is buffered until it would need more than `memory_mb` to sort; then it is
    sorted into a run on disk (sieve.engine.segment.runs) and the buffer starts again. `finish()`
    sorts a build that never spilled in memory, and merges the runs of one that did: the files are
    the same.
    """

    def __init__(
        self,
        seg_dir: Path,
        memory_mb: int = DEFAULT_MEMORY_MB,
        analyzer: Analyzer = PLAIN,
        schema: Schema = NO_FIELDS,
    ) -> None:
        """`analyzer`: the one that analysed the batches (recorded in the manifest; queries use it);
        `schema`: the declared fields whose columns the batches carry."""
        self.dir = seg_dir
        self.analyzer = analyzer
        self.schema = schema
        self._new_columns()
        self.max_tokens = max(1, memory_mb * (1 << 20) // BYTES_PER_TOKEN)
        self.runs = Runs(seg_dir / ".runs")
        self.spilled_tokens = 0  # tokens already sorted into runs
        self.spilled_units = 0  # units whose tokens are all in runs
        self.vocab = Vocabulary()
        self._remaps: dict[Any, array] = {}  # analyser -> its local term id -> our term id
        self.tokens = array("i")  # term ids (first-seen numbering), in stream order
        self.unit_len = array("i")
        self.unit_field = array("b")
        self.unit_section = array("i")
        self.unit_stops = array("i")  # stop words per unit (only with a stop list)
        self.doc_units = array("q", [0])
        self.dates = array("i")
        self.ids: list[str] = []
        self.entries: dict[str, dict[str, int]] = {}
        self.meta = BlockWriter(seg_dir, "store.meta")
        self.meta_off = array("q", [0])
        self.text = BlockWriter(seg_dir, "store.text")
        self.text_off = array("q", [0])
        self.doc_sections = array("q", [0])
        self.bytes_in = 0

    @property
    def documents(self) -> int:
        return len(self.ids)

    def table_bytes(self) -> int:
        """What writing this segment's per-document and per-unit tables will take at its peak
        (the id sort, offsets, unit starts and their temporaries; measured, bench_scale)."""
        return BYTES_PER_DOCUMENT * len(self.ids) + BYTES_PER_UNIT * len(self.unit_len)

    def _new_columns(self) -> None:
        # number: float64, date: int32 per document; keyword: a count per document and the values
        self.columns: list[Any] = [
            array("d")
            if k == "number"
            else array("i")
            if k == "date"
            else (array("i"), [])
            if k == "keyword"
            else None
            for _, k in self.schema.fields
        ]

    def release(self) -> None:
        """Drop the tables of a finished writer (its vocabulary stays, for `continue_from`)."""
        self._new_columns()
        self.ids = []
        self.tokens, self.unit_len, self.unit_field, self.unit_section, self.unit_stops = (
            array("i"),
            array("i"),
            array("b"),
            array("i"),
            array("i"),
        )
        self.doc_units, self.dates, self.meta_off, self.text_off, self.doc_sections = (
            array("q", [0]),
            array("i"),
            array("q", [0]),
            array("q", [0]),
            array("q", [0]),
        )

    def continue_from(self, earlier: SegmentWriter) -> None:
        """Take batches whose term ids are numbered by the analysers that fed `earlier` (the
        writer of the previous segment of the same build): seed each one's id map."""
        terms = list(earlier.vocab.ids)
        for key, remap in earlier._remaps.items():
            self._remaps[key] = array(
                "i", map(self.vocab.ids.__getitem__, (terms[t] for t in remap))
            )

    def add_batch(self, batch: AnalyzedBatch, analyser: Any = None) -> None:
        """Append a batch whose term ids come from `analyser`'s vocabulary (any hashable key)."""
        remap = self._remaps.setdefault(analyser, array("i"))
        if batch.new_terms:
            remap.extend(map(self.vocab.ids.__getitem__, batch.new_terms))
        local = np.frombuffer(remap, dtype=np.int32)
        self.tokens.frombytes(local[batch.tokens].tobytes())
        self.unit_len.frombytes(batch.unit_len.tobytes())
        self.unit_field.frombytes(batch.unit_field.tobytes())
        self.unit_section.frombytes(batch.unit_section.tobytes())
        if self.analyzer.stopwords:
            stops = (
                batch.unit_stops
                if batch.unit_stops is not None
                else np.zeros(len(batch.unit_len), np.int32)
            )
            self.unit_stops.frombytes(stops.astype(np.int32).tobytes())
        self.doc_units.frombytes(
            (self.doc_units[-1] + np.cumsum(batch.units)).astype(np.int64).tobytes()
        )
        self.dates.frombytes(batch.dates.tobytes())
        for col, values in zip(self.columns, batch.columns):
            if col is None:  # a text field: its words are in the token stream
                continue
            if isinstance(col, tuple):
                col[0].extend(map(len, values))
                col[1].extend(v for vs in values for v in vs)
            else:
                col.frombytes(values.tobytes())
        self.ids.extend(batch.ids)
        self.meta.append(batch.meta)
        self.meta_off.frombytes(
            (self.meta_off[-1] + np.cumsum(batch.meta_len)).astype(np.int64).tobytes()
        )
        self.text.append(batch.text)
        self.text_off.frombytes(
            (self.text_off[-1] + np.cumsum(batch.text_len)).astype(np.int64).tobytes()
        )
        self.doc_sections.frombytes(
            (self.doc_sections[-1] + np.cumsum(batch.sections)).astype(np.int64).tobytes()
        )
        self.bytes_in += len(batch.meta) + len(batch.text)
        if len(self.tokens) >= self.max_tokens:
            self._spill()

    def _unit_tables(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(unit_len, unit_doc, unit_field) of every unit so far."""
        unit_len = np.frombuffer(self.unit_len, dtype=np.int32)
        doc_units = np.frombuffer(self.doc_units, dtype=np.int64)
        unit_doc = np.repeat(np.arange(len(doc_units) - 1, dtype=np.int32), np.diff(doc_units))
        return unit_len, unit_doc, np.frombuffer(self.unit_field, dtype=np.int8).astype(np.uint8)

    def _buffered(self, unit_len: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray | int]:
        """(term ids, unit, position) of the buffered tokens that are indexed (not stop words).
        Without stop words the positions are given as where the buffer starts (`runs.by_key`)."""
        units = np.arange(self.spilled_units, len(unit_len), dtype=np.int32)
        tok_unit = np.repeat(units, unit_len[self.spilled_units :])
        tokens = np.frombuffer(self.tokens, dtype=np.int32)
        stop = self.vocab.ids.get(STOP)
        # token i at self.spilled_tokens + i + its unit (one gap position per unit)
        if stop is None:
            return tokens, tok_unit, self.spilled_tokens
        # position = index in the whole token stream + number of units before (one gap each)
        tok_pos = np.arange(self.spilled_tokens, self.spilled_tokens + len(tokens), dtype=np.int64)
        tok_pos += tok_unit
        kept = tokens != stop
        return tokens[kept], tok_unit[kept], tok_pos[kept]

    def _spill(self) -> None:
        with small_pages():
            self._sort_run()

    def _sort_run(self) -> None:
        # Only the buffered units' tables: building them for every unit so far would make each
        # spill cost (and hold) as much as the whole build's tables.
        unit_len = np.frombuffer(self.unit_len, dtype=np.int32)
        first = self.spilled_units
        doc_units = np.frombuffer(self.doc_units, dtype=np.int64)
        unit_doc = (
            np.searchsorted(
                doc_units, np.arange(first, len(unit_len), dtype=np.int64), side="right"
            )
            - 1
        ).astype(np.int32)
        unit_field = np.frombuffer(self.unit_field, dtype=np.int8)[first:].astype(np.uint8)
        tokens, tok_unit, tok_pos = self._buffered(unit_len)
        # positions after units counted from `first`: start `first` later
        if isinstance(tok_pos, int):
            tok_pos += first
        terms = list(self.vocab.ids)
        self.runs.spill(tokens, tok_unit - first, tok_pos, unit_doc, unit_field, terms.__getitem__)
        # the whole stream, stop words too: positions count them
        self.spilled_tokens += len(self.tokens)
        self.spilled_units = len(unit_len)
        self.tokens = array("i")

    def _put(self, name: str, data: Any, dtype: Any = None) -> None:
        self.entries[name] = storage.write_array(self.dir / name, data, dtype)

    def _put_offsets(self, name: str, data: Any) -> None:
        """Ascending offsets in 4 bytes when they fit (they nearly always do), else 8."""
        arr = np.asarray(data, dtype=np.int64)
        self._put(name, arr, np.uint32 if arr[-1] < 2**32 else np.int64)

    def _put_columns(self) -> None:
        """`col.<i>.sva`, the i-th declared field: a value per document for a number (NaN: none)
        or a date (YYYYMMDD, -1: none); for a keyword, `.ptr` (each document's run in `.ids`) and
        `.ids` (numbers into the sorted distinct values, `.blob` cut at `.off`)."""
        for i, ((_, kind), col) in enumerate(zip(self.schema.fields, self.columns)):
            name = f"col.{i}"
            if kind == "number":
                self._put(f"{name}.sva", np.frombuffer(col, dtype=np.float64))
            elif kind == "date":
                self._put(f"{name}.sva", np.frombuffer(col, dtype=np.int32))
            elif kind == "keyword":
                counts, values = col
                distinct = sorted(set(values), key=str.encode)
                number = {v: j for j, v in enumerate(distinct)}
                encoded = [v.encode() for v in distinct]
                off = np.zeros(len(encoded) + 1, dtype=np.int64)
                off[1:] = np.cumsum([len(b) for b in encoded])
                ptr = np.zeros(len(counts) + 1, dtype=np.int64)
                ptr[1:] = np.cumsum(np.frombuffer(counts, dtype=np.int32))
                self._put(f"{name}.blob.sva", np.frombuffer(b"".join(encoded), dtype=np.uint8))
                self._put_offsets(f"{name}.off.sva", off)
                self._put_offsets(f"{name}.ptr.sva", ptr)
                self._put(
                    f"{name}.ids.sva",
                    np.fromiter(map(number.__getitem__, values), dtype=np.int32, count=len(values)),
                )

    def _put_tables(
        self,
        unit_start: np.ndarray,
        unit_doc: np.ndarray,
        unit_field: np.ndarray,
        indexed_len: np.ndarray,
        doc_units: np.ndarray,
    ) -> None:
        """The unit, document, column, store offset and id tables."""
        n_docs = len(self.ids)
        self._put("unit.start.sva", unit_start)
        self._put("unit.field.sva", unit_field)
        unit_section = np.frombuffer(self.unit_section, dtype=np.int32)
        self._put(
            "unit.section.sva",
            unit_section,
            np.int16 if unit_section.max(initial=0) < 2**15 else np.int32,
        )
        self._put_offsets("doc.units.sva", doc_units)
        self._put("doc.date.sva", np.frombuffer(self.dates, dtype=np.int32))
        self._put_columns()
        builtin = unit_field < N_FIELDS  # a declared text field has no length: it never ranks
        field_len = (
            np.bincount(
                unit_doc[builtin].astype(np.int64) * N_FIELDS + unit_field[builtin],
                weights=indexed_len[builtin],
                minlength=n_docs * N_FIELDS,
            )
            .astype(np.int32)
            .reshape(n_docs, N_FIELDS)
        )
        self._put(
            "doc.flen.sva", field_len, np.uint16 if field_len.max(initial=0) < 2**16 else np.int32
        )
        doc_len = field_len[:, Field.TITLE] + field_len[:, Field.SECTION] + field_len[:, Field.BODY]
        self._put("doc.len.sva", doc_len.astype(np.int32))
        self._put_offsets("store.meta.off.sva", np.frombuffer(self.meta_off, dtype=np.int64))
        self._put_offsets("store.text.off.sva", np.frombuffer(self.text_off, dtype=np.int64))
        self._put_offsets("store.sections.sva", np.frombuffer(self.doc_sections, dtype=np.int64))
        id_bytes = [i.encode() for i in self.ids]
        id_order = sorted(range(n_docs), key=id_bytes.__getitem__)
        id_off = np.zeros(n_docs + 1, dtype=np.int64)
        id_off[1:] = np.cumsum([len(id_bytes[i]) for i in id_order])
        self._put(
            "ids.blob.sva", np.frombuffer(b"".join(id_bytes[i] for i in id_order), dtype=np.uint8)
        )
        self._put_offsets("ids.off.sva", id_off)
        self._put("ids.doc.sva", np.asarray(id_order, dtype=np.int32))
        id_rank = np.empty(n_docs, dtype=np.int32)
        id_rank[np.asarray(id_order, dtype=np.int64)] = np.arange(n_docs, dtype=np.int32)
        self._put("ids.rank.sva", id_rank)

    def finish(self, extra: dict[str, Any]) -> dict[str, Any]:
        """Sort the token stream into postings and write every file and the manifest."""
        with small_pages():
            return self._finish(extra)

    def _finish(self, extra: dict[str, Any]) -> dict[str, Any]:
        self.entries.update(self.meta.close())
        self.entries.update(self.text.close())
        n_docs = len(self.ids)
        if self.runs.count:
            self._spill()  # the rest of the buffer, as the last run
        terms = list(self.vocab.ids)  # first-seen order = id order; id 0 is SEPARATOR, never stored
        # Only terms that occur: a worker may have analysed a record later dropped as a duplicate.
        if self.runs.count:
            used_ids = self.runs.used_terms().tolist()
        else:
            # each term's positions
            occurs = np.bincount(np.frombuffer(self.tokens, dtype=np.int32), minlength=len(terms))
            if STOP in self.vocab.ids:
                occurs[self.vocab.ids[STOP]] = 0
            used_ids = np.flatnonzero(occurs).tolist()
        order = sorted(used_ids, key=terms.__getitem__)
        rank = np.zeros(len(terms), dtype=np.int32)
        rank[np.asarray(order, dtype=np.int64)] = np.arange(len(order), dtype=np.int32)
        sorted_terms = [terms[i].encode() for i in order]
        # by final term
        pos_count: Any = None if self.runs.count else occurs[np.asarray(order, dtype=np.int64)]
        del terms, order, used_ids

        unit_len, unit_doc, unit_field = self._unit_tables()
        n_units = len(unit_len)
        # What each unit contributes to postings and field lengths: its words less its stop words.
        indexed_len = (
            unit_len - np.frombuffer(self.unit_stops, dtype=np.int32)
            if self.analyzer.stopwords
            else unit_len
        )
        n_tokens = int(indexed_len.sum())
        unit_start = np.zeros(n_units, dtype=np.int64)
        if n_units:
            unit_start[1:] = np.cumsum(unit_len[:-1] + 1)  # one gap position after every unit
        total_positions = int(unit_start[-1] + unit_len[-1]) if n_units else 0
        pos_dtype = np.uint32 if total_positions < 2**32 else np.uint64
        doc_units = np.frombuffer(self.doc_units, dtype=np.int64)
        n_terms = len(sorted_terms)

        term_off = np.zeros(n_terms + 1, dtype=np.int64)
        term_off[1:] = np.cumsum([len(t) for t in sorted_terms])
        self._put("terms.blob.sva", np.frombuffer(b"".join(sorted_terms), dtype=np.uint8))
        self._put_offsets("terms.off.sva", term_off)
        # A helper thread writes what needs no postings (the unit, document and id tables) while
        # this one sorts, then encodes and writes the positions' blocks while this one makes and
        # writes the postings (numpy and file writes release the GIL; the second core is otherwise
        # idle in this step). Each writes its own files; `self.entries` takes them one at a time.
        with ThreadPoolExecutor(1, thread_name_prefix="sieve-finish") as helper:
            tables = helper.submit(
                self._put_tables,
                unit_start.astype(pos_dtype),
                unit_doc,
                unit_field,
                indexed_len,
                doc_units,
            )
            pos_files = None
            if self.runs.count:
                merged = self.runs.merge(rank, n_terms, self.dir, pos_dtype, total_positions)
                shutil.rmtree(self.runs.dir, ignore_errors=True)
                post_ptr, pos_ptr, text_df, n_postings = (
                    merged["post_ptr"],
                    merged["pos_ptr"],
                    merged["text_df"],
                    merged["postings"],
                )
                self._put_offsets("post.ptr.sva", post_ptr)
                self._put("terms.df.sva", text_df)
                self.entries.update(merged["entries"])
                self._put_offsets("pos.ptr.sva", pos_ptr)
            else:
                tokens, tok_unit, tok_pos = self._buffered(unit_len)
                keys = rank[tokens]
                del tokens
                s_key, s_unit, s_pos = by_key(keys, tok_unit, tok_pos)
                del keys, tok_unit, tok_pos
                # The postings are made in two halves, one on the helper, which then encodes the
                # positions (they need nothing more) while this thread writes the postings.
                cut = key_start_near_middle(s_key)
                first = helper.submit(
                    postings, s_key[:cut], s_unit[:cut], s_pos[:cut], unit_doc, unit_field
                )
                pos_files = helper.submit(
                    _write_positions,
                    PositionsWriter(self.dir, pos_dtype, total_positions),
                    s_pos,
                    pos_count,
                )
                second = postings(s_key[cut:], s_unit[cut:], s_pos[cut:], unit_doc, unit_field)
                p = Postings.joined([first.result(), second], s_pos)
                del s_key, s_unit, s_pos, first, second
                text_df = np.bincount(p.term[p.ttf > 0], minlength=n_terms).astype(np.int32)
                post_ptr = np.zeros(n_terms + 1, dtype=np.int64)
                post_ptr[1:] = np.cumsum(np.bincount(p.term, minlength=n_terms))
                pos_ptr = np.zeros(n_terms + 1, dtype=np.int64)
                pos_ptr[1:] = np.cumsum(pos_count)
                n_postings = len(p.doc)
                self._put_offsets("post.ptr.sva", post_ptr)
                self._put("terms.df.sva", text_df)
                self.entries.update(docids.write(self.dir, "post.doc", p.doc))
                self.entries.update(attributes.write(self.dir, p.mask, p.tf, p.ttf))
                self._put_offsets("pos.ptr.sva", pos_ptr)
                del p  # the helper holds the positions it still needs
            put_rows(self.dir, self.entries, self._put, self._put_offsets, n_docs)
            tables.result()
            if pos_files is not None:
                self.entries.update(pos_files.result())

        stats = {
            "documents": n_docs,
            "terms": n_terms,
            "tokens": n_tokens,
            "postings": int(n_postings),
            "units": n_units,
            "sections": len(self.text_off) - 1,
            "dated": int(np.count_nonzero(np.frombuffer(self.dates, dtype=np.int32) != NO_DATE)),
        }
        body = {
            "format": storage.FORMAT_NAME,
            "version": storage.FORMAT_VERSION,
            **self.analyzer.manifest_fields(),
            **self.schema.manifest_fields(),
            "stats": stats,
            # each stream's compression
            "store_blocks": {
                name: {"codec": CODEC, "shift": shift} for name, shift in SHIFTS.items()
            },
            "files": self.entries,
            **extra,
        }
        commits.write_manifest(self.dir, body)
        return body
