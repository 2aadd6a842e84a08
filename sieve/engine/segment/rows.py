"""A segment's bitset rows, written after its postings: `post.bits*` (a bitset per frequent
(term, field)), `post.rest*` (a term's postings in the fields without a row) and `post.any*` (a
bitset per frequent term of all its documents). docs/index-format.md describes the files."""

from __future__ import annotations

from array import array
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from sieve.engine.analysis.fields import Field
from sieve.engine.format import bitset, docids, storage

N_FIELDS = len(Field)

# A (term, field) pair found in at least 1/DENSE_FRACTION of a segment's documents (and in at least
# DENSE_MIN) also gets its document set stored as a
# bitset: no larger than its four-byte postings, and
# a query reads it instead of scattering every posting into a fresh bitset (the cost that grows with
# the segment, not with the answer).
DENSE_FRACTION = 32
DENSE_MIN = 8
# A term found in at least 1/ANY_FRACTION of a segment's documents (and in at least DENSE_MIN) gets
# a row of all its documents (`post.any`), unless its one field row holds them all: an unscoped leaf
# (the common kind) then scatters nothing. Scattering a term of N/64 documents into a bitset costs
# about as much as building the whole bitset (measured at 800k documents: ~45 us either way).
ANY_FRACTION = 64
# ...in segments of at least this many documents: below it a scatter costs microseconds and the rows
# would only add size (at 100k documents they made no query class faster and the index 10% larger).
ANY_MIN_DOCS = 1 << 18


def put_rows(
    dir: Path,
    entries: dict[str, Any],
    put: Callable[[str, Any], None],
    put_offsets: Callable[[str, Any], None],
    n_docs: int,
) -> None:
    """`post.bits*`: a bitset per frequent (term, field), read back from the postings just
    written; `post.rest*`: for each term with rows, its postings in the fields without one (what
    a leaf over fields beyond the rows must still read, instead of every posting of a frequent
    term); `post.any*`: a bitset per frequent term of all its documents, whatever the field
    (what an unscoped leaf reads as it is), unless one field row already holds them all."""
    ptr = storage.open_array(dir / "post.ptr.sva", "post.ptr.sva", entries["post.ptr.sva"])
    # the counts are not needed
    masks = storage.open_array(dir / "post.mask.sva", "post.mask.sva", entries["post.mask.sva"])
    docs = docids.open_ids(dir, "post.doc", entries)
    starts = np.asarray(ptr, dtype=np.int64)
    need = max(-(-n_docs // DENSE_FRACTION), DENSE_MIN)
    rows = storage.ArrayWriter(dir / "post.bits.sva", np.uint64, columns=bitset.words(n_docs))
    rest_doc = docids.SplitIdsWriter(dir, "post.rest.doc")
    rest_mask = storage.ArrayWriter(dir / "post.rest.mask.sva", np.uint8)
    row_ptr = np.zeros(len(starts), dtype=np.int64)
    # at every row boundary: a term's rest runs from its first row's entry to its last's
    rest_ptr = [0]
    fields = array("B")
    any_rows = storage.ArrayWriter(dir / "post.any.sva", np.uint64, columns=bitset.words(n_docs))
    any_terms: list[int] = []
    with_any = n_docs >= ANY_MIN_DOCS
    need_any = min(need, max(-(-n_docs // ANY_FRACTION), DENSE_MIN)) if with_any else need
    for t in np.flatnonzero(np.diff(starts) >= need_any).tolist():
        lo, hi = int(starts[t]), int(starts[t + 1])
        d = docs[lo:hi]
        own = rest = 0  # field rows; postings in fields without one
        if hi - lo >= need:  # frequent enough that a field may earn a row
            m = np.asarray(masks[lo:hi])
            covered = 0
            for f in range(N_FIELDS):
                inside = (m & np.uint8(1 << f)) != 0
                if np.count_nonzero(inside) >= need:
                    rows.append(bitset.from_ids(d[inside], n_docs)[None, :])
                    fields.append(f)
                    covered |= 1 << f
                    own += 1
                    rest_ptr.append(rest_ptr[-1])
            if covered:
                other = m & np.uint8(~covered & 0xFF)
                keep = np.flatnonzero(other)
                rest_doc.append(d[keep])
                rest_mask.append(other[keep])
                rest = len(keep)
                rest_ptr[-1] += rest
            row_ptr[t + 1] = len(fields)
        # one field row and nothing else: that row is the answer
        if with_any and (own != 1 or rest):
            any_rows.append(bitset.from_ids(d, n_docs)[None, :])
            any_terms.append(t)
    # Terms between candidates hold no rows: carry each candidate's end forward.
    row_ptr = np.maximum.accumulate(row_ptr)
    entries["post.bits.sva"] = rows.close()
    put_offsets("post.bits.ptr.sva", row_ptr)
    put("post.bits.field.sva", np.frombuffer(fields, dtype=np.uint8))
    entries.update(rest_doc.close())
    entries["post.rest.mask.sva"] = rest_mask.close()
    put_offsets("post.rest.ptr.sva", rest_ptr)
    entries["post.any.sva"] = any_rows.close()
    put("post.any.terms.sva", np.asarray(any_terms, dtype=np.uint32))
