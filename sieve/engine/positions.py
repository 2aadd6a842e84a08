"""Term positions on disk: raw (format 4 and older) or delta-coded in blocks (format 5).

Format 5 cuts each term's positions into blocks of `BLOCK`: a full block keeps its first value in
`pos.first` and its 127 differences in the narrowest of four row tables (`pos.d1` to `pos.d8`,
one, two, four or eight bytes a difference) that holds its largest; `pos.dir` says which table and
row. The last `count % BLOCK` positions of a term (all of a rare term's) are its tail, kept raw in
`pos.tail`. Decoding a block is a row copy and a running sum, so a phrase or NEAR decodes only
the blocks that can hold what it looks for (a binary search in the term's first values), and a
term rarer than a block decodes nothing.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from sieve.engine import storage

BLOCK = 128
WIDTHS = (np.uint8, np.uint16, np.uint32, np.uint64)  # row tables pos.d1, pos.d2, pos.d4, pos.d8
ROW_FILES = tuple(f"pos.d{np.dtype(w).itemsize}.sva" for w in WIDTHS)
BLOCK_FILES = ("pos.blocks.ptr.sva", "pos.first.sva", "pos.dir.sva") + ROW_FILES + ("pos.tail.sva",)
RAW_FILES = ("pos.data.sva",)
_LIMITS = [np.iinfo(w).max for w in WIDTHS]


class Encoded(NamedTuple):
    """Some terms' positions in blocks (rows numbered from 0 in each table)."""

    blocks: np.ndarray  # int64 [terms]: full blocks of each term
    first: np.ndarray  # int64 [blocks]
    dir: np.ndarray  # int64 [blocks]: row << 2 | table
    rows: tuple[np.ndarray, ...]  # per table: [rows, BLOCK - 1] differences
    tail: np.ndarray  # int64: each term's last count % BLOCK positions, term after term


def encode(values: np.ndarray, counts: np.ndarray, row_base: tuple[int, ...] = (0, 0, 0, 0)) -> Encoded:
    """Blocks of consecutive terms' positions (`counts[i]` each, ascending within a term); rows
    are numbered from `row_base` in each table (the rows already written)."""
    values = np.asarray(values)
    counts = np.asarray(counts, dtype=np.int64)
    terms = np.arange(len(counts))
    full = counts // BLOCK
    starts = np.cumsum(counts) - counts
    # Full blocks: a term's first full * BLOCK values, BLOCK at a time.
    owner = np.repeat(terms, full)
    heads = starts[owner] + (np.arange(len(owner)) - (np.cumsum(full) - full)[owner]) * BLOCK
    # Every BLOCK-long window of the values as a (view) row; a block is the row at its head.
    windows = np.lib.stride_tricks.sliding_window_view(values, BLOCK) if len(values) >= BLOCK else values[:0].reshape(0, BLOCK)
    blocks = windows[heads].astype(np.int64, copy=False)
    diffs = np.diff(blocks, axis=1)
    if len(diffs) and int(diffs.min()) < 0:
        raise ValueError("positions must ascend within each term")
    top = diffs.max(axis=1) if len(diffs) else np.zeros(0, dtype=np.int64)
    table = np.searchsorted(np.asarray(_LIMITS[:-1], dtype=np.uint64), top.astype(np.uint64), side="left").astype(np.int64)
    # Rows are numbered in block order within each table: sort the blocks by table once.
    order = np.argsort(table, kind="stable")
    per_table = np.bincount(table, minlength=len(WIDTHS))
    row = np.empty(len(top), dtype=np.int64)
    row[order] = np.arange(len(order)) - np.repeat(np.cumsum(per_table) - per_table - np.asarray(row_base, dtype=np.int64), per_table)
    grouped = diffs[order]
    cuts = np.cumsum(per_table)
    rows = [part.astype(width) for part, width in zip(np.split(grouped, cuts[:-1]), WIDTHS)]
    # Tails: the rest of each term.
    rest = counts - full * BLOCK
    owner = np.repeat(terms, rest)
    tail = values[(starts + full * BLOCK)[owner] + np.arange(len(owner)) - (np.cumsum(rest) - rest)[owner]]
    return Encoded(full, blocks[:, 0].copy(), row << 2 | table, tuple(rows), tail.astype(np.int64))


class PositionsWriter:
    """Streams the block files of format 5: `append` whole terms in term order, `close` seals them."""

    def __init__(self, folder: Path, pos_dtype: Any, total: int) -> None:
        self.folder = folder
        self.dtype = np.dtype(pos_dtype)
        # pos.dir packs (row << 2 | table); rows are at most total / BLOCK.
        dir_dtype = np.uint32 if (total // BLOCK + 1) << 2 < 2**32 else np.int64
        self.first = storage.ArrayWriter(folder / "pos.first.sva", self.dtype)
        self.dir = storage.ArrayWriter(folder / "pos.dir.sva", dir_dtype)
        self.rows = [storage.ArrayWriter(folder / name, w, columns=BLOCK - 1) for name, w in zip(ROW_FILES, WIDTHS)]
        self.tail = storage.ArrayWriter(folder / "pos.tail.sva", self.dtype)
        self.blocks: list[np.ndarray] = []

    def append(self, values: np.ndarray, counts: np.ndarray) -> None:
        e = encode(values, counts, tuple(w.rows for w in self.rows))
        self.first.append(e.first.astype(self.dtype))
        self.dir.append(e.dir)
        for w, rows in zip(self.rows, e.rows):
            w.append(rows)
        self.tail.append(e.tail.astype(self.dtype))
        self.blocks.append(e.blocks)

    def close(self) -> dict[str, dict[str, int]]:
        """The manifest entries of the files, `pos.blocks.ptr` (blocks before each term) included."""
        ptr = np.zeros(sum(len(b) for b in self.blocks) + 1, dtype=np.int64)
        if self.blocks:
            np.cumsum(np.concatenate(self.blocks), out=ptr[1:])
        entries = {"pos.blocks.ptr.sva": storage.write_array(self.folder / "pos.blocks.ptr.sva", ptr, np.uint32 if ptr[-1] < 2**32 else np.int64)}
        for name, w in (("pos.first.sva", self.first), ("pos.dir.sva", self.dir), *zip(ROW_FILES, self.rows), ("pos.tail.sva", self.tail)):
            entries[name] = w.close()
        return entries


class RawPositions:
    """Positions as one array per index, a term's a slice of it (format 4 and older)."""

    def __init__(self, ptr: Any, data: Any) -> None:
        self.ptr, self.data = ptr, data

    def all(self, tid: int) -> np.ndarray:
        return self.data[int(self.ptr[tid]) : int(self.ptr[tid + 1])]

    def covering(self, tid: int, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        return self.all(tid)

    def at(self, tid: int, idx: np.ndarray) -> np.ndarray:
        return self.all(tid)[idx]

    def of_terms(self, lo: int, hi: int) -> np.ndarray:
        return self.data[int(self.ptr[lo]) : int(self.ptr[hi])]


class BlockPositions:
    """Positions in blocks (format 5); the same methods as `RawPositions`.

    Whole lists once decoded are kept, least recently used first out, up to `budget` bytes: the
    words whose lists are long enough to cost a decode are the frequent ones, which recur from
    query to query (`the`, `file`), so a warm reader reads them as fast as raw ones. The default
    budget is a quarter of what the segment's positions take raw (what format 4 kept in the page
    cache for them), at most `CACHED_BYTES`. A read of a term of at most `WHOLE_BLOCKS` blocks, or
    that needs more than 1/`WHOLE_SHARE` of its blocks, decodes (and keeps) all of them: choosing
    the blocks would cost about as much as decoding the rest. Otherwise the first read of a term
    decodes only the blocks it needs, and the second decodes and keeps the whole list if it can be
    kept: a word read twice is likely read again.
    """

    CACHED_BYTES = 16 << 20
    WHOLE_SHARE = 4
    WHOLE_BLOCKS = 32

    def __init__(self, ptr: Any, blocks_ptr: Any, first: Any, directory: Any, rows: tuple[Any, ...], tail: Any, positions: int = 0) -> None:
        """`positions`: how many the segment holds (sets the budget)."""
        self.ptr, self.blocks_ptr, self.first, self.dir, self.rows, self.tail = ptr, blocks_ptr, first, directory, rows, tail
        self.dtype = np.dtype(first.dtype)
        self.budget = min(self.CACHED_BYTES, positions * self.dtype.itemsize // 4)
        self._kept: OrderedDict[int, np.ndarray] = OrderedDict()
        self._read_once: set[int] = set()  # terms read in part once (bounded: cleared when large)
        self._kept_bytes = 0
        self._lock = threading.Lock()  # readers are shared between threads

    def _range(self, tid: int) -> tuple[int, int, int, int]:
        """(first block, end block, tail start, tail end) of a term."""
        a, b = int(self.blocks_ptr[tid]), int(self.blocks_ptr[tid + 1])
        return a, b, int(self.ptr[tid]) - BLOCK * a, int(self.ptr[tid + 1]) - BLOCK * b

    def _whole(self, tid: int, a: int, b: int, ta: int, tb: int) -> np.ndarray:
        with self._lock:
            kept = self._kept.get(tid)
            if kept is not None:
                self._kept.move_to_end(tid)
                return kept
        out = np.concatenate([self.decode_run(a, b), self.tail[ta:tb]])
        out.flags.writeable = False  # shared by every caller from now on
        if out.nbytes * 2 <= self.budget:
            with self._lock:
                if tid not in self._kept:
                    self._kept[tid] = out
                    self._kept_bytes += out.nbytes
                    while self._kept_bytes > self.budget:
                        self._kept_bytes -= self._kept.popitem(last=False)[1].nbytes
        return out

    def _again(self, tid: int, a: int, b: int, ta: int, tb: int) -> bool:
        """Whether a term whose whole list would be kept was read in part before (and note that it
        now has been). A list too long to keep is always read in part: decoding it whole every
        time would cost more."""
        if (BLOCK * (b - a) + tb - ta) * self.dtype.itemsize * 2 > self.budget:
            return False
        with self._lock:
            if tid in self._read_once:
                return True
            if len(self._read_once) >= 1 << 16:
                self._read_once.clear()
            self._read_once.add(tid)
            return False

    def decode(self, blocks: np.ndarray) -> np.ndarray:
        """The positions of some blocks (ascending block numbers), BLOCK of each, in order."""
        out = np.empty((len(blocks), BLOCK), dtype=self.dtype)
        if not len(blocks):
            return out.reshape(-1)
        out[:, 0] = self.first[blocks]
        code = np.asarray(self.dir[blocks]).astype(np.int64)
        table, row = code & 3, code >> 2
        for k in np.unique(table).tolist():
            mine = table == k
            if mine.all():
                out[:, 1:] = self.rows[k][row]
            else:
                out[mine, 1:] = self.rows[k][row[mine]]
        np.cumsum(out, axis=1, out=out)
        return out.reshape(-1)

    def decode_run(self, a: int, b: int) -> np.ndarray:
        """`decode` of blocks a..b - 1. A table numbers its rows in block order, so the blocks of
        a run that share a table are consecutive rows of it: slices, not gathers."""
        out = np.empty((b - a, BLOCK), dtype=self.dtype)
        if b == a:
            return out.reshape(-1)
        out[:, 0] = self.first[a:b]
        code = np.asarray(self.dir[a:b])
        table = code & 3
        mixed = bool((table != table[0]).any())
        for k in (range(len(self.rows)) if mixed else (int(table[0]),)):
            mine = table == k if mixed else slice(None)
            at = np.flatnonzero(mine) if mixed else (0,)
            if not len(at):
                continue
            r0 = int(code[at[0]]) >> 2
            out[mine, 1:] = self.rows[k][r0 : r0 + (len(at) if mixed else b - a)]
        np.cumsum(out, axis=1, out=out)
        return out.reshape(-1)

    def all(self, tid: int) -> np.ndarray:
        """Every position of a term, ascending (read-only)."""
        a, b, ta, tb = self._range(tid)
        if a == b:
            return self.tail[ta:tb]
        return self._whole(tid, a, b, ta, tb)

    def covering(self, tid: int, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        """Ascending positions of a term that include every one in any [lo[i], hi[i]] (and maybe
        others): the blocks those ranges overlap, and the tail."""
        a, b, ta, tb = self._range(tid)
        tail = self.tail[ta:tb]
        if a == b:
            return tail
        if b - a <= self.WHOLE_BLOCKS or len(lo) * self.WHOLE_SHARE >= b - a or tid in self._kept or self._again(tid, a, b, ta, tb):
            return self._whole(tid, a, b, ta, tb)
        first = self.first[a:b]
        point = lo is hi  # a phrase's lookups: each range one position
        if point and getattr(hi, "dtype", None) == first.dtype:  # positions of this index: in range, no cast
            j_hi = j_lo = np.searchsorted(first, hi, side="right") - 1
        else:
            top = min(int(np.iinfo(first.dtype).max), 2**63 - 1)
            hi = np.clip(np.asarray(hi, dtype=np.int64), -1, top)
            lo = hi if point else np.clip(np.asarray(lo, dtype=np.int64), 0, top)
            # Block j holds first[j] up to (not including) first[j + 1]; a range [lo, hi] needs blocks
            # from the one holding lo to the one holding hi.
            j_hi = np.where(hi >= 0, np.searchsorted(first, np.maximum(hi, 0).astype(first.dtype), side="right") - 1, -1)
            j_lo = j_hi if point else np.maximum(np.searchsorted(first, lo.astype(first.dtype), side="right") - 1, 0)
        ok = j_hi >= 0 if point else (j_hi >= 0) & (hi >= lo)
        if not ok.any():
            return tail
        k = b - a + 1
        marks = np.bincount(j_lo[ok], minlength=k) - np.bincount(j_hi[ok] + 1, minlength=k)
        need = np.flatnonzero(np.cumsum(marks[:-1]) > 0) + a
        if len(need) * self.WHOLE_SHARE >= b - a:
            return self._whole(tid, a, b, ta, tb)
        return np.concatenate([self.decode(need), tail])

    def at(self, tid: int, idx: np.ndarray) -> np.ndarray:
        """The term's positions number `idx` (ascending, within the term)."""
        a, b, ta, tb = self._range(tid)
        idx = np.asarray(idx, dtype=np.int64)
        if a < b and (b - a <= self.WHOLE_BLOCKS or len(idx) * self.WHOLE_SHARE >= BLOCK * (b - a) or tid in self._kept or self._again(tid, a, b, ta, tb)):
            return self._whole(tid, a, b, ta, tb)[idx]
        cut = BLOCK * (b - a)
        split = int(np.searchsorted(idx, cut))
        head, rest = idx[:split], idx[split:]
        out = np.empty(len(idx), dtype=self.dtype)
        if len(head):
            need = np.unique(head // BLOCK)
            decoded = self.decode(need + a)
            out[:split] = decoded[np.searchsorted(need, head // BLOCK) * BLOCK + head % BLOCK]
        out[split:] = self.tail[ta:tb][rest - cut]
        return out

    def of_terms(self, lo: int, hi: int) -> np.ndarray:
        """The positions of terms lo..hi - 1 together, in no particular order."""
        a, b = int(self.blocks_ptr[lo]), int(self.blocks_ptr[hi])
        ta, tb = int(self.ptr[lo]) - BLOCK * a, int(self.ptr[hi]) - BLOCK * b
        return np.concatenate([self.decode_run(a, b), self.tail[ta:tb]])
