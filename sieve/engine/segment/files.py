"""Which files a segment holds, by format version: what every reader opens, what this version
writes (`WRITTEN`), and the names of the id, column and optional tables."""

from __future__ import annotations

from typing import Any

from sieve.engine.analysis.schema import Schema
from sieve.engine.format import attributes, docids
from sieve.engine.format.positions import PACKED_FILES

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


def id_files(prefix: str, files: dict[str, Any]) -> tuple[str, ...]:
    """The files that hold the document ids stored under `prefix` in a segment listing `files`."""
    return docids.files(prefix) if prefix + ".low.sva" in files else (prefix + ".sva",)


# Where a document's id is read from (its place in the sorted ids, their offsets, their bytes).
ID_FILES = ("ids.rank.sva", "ids.off.sva", "ids.blob.sva")
