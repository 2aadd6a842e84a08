"""What each posting says besides its document: the fields it is in (a mask) and its counts, `tf`
(occurrences in every field) and `ttf` (in title, headings and body: what BM25 counts).

Format 9 codes the three together in one byte a posting (`post.attr`): few (mask, tf, ttf) triples
are common (a word once in a body is 52% of man-sections' postings; 255 triples cover 99.95%), so
each segment lists its 255 most frequent in `post.attr.table` (u32 [K, 3]: mask, tf, ttf; most
frequent first, ties by mask, then tf, then ttf) and a posting stores its triple's number there.
Byte 255 means "see the side list": `post.attr.big.idx` (the posting, ascending) and
`post.attr.big.val` (u32 [E, 3], its triple). A read is one table gather; a leaf over some fields
gathers a truth table of 256 entries, one byte at a time, instead of testing masks. Formats 2 to 8
keep a byte each: `post.mask`, and `post.tf` and `post.ttf` (255 meaning "see the side list",
`post.tf.big.*` and `post.ttf.big.*`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from sieve.engine import storage

ESCAPE = 255  # the byte of a posting whose triple is in the side list
TABLE_SIZE = 255  # triples coded: every byte but ESCAPE (tests lower it to fill the side list)
_COUNT_BITS = 28  # a key holds counts below 2**28 (larger ones are never in the table)
_COUNT_MAX = (1 << _COUNT_BITS) - 1
CODED_FILES = ("post.attr.sva", "post.attr.table.sva", "post.attr.big.idx.sva", "post.attr.big.val.sva")
BYTE_FILES = ("post.mask.sva", "post.tf.sva", "post.ttf.sva", "post.tf.big.idx.sva", "post.tf.big.val.sva",
              "post.ttf.big.idx.sva", "post.ttf.big.val.sva")  # formats 2 to 8


def _keys(mask: np.ndarray, tf: np.ndarray, ttf: np.ndarray) -> np.ndarray:
    """Each triple as one int64, ordered by mask, then tf, then ttf; -1 where a count is too large."""
    tf, ttf = np.asarray(tf, dtype=np.int64), np.asarray(ttf, dtype=np.int64)
    keys = np.asarray(mask, dtype=np.int64) << (2 * _COUNT_BITS) | tf << _COUNT_BITS | ttf
    return np.where(tf > _COUNT_MAX, -1, keys)


def histogram(mask: np.ndarray, tf: np.ndarray, ttf: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(distinct keys, how many postings have each) of some postings; add several with `merge`."""
    keys, counts = np.unique(_keys(mask, tf, ttf), return_counts=True)
    return keys, counts.astype(np.int64)


def merge(parts: list[tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
    if not parts:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    keys, inverse = np.unique(np.concatenate([k for k, _ in parts]), return_inverse=True)
    return keys, np.bincount(inverse, weights=np.concatenate([c for _, c in parts]), minlength=len(keys)).astype(np.int64)


def table_of(keys: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """The keys of the coded triples, most frequent first (ties: smaller key first), at most
    `TABLE_SIZE`."""
    ok = keys >= 0
    keys, counts = keys[ok], counts[ok]
    return keys[np.lexsort((keys, -counts))][:TABLE_SIZE]


def _triples(keys: np.ndarray) -> np.ndarray:
    """u32 [K, 3] (mask, tf, ttf) of keys."""
    keys = np.asarray(keys, dtype=np.int64)
    return np.stack([keys >> (2 * _COUNT_BITS), keys >> _COUNT_BITS & _COUNT_MAX, keys & _COUNT_MAX], axis=1).astype(np.uint32).reshape(-1, 3)


class AttributesWriter:
    """Appends postings' (mask, tf, ttf) in pieces, coded by `table` (from `table_of` over every
    posting of the segment), and writes the format 9 files."""

    def __init__(self, folder: Path, table: np.ndarray) -> None:
        self.folder, self.table = folder, np.asarray(table, dtype=np.int64)
        self.sorted = np.sort(self.table)
        self.code_of_sorted = np.argsort(self.table).astype(np.uint8)  # code of each sorted key
        self.codes = storage.ArrayWriter(folder / "post.attr.sva", np.uint8)
        self.big_idx: list[np.ndarray] = []
        self.big_val: list[np.ndarray] = []
        self.done = 0  # postings written so far (the side list numbers them from the segment's first)

    def append(self, mask: np.ndarray, tf: np.ndarray, ttf: np.ndarray) -> None:
        tf, ttf = np.asarray(tf, dtype=np.int64), np.asarray(ttf, dtype=np.int64)
        if len(tf) and int((tf - ttf).min()) < 0:
            raise ValueError("a posting's text count exceeds its count")
        keys = _keys(mask, tf, ttf)
        at = np.minimum(np.searchsorted(self.sorted, keys), max(len(self.sorted) - 1, 0))
        found = self.sorted[at] == keys if len(self.sorted) else np.zeros(len(keys), dtype=bool)
        codes = np.where(found, self.code_of_sorted[at] if len(self.sorted) else 0, ESCAPE).astype(np.uint8)
        self.codes.append(codes)
        escaped = np.flatnonzero(~found)
        self.big_idx.append(escaped + self.done)
        self.big_val.append(np.stack([np.asarray(mask)[escaped], tf[escaped], ttf[escaped]], axis=1).astype(np.uint32).reshape(-1, 3))
        self.done += len(codes)

    def close(self) -> dict[str, Any]:
        """Write the files; returns their manifest entries by file name."""
        return {
            "post.attr.sva": self.codes.close(),
            "post.attr.table.sva": storage.write_array(self.folder / "post.attr.table.sva", _triples(self.table), np.uint32),
            "post.attr.big.idx.sva": storage.write_array(self.folder / "post.attr.big.idx.sva", np.concatenate(self.big_idx or [np.zeros(0, np.int64)]), np.int64),
            "post.attr.big.val.sva": storage.write_array(self.folder / "post.attr.big.val.sva", np.concatenate(self.big_val or [np.zeros((0, 3), np.uint32)]), np.uint32),
        }


def write(folder: Path, mask: np.ndarray, tf: np.ndarray, ttf: np.ndarray) -> dict[str, Any]:
    """Write every posting's attributes at once; returns the files' manifest entries."""
    w = AttributesWriter(folder, table_of(*histogram(mask, tf, ttf)))
    w.append(mask, tf, ttf)
    return w.close()


class Attributes:
    """Read side of either layout. Postings are given as lo..hi, or as lo + sel (`sel` ascending)."""

    def __init__(self, files: dict[str, Any]) -> None:
        """`files`: the opened arrays of `CODED_FILES` or of `BYTE_FILES`, by name."""
        self.coded = "post.attr.sva" in files
        self._meets: dict[int, np.ndarray] = {}
        if self.coded:
            self.codes = files["post.attr.sva"]
            table = np.asarray(files["post.attr.table.sva"]).astype(np.int64)
            self.table_ok = table.ndim == 2 and table.shape[1] == 3 and len(table) <= ESCAPE
            full = np.zeros((ESCAPE + 1, 3), dtype=np.int64)  # byte 255 (and unused bytes) read 0, then patched
            if self.table_ok:
                full[: len(table)] = table
            self._mask, self._tf, self._ttf = full[:, 0].astype(np.uint8), full[:, 1].copy(), full[:, 2].copy()
            self.big = (files["post.attr.big.idx.sva"], files["post.attr.big.val.sva"])
        else:
            self.mask_bytes = files["post.mask.sva"]
            self.tf_side = (files["post.tf.sva"], files["post.tf.big.idx.sva"], files["post.tf.big.val.sva"])
            self.ttf_side = (files["post.ttf.sva"], files["post.ttf.big.idx.sva"], files["post.ttf.big.val.sva"])

    def __len__(self) -> int:
        return len(self.codes if self.coded else self.mask_bytes)

    def agree(self) -> bool:
        """Whether the files' lengths and shapes agree with each other (what opening checks)."""
        if self.coded:
            idx, val = self.big
            return self.table_ok and len(idx) == len(val) and (len(val) == 0 or val.shape[1] == 3)
        n = len(self.mask_bytes)
        return all(len(small) == n and len(i) == len(v) for small, i, v in (self.tf_side, self.ttf_side))

    # ------------------------------------------------------------ format 9

    def _escaped(self, lo: int, hi: int, sel: np.ndarray | None, column: int) -> tuple[np.ndarray, np.ndarray]:
        """(where in the read, value of `column`) of the side list's postings in the read."""
        idx_arr, val_arr = self.big
        if not len(idx_arr):
            return np.zeros(0, dtype=np.intp), np.zeros(0, dtype=np.int64)
        idx = np.asarray(idx_arr)  # an ArrayFile is verified whole first: a binary search reads anywhere in it
        a, b = np.searchsorted(idx, np.array([lo, hi], dtype=idx.dtype)).tolist()
        at, v = idx[a:b] - lo, np.asarray(val_arr[a:b])[:, column].astype(np.int64)
        if sel is not None and a < b:
            i = np.searchsorted(sel, at)
            ok = i < len(sel)
            ok[ok] = sel[i[ok]] == at[ok]
            at, v = i[ok], v[ok]
        return at, v

    def _codes(self, lo: int, hi: int, sel: np.ndarray | None) -> np.ndarray:
        return np.asarray(self.codes[lo:hi] if sel is None else self.codes[lo + sel])

    def _column(self, table: np.ndarray, column: int, lo: int, hi: int, sel: np.ndarray | None) -> np.ndarray:
        out = np.take(table, self._codes(lo, hi, sel))
        at, v = self._escaped(lo, hi, sel, column)
        out[at] = v
        return out

    # ------------------------------------------------------------ formats 2 to 8

    @staticmethod
    def _bytes(side: tuple[Any, Any, Any], lo: int, hi: int, sel: np.ndarray | None) -> np.ndarray:
        small, big_idx, big_val = side
        out = np.asarray(small[lo:hi] if sel is None else small[lo + sel]).astype(np.int64)
        if not len(big_idx):
            return out
        idx = np.asarray(big_idx)
        a, b = np.searchsorted(idx, np.array([lo, hi], dtype=idx.dtype)).tolist()
        if a < b:
            at, v = idx[a:b] - lo, np.asarray(big_val[a:b]).astype(np.int64)
            if sel is not None:
                i = np.searchsorted(sel, at)
                ok = i < len(sel)
                ok[ok] = sel[i[ok]] == at[ok]
                at, v = i[ok], v[ok]
            out[at] = v
        return out

    # ------------------------------------------------------------ reads

    def masks(self, lo: int, hi: int) -> np.ndarray:
        """Field masks (u8) of postings lo..hi."""
        if not self.coded:
            return np.asarray(self.mask_bytes[lo:hi])
        return self._column(self._mask, 0, lo, hi, None).astype(np.uint8, copy=False)

    def meets(self, lo: int, hi: int, fields: int) -> np.ndarray:
        """Whether each of postings lo..hi is in any of `fields` (a mask)."""
        if not self.coded:
            return (np.asarray(self.mask_bytes[lo:hi]) & fields) != 0
        truth = self._meets.get(fields)
        if truth is None:
            truth = self._meets[fields] = (self._mask & fields) != 0  # 256 entries per field set (at most 256 sets)
        out = np.take(truth, self._codes(lo, hi, None))
        at, v = self._escaped(lo, hi, None, 0)
        out[at] = (v & fields) != 0
        return out

    def tf(self, lo: int, hi: int, sel: np.ndarray | None = None) -> np.ndarray:
        """Occurrences (int64) in every field."""
        return self._column(self._tf, 1, lo, hi, sel) if self.coded else self._bytes(self.tf_side, lo, hi, sel)

    def text_tf(self, lo: int, hi: int, sel: np.ndarray | None = None) -> np.ndarray:
        """Occurrences (int64) in title, headings and body."""
        return self._column(self._ttf, 2, lo, hi, sel) if self.coded else self._bytes(self.ttf_side, lo, hi, sel)
