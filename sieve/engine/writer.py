"""Building an index: analyse documents into a token stream, then sort it into postings on disk.

Positions are global: every unit (title, one author name, one infobox value, one heading, one
section text) occupies consecutive positions followed by one unused gap position, so adjacent
positions never straddle two units and a phrase can never span two sections.
"""

from __future__ import annotations

import itertools
import json
import time
from array import array
from collections import defaultdict
from pathlib import Path
from typing import Any, Callable, Iterable

import numpy as np

from sieve.documents import INTRO, Document
from sieve.engine import storage
from sieve.engine.analysis import ANALYZER_ID, SEPARATOR, analyze_joined
from sieve.engine.bql.dates import first_day
from sieve.engine.fields import Field

NO_DATE = -1  # date column value of an undated document
N_FIELDS = len(Field)
_BATCH_UNITS = 4096  # units analysed per regex pass


def _dumps(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


class IndexWriter:
    """Accumulates documents, then `finish()` writes one generation directory."""

    def __init__(self, gen_dir: Path) -> None:
        self.dir = gen_dir
        self.vocab: defaultdict[str, int] = defaultdict(itertools.count().__next__)
        self.vocab[SEPARATOR]  # id 0: marks the end of each unit in a batch
        self._units: list[str] = []
        self._unit_field: list[int] = []
        self._unit_section: list[int] = []
        self.tokens = array("i")  # term ids (first-seen numbering), in stream order
        self.unit_len = array("i")
        self.unit_field = array("b")
        self.unit_section = array("i")
        self.doc_units = array("q", [0])
        self.dates = array("i")
        self.ids: list[str] = []
        self.entries: dict[str, dict[str, int]] = {}
        self.meta = storage.ArrayWriter(gen_dir / "store.meta.sva", np.uint8)
        self.meta_off = array("q", [0])
        self.text = storage.ArrayWriter(gen_dir / "store.text.sva", np.uint8)
        self.text_off = array("q", [0])
        self.doc_sections = array("q", [0])
        self.bytes_in = 0

    def add(self, doc: Document) -> None:
        units = self._units
        fields, sections = self._unit_field, self._unit_section
        units.append(doc.title)
        fields.append(Field.TITLE)
        sections.append(-1)
        if doc.author:
            for name in doc.author.split(";"):
                units.append(name.strip())
                fields.append(Field.AUTHOR)
                sections.append(-1)
        for v in doc.infobox.values():
            units.append(v)
            fields.append(Field.INFOBOX)
            sections.append(-1)
        texts = []
        for j, sec in enumerate(doc.sections):
            if sec.heading != INTRO:
                units.append(sec.heading)
                fields.append(Field.SECTION)
                sections.append(j)
            units.append(sec.text)
            fields.append(Field.BODY)
            sections.append(j)
            texts.append(sec.text.encode())
        self.doc_units.append(len(self.unit_field) + len(fields))
        self.dates.append(first_day(doc.date) if doc.date else NO_DATE)
        self.ids.append(doc.id)
        meta = {"id": doc.id, "title": doc.title, "headings": doc.headings}
        if doc.author is not None:
            meta["author"] = doc.author
        if doc.date is not None:
            meta["date"] = doc.date
        if doc.infobox:
            meta["infobox"] = dict(doc.infobox)
        if doc.metadata:
            meta["metadata"] = dict(doc.metadata)
        raw = _dumps(meta).encode()
        self.meta.append_bytes(raw)
        self.meta_off.append(self.meta_off[-1] + len(raw))
        end = self.text_off[-1]
        for b in texts:
            end += len(b)
            self.text_off.append(end)
        self.text.append_bytes(b"".join(texts))
        self.doc_sections.append(len(self.text_off) - 1)
        self.bytes_in += len(raw) + sum(map(len, texts))
        if len(units) >= _BATCH_UNITS:
            self._flush()

    def _flush(self) -> None:
        """Analyse the pending units in one pass and append their term ids and lengths."""
        if not self._units:
            return
        ids = np.fromiter(map(self.vocab.__getitem__, analyze_joined(self._units)), dtype=np.int32)
        ends = np.flatnonzero(ids == 0)  # SEPARATOR has id 0
        lens = np.diff(ends, prepend=-1) - 1
        self.tokens.frombytes(ids[ids != 0].tobytes())
        self.unit_len.frombytes(lens.astype(np.int32).tobytes())
        self.unit_field.frombytes(np.asarray(self._unit_field, dtype=np.int8).tobytes())
        self.unit_section.frombytes(np.asarray(self._unit_section, dtype=np.int32).tobytes())
        self._units, self._unit_field, self._unit_section = [], [], []

    def _put(self, name: str, data: Any, dtype: Any = None) -> None:
        self.entries[name] = storage.write_array(self.dir / name, data, dtype)

    def _put_offsets(self, name: str, data: Any) -> None:
        """Ascending offsets in 4 bytes when they fit (they nearly always do), else 8."""
        arr = np.asarray(data, dtype=np.int64)
        self._put(name, arr, np.uint32 if arr[-1] < 2**32 else np.int64)

    def _put_counts(self, name: str, counts: np.ndarray) -> None:
        """Counts in one byte each; the few of 255 or more are kept exactly in a sparse side list."""
        big = np.flatnonzero(counts >= 255)
        self._put(f"{name}.sva", np.minimum(counts, 255), np.uint8)
        self._put(f"{name}.big.idx.sva", big, np.int64)
        self._put(f"{name}.big.val.sva", counts[big], np.uint32)

    def finish(self, extra: dict[str, Any]) -> dict[str, Any]:
        """Sort the token stream into postings and write every file and the manifest."""
        self._flush()
        self.entries["store.meta.sva"] = self.meta.close()
        self.entries["store.text.sva"] = self.text.close()
        n_docs = len(self.ids)
        terms = list(self.vocab)  # first-seen order = id order; id 0 is SEPARATOR, never stored
        order = sorted(range(1, len(terms)), key=terms.__getitem__)
        rank = np.zeros(len(terms), dtype=np.int32)
        rank[np.asarray(order, dtype=np.int64)] = np.arange(len(order), dtype=np.int32)
        sorted_terms = [terms[i].encode() for i in order]
        del terms, order

        unit_len = np.frombuffer(self.unit_len, dtype=np.int32)
        n_units = len(unit_len)
        n_tokens = int(unit_len.sum())
        unit_start = np.zeros(n_units, dtype=np.int64)
        if n_units:
            unit_start[1:] = np.cumsum(unit_len[:-1] + 1)  # one gap position after every unit
        total_positions = int(unit_start[-1] + unit_len[-1]) if n_units else 0
        pos_dtype = np.uint32 if total_positions < 2**32 else np.uint64
        doc_units = np.frombuffer(self.doc_units, dtype=np.int64)
        unit_doc = np.repeat(np.arange(n_docs, dtype=np.int32), np.diff(doc_units))
        unit_field = np.frombuffer(self.unit_field, dtype=np.int8).astype(np.uint8)

        tok_rank = rank[np.frombuffer(self.tokens, dtype=np.int32)]
        tok_unit = np.repeat(np.arange(n_units, dtype=np.int32), unit_len)
        # position = index in the token stream + number of units before (one gap each)
        tok_pos = np.arange(n_tokens, dtype=np.int64) + tok_unit
        order_tok = np.argsort(tok_rank, kind="stable")
        s_rank = tok_rank[order_tok]
        s_unit = tok_unit[order_tok]
        del tok_rank
        s_pos = tok_pos[order_tok].astype(pos_dtype)
        del tok_pos, order_tok, tok_unit
        s_doc = unit_doc[s_unit]
        s_bit = (np.uint8(1) << unit_field[s_unit]).astype(np.uint8)
        del s_unit

        n_terms = len(sorted_terms)
        if n_tokens:
            new = np.empty(n_tokens, dtype=bool)
            new[0] = True
            np.not_equal(s_rank[1:], s_rank[:-1], out=new[1:])
            new[1:] |= s_doc[1:] != s_doc[:-1]
            starts = np.flatnonzero(new)
        else:
            starts = np.zeros(0, dtype=np.int64)
        post_doc = s_doc[starts]
        post_tf = np.diff(np.append(starts, n_tokens)).astype(np.uint32)
        post_mask = np.bitwise_or.reduceat(s_bit, starts) if n_tokens else np.zeros(0, np.uint8)
        # BM25 counts only title, headings and body; author and infobox occurrences are left out.
        text_bits = np.uint8(Field.TITLE.bit | Field.SECTION.bit | Field.BODY.bit)
        if n_tokens:
            post_ttf = np.add.reduceat(((s_bit & text_bits) != 0).astype(np.uint32), starts)
        else:
            post_ttf = np.zeros(0, np.uint32)
        post_term = s_rank[starts]
        text_df = np.bincount(post_term[post_ttf > 0], minlength=n_terms).astype(np.int32)
        post_ptr = np.zeros(n_terms + 1, dtype=np.int64)
        post_ptr[1:] = np.cumsum(np.bincount(post_term, minlength=n_terms))
        pos_ptr = np.zeros(n_terms + 1, dtype=np.int64)
        pos_ptr[1:] = np.cumsum(np.bincount(s_rank, minlength=n_terms))
        del s_rank, s_doc, s_bit

        term_off = np.zeros(n_terms + 1, dtype=np.int64)
        term_off[1:] = np.cumsum([len(t) for t in sorted_terms])
        self._put("terms.blob.sva", np.frombuffer(b"".join(sorted_terms), dtype=np.uint8))
        self._put_offsets("terms.off.sva", term_off)
        self._put_offsets("post.ptr.sva", post_ptr)
        self._put("terms.df.sva", text_df)
        self._put("post.doc.sva", post_doc, np.int32)
        self._put_counts("post.tf", post_tf)
        self._put_counts("post.ttf", post_ttf)
        self._put("post.mask.sva", post_mask, np.uint8)
        self._put_offsets("pos.ptr.sva", pos_ptr)
        self._put("pos.data.sva", s_pos)
        self._put("unit.start.sva", unit_start.astype(pos_dtype))
        self._put("unit.field.sva", unit_field)
        unit_section = np.frombuffer(self.unit_section, dtype=np.int32)
        self._put("unit.section.sva", unit_section, np.int16 if unit_section.max(initial=0) < 2**15 else np.int32)
        self._put_offsets("doc.units.sva", doc_units)
        self._put("doc.date.sva", np.frombuffer(self.dates, dtype=np.int32))
        field_len = np.bincount(
            unit_doc.astype(np.int64) * N_FIELDS + unit_field, weights=unit_len, minlength=n_docs * N_FIELDS
        ).astype(np.int32).reshape(n_docs, N_FIELDS)
        self._put("doc.flen.sva", field_len, np.uint16 if field_len.max(initial=0) < 2**16 else np.int32)
        doc_len = field_len[:, Field.TITLE] + field_len[:, Field.SECTION] + field_len[:, Field.BODY]
        self._put("doc.len.sva", doc_len.astype(np.int32))
        self._put_offsets("store.meta.off.sva", np.frombuffer(self.meta_off, dtype=np.int64))
        self._put_offsets("store.text.off.sva", np.frombuffer(self.text_off, dtype=np.int64))
        self._put_offsets("store.sections.sva", np.frombuffer(self.doc_sections, dtype=np.int64))
        id_bytes = [i.encode() for i in self.ids]
        id_order = sorted(range(n_docs), key=id_bytes.__getitem__)
        id_off = np.zeros(n_docs + 1, dtype=np.int64)
        id_off[1:] = np.cumsum([len(id_bytes[i]) for i in id_order])
        self._put("ids.blob.sva", np.frombuffer(b"".join(id_bytes[i] for i in id_order), dtype=np.uint8))
        self._put_offsets("ids.off.sva", id_off)
        self._put("ids.doc.sva", np.asarray(id_order, dtype=np.int32))
        id_rank = np.empty(n_docs, dtype=np.int32)
        id_rank[np.asarray(id_order, dtype=np.int64)] = np.arange(n_docs, dtype=np.int32)
        self._put("ids.rank.sva", id_rank)

        stats = {
            "documents": n_docs,
            "terms": n_terms,
            "tokens": n_tokens,
            "postings": int(len(post_doc)),
            "units": n_units,
            "sections": len(self.text_off) - 1,
            "dated": int(np.count_nonzero(np.frombuffer(self.dates, dtype=np.int32) != NO_DATE)),
        }
        body = {
            "format": storage.FORMAT_NAME,
            "version": storage.FORMAT_VERSION,
            "analyzer": ANALYZER_ID,
            "stats": stats,
            "files": self.entries,
            **extra,
        }
        storage.write_manifest(self.dir, body)
        return body


def build(
    docs: Iterable[Document],
    gen_dir: Path,
    progress: Callable[[int, int], None] | None = None,
    extra: Callable[[], dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """Index `docs` into `gen_dir`; `progress(documents, bytes)` is called every 1,000 documents.

    `extra()` is called after the last document, for manifest entries known only then.
    """
    writer = IndexWriter(gen_dir)
    t0 = time.perf_counter()
    for n, doc in enumerate(docs, 1):
        writer.add(doc)
        if progress is not None and n % 1000 == 0:
            progress(n, writer.bytes_in)
    manifest = writer.finish({**(extra() if extra else {}), "build_seconds": round(time.perf_counter() - t0, 3)})
    if progress is not None:
        progress(len(writer.ids), writer.bytes_in)
    return manifest
