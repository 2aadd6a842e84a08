"""Document ids in two bytes each: the low 16 bits per posting, the high bits once per run.

A list of postings is term-major and, within a term, ascending by document, so the high bits
(document id >> 16) stay the same over long runs: one run per term in a segment of at most 65,536
documents, at most one per 65,536-document stretch of a term's documents beyond that. Storing
them once per run halves `post.doc` and keeps every slice decodable on its own, in a few numpy
calls, with no block to skip into: a term's postings, a prefix's range of terms, any `[a:b]`.

Files, for a prefix such as `post.doc`:
- `{prefix}.low.sva`: uint16, one per posting;
- `{prefix}.runs.sva`: where each run starts (ascending, the first at 0; u32 or i64);
- `{prefix}.high.sva`: int32, each run's high bits.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from sieve.engine.format import storage, weak
from sieve.errors import IndexDamagedError

LOW_BITS = 16
LOW_MASK = (1 << LOW_BITS) - 1
SUFFIXES = (".low.sva", ".runs.sva", ".high.sva")
# Past this many runs in one slice, one np.repeat builds the high bits instead of a loop per run.
# At 10M documents most term slices span 13 runs (segments of 770k documents); match p50 (warm)
# was 2.46 ms with the loop there against 2.75 with np.repeat.
LOOP_RUNS = 16


def files(prefix: str) -> tuple[str, ...]:
    """The three file names that hold the ids stored under `prefix`."""
    return tuple(prefix + s for s in SUFFIXES)


def split(ids: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(low bits, run starts, run highs) of non-negative `ids` (an id is below 2**31).

    Computed in the ids' own width when they are int32 (a build's postings): a segment's millions
    of postings in int64 temporaries cost 0.1 s of its final step, most of it fresh pages."""
    ids = np.asarray(ids)
    if ids.dtype != np.int32:
        ids = ids.astype(np.int64)
    high = ids >> LOW_BITS
    step = np.empty(len(high), dtype=bool)
    if len(step):
        step[0] = True  # a run starts at 0
        np.not_equal(high[1:], high[:-1], out=step[1:])
    starts = np.flatnonzero(step)
    return (
        (ids & LOW_MASK).astype(np.uint16),
        starts.astype(np.int64),
        high[starts].astype(np.int32),
    )


class SplitIdsWriter:
    """Appends ids in pieces (runs continue across pieces) and writes the three files."""

    def __init__(self, directory: Path, prefix: str) -> None:
        self.dir, self.prefix = directory, prefix
        self.low = storage.ArrayWriter(directory / f"{prefix}.low.sva", np.uint16)
        self.starts: list[np.ndarray] = []
        self.highs: list[np.ndarray] = []
        self.count = 0
        self.last_high = -1

    def append(self, ids: np.ndarray) -> None:
        if len(ids) == 0:
            return
        low, starts, highs = split(ids)
        self.low.append(low)
        if highs[0] == self.last_high:  # the previous piece's last run goes on
            starts, highs = starts[1:], highs[1:]
        self.starts.append(starts + self.count)
        self.highs.append(highs)
        self.count += len(low)
        if len(highs):
            self.last_high = int(highs[-1])

    def close(self) -> dict[str, Any]:
        """Write the files; returns their manifest entries by file name."""
        low, runs, high = files(self.prefix)
        starts = np.concatenate(self.starts) if self.starts else np.zeros(0, dtype=np.int64)
        wide = len(starts) and int(starts[-1]) >= 2**32
        return {
            low: self.low.close(),
            runs: storage.write_array(self.dir / runs, starts, np.int64 if wide else np.uint32),
            high: storage.write_array(
                self.dir / high,
                np.concatenate(self.highs) if self.highs else np.zeros(0, np.int32),
                np.int32,
            ),
        }


def write(directory: Path, prefix: str, ids: np.ndarray) -> dict[str, Any]:
    """Write `ids` under `prefix` at once; returns the files' manifest entries."""
    w = SplitIdsWriter(directory, prefix)
    w.append(ids)
    return w.close()


def open_ids(directory: Path, prefix: str, entries: dict[str, Any]) -> SplitIds:
    """Read back what `write` or a `SplitIdsWriter` wrote (`entries`: their manifest entries)."""
    low, runs, high = (storage.open_array(directory / n, n, entries[n]) for n in files(prefix))
    return SplitIds(low, runs, high)


def consistent(starts: np.ndarray, highs: np.ndarray, n_postings: int, n_docs: int) -> bool:
    """Whether runs tile `n_postings` postings and every id they make is below `n_docs`."""
    if len(starts) != len(highs) or (len(starts) == 0) != (n_postings == 0):
        return False
    if len(starts) == 0:
        return True
    return (
        int(starts[0]) == 0
        and int(starts[-1]) < n_postings
        and bool(np.all(starts[1:] > starts[:-1]))
        and int(highs.min()) >= 0
        and int(highs.max()) <= max(n_docs - 1, 0) >> LOW_BITS
    )


class SplitIds:
    """Read side: `ids[a:b]` is a fresh array (numpy's index type, what scatters and gathers take
    fastest) of the ids in postings a..b-1.

    The run tables are read (verified, if memory maps with checksums) and checked against
    `n_docs` at the first slice, not when a segment opens: open time and memory stay what they
    were with raw ids, and a segment never queried never reads them.
    """

    def __init__(
        self, low: Any, starts: Any, highs: Any, n_docs: int | None = None, label: str = ""
    ) -> None:
        """`n_docs`: the segment's documents, to check the runs against (None: unchecked);
        `label`: the run table's name in errors."""
        self.low = low
        self._n = len(low)
        # a checked memory map: read it plainly once verified
        if isinstance(low, storage.ArrayFile):
            if low.verified:
                self.low = low.a
            else:
                low.on_verified = weak.method_callback(self, "_plain")
        self._sources = (starts, highs)
        self.n_docs, self.label = n_docs, label
        self.starts: np.ndarray | None = None
        self.highs: np.ndarray | None = None
        # one run of zeros (a segment of at most 65,536 documents): set when loaded
        self._flat = False

    def tables_agree(self) -> bool:
        """Whether the run tables' lengths agree (what opening checks; values at first use)."""
        starts, highs = self._sources
        return len(starts) == len(highs) and (len(starts) == 0) == (self._n == 0)

    def tables(self) -> tuple[np.ndarray, np.ndarray]:
        """(where each run starts, its high bits), read and checked on first use."""
        if self.starts is None:
            return self._load()
        assert self.highs is not None
        return self.starts, self.highs

    def _load(self) -> tuple[np.ndarray, np.ndarray]:
        # a memory map is verified, not copied
        starts, highs = (np.asarray(a) for a in self._sources)
        if self.n_docs is not None and not consistent(starts, highs, self._n, self.n_docs):
            raise IndexDamagedError(
                self.label,
                "its runs do not cover the postings in order, or "
                "make document numbers past the segment's last",
            )
        self._flat = len(highs) == 0 or (len(highs) == 1 and int(highs[0]) == 0)
        self.highs, self._key = highs, starts.dtype.type
        self.starts = starts  # set last: a thread that sees it sees the rest
        return starts, highs

    def _plain(self, arr: np.ndarray) -> None:
        self.low = arr

    def __len__(self) -> int:
        return self._n

    def __getitem__(self, key: slice) -> np.ndarray:
        a, b = key.start, key.stop
        if (
            type(a) is not int
            or type(b) is not int
            or not 0 <= a <= b <= self._n
            or key.step is not None
        ):
            a, b, step = key.indices(self._n)
            if step != 1:
                raise ValueError("document ids are read by contiguous slices")
            b = max(a, b)
        out = self.low[a:b].astype(np.intp)
        if a == b:
            return out
        if self.starts is None:
            self._load()
        if self._flat:
            return out
        # Every call pays for what follows, so it stays in scalar steps: most slices (a term's
        # postings) lie in one run or two.
        # Annotated, not asserted: this runs per slice. Both are set by `_load` above.
        starts: np.ndarray = self.starts  # type: ignore[assignment]  # loaded above
        highs: np.ndarray = self.highs  # type: ignore[assignment]  # loaded with starts
        as_key = self._key
        # The key in the table's own type: numpy would otherwise convert the whole table per call.
        k = int(starts.searchsorted(as_key(a), "right")) - 1  # the run that holds posting a
        n, last, edge = b - a, len(starts) - 1, 0
        for _ in range(LOOP_RUNS):
            stop = n if k == last or starts[k + 1] >= b else int(starts[k + 1]) - a
            h = int(highs[k])
            if h:
                part = out[edge:stop]
                np.add(part, h << LOW_BITS, out=part)
            if stop == n:
                return out
            edge, k = stop, k + 1
        # Many runs (a long prefix's postings, say): the rest at once.
        j = int(starts.searchsorted(as_key(b)))
        lens: np.ndarray = np.diff(
            np.concatenate(([edge], starts[k + 1 : j].astype(np.int64) - a, [n]))
        )
        part = out[edge:]
        np.add(part, np.repeat(highs[k:j].astype(np.intp) << LOW_BITS, lens), out=part)
        return out

    def take(self, at: np.ndarray) -> np.ndarray:
        """The ids of postings `at` (ascending, int64), as slices give them: a gather, for a few
        postings scattered over a long stretch."""
        out = np.asarray(self.low[at]).astype(np.intp)
        if not len(at):
            return out
        starts, highs = self.tables()
        if self._flat:
            return out
        key = self._key
        # `at` ascends: its runs are a short stretch of the table (a term's postings lie in one run
        # or a few), searched alone.
        k0 = int(starts.searchsorted(key(at[0]), "right")) - 1
        k1 = int(starts.searchsorted(key(at[-1]), "right"))
        if k1 - k0 == 1:
            h = int(highs[k0])
            if h:
                out += h << LOW_BITS
            return out
        run = np.searchsorted(starts[k0:k1], at.astype(starts.dtype, copy=False), "right") - 1
        out += highs[k0:k1][run].astype(np.intp) << LOW_BITS
        return out

    def whole(self) -> np.ndarray:
        return self[0 : self._n]

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        out = self.whole()
        return out if dtype is None else out.astype(dtype)
