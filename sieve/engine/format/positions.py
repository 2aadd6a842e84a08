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

from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from sieve.engine.format import storage

BLOCK = 128
# Format 9: the packed row tables (bits per difference, and how each is stored) and the exceptions.
PACKED_BITS = (8, 12, 16, 32)
PACKED_FILES_ROWS = tuple(f"pos.p{b}.sva" for b in PACKED_BITS)
PACKED_DTYPES = (np.uint8, np.uint8, np.uint16, np.uint32)
# p12: 128 values (the last unused), two in three bytes
PACKED_COLUMNS = (BLOCK - 1, BLOCK * 3 // 2, BLOCK - 1, BLOCK - 1)
EXCEPTION_FILES = ("pos.exc.ptr.sva", "pos.exc.at.sva", "pos.exc.val.sva")
PACKED_FILES = (
    ("pos.blocks.ptr.sva", "pos.first.sva", "pos.dir.sva")
    + PACKED_FILES_ROWS
    + EXCEPTION_FILES
    + ("pos.tail.sva",)
)
# Formats 5 to 8: one row table per whole width, no exceptions.
WIDTHS = (np.uint8, np.uint16, np.uint32, np.uint64)  # row tables pos.d1, pos.d2, pos.d4, pos.d8
ROW_FILES = tuple(f"pos.d{np.dtype(w).itemsize}.sva" for w in WIDTHS)
BLOCK_FILES = ("pos.blocks.ptr.sva", "pos.first.sva", "pos.dir.sva") + ROW_FILES + ("pos.tail.sva",)
RAW_FILES = ("pos.data.sva",)


# Intersecting two ascending lists: by binary searches
# when one is this many times shorter, else by merging.
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


# The longest range `any_in_bitmap` tests: 64 bits
# read from the byte of its first, less 7 shifted out.
RANGE_BITS = 57


def any_in_bitmap(bits: np.ndarray, lo: np.ndarray, width: int | np.ndarray) -> np.ndarray:
    """Whether some bit of `bits` (a `bitmap`) is set in each range of `width` (0 to `RANGE_BITS`,
    one for all or one each) from `lo` (int64, at least 0): one 8-byte read per range."""
    # 8 bytes from every byte
    words = np.ndarray((len(bits) - 7,), dtype="<u8", buffer=bits, strides=(1,))
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
    # uint8: where in its block's differences each exception is, block after block
    exc_at: np.ndarray
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


def unpack12(rows: np.ndarray, out: np.ndarray) -> None:
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


def encode(
    values: np.ndarray, counts: np.ndarray, row_base: tuple[int, ...] = (0, 0, 0, 0)
) -> Encoded:
    """Blocks of consecutive terms' positions (`counts[i]` each, ascending within a term), packed
    as format 9 writes them; rows are numbered from `row_base` in each table
    (the rows already written)."""
    values = np.asarray(values)
    counts = np.asarray(counts, dtype=np.int64)
    terms = np.arange(len(counts))
    full = counts // BLOCK
    starts = np.cumsum(counts) - counts
    # Full blocks: a term's first full * BLOCK values, BLOCK at a time.
    owner = np.repeat(terms, full)
    heads = starts[owner] + (np.arange(len(owner)) - (np.cumsum(full) - full)[owner]) * BLOCK
    # Every BLOCK-long window of the values as a (view) row; a block is the row at its head.
    windows = (
        np.lib.stride_tricks.sliding_window_view(values, BLOCK)
        if len(values) >= BLOCK
        else values[:0].reshape(0, BLOCK)
    )
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
    per_term = (
        np.stack([np.bincount(owner, weights=c, minlength=len(counts)) for c in cost])
        if len(diffs)
        else cost
    )
    table = (
        per_term.argmin(axis=0)[owner].astype(np.int64)
        if len(diffs)
        else np.zeros(0, dtype=np.int64)
    )
    limit = ((np.int64(1) << np.asarray(PACKED_BITS, dtype=np.int64)) - 1).astype(diffs.dtype)[
        table
    ]
    over = diffs > limit[:, None]
    exc_block, exc_at = np.nonzero(over)  # row-major: block after block, ascending within one
    exceptions = np.count_nonzero(over, axis=1).astype(np.int64)
    exc_val = diffs[exc_block, exc_at]
    low = diffs & limit[:, None]
    # Rows are numbered in block order within each table: sort the blocks by table once.
    order = np.argsort(table, kind="stable")
    per_table = np.bincount(table, minlength=len(PACKED_BITS))
    row = np.empty(len(table), dtype=np.int64)
    row[order] = np.arange(len(order)) - np.repeat(
        np.cumsum(per_table) - per_table - np.asarray(row_base, dtype=np.int64), per_table
    )
    grouped = low[order]
    cuts = np.cumsum(per_table)
    rows = []
    for k, part in enumerate(np.split(grouped, cuts[:-1])):
        rows.append(_pack12(part) if PACKED_BITS[k] == 12 else part.astype(PACKED_DTYPES[k]))
    # Tails: the rest of each term.
    rest = counts - full * BLOCK
    owner = np.repeat(terms, rest)
    tail = values[
        (starts + full * BLOCK)[owner] + np.arange(len(owner)) - (np.cumsum(rest) - rest)[owner]
    ]
    return Encoded(
        full,
        blocks[:, 0].copy(),
        row << 2 | table,
        tuple(rows),
        exceptions,
        exc_at.astype(np.uint8),
        exc_val.astype(np.int64),
        tail.astype(np.int64),
    )


class PositionsWriter:
    """Streams the block files of format 9: `append` whole terms in
    term order, `close` seals them."""

    def __init__(self, folder: Path, pos_dtype: Any, total: int) -> None:
        self.folder = folder
        self.dtype = np.dtype(pos_dtype)
        # pos.dir packs (row << 2 | table); rows are at most total / BLOCK.
        dir_dtype = np.uint32 if (total // BLOCK + 1) << 2 < 2**32 else np.int64
        self.first = storage.ArrayWriter(folder / "pos.first.sva", self.dtype)
        self.dir = storage.ArrayWriter(folder / "pos.dir.sva", dir_dtype)
        self.rows = [
            storage.ArrayWriter(folder / name, w, columns=c)
            for name, w, c in zip(PACKED_FILES_ROWS, PACKED_DTYPES, PACKED_COLUMNS)
        ]
        self.exc_at = storage.ArrayWriter(folder / "pos.exc.at.sva", np.uint8)
        self.exc_val = storage.ArrayWriter(folder / "pos.exc.val.sva", self.dtype)
        self.tail = storage.ArrayWriter(folder / "pos.tail.sva", self.dtype)
        self.blocks: list[np.ndarray] = []
        self.exceptions: list[np.ndarray] = []

    def append(self, values: np.ndarray, counts: np.ndarray) -> None:
        # In the positions' own width (u32 below 2**32 positions): the blocks and their differences
        # are then half the bytes of int64, and a build's encoding takes 0.15 s instead of 0.4.
        e = encode(
            np.asarray(values).astype(self.dtype, copy=False),
            counts,
            tuple(w.rows for w in self.rows),
        )
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
        for name, counts in (
            ("pos.blocks.ptr.sva", self.blocks),
            ("pos.exc.ptr.sva", self.exceptions),
        ):
            ptr = np.zeros(sum(len(c) for c in counts) + 1, dtype=np.int64)
            if counts:
                np.cumsum(np.concatenate(counts), out=ptr[1:])
            entries[name] = storage.write_array(
                self.folder / name, ptr, np.uint32 if ptr[-1] < 2**32 else np.int64
            )
        for name, w in (
            ("pos.first.sva", self.first),
            ("pos.dir.sva", self.dir),
            *zip(PACKED_FILES_ROWS, self.rows),
            ("pos.exc.at.sva", self.exc_at),
            ("pos.exc.val.sva", self.exc_val),
            ("pos.tail.sva", self.tail),
        ):
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
