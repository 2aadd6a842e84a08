"""Document sets as packed little-endian uint64 words: bit d of word d // 64 is document d."""

from __future__ import annotations

import numpy as np

# from_ids sets bits one by one below n / SPARSE
# documents (measured crossover, 100k to 1M documents).
SPARSE = 128
# contains() unpacks the set when the ids number at least
# 1/UNPACKED_SHARE of the documents (measured crossover ~1/50 at 100k).
UNPACKED_SHARE = 32


def words(n: int) -> int:
    return (n + 63) // 64


def empty(n: int) -> np.ndarray:
    return np.zeros(words(n), dtype=np.uint64)


def full(n: int) -> np.ndarray:
    """Every document; the padding bits past n stay clear so counts and NOT are exact."""
    out = np.full(words(n), np.uint64(0xFFFFFFFFFFFFFFFF), dtype=np.uint64)
    tail = n % 64
    if tail:
        out[-1] = np.uint64((1 << tail) - 1)
    return out


def from_ids(ids: np.ndarray, n: int) -> np.ndarray:
    """The set of the document numbers in `ids` (any order, repeats allowed)."""
    if len(ids) * SPARSE < n:
        # Few documents: set their bits word by word; the
        # flag array below costs time in n, not len(ids).
        out = empty(n)
        ids = np.asarray(ids, dtype=np.int64)
        np.bitwise_or.at(out, ids >> 6, np.left_shift(np.uint64(1), (ids & 63).astype(np.uint64)))
        return out
    flags = np.zeros(words(n) * 64, dtype=bool)
    # numpy scatters with an index array of its own index type at about twice the speed of
    # int32 (raw postings before format 7), conversion included; format 7 decodes to it directly.
    flags[np.asarray(ids, dtype=np.intp)] = True
    return from_bool(flags, n)


def from_bool(flags: np.ndarray, n: int) -> np.ndarray:
    """The set of the True positions of a boolean array of length n (or padded to whole words)."""
    if len(flags) != words(n) * 64:
        padded = np.zeros(words(n) * 64, dtype=bool)
        padded[: len(flags)] = flags
        flags = padded
    return np.packbits(flags, bitorder="little").view(np.uint64)


def to_ids(bits: np.ndarray, n: int) -> np.ndarray:
    """Document numbers in the set, ascending."""
    nz = np.flatnonzero(bits)
    if len(nz) * 8 < len(bits):  # few occupied words: unpack only those
        flags = np.unpackbits(bits[nz].view(np.uint8), bitorder="little").view(bool)
        at = np.flatnonzero(flags)
        return nz[at >> 6] * 64 + (at & 63)
    # flatnonzero is several times faster on a bool view than on the uint8 bits themselves.
    return np.flatnonzero(to_bool(bits, n))


def to_bool(bits: np.ndarray, n: int) -> np.ndarray:
    """The set as a boolean array of length n."""
    return np.unpackbits(bits.view(np.uint8), bitorder="little")[:n].view(bool)


def add(bits: np.ndarray | None, d: int, n: int) -> np.ndarray:
    """`bits` (None: the empty set of n documents) with document d
    added, in place when it exists."""
    out = empty(n) if bits is None else bits
    out[d >> 6] |= np.uint64(1) << np.uint64(d & 63)
    return out


def count(bits: np.ndarray) -> int:
    return int(np.bitwise_count(bits).sum())


def contains(bits: np.ndarray, ids: np.ndarray) -> np.ndarray:
    """Boolean array: is each of `ids` in the set?"""
    if len(ids) * UNPACKED_SHARE >= len(bits) * 64:
        # Many ids: one byte per document, unpacked once, and one gather (3.5x faster at 71,000
        # ids in 100,000 documents, and no id-sized temporaries: each is pages to map and zero).
        return to_bool(bits, len(bits) * 64)[ids]
    ids = np.asarray(ids, dtype=np.int64)
    return ((bits[ids >> 6] >> (ids & 63).astype(np.uint64)) & np.uint64(1)).astype(bool)


def ranks(bits: np.ndarray, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(places in `ids` of those in the set, each one's rank: how many members are smaller). For a
    set of a list's documents, the rank is the document's place in the list (a posting's number
    from the term's first): a lookup in time in len(ids) and the set's
    words, not in the list's length."""
    where = np.flatnonzero(contains(bits, ids))  # a bool's flatnonzero: 4x a uint64's
    ids = np.asarray(ids, dtype=np.int64)[where]
    w = ids >> 6
    below = np.zeros(len(bits) + 1, dtype=np.int64)  # members in the words before each word
    np.cumsum(np.bitwise_count(bits), out=below[1:])
    under = (np.uint64(1) << (ids & 63).view(np.uint64)) - np.uint64(1)  # the bits below each id's
    under &= bits[w]
    return where, below[w] + np.bitwise_count(under)
