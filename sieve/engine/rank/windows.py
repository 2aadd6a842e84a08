"""Window maxima: each term's best BM25 contribution in each window of 128 documents.

A ranked scan of frequent words scores every posting, though the top k lie in a few windows of the
document space. Knowing, for every window, an upper bound of any document's score there (the sum
of each query term's best contribution in the window), a scan can score the windows most likely to
hold the best documents first, take the k-th best score it found as a bar, and then score only the
windows whose bound reaches the bar: a document elsewhere scores strictly less than k documents
already found, so it cannot enter. Block-max WAND (Ding and Suel, 2011) prunes with the same kind
of bound over blocks of a term's postings; windows of the document space instead line every term
up, so bounds add across terms, and a window is scored or skipped as a whole, term by term, in
array operations.

A term's maxima are of `tf / (tf + norm)`, without its idf (a shard's searcher gets idfs from
the collection): a term's contribution is that times its idf. They are computed from the term's
postings, a piece at a time, when a scan first needs them (about as much as one plain scan of the
term: 0.39 ms for a word in 72% of man-sections' 100,000 documents) and kept per scorer, least
recently used out past a byte budget.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

WINDOW_BITS = 7  # 128 documents a window
KEPT_BYTES = 16 << 20  # per scorer: 8 bytes a window, 62 KB a term at 1M documents


@dataclass(frozen=True, slots=True)
class TermWindows:
    """One term's postings by window: window w's are its postings `starts[w]:starts[w + 1]`
    (offsets from its first), and `best[w]` is their largest tf / (tf + norm) (0.0 for none),
    rounded up to a float32 (an upper bound is all a window's bound needs, in half the memory)."""

    starts: np.ndarray  # int32 [windows + 1] (a segment holds fewer than 2**31 postings)
    best: np.ndarray  # float32 [windows]

    @property
    def nbytes(self) -> int:
        return self.starts.nbytes + self.best.nbytes


def window_count(n_docs: int) -> int:
    return (n_docs + (1 << WINDOW_BITS) - 1) >> WINDOW_BITS


def measure(chunks: Iterable[tuple[np.ndarray, np.ndarray]], n_docs: int) -> TermWindows:
    """A term's windows, from its postings in order, a piece at a time: (documents, each one's
    tf / (tf + norm)). Pieces, not the whole list: a long list's temporaries would be fresh pages
    to map on every first search with the word (measured: 670 us for a 72,000-posting word, against
    about 250 us in pieces)."""
    count = window_count(n_docs)
    best = np.zeros(count, dtype=np.float64)
    held = np.zeros(count, dtype=np.int64)
    for docs, fractions in chunks:
        if not len(docs):
            continue
        # the windows this piece reaches
        a, b = int(docs[0]) >> WINDOW_BITS, (int(docs[-1]) >> WINDOW_BITS) + 1
        at = np.searchsorted(docs, np.arange(a, b + 1, dtype=np.int64) << WINDOW_BITS)
        sizes = np.diff(at)
        held[a:b] += sizes
        # reduceat over those only: an empty window would read its neighbour's first value
        some = sizes > 0
        span = best[a:b]
        span[some] = np.maximum(span[some], np.maximum.reduceat(fractions, at[:-1][some]))
    starts = np.zeros(count + 1, dtype=np.int32)
    np.cumsum(held, out=starts[1:])
    narrow = best.astype(np.float32)
    below = narrow < best  # rounded down: take the next float32 up
    narrow[below] = np.nextafter(narrow[below], np.float32(np.inf))
    return TermWindows(starts, narrow)


class WindowCache:
    """Kept `TermWindows` by the term's first posting (unique to a term in one segment): least
    recently used out once they take more than `budget` bytes. Safe to share between threads."""

    def __init__(self, budget: int = KEPT_BYTES) -> None:
        self.budget = budget
        self._items: OrderedDict[int, TermWindows] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    def get(self, key: int) -> TermWindows | None:
        with self._lock:
            got = self._items.get(key)
            if got is not None:
                self._items.move_to_end(key)
            return got

    def put(self, key: int, value: TermWindows) -> None:
        if value.nbytes > self.budget:
            return
        with self._lock:
            old = self._items.pop(key, None)
            if old is not None:
                self._bytes -= old.nbytes
            self._items[key] = value
            self._bytes += value.nbytes
            while self._bytes > self.budget:
                _, out = self._items.popitem(last=False)
                self._bytes -= out.nbytes

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self._bytes = 0

    def __len__(self) -> int:
        return len(self._items)
