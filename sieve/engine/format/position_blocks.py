"""Reading term positions kept in blocks (format 5 on; `sieve.engine.format.positions` describes
the layout and writes it): a term's blocks decoded whole, only those a phrase or NEAR can need, or
held as a bitmap, with a byte budget of decoded lists kept per segment."""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any

import numpy as np

from sieve.engine.format.distinct import distinct, distinct_sorted
from sieve.engine.format.positions import BLOCK, MERGE_SHARE, bitmap, common, in_bitmap, unpack12
from sieve.engine.format.ranges import ragged


def _put(
    kept: OrderedDict[int, np.ndarray], key: int, arr: np.ndarray, held: int, budget: int
) -> int:
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
    made phrase and NEAR queries 5-12% faster at p50, for 11 MB more at most. A read of a term of at
    most `WHOLE_BLOCKS` blocks, or that needs more than 1/`WHOLE_SHARE` of its blocks, decodes (and
    keeps) all of them: choosing the blocks would cost about as much as decoding the rest. Otherwise
    the first read of a term decodes only the blocks it needs, and the second decodes and keeps the
    whole list if it can be kept: a word read twice is likely read again.

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

    def __init__(
        self,
        ptr: Any,
        blocks_ptr: Any,
        first: Any,
        directory: Any,
        rows: tuple[Any, ...],
        tail: Any,
        positions: int = 0,
        exceptions: tuple[Any, Any, Any] | None = None,
    ) -> None:
        """`rows`: the row tables, `exceptions` the (pointer, place, value) tables of format 9
        (`PACKED_FILES`), or None for the whole-width tables of formats 5 to 8 (`ROW_FILES`);
        `positions`: how many the segment holds (sets the budget)."""
        self.ptr, self.blocks_ptr, self.first, self.dir, self.rows, self.tail = (
            ptr,
            blocks_ptr,
            first,
            directory,
            rows,
            tail,
        )
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
        """The values of `target` (ascending, in the positions' dtype) that
        are positions of term `tid`."""
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
            if (
                lookups * MERGE_SHARE < count
                or self.positions // 8 > self.BITMAP_SHARE * count * self.dtype.itemsize
                or (tid not in self._kept and tid not in self._read_once)
            ):
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
            unpack12(rows, out)
        else:
            out[...] = rows

    def _scatter(self, k: int, rows: Any, out: np.ndarray, at: np.ndarray) -> None:
        """Write rows of table k into the rows `at` of `out` (differences only)."""
        if self.exceptions is not None and k == 1:
            part = np.empty((len(at), BLOCK - 1), dtype=self.dtype)
            unpack12(rows, part)
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
            # one block (a phrase's lookup, an explanation's hit): its exceptions are a slice
            if len(blocks) == 1:
                e0, e1 = int(ptr[blocks[0]]), int(ptr[blocks[0] + 1])
                if e0 < e1:
                    out[0, np.asarray(place[e0:e1]).astype(np.intp) + 1] = val[e0:e1]
            else:
                lo, hi = (
                    np.asarray(ptr[blocks]).astype(np.int64),
                    np.asarray(ptr[blocks + 1]).astype(np.int64),
                )
                counts = hi - lo
                if counts.any():
                    idx = ragged(lo, counts)
                    out[
                        np.repeat(np.arange(len(blocks)), counts),
                        np.asarray(place[idx]).astype(np.intp) + 1,
                    ] = val[idx]
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
        # Transposed, the running sum adds whole rows (one
        # place of every block) at once: see `_buffer`.
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
        if (
            b - a <= self.WHOLE_BLOCKS
            or len(lo) * self.WHOLE_SHARE >= b - a
            or tid in self._kept
            or self._again(tid, a, b, ta, tb)
        ):
            return self._whole(tid, a, b, ta, tb)
        first = self.first[a:b]
        point = lo is hi  # a phrase's lookups: each range one position
        # positions of this index: in range, no cast
        if point and getattr(hi, "dtype", None) == first.dtype:
            j_hi = j_lo = np.searchsorted(first, hi, side="right") - 1
        else:
            top = min(int(np.iinfo(first.dtype).max), 2**63 - 1)
            hi = np.clip(np.asarray(hi, dtype=np.int64), -1, top)
            lo = hi if point else np.clip(np.asarray(lo, dtype=np.int64), 0, top)
            # Block j holds first[j] up to (not including)
            # first[j + 1]; a range [lo, hi] needs blocks
            # from the one holding lo to the one holding hi.
            j_hi = np.where(
                hi >= 0,
                np.searchsorted(first, np.maximum(hi, 0).astype(first.dtype), side="right") - 1,
                -1,
            )
            j_lo = (
                j_hi
                if point
                else np.maximum(np.searchsorted(first, lo.astype(first.dtype), side="right") - 1, 0)
            )
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
        if a < b and (
            b - a <= self.WHOLE_BLOCKS
            or len(idx) * self.WHOLE_SHARE >= BLOCK * (b - a)
            or tid in self._kept
            or self._again(tid, a, b, ta, tb)
        ):
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
