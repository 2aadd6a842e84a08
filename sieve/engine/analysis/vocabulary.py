"""Numbering terms: term -> id, for the analysed batches of indexing.

Indexing numbers every word of every text, about ten million at 100k documents. A word costs
little as bytes in an array and much as a Python string (made by a split, hashed, looked up in a
dict: 130 of the 150 ns a word took). So a batch's words are numbered where they lie, in the
bytes `joined_bytes` gives: each word of up to 16 UTF-8 bytes is its bytes read as two 64-bit
integers (zero-padded: a term byte is never zero, so no two such words share a key), looked up in
an open-addressing hash table of those keys in numpy, all the batch's words at once. Only the
words seen for the first time, and the rare longer ones, become strings.
"""

from __future__ import annotations

import itertools
from array import array
from collections import defaultdict

import numpy as np

from sieve.engine.analysis.analyzers import PLAIN, SEPARATOR, STOP, Analyzer
from sieve.engine.analysis.schema import namespaced

_KEY_BYTES = 16  # longer words go through a dict of strings
_MIX_LO = np.uint64(0x9E3779B97F4A7C15)  # odd 64-bit constants: Fibonacci hashing
_MIX_HI = np.uint64(0xC2B2AE3D27D4EB4F)
# _LOW_BYTES[n]: the low n bytes of a 64-bit word
_LOW_BYTES = np.array([(1 << (8 * n)) - 1 for n in range(8)] + [(1 << 64) - 1], dtype=np.uint64)


class KeyTable:
    """Open addressing over 64-bit keys, or pairs of them (`pairs`), linear probing, at most half
    full. A key is never 0 (a word's first byte is not), so an empty slot (key 0, value -1)
    never matches one."""

    def __init__(self, pairs: bool, bits: int = 16) -> None:
        self.pairs = pairs
        self.bits = bits
        self.lo = np.zeros(1 << bits, dtype=np.uint64)
        self.hi = np.zeros(1 << bits if pairs else 0, dtype=np.uint64)
        self.value = np.full(1 << bits, -1, dtype=np.int32)
        self.used = 0

    def _slots(self, lo: np.ndarray, hi: np.ndarray | None) -> np.ndarray:
        with np.errstate(over="ignore"):
            mixed = lo if hi is None else lo ^ (hi * _MIX_HI)
            return (mixed * _MIX_LO >> np.uint64(64 - self.bits)).astype(np.intp)

    def _matches(self, slot: np.ndarray, lo: np.ndarray, hi: np.ndarray | None) -> np.ndarray:
        found = self.lo[slot] == lo
        if hi is not None:
            found &= self.hi[slot] == hi
        return found

    def find(self, lo: np.ndarray, hi: np.ndarray | None = None) -> np.ndarray:
        """Each key's value, -1 where it is absent (`hi`: the keys' second
        halves, for a table of pairs)."""
        slot = self._slots(lo, hi)
        wrap = (1 << self.bits) - 1
        # The first probe of every key at once; then only those that met another key, one step on.
        value = self.value[slot]
        found = self._matches(slot, lo, hi)
        out = np.where(found, value, np.int32(-1))
        pending = np.flatnonzero(~found & (value >= 0))
        while len(pending):
            s = (slot[pending] + 1) & wrap
            slot[pending] = s
            value = self.value[s]
            found = self._matches(s, lo[pending], None if hi is None else hi[pending])
            out[pending[found]] = value[found]
            pending = pending[~found & (value >= 0)]
        return out

    def insert(self, lo: np.ndarray, hi: np.ndarray | None, values: np.ndarray) -> None:
        """Add keys that are absent and distinct, with their values."""
        if 2 * (self.used + len(lo)) > len(self.value):
            held = np.flatnonzero(self.value >= 0)
            old = self.lo[held], self.hi[held] if self.pairs else None, self.value[held]
            bits = self.bits
            while 2 * (self.used + len(lo)) > 1 << bits:
                bits += 1
            self.__init__(self.pairs, bits)  # type: ignore[misc]  # grown in place
            self._place(*old)
        self._place(lo, hi, values)

    def _place(self, lo: np.ndarray, hi: np.ndarray | None, values: np.ndarray) -> None:
        wrap = (1 << self.bits) - 1
        slot = self._slots(lo, hi)
        pending = np.arange(len(lo))
        while len(pending):
            s = slot[pending]
            free = self.value[s] < 0
            # Of the keys probing one free slot, the first takes it; the rest, and those that met
            # a taken slot, probe the next.
            taken, first = np.unique(s[free], return_index=True)
            won = pending[free][first]
            self.lo[taken], self.value[taken] = lo[won], values[won]
            if hi is not None:
                self.hi[taken] = hi[won]
            left = np.ones(len(pending), dtype=bool)
            left[np.flatnonzero(free)[first]] = False
            pending = pending[left]
            slot[pending] = (slot[pending] + 1) & wrap
        self.used += len(lo)


def word_spans(padded: bytes, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The words of `joined_bytes` output `raw`, given as `padded` (a space, `raw` of `n` bytes,
    then anything): (each word's start, each word's end, both in `raw`; each text's word count)."""
    a = np.frombuffer(padded, dtype=np.uint8, count=n + 1)
    inside = a > 32  # a word byte (a letter, a digit, or part of a character other than ASCII)
    # Starts and ends alternate: `raw` begins after a space and ends with a NUL.
    edges = np.flatnonzero(inside[1:] != inside[:-1])
    starts, ends = edges[0::2], edges[1::2]
    words_before = starts.searchsorted(np.flatnonzero(a[1:] == 0))  # at each text's NUL
    return starts, ends, np.diff(words_before, prepend=0).astype(np.int32)


class Vocabulary:
    """Term -> id, numbered as words first appear (within a batch: new words of up to 8 bytes in
    order of first sight, then longer ones). Id 0 is SEPARATOR, the end-of-unit mark.

    `ids_of` numbers a batch's words (`joined_bytes`) by word id, then maps word ids to term ids:
    with a stemming analyzer (or stop words) each distinct word is stemmed once, when first seen,
    so stemming adds little to indexing however often a word occurs. Stop words all get the id of
    STOP (`stop_id`). For the plain analyzer a word is its term.
    """

    def __init__(self, analyzer: Analyzer = PLAIN) -> None:
        self.analyzer = analyzer
        self.ids: defaultdict[str, int] = defaultdict(itertools.count().__next__)
        self.ids[SEPARATOR]
        self._sent = 0
        self._rev: list[str] = []  # id -> term, filled when a declared text field needs it
        self._narrow = KeyTable(pairs=False)  # words of up to 8 bytes
        self._wide = KeyTable(pairs=True)  # words of 9 to 16 bytes
        self._long: dict[str, int] = {}  # words of more than _KEY_BYTES bytes -> word id
        self._words = 1  # word ids given; word 0 is SEPARATOR
        self._word_term = array("i", [0])  # word id -> term id (grows amortised, unlike an ndarray)

    def ids_of(self, raw: bytes) -> tuple[np.ndarray, np.ndarray]:
        """(The term ids of the words of `raw`, in order; each text's word count), for `raw` from
        `joined_bytes`."""
        padded = b" " + raw + bytes(2 * 8)
        starts, ends, counts = word_spans(padded, len(raw))
        length = ends - starts
        # Each word's first 8 bytes, little-endian, by unaligned 8-byte reads; what lies past the
        # word is masked off.
        eights = np.ndarray((len(raw) + 9,), dtype="<u8", buffer=padded, offset=1, strides=(1,))
        lo = eights[starts] & _LOW_BYTES[np.minimum(length, 8)]
        wid = self._narrow.find(lo)
        new_words: list[str] = []
        wide = np.flatnonzero(length > 8)
        if len(wide):
            wid[wide] = -2  # a longer word's first 8 bytes may be a short word's: numbered below
        self._number(
            self._narrow, np.flatnonzero(wid == -1), lo, None, wid, raw, starts, ends, new_words
        )
        if len(wide):
            keyed = wide[length[wide] <= _KEY_BYTES]
            hi = eights[starts[keyed] + 8] & _LOW_BYTES[length[keyed] - 8]
            got = self._wide.find(lo[keyed], hi)
            wid[keyed] = got
            missing = np.flatnonzero(got < 0)
            self._number(
                self._wide, keyed[missing], lo, hi[missing], wid, raw, starts, ends, new_words
            )
            for i in wide[length[wide] > _KEY_BYTES].tolist():
                word = raw[starts[i] : ends[i]].decode("utf-8", "surrogatepass")
                got_id = self._long.get(word)
                if got_id is None:
                    got_id = self._long[word] = self._words
                    self._words += 1
                    new_words.append(word)
                wid[i] = got_id
        if new_words:  # in word id order
            self._word_term.extend(map(self.ids.__getitem__, self.analyzer.stem(new_words)))
        return np.frombuffer(self._word_term, dtype=np.int32)[wid], counts

    def _number(
        self,
        table: KeyTable,
        at: np.ndarray,
        lo: np.ndarray,
        hi: np.ndarray | None,
        wid: np.ndarray,
        raw: bytes,
        starts: np.ndarray,
        ends: np.ndarray,
        new_words: list[str],
    ) -> None:
        """Give the words at tokens `at` (ascending; not in `table`) new word ids in order of first
        sight, into `wid` and `table`; append the new words to `new_words`. `hi`: the keys'
        second halves, one per token of `at`, for the table of pairs."""
        if not len(at):
            return
        if hi is None:
            keys = lo[at]
        else:
            keys = np.empty((len(at), 2), dtype=np.uint64)
            keys[:, 0], keys[:, 1] = lo[at], hi
            keys = keys.view(np.dtype((np.void, 16))).ravel()
        _, first, back = np.unique(keys, return_index=True, return_inverse=True)
        by_sight = np.argsort(first, kind="stable")
        number = np.empty(len(first), dtype=np.int32)
        number[by_sight] = np.arange(self._words, self._words + len(first), dtype=np.int32)
        self._words += len(first)
        wid[at] = number[back.ravel()]
        firsts = first[by_sight]
        word_at = at[firsts]
        table.insert(lo[word_at], None if hi is None else hi[firsts], number[by_sight])
        new_words += [
            raw[s:e].decode("utf-8", "surrogatepass")
            for s, e in zip(starts[word_at].tolist(), ends[word_at].tolist())
        ]

    @property
    def stop_id(self) -> int | None:
        """The id stop words get, once one has been seen."""
        return self.ids.get(STOP)

    def namespaced_ids(self, tids: np.ndarray, field_number: int) -> np.ndarray:
        """The ids of `tids`' terms in a declared text field's namespace (STOP stays STOP)."""
        if len(self._rev) < len(self.ids):
            self._rev.extend(itertools.islice(self.ids, len(self._rev), None))
        stop = self.stop_id
        return np.fromiter(
            (
                t if t == stop else self.ids[namespaced(field_number, self._rev[t])]
                for t in tids.tolist()
            ),
            dtype=np.int32,
            count=len(tids),
        )

    def new_terms(self) -> list[str]:
        """Terms added since the last call, in id order (the first call includes SEPARATOR)."""
        out = list(itertools.islice(self.ids, self._sent, None))
        self._sent += len(out)
        return out
