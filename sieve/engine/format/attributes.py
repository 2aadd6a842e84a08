"""What each posting says besides its document: the fields it is in (a mask) and its counts, `tf`
(occurrences in every field) and `ttf` (in title, headings and body: what BM25 counts).

The mask is one byte a posting (`post.mask`: bit 0 title, 1 section heading, 2 body, 3 author, 4
infobox, 5 declared text field). Format 9 keeps both counts in one byte more (`post.tfs`): the low
five bits hold ttf, the high three tf - ttf (the occurrences in author, infobox and declared
fields, which are few: 23 of man-sections' 6 million postings have 7 or more). All bits set in a
part means "see the side list", sparse (posting, value) pairs kept exactly: `post.ttf.big.*` holds
ttf where it is 31 or more (1,111 postings), `post.tf.big.*` holds tf where either part is full.
Reading ttf masks the byte; reading tf adds its two parts: array operations as fast as reading a
byte of each, and the side lists stay too short to cost a read anything. Formats 2 to 8 keep each
count in a byte of its own (`post.tf`, `post.ttf`), 255 meaning "see the side list".

(Coding mask, tf and ttf together as the number of their triple among a segment's 255 most frequent
would take one byte where this takes two, but reading it is a table gather, 3 to 4 times slower
than a mask test or a nibble here, and every leaf over some fields reads masks.)
"""

from __future__ import annotations

import bisect
from pathlib import Path
from typing import Any

import numpy as np

from sieve.engine.format import storage

TEXT_BITS = 5
TEXT_FULL = (1 << TEXT_BITS) - 1  # ttf this high (or higher): in the side list
EXTRA_FULL = (1 << (8 - TEXT_BITS)) - 1  # tf - ttf this high: tf in the side list
SIDE_FILES = (
    "post.tf.big.idx.sva",
    "post.tf.big.val.sva",
    "post.ttf.big.idx.sva",
    "post.ttf.big.val.sva",
)
PACKED_FILES = ("post.mask.sva", "post.tfs.sva") + SIDE_FILES
BYTE_FILES = ("post.mask.sva", "post.tf.sva", "post.ttf.sva") + SIDE_FILES  # formats 2 to 8


def pack(
    tf: np.ndarray, ttf: np.ndarray
) -> tuple[np.ndarray, tuple[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]:
    """(the count bytes, (postings, tf) of the tf side list, (postings, ttf) of the ttf side list)
    of postings numbered from 0; every ttf is at most its tf. Works in the counts' own dtype (a
    build's are u32): no temporary wider than they are."""
    tf, ttf = np.asarray(tf), np.asarray(ttf)
    if len(tf) and bool((ttf > tf).any()):
        raise ValueError("a posting's text count exceeds its count")
    extra = tf - ttf
    np.minimum(extra, EXTRA_FULL, out=extra)
    byte = extra.astype(np.uint8)
    byte <<= TEXT_BITS
    big_text = ttf >= TEXT_FULL
    byte |= np.minimum(ttf, TEXT_FULL).astype(np.uint8)
    tf_at = np.flatnonzero(big_text | (extra == EXTRA_FULL))
    ttf_at = np.flatnonzero(big_text)
    return byte, (tf_at, tf[tf_at]), (ttf_at, ttf[ttf_at])


class AttributesWriter:
    """Appends postings' masks and counts in pieces and writes the format 9 files."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.mask = storage.ArrayWriter(folder / "post.mask.sva", np.uint8)
        self.counts = storage.ArrayWriter(folder / "post.tfs.sva", np.uint8)
        self.side: dict[str, tuple[list[np.ndarray], list[np.ndarray]]] = {
            "post.tf": ([], []),
            "post.ttf": ([], []),
        }
        # postings written so far (the side lists number them from the segment's first)
        self.done = 0

    def append(self, mask: np.ndarray, tf: np.ndarray, ttf: np.ndarray) -> None:
        byte, *sides = pack(tf, ttf)
        self.mask.append(mask)
        self.counts.append(byte)
        for (where, values), (at, v) in zip(self.side.values(), sides):
            where.append(at + self.done)
            values.append(v)
        self.done += len(byte)

    def close(self) -> dict[str, Any]:
        """Write the files; returns their manifest entries by file name."""
        entries = {"post.mask.sva": self.mask.close(), "post.tfs.sva": self.counts.close()}
        for name, (where, values) in self.side.items():
            entries[f"{name}.big.idx.sva"] = storage.write_array(
                self.folder / f"{name}.big.idx.sva",
                np.concatenate(where or [np.zeros(0, np.int64)]),
                np.int64,
            )
            entries[f"{name}.big.val.sva"] = storage.write_array(
                self.folder / f"{name}.big.val.sva",
                np.concatenate(values or [np.zeros(0, np.uint32)]),
                np.uint32,
            )
        return entries


def write(folder: Path, mask: np.ndarray, tf: np.ndarray, ttf: np.ndarray) -> dict[str, Any]:
    """Write every posting's mask and counts at once; returns the files' manifest entries."""
    w = AttributesWriter(folder)
    w.append(mask, tf, ttf)
    return w.close()


class _Side:
    """A side list: the postings (ascending) whose count is kept exactly, and those counts. Most
    reads only ask whether a stretch of postings has any: a short list answers from a Python copy of
    its postings by two bisections, with no numpy call (every BM25 term read asks, three times a
    query or more)."""

    # at most this many postings are kept as a Python list too (1,111 on man-sections)
    LISTED = 1 << 16

    def __init__(self, idx: Any, val: Any) -> None:
        self.idx, self.val = idx, val
        self._listed: list[int] | None = None

    def __len__(self) -> int:
        return len(self.idx)

    def span(self, lo: int, hi: int) -> tuple[int, int]:
        """The side list's entries for postings lo..hi-1: a..b."""
        listed = self._listed
        if listed is None and len(self.idx) <= self.LISTED:
            # an ArrayFile is verified whole first
            listed = self._listed = np.asarray(self.idx).tolist()
        if listed is not None:
            return bisect.bisect_left(listed, lo), bisect.bisect_left(listed, hi)
        # an ArrayFile is verified whole first: a binary search reads anywhere in it
        idx = np.asarray(self.idx)
        a, b = np.searchsorted(idx, np.array([lo, hi], dtype=idx.dtype)).tolist()
        return a, b


def _patch(out: np.ndarray, side: _Side, lo: int, hi: int, sel: np.ndarray | None) -> np.ndarray:
    """Put the side list's exact values of postings lo..hi (or lo + sel, sel ascending) in `out`."""
    if not len(side):
        return out
    a, b = side.span(lo, hi)
    if a < b:
        at, v = np.asarray(side.idx[a:b]) - lo, np.asarray(side.val[a:b]).astype(np.int64)
        if sel is not None:
            i = np.searchsorted(sel, at)
            ok = i < len(sel)
            ok[ok] = sel[i[ok]] == at[ok]
            at, v = i[ok], v[ok]
        out[at] = v
    return out


class Attributes:
    """Read side of either layout. Postings are given as lo..hi, or as
    lo + sel (`sel` ascending)."""

    def __init__(self, files: dict[str, Any]) -> None:
        """`files`: the opened arrays of `PACKED_FILES` or of `BYTE_FILES`, by name."""
        self.mask = files["post.mask.sva"]
        self.packed = files.get("post.tfs.sva")
        self.tf_bytes: Any = None if self.packed is not None else files["post.tf.sva"]
        self.ttf_bytes: Any = None if self.packed is not None else files["post.ttf.sva"]
        self.tf_side = _Side(files["post.tf.big.idx.sva"], files["post.tf.big.val.sva"])
        self.ttf_side = _Side(files["post.ttf.big.idx.sva"], files["post.ttf.big.val.sva"])

    def __len__(self) -> int:
        return len(self.mask)

    def agree(self) -> bool:
        """Whether the files' lengths agree with each other (what opening checks)."""
        counts = (self.packed,) if self.packed is not None else (self.tf_bytes, self.ttf_bytes)
        return all(len(c) == len(self.mask) for c in counts) and all(
            len(side.idx) == len(side.val) for side in (self.tf_side, self.ttf_side)
        )

    @staticmethod
    def _read(arr: Any, lo: int, hi: int, sel: np.ndarray | None) -> np.ndarray:
        return np.asarray(arr[lo:hi] if sel is None else arr[lo + sel])

    def masks(self, lo: int, hi: int) -> np.ndarray:
        """Field masks (u8) of postings lo..hi."""
        return np.asarray(self.mask[lo:hi])

    def meets(self, lo: int, hi: int, fields: int) -> np.ndarray:
        """Whether each of postings lo..hi is in any of `fields` (a mask)."""
        return (np.asarray(self.mask[lo:hi]) & fields) != 0

    def tf(self, lo: int, hi: int, sel: np.ndarray | None = None) -> np.ndarray:
        """Occurrences (int64) in every field."""
        if self.packed is None:
            out = self._read(self.tf_bytes, lo, hi, sel).astype(np.int64)
        else:
            b = self._read(self.packed, lo, hi, sel)
            # at most 38: the sum stays in a byte
            out = ((b & TEXT_FULL) + (b >> TEXT_BITS)).astype(np.int64)
        return _patch(out, self.tf_side, lo, hi, sel)

    def text_tf(
        self, lo: int, hi: int, sel: np.ndarray | None = None, dtype: Any = np.int64
    ) -> np.ndarray:
        """Occurrences in title, headings and body (int64, or `dtype`:
        BM25 reads them as floats)."""
        if self.packed is None:
            out = self._read(self.ttf_bytes, lo, hi, sel).astype(dtype)
        else:
            out = (self._read(self.packed, lo, hi, sel) & TEXT_FULL).astype(dtype)
        return _patch(out, self.ttf_side, lo, hi, sel)
