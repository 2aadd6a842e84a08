"""Term positions on disk: raw (format 4 and older) or delta-coded in blocks (format 5 on).

Each term's positions are cut into blocks of `BLOCK`: a full block keeps its first value in
`pos.first` and its 127 differences in one row of a table; `pos.dir` says which table and row.
The last `count % BLOCK` positions of a term (all of a rare term's) are its tail, kept raw in
`pos.tail`. Decoding a block is a row copy and a running sum, so a phrase or NEAR decodes only
the blocks that can hold what it looks for (a binary search in the term's first values), and a
term rarer than a block decodes nothing.

Format 9 packs the differences: each block takes the width of 8, 12, 16 or 32 bits that stores it
in the fewest bytes, counting the differences too large for it as exceptions, kept aside whole
(`pos.exc.at`: where in the block, `pos.exc.val`: the difference; block j's are
`pos.exc.ptr[j]:pos.exc.ptr[j + 1]`). Widths are whole bytes but for 12 bits (two differences in
three bytes), so a row is still unpacked by a few array operations, and a gap of one long
difference (a word's next position in another document) no longer widens the whole block.
Formats 5 to 8 keep each block in the narrowest of one, two, four or eight bytes that holds its
largest difference (`pos.d1` to `pos.d8`), with no exceptions.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from sieve.engine.format import storage
from sieve.engine.format.distinct import distinct, distinct_sorted
from sieve.engine.format.ranges import ragged

BLOCK = 128
# Format 9: the packed row tables (bits per difference, and how each is stored) and the exceptions.
PACKED_BITS = (8, 12, 16, 32)
PACKED_FILES_ROWS = tuple(f"pos.p{b}.sva" for b in PACKED_BITS)
PACKED_DTYPES = (np.uint8, np.uint8, np.uint16, np.uint32)
PACKED_COLUMNS = (BLOCK - 1, BLOCK * 3 // 2, BLOCK - 1, BLOCK - 1)  # p12: 128 values (the last unused), two in three bytes
EXCEPTION_FILES = ("pos.exc.ptr.sva", "pos.exc.at.sva", "pos.exc.val.sva")
PACKED_FILES = ("pos.blocks.ptr.sva", "pos.first.sva", "pos.dir.sva") + PACKED_FILES_ROWS + EXCEPTION_FILES + ("pos.tail.sva",)
# Formats 5 to 8: one row table per whole width, no exceptions.
WIDTHS = (np.uint8, np.uint16, np.uint32, np.uint64)  # row tables pos.d1, pos.d2, pos.d4, pos.d8
ROW_FILES = tuple(f"pos.d{np.dtype(w).itemsize}.sva" for w in WIDTHS)
BLOCK_FILES = ("pos.blocks.ptr.sva", "pos.first.sva", "pos.dir.sva") + ROW_FILES + ("pos.tail.sva",)
RAW_FILES = ("pos.data.sva",)


# Intersecting two ascending lists: by binary searches when one is this many times shorter, else by merging.
MERGE_SHARE = 16


def common(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The values in both `a` and `b` (each ascending without repeats, one dtype), ascending."""
    if len(a) > len(b):
        a, b = b, a
    if len(a) * MERGE_SHARE < len(b):
        # Few next to many: a binary search for each of the few.
        at = np.searchsorted(b, a)
        np.minimum(at, len(b) - 1, out=at)  # past the end: compared with the last, which is smaller
        return a[b[at] == a]
    # Comparable lengths: numpy's stable sort finds the two ascending runs and merges them in
    # linear time, and a value in both ends up next to itself (1.3-2x the binary searches' speed).
    both = np.concatenate((a, b))
    both.sort(kind="stable")
    return both[1:][both[1:] == both[:-1]]


def bitmap(positions: np.ndarray) -> np.ndarray:
    """The set of some ascending positions as bits: bit i & 7 of byte i >> 3, up to the last
    position, then 8 zero bytes (so that 8 bytes can be read from any byte of it)."""
    if not len(positions):
        return np.zeros(8, dtype=np.uint8)
    flags = np.zeros((int(positions[-1]) >> 3) + 1 + 8 << 3, dtype=bool)
    flags[positions.astype(np.intp, copy=False)] = True
    return np.packbits(flags, bitorder="little")


def in_bitmap(bits: np.ndarray, target: np.ndarray) -> np.ndarray:
    """The values of `target` (ascending, unsigned) whose bits are set in `bits` (a `bitmap`)."""
    if len(target) and int(target[-1]) >= len(bits) << 3:  # past the last position: none of those
        target = target[: int(np.searchsorted(target, len(bits) << 3))]
    got = bits[target >> 3]
    np.right_shift(got, (target & 7).astype(np.uint8), out=got)
    np.bitwise_and(got, 1, out=got)
    return target[got.view(bool)]


# The longest range `any_in_bitmap` tests: 64 bits read from the byte of its first, less 7 shifted out.
RANGE_BITS = 57


def any_in_bitmap(bits: np.ndarray, lo: np.ndarray, width: int | np.ndarray) -> np.ndarray:
    """Whether some bit of `bits` (a `bitmap`) is set in each range of `width` (0 to `RANGE_BITS`,
    one for all or one each) from `lo` (int64, at least 0): one 8-byte read per range."""
    words = np.ndarray((len(bits) - 7,), dtype="<u8", buffer=bits, strides=(1,))  # 8 bytes from every byte
    at = np.ascontiguousarray(lo, dtype=np.int64).view(np.uint64)
    # A range past the last position reads the 8 zero bytes at the end.
    got = words[np.minimum(at >> np.uint64(3), np.uint64(len(words) - 1))]
    got >>= at & np.uint64(7)
    if isinstance(width, np.ndarray):
        got &= (np.uint64(1) << width.astype(np.uint64)) - np.uint64(1)
    else:
        got &= np.uint64((1 << width) - 1)
    return got != 0


class Encoded(NamedTuple):
    """Some terms' positions in blocks (rows numbered from 0 in each table)."""

    blocks: np.ndarray  # int64 [terms]: full blocks of each term
    first: np.ndarray  # [blocks], in the values' dtype
    dir: np.ndarray  # int64 [blocks]: row << 2 | table
    rows: tuple[np.ndarray, ...]  # per table (PACKED_BITS): its rows as stored
    exceptions: np.ndarray  # int64 [blocks]: each block's exceptions
    exc_at: np.ndarray  # uint8: where in its block's differences each exception is, block after block
    exc_val: np.ndarray  # int64: the whole difference
    tail: np.ndarray  # int64: each term's last count % BLOCK positions, term after term


def _pack12(values: np.ndarray) -> np.ndarray:
    """Rows of BLOCK - 1 values below 4096 as rows of BLOCK * 3 / 2 bytes (two values in three)."""
    v = np.zeros((len(values), BLOCK), dtype=np.uint16)
    v[:, : BLOCK - 1] = values
    a, b = v[:, 0::2], v[:, 1::2]
    out = np.empty((len(values), BLOCK // 2, 3), dtype=np.uint8)
    out[:, :, 0] = a & 0xFF
    out[:, :, 1] = (a >> 8) | ((b & 0xF) << 4)
    out[:, :, 2] = b >> 4
    return out.reshape(len(values), BLOCK * 3 // 2)


def _unpack12(rows: np.ndarray, out: np.ndarray) -> None:
    """Write what `_pack12` packed into `out` ([len(rows), BLOCK - 1]): difference 2i is the low 12
    bits of bytes 3i, 3i + 1 read as one little-endian u16, difference 2i + 1 the high 12 bits of
    bytes 3i + 1, 3i + 2; two strided views of the rows, no copy."""
    rows = np.ascontiguousarray(rows, dtype=np.uint8)
    m = len(rows)
    width = BLOCK * 3 // 2
    even = np.ndarray((m, BLOCK // 2), dtype="<u2", buffer=rows, offset=0, strides=(width, 3))
    odd = np.ndarray((m, BLOCK // 2 - 1), dtype="<u2", buffer=rows, offset=1, strides=(width, 3))
    np.bitwise_and(even, 0xFFF, out=out[:, 0::2])
    np.right_shift(odd, 4, out=out[:, 1::2])


def encode(values: np.ndarray, counts: np.ndarray, row_base: tuple[int, ...] = (0, 0, 0, 0)) -> Encoded:
    """Blocks of consecutive terms' positions (`counts[i]` each, ascending within a term), packed
    as format 9 writes them; rows are numbered from `row_base` in each table (the rows already
    written)."""
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
    blocks = windows[heads]  # in the values' dtype (u32 for most indexes): half the bytes of int64
    if len(blocks) and bool((blocks[:, 1:] < blocks[:, :-1]).any()):
        raise ValueError("positions must ascend within each term")
    diffs = np.diff(blocks, axis=1)
    # Each block's table: the fewest bytes, its row plus (one byte + the value) per exception.
    exc_bytes = 1 + max(values.dtype.itemsize, 4)
    cost = np.empty((len(PACKED_BITS), len(diffs)), dtype=np.int64)
    for k, bits in enumerate(PACKED_BITS):
        row_bytes = PACKED_COLUMNS[k] * np.dtype(PACKED_DTYPES[k]).itemsize
        cost[k] = row_bytes + exc_bytes * np.count_nonzero(diffs > (1 << bits) - 1, axis=1)
    # One table for all of a term's blocks: a read of a term (or a run of its blocks) is then one
    # slice of one table, and the bytes grow by 4% over the best table block by block.
    per_term = np.stack([np.bincount(owner, weights=c, minlength=len(counts)) for c in cost]) if len(diffs) else cost
    table = per_term.argmin(axis=0)[owner].astype(np.int64) if len(diffs) else np.zeros(0, dtype=np.int64)
    limit = ((np.int64(1) << np.asarray(PACKED_BITS, dtype=np.int64)) - 1).astype(diffs.dtype)[table]
    over = diffs > limit[:, None]
    exc_block, exc_at = np.nonzero(over)  # row-major: block after block, ascending within one
    exceptions = np.count_nonzero(over, axis=1).astype(np.int64)
    exc_val = diffs[exc_block, exc_at]
    low = diffs & limit[:, None]
    # Rows are numbered in block order within each table: sort the blocks by table once.
    order = np.argsort(table, kind="stable")
    per_table = np.bincount(table, minlength=len(PACKED_BITS))
    row = np.empty(len(table), dtype=np.int64)
    row[order] = np.arange(len(order)) - np.repeat(np.cumsum(per_table) - per_table - np.asarray(row_base, dtype=np.int64), per_table)
    grouped = low[order]
    cuts = np.cumsum(per_table)
    rows = []
    for k, part in enumerate(np.split(grouped, cuts[:-1])):
        rows.append(_pack12(part) if PACKED_BITS[k] == 12 else part.astype(PACKED_DTYPES[k]))
    # Tails: the rest of each term.
    rest = counts - full * BLOCK
    owner = np.repeat(terms, rest)
    tail = values[(starts + full * BLOCK)[owner] + np.arange(len(owner)) - (np.cumsum(rest) - rest)[owner]]
    return Encoded(full, blocks[:, 0].copy(), row << 2 | table, tuple(rows), exceptions, exc_at.astype(np.uint8),
                   exc_val.astype(np.int64), tail.astype(np.int64))


class PositionsWriter:
    """Streams the block files of format 9: `append` whole terms in term order, `close` seals them."""

    def __init__(self, folder: Path, pos_dtype: Any, total: int) -> None:
        self.folder = folder
        self.dtype = np.dtype(pos_dtype)
        # pos.dir packs (row << 2 | table); rows are at most total / BLOCK.
        dir_dtype = np.uint32 if (total // BLOCK + 1) << 2 < 2**32 else np.int64
        self.first = storage.ArrayWriter(folder / "pos.first.sva", self.dtype)
        self.dir = storage.ArrayWriter(folder / "pos.dir.sva", dir_dtype)
        self.rows = [storage.ArrayWriter(folder / name, w, columns=c) for name, w, c in zip(PACKED_FILES_ROWS, PACKED_DTYPES, PACKED_COLUMNS)]
        self.exc_at = storage.ArrayWriter(folder / "pos.exc.at.sva", np.uint8)
        self.exc_val = storage.ArrayWriter(folder / "pos.exc.val.sva", self.dtype)
        self.tail = storage.ArrayWriter(folder / "pos.tail.sva", self.dtype)
        self.blocks: list[np.ndarray] = []
        self.exceptions: list[np.ndarray] = []

    def append(self, values: np.ndarray, counts: np.ndarray) -> None:
        # In the positions' own width (u32 below 2**32 positions): the blocks and their differences
        # are then half the bytes of int64, and a build's encoding takes 0.15 s instead of 0.4.
        e = encode(np.asarray(values).astype(self.dtype, copy=False), counts, tuple(w.rows for w in self.rows))
        self.first.append(e.first.astype(self.dtype))
        self.dir.append(e.dir)
        for w, rows in zip(self.rows, e.rows):
            w.append(rows)
        self.exc_at.append(e.exc_at)
        self.exc_val.append(e.exc_val.astype(self.dtype))
        self.tail.append(e.tail.astype(self.dtype))
        self.blocks.append(e.blocks)
        self.exceptions.append(e.exceptions)

    def close(self) -> dict[str, dict[str, int]]:
        """The manifest entries of the files, the pointer tables (`pos.blocks.ptr`: blocks before
        each term; `pos.exc.ptr`: exceptions before each block) included."""
        entries = {}
        for name, counts in (("pos.blocks.ptr.sva", self.blocks), ("pos.exc.ptr.sva", self.exceptions)):
            ptr = np.zeros(sum(len(c) for c in counts) + 1, dtype=np.int64)
            if counts:
                np.cumsum(np.concatenate(counts), out=ptr[1:])
            entries[name] = storage.write_array(self.folder / name, ptr, np.uint32 if ptr[-1] < 2**32 else np.int64)
        for name, w in (("pos.first.sva", self.first), ("pos.dir.sva", self.dir), *zip(PACKED_FILES_ROWS, self.rows),
                        ("pos.exc.at.sva", self.exc_at), ("pos.exc.val.sva", self.exc_val), ("pos.tail.sva", self.tail)):
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

    def present(self, tid: int, target: np.ndarray) -> np.ndarray:
        return common(target, self.all(tid))

    def bitmap_of(self, tid: int, lookups: int) -> np.ndarray | None:
        return None

    def of_terms(self, lo: int, hi: int) -> np.ndarray:
        return self.data[int(self.ptr[lo]) : int(self.ptr[hi])]


def _put(kept: OrderedDict[int, np.ndarray], key: int, arr: np.ndarray, held: int, budget: int) -> int:
    """Add `arr` to a least-recently-used store holding `held` bytes, drop the oldest past `budget`;
    the bytes it then holds."""
    if key not in kept:
        kept[key] = arr
        held += arr.nbytes
        while held > budget:
            held -= kept.popitem(last=False)[1].nbytes
    return held


class BlockPositions:
    """Positions in blocks (format 5); the same methods as `RawPositions`.

    Whole lists once decoded are kept, least recently used first out, up to `budget` bytes: the
    words whose lists are long enough to cost a decode are the frequent ones, which recur from
    query to query (`the`, `file`), so a warm reader reads them as fast as raw ones. The default
    budget is half of what the segment's positions take raw (format 4 kept all of them in the page
    cache), at most `CACHED_BYTES`: on man-sections (100,000 documents) half rather than a quarter
    made phrase and NEAR queries 5-12% faster at p50, for 11 MB more at most. A read of a term of at most `WHOLE_BLOCKS` blocks, or
    that needs more than 1/`WHOLE_SHARE` of its blocks, decodes (and keeps) all of them: choosing
    the blocks would cost about as much as decoding the rest. Otherwise the first read of a term
    decodes only the blocks it needs, and the second decodes and keeps the whole list if it can be
    kept: a word read twice is likely read again.

    A word found in at least 1/`BITMAP_SHARE` of what a bitmap of every position costs (its list's
    raw bytes against one bit per position of the segment: `the`, `to`, `a`, `is` on man-sections),
    looked up by many targets (a phrase's later word, NEAR's longer list) for the second time, also
    gets a bitmap of its positions, kept in half as many bytes again (`map_budget`, least recently
    used out): a lookup is then one bit test per target (a read of 8 bytes for NEAR) instead of
    merging the targets with its list (on man-sections `"to the"`, 209,303 targets in 550,636
    positions: 0.95 ms against 3.0).
    """

    BITMAP_SHARE = 2

    CACHED_BYTES = 16 << 20
    WHOLE_SHARE = 4
    WHOLE_BLOCKS = 32

    def __init__(self, ptr: Any, blocks_ptr: Any, first: Any, directory: Any, rows: tuple[Any, ...], tail: Any, positions: int = 0,
                 exceptions: tuple[Any, Any, Any] | None = None) -> None:
        """`rows`: the row tables, `exceptions` the (pointer, place, value) tables of format 9
        (`PACKED_FILES`), or None for the whole-width tables of formats 5 to 8 (`ROW_FILES`);
        `positions`: how many the segment holds (sets the budget)."""
        self.ptr, self.blocks_ptr, self.first, self.dir, self.rows, self.tail = ptr, blocks_ptr, first, directory, rows, tail
        self.exceptions = exceptions
        self.dtype = np.dtype(first.dtype)
        self.positions = positions
        self.budget = min(self.CACHED_BYTES, positions * self.dtype.itemsize // 2)
        self._kept: OrderedDict[int, np.ndarray] = OrderedDict()  # term -> its decoded list
        self._read_once: set[int] = set()  # terms read in part once (bounded: cleared when large)
        self._kept_bytes = 0
        # Bitmaps beside the lists, in half their budget: within it they would push out the lists
        # of the rarer words that most phrases read (measured: phrase p50 4% slower, NEAR's 2-5%).
        self.map_budget = self.budget // 2
        self._maps: OrderedDict[int, np.ndarray] = OrderedDict()
        self._maps_bytes = 0
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
        out = self.decode_run(a, b, self.tail[ta:tb])
        self._keep(tid, out)
        return out

    def _keep(self, key: int, arr: np.ndarray) -> None:
        """Keep a decoded list (read-only from now on: callers share it) if it fits."""
        arr.flags.writeable = False
        if arr.nbytes * 2 <= self.budget:
            with self._lock:
                self._kept_bytes = _put(self._kept, key, arr, self._kept_bytes, self.budget)

    def present(self, tid: int, target: np.ndarray) -> np.ndarray:
        """The values of `target` (ascending, in the positions' dtype) that are positions of term `tid`."""
        bits = self.bitmap_of(tid, len(target))
        if bits is not None:
            return in_bitmap(bits, target)
        return common(target, self.covering(tid, target, target))

    def bitmap_of(self, tid: int, lookups: int) -> np.ndarray | None:
        """The term's bitmap (`bitmap`) if kept, or made now for `lookups` lookups if it qualifies
        (see the class); else None."""
        with self._lock:
            bits = self._maps.get(tid)
            if bits is not None:
                self._maps.move_to_end(tid)
                return bits
            count = int(self.ptr[tid + 1] - self.ptr[tid])
            # Many lookups, a frequent word (judged by the segment's positions here, by its own
            # last one below), read before.
            if (lookups * MERGE_SHARE < count or self.positions // 8 > self.BITMAP_SHARE * count * self.dtype.itemsize
                    or (tid not in self._kept and tid not in self._read_once)):
                return None
        pos = self.all(tid)
        size = (int(pos[-1]) >> 3) + 1 + 8 if len(pos) else 0
        if size > self.BITMAP_SHARE * pos.nbytes or size > self.map_budget:
            return None
        bits = bitmap(pos)
        bits.flags.writeable = False  # shared by every caller from now on
        with self._lock:
            self._maps_bytes = _put(self._maps, tid, bits, self._maps_bytes, self.map_budget)
        return bits

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

    # A run of blocks is decoded table by table as slices while it changes tables at most this
    # often (a slice copy per stretch); past it, each table's rows are scattered to their blocks.
    STRETCHES = 16
    TRANSPOSED = 1024
    TRANSPOSED_MIN = 8

    def _rows(self, k: int, rows: Any, out: np.ndarray) -> None:
        """Write rows of table k (as stored) into `out` ([rows, BLOCK - 1] differences)."""
        if self.exceptions is not None and k == 1:
            _unpack12(rows, out)
        else:
            out[...] = rows

    def _scatter(self, k: int, rows: Any, out: np.ndarray, at: np.ndarray) -> None:
        """Write rows of table k into the rows `at` of `out` (differences only)."""
        if self.exceptions is not None and k == 1:
            part = np.empty((len(at), BLOCK - 1), dtype=self.dtype)
            _unpack12(rows, part)
            rows = part
        out[at, 1:] = rows

    def _buffer(self, n: int) -> tuple[np.ndarray, np.ndarray, bool]:
        """(storage, [n, BLOCK] view of it) to decode n blocks into. From `TRANSPOSED_MIN` to
        `TRANSPOSED` blocks the storage is [BLOCK, n]: the running sum then adds whole rows of it
        (vector additions across blocks) instead of summing along each block, 1.3 to 1.6 times
        faster with the transpose back included; outside that the transposes cost more than
        they save."""
        if self.TRANSPOSED_MIN <= n <= self.TRANSPOSED:
            store = np.empty((BLOCK, n), dtype=self.dtype)
            return store, store.T, True
        store = np.empty((n, BLOCK), dtype=self.dtype)
        return store, store, False

    @staticmethod
    def _finish(store: np.ndarray, transposed: bool) -> np.ndarray:
        """The positions from a buffer holding first values and differences, in block order."""
        if transposed:
            np.cumsum(store, axis=0, out=store)
            return store.T.reshape(-1)
        np.cumsum(store, axis=1, out=store)
        return store.reshape(-1)

    def decode(self, blocks: np.ndarray) -> np.ndarray:
        """The positions of some blocks (ascending block numbers), BLOCK of each, in order."""
        store, out, transposed = self._buffer(len(blocks))
        if not len(blocks):
            return store.reshape(-1)
        out[:, 0] = self.first[blocks]
        code = np.asarray(self.dir[blocks]).astype(np.int64)
        table, row = code & 3, code >> 2
        k0 = int(table[0])
        if not (table != k0).any():  # one table (a term's blocks share one since format 9)
            self._rows(k0, self.rows[k0][row], out[:, 1:])
        else:
            for k in distinct(table).tolist():
                at = np.flatnonzero(table == k)
                self._scatter(k, self.rows[k][row[at]], out, at)
        if self.exceptions is not None:
            ptr, place, val = self.exceptions
            if len(blocks) == 1:  # one block (a phrase's lookup, an explanation's hit): its exceptions are a slice
                e0, e1 = int(ptr[blocks[0]]), int(ptr[blocks[0] + 1])
                if e0 < e1:
                    out[0, np.asarray(place[e0:e1]).astype(np.intp) + 1] = val[e0:e1]
            else:
                lo, hi = np.asarray(ptr[blocks]).astype(np.int64), np.asarray(ptr[blocks + 1]).astype(np.int64)
                counts = hi - lo
                if counts.any():
                    idx = ragged(lo, counts)
                    out[np.repeat(np.arange(len(blocks)), counts), np.asarray(place[idx]).astype(np.intp) + 1] = val[idx]
        return self._finish(store, transposed)

    def decode_run(self, a: int, b: int, tail: Any = None) -> np.ndarray:
        """`decode` of blocks a..b - 1, then `tail` (positions kept raw) if given, in one array.
        A table numbers its rows in block order, so the blocks of a run that share a table are
        consecutive rows of it: slices, not gathers. A run in one table as consecutive rows (a
        term's, since format 9) is proven so by its first and last blocks' codes alone: most runs
        decoded are one short term's (a phrase's rarest word: 1-60 blocks), where each array step's
        fixed cost is most of the time."""
        n = b - a
        rest = 0 if tail is None else len(tail)
        out = np.empty(n * BLOCK + rest, dtype=self.dtype)
        if rest:
            out[n * BLOCK :] = tail
        if not n:
            return out
        blocks = out[: n * BLOCK].reshape(n, BLOCK)
        transposed = self.TRANSPOSED_MIN <= n <= self.TRANSPOSED
        # Transposed, the running sum adds whole rows (one place of every block) at once: see `_buffer`.
        work = np.empty((BLOCK, n), dtype=self.dtype).T if transposed else blocks
        work[:, 0] = self.first[a:b]
        c0 = int(self.dir[a])
        if int(self.dir[b - 1]) == c0 + ((n - 1) << 2):  # one table, consecutive rows: one slice
            self._rows(c0 & 3, self.rows[c0 & 3][c0 >> 2 : (c0 >> 2) + n], work[:, 1:])
        else:
            code = np.asarray(self.dir[a:b])
            table = code & 3
            edges = np.flatnonzero(table[1:] != table[:-1]) + 1
            if len(edges) < self.STRETCHES:
                starts = [0, *edges.tolist()]
                for s, e in zip(starts, [*starts[1:], n]):
                    k, r0 = int(table[s]), int(code[s]) >> 2
                    self._rows(k, self.rows[k][r0 : r0 + e - s], work[s:e, 1:])
            else:
                for k in range(len(self.rows)):
                    at = np.flatnonzero(table == k)
                    if len(at):
                        r0 = int(code[at[0]]) >> 2
                        self._scatter(k, self.rows[k][r0 : r0 + len(at)], work, at)
        if self.exceptions is not None:
            ptr, place, val = self.exceptions
            bounds = ptr[a : b + 1]
            e0, e1 = int(bounds[0]), int(bounds[-1])
            if e0 < e1:  # a run's exceptions are one slice
                work[np.repeat(np.arange(n), np.diff(bounds)), place[e0:e1] + 1] = val[e0:e1]
        if transposed:
            np.cumsum(work.T, axis=0, out=work.T)
            blocks[...] = work
        else:
            np.cumsum(blocks, axis=1, out=blocks)
        return out

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
            need = distinct_sorted(head // BLOCK)  # idx ascends
            decoded = self.decode(need + a)
            out[:split] = decoded[np.searchsorted(need, head // BLOCK) * BLOCK + head % BLOCK]
        out[split:] = self.tail[ta:tb][rest - cut]
        return out

    def of_terms(self, lo: int, hi: int) -> np.ndarray:
        """The positions of terms lo..hi - 1 together, in no particular order."""
        a, b = int(self.blocks_ptr[lo]), int(self.blocks_ptr[hi])
        ta, tb = int(self.ptr[lo]) - BLOCK * a, int(self.ptr[hi]) - BLOCK * b
        return self.decode_run(a, b, self.tail[ta:tb])
