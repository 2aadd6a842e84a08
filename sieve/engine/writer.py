"""Building an index: analyse documents into a token stream, then sort it into postings on disk.

Positions are global: every unit (title, one author name, one infobox value, one heading, one
section text) occupies consecutive positions followed by one unused gap position, so adjacent
positions never straddle two units and a phrase can never span two sections.
"""

from __future__ import annotations

from array import array
from pathlib import Path
from typing import Any

import numpy as np

from sieve.engine import storage
from sieve.engine.analysis import ANALYZER_ID
from sieve.engine.batch import NO_DATE, AnalyzedBatch, Vocabulary
from sieve.engine.fields import Field

N_FIELDS = len(Field)


class IndexWriter:
    """Assembles analysed batches in document order, then `finish()` writes one generation."""

    def __init__(self, gen_dir: Path) -> None:
        self.dir = gen_dir
        self.vocab = Vocabulary()
        self._remaps: dict[Any, array] = {}  # analyser -> its local term id -> our term id
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

    @property
    def documents(self) -> int:
        return len(self.ids)

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
        self.doc_units.frombytes((self.doc_units[-1] + np.cumsum(batch.units)).astype(np.int64).tobytes())
        self.dates.frombytes(batch.dates.tobytes())
        self.ids.extend(batch.ids)
        self.meta.append_bytes(batch.meta)
        self.meta_off.frombytes((self.meta_off[-1] + np.cumsum(batch.meta_len)).astype(np.int64).tobytes())
        self.text.append_bytes(batch.text)
        self.text_off.frombytes((self.text_off[-1] + np.cumsum(batch.text_len)).astype(np.int64).tobytes())
        self.doc_sections.frombytes((self.doc_sections[-1] + np.cumsum(batch.sections)).astype(np.int64).tobytes())
        self.bytes_in += len(batch.meta) + len(batch.text)

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
        self.entries["store.meta.sva"] = self.meta.close()
        self.entries["store.text.sva"] = self.text.close()
        n_docs = len(self.ids)
        terms = list(self.vocab.ids)  # first-seen order = id order; id 0 is SEPARATOR, never stored
        # Only terms that occur: a worker may have analysed a record later dropped as a duplicate.
        used = np.bincount(np.frombuffer(self.tokens, dtype=np.int32), minlength=len(terms)) > 0
        order = sorted(np.flatnonzero(used).tolist(), key=terms.__getitem__)
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
        order_tok = _stable_argsort(tok_rank)
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


def _stable_argsort(keys: np.ndarray) -> np.ndarray:
    """Stable argsort of non-negative int32 keys as two 16-bit radix passes (about 2x numpy's
    stable sort of int32, which is a merge sort)."""
    if len(keys) == 0 or int(keys.max()) < 2**16:
        return np.argsort(keys.astype(np.uint16), kind="stable")
    first = np.argsort((keys & 0xFFFF).astype(np.uint16), kind="stable")
    return first[np.argsort((keys[first] >> 16).astype(np.uint16), kind="stable")]
