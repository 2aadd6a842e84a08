"""Building in bounded memory: the token stream sorted in runs that are spilled to disk, then
merged.

A build keeps its per-document and per-unit tables in memory (a few bytes per unit), but the token
stream (one entry per word) is what grows with the corpus. When the buffered tokens pass the
writer's budget, they are sorted into postings now (a run) and written to a temporary folder. Each
run is ordered by term *string*, not by term id, so every run agrees with the final dictionary
order and the merge takes, for each range of final terms, one contiguous slice from each run. Runs
cover consecutive documents, so concatenating their slices in run order keeps each term's
postings in document order. The merged arrays are byte for byte those of a build in one pass
(tests/engine/test_runs.py).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from sieve.engine.analysis.fields import Field
from sieve.engine.format import attributes, docids
from sieve.engine.format.distinct import distinct
from sieve.engine.format.positions import PositionsWriter

TEXT_BITS = np.uint8(Field.TITLE.bit | Field.SECTION.bit | Field.BODY.bit)  # what BM25 counts
CHUNK_POSTINGS = 1 << 22  # postings merged at a time (bounds the merge's memory)
# Token numbers paired with their keys this many at a time: a 100k-document build's 11M numbers
# as one int64 array were 22,000 page faults of fresh memory (27 ms of its final step).
NUMBERS_AT_A_TIME = 1 << 20


def stable_argsort(keys: np.ndarray) -> np.ndarray:
    """Stable argsort of non-negative int32 keys.

    Each key is paired with its index in one int64 (key in the high half), and the pairs are
    sorted by numpy's default sort: distinct pairs need no stability, and on x86 numpy sorts 64-bit
    integers with SIMD, 4-5x faster than its stable sort (a radix sort only for 16-bit keys, a
    merge sort above). Keys of 16 bits or fewer keep the radix sort, which is faster still."""
    n = len(keys)
    if n == 0 or int(keys.max()) < 2**16:
        return np.argsort(keys.astype(np.uint16), kind="stable")
    if n >= 2**32:  # the index would not fit the low half (never within a writer's token budget)
        first = np.argsort((keys & 0xFFFF).astype(np.uint16), kind="stable")
        return first[np.argsort((keys[first] >> 16).astype(np.uint16), kind="stable")]
    pairs = _sorted_pairs(keys, np.arange(n, dtype=np.int64), 32)
    pairs &= 0xFFFFFFFF
    return pairs


def _sorted_pairs(keys: np.ndarray, low: np.ndarray, shift: int) -> np.ndarray:
    """keys << shift | low (each low below 2**shift, distinct), sorted: the order by key and
    then low, in one int64 sort with no stability needed."""
    pairs = keys.astype(np.int64)
    pairs <<= shift
    pairs |= low
    pairs.sort()
    return pairs


@dataclass
class Postings:
    """Postings of a sorted token stream: one entry per (term, document), and the positions."""

    term: np.ndarray  # the entry's term (a key whose order is the dictionary's)
    doc: np.ndarray  # int32
    tf: np.ndarray  # uint32: occurrences in any field
    mask: np.ndarray  # uint8: fields it occurs in
    ttf: np.ndarray  # uint32: occurrences in title, headings and body
    pos: np.ndarray  # int64, grouped by entry

    @staticmethod
    def joined(parts: list[Postings], pos: np.ndarray) -> Postings:
        """The postings of consecutive pieces of one sorted stream (each cut where a key starts),
        whose positions, together, are `pos`."""
        term, doc, tf, mask, ttf = (
            np.concatenate([getattr(p, name) for p in parts])
            for name in ("term", "doc", "tf", "mask", "ttf")
        )
        return Postings(term, doc, tf, mask, ttf, pos)


def key_start_near_middle(s_key: np.ndarray) -> int:
    """Where a key starts in sorted `s_key`, near its middle: the stream cut there makes postings
    on both sides (`postings` of each, then `Postings.joined`) as it does whole. `len(s_key)`
    when one key holds the first token and the middle one."""
    if len(s_key) == 0:
        return 0
    middle = s_key[len(s_key) // 2]
    cut = int(np.searchsorted(s_key, middle, side="left"))
    return cut if cut else int(np.searchsorted(s_key, middle, side="right"))


def by_key(
    keys: np.ndarray, tok_unit: np.ndarray, tok_pos: np.ndarray | int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(keys, units, positions) of the tokens ordered by key, then position.

    Since positions ascend in stream order, that is the stable order by key, and it is one sort of
    int64 pairs (key high, position offset low) that carries the positions with it: no
    permutation to gather keys and positions through (random reads, the costly part). The unit
    of each sorted position is then read from a table over the buffer's span of positions.

    `tok_pos` may be an int, `first`: token i is at position `first + i + tok_unit[i]` (a stream
    that left no token out, so one gap position per unit before it). The pairs then carry token
    numbers, whose units are read from `tok_unit` itself: neither the positions nor the table
    over them is made (0.1 s of a 100k-document build's final step)."""
    n = len(keys)
    if isinstance(tok_pos, (int, np.integer)):
        return _by_key_in_stream(keys, tok_unit, int(tok_pos))
    if n == 0:
        return keys.copy(), tok_unit.copy(), tok_pos.astype(np.int64)
    base = int(tok_pos[0])
    span = int(tok_pos[-1]) - base + 1
    shift = span.bit_length()
    if int(keys.max()) >= 1 << (63 - shift):  # cannot pair in 63 bits: permute instead
        order = stable_argsort(keys)
        return keys[order], tok_unit[order], tok_pos[order].astype(np.int64)
    # Fresh memory costs more than the arithmetic here (the kernel zeroes every new page: most of a
    # build's final sort was system time), so temporaries are few and written in place.
    off = tok_pos - base if base else tok_pos
    pairs = _sorted_pairs(keys, off, shift)
    s_key = np.empty(n, dtype=keys.dtype)
    np.right_shift(pairs, shift, out=s_key, casting="unsafe")
    pairs &= (1 << shift) - 1  # now each token's position less base
    if span <= 2 * n + 1024:  # dense positions (a gap after each unit, maybe stop words): a table
        unit_at = np.empty(span, dtype=tok_unit.dtype)
        unit_at[off] = tok_unit
        del off
        s_unit = unit_at[pairs]
        del unit_at
    else:  # sparse positions: find each one among the tokens'
        s_unit = tok_unit[np.searchsorted(off, pairs)]
        del off
    if base:
        pairs += base
    return s_key, s_unit, pairs


def _by_key_in_stream(
    keys: np.ndarray, tok_unit: np.ndarray, first: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    n = len(keys)
    shift = max(n - 1, 0).bit_length()
    # nothing to pair, or too wide to: as positions
    if n == 0 or int(keys.max()) >= 1 << (63 - shift):
        return by_key(keys, tok_unit, first + np.arange(n, dtype=np.int64) + tok_unit)
    pairs = keys.astype(np.int64)
    pairs <<= shift
    # token numbers in pieces: no 8-byte array of them all to fault in
    for lo in range(0, n, NUMBERS_AT_A_TIME):
        pairs[lo : lo + NUMBERS_AT_A_TIME] |= np.arange(
            lo, min(lo + NUMBERS_AT_A_TIME, n), dtype=np.int64
        )
    pairs.sort()
    s_key = np.empty(n, dtype=keys.dtype)
    np.right_shift(pairs, shift, out=s_key, casting="unsafe")
    pairs &= (1 << shift) - 1  # now each token's number
    s_unit = tok_unit[pairs]
    pairs += s_unit  # its position less `first`
    if first:
        pairs += first
    return s_key, s_unit, pairs


def sort_tokens(
    keys: np.ndarray,
    tok_unit: np.ndarray,
    tok_pos: np.ndarray | int,
    unit_doc: np.ndarray,
    unit_field: np.ndarray,
) -> Postings:
    """Postings of tokens with sort `keys` (stable: stream order within a key), each in unit
    `tok_unit` at position `tok_pos`; `unit_doc`/`unit_field` index by unit. Tokens come in stream
    order: `tok_pos` strictly ascending (or an int: see `by_key`), `tok_unit` ascending."""
    return postings(*by_key(keys, tok_unit, tok_pos), unit_doc, unit_field)


def postings(
    s_key: np.ndarray,
    s_unit: np.ndarray,
    s_pos: np.ndarray,
    unit_doc: np.ndarray,
    unit_field: np.ndarray,
) -> Postings:
    """The postings of tokens sorted by `by_key` (their keys, units and positions)."""
    s_doc = unit_doc[s_unit]
    s_bit = (np.uint8(1) << unit_field.astype(np.uint8))[s_unit]
    del s_unit
    n = len(s_key)
    if n:
        new = np.empty(n, dtype=bool)
        new[0] = True
        np.not_equal(s_key[1:], s_key[:-1], out=new[1:])
        step = np.not_equal(s_doc[1:], s_doc[:-1])
        new[1:] |= step
        del step
        starts = np.flatnonzero(new)
        del new
        mask = np.bitwise_or.reduceat(s_bit, starts)
        # Title, headings and body hold nearly every token: count the few others (the posting of
        # each is the last start at or before it) and take them from tf, instead of summing a
        # flag per token (np.add.reduceat: 8x slower).
        other = np.flatnonzero((s_bit & TEXT_BITS) == 0)
        others = np.bincount(
            np.searchsorted(starts, other, side="right") - 1, minlength=len(starts)
        ).astype(np.uint32)
        tf = np.empty(len(starts), dtype=np.uint32)
        np.subtract(starts[1:], starts[:-1], out=tf[:-1], casting="unsafe")
        tf[-1] = n - starts[-1]
    else:
        starts = np.zeros(0, dtype=np.int64)
        mask, others, tf = np.zeros(0, np.uint8), np.zeros(0, np.uint32), np.zeros(0, np.uint32)
    ttf = tf - others
    return Postings(s_key[starts], s_doc[starts].astype(np.int32, copy=False), tf, mask, ttf, s_pos)


class Runs:
    """Spilled runs in a temporary folder, and their merge into the final posting files."""

    def __init__(self, folder: Path) -> None:
        self.dir = folder
        self.count = 0

    def spill(
        self,
        tokens: np.ndarray,
        tok_unit: np.ndarray,
        tok_pos: np.ndarray | int,
        unit_doc: np.ndarray,
        unit_field: np.ndarray,
        term_of: Callable[[int], str],
    ) -> None:
        """Sort the buffered tokens (term ids) into a run ordered by term string, and write it."""
        ids = distinct(tokens)
        by_string = sorted(ids.tolist(), key=term_of)
        local = np.zeros(int(ids[-1]) + 1 if len(ids) else 1, dtype=np.int32)
        local[np.asarray(by_string, dtype=np.int64)] = np.arange(len(by_string), dtype=np.int32)
        p = sort_tokens(local[tokens], tok_unit, tok_pos, unit_doc, unit_field)
        term_ids = np.asarray(by_string, dtype=np.int32)[p.term]
        self.dir.mkdir(parents=True, exist_ok=True)
        for name, arr in (
            ("term", term_ids),
            ("doc", p.doc),
            ("tf", p.tf),
            ("mask", p.mask),
            ("ttf", p.ttf),
            ("pos", p.pos),
        ):
            np.save(self.dir / f"run{self.count}.{name}.npy", arr)
        self.count += 1

    def _load(self, i: int, name: str) -> np.ndarray:
        return np.load(self.dir / f"run{i}.{name}.npy", mmap_mode="r")

    def used_terms(self) -> np.ndarray:
        return distinct(
            np.concatenate([distinct(self._load(i, "term")) for i in range(self.count)])
        )

    def merge(
        self, rank: np.ndarray, n_terms: int, seg_dir: Path, pos_dtype: Any, total_positions: int
    ) -> dict[str, Any]:
        """Write the posting files (post.*, pos.*) for final term `rank[term id]`; returns their
        entries, post/pos pointers, text document frequencies and the number of postings."""
        # Per run, only where each chunk of final terms starts (in postings and in positions): a
        # per-posting table for every run at once would grow with the corpus.
        total = sum(len(self._load(i, "tf")) for i in range(self.count))
        step = max(1, int(n_terms * CHUNK_POSTINGS / max(total, 1)))
        edges = np.append(np.arange(0, n_terms, step, dtype=np.int64), n_terms)
        runs = []
        for i in range(self.count):
            cut = np.searchsorted(rank[self._load(i, "term")], edges)
            pos_at = np.zeros(len(self._load(i, "tf")) + 1, dtype=np.int64)
            np.cumsum(self._load(i, "tf"), out=pos_at[1:])
            runs.append((cut, pos_at[cut], i))
            del pos_at
        post_count = np.zeros(n_terms, dtype=np.int64)
        pos_count = np.zeros(n_terms, dtype=np.int64)
        text_df = np.zeros(n_terms, dtype=np.int64)
        attr_writer = attributes.AttributesWriter(seg_dir)
        doc_writer = docids.SplitIdsWriter(seg_dir, "post.doc")
        positions = PositionsWriter(seg_dir, pos_dtype, total_positions)
        for j in range(len(edges) - 1):
            a, b = int(edges[j]), int(edges[j + 1])
            parts: dict[str, list[np.ndarray]] = {
                k: [] for k in ("rank", "doc", "tf", "mask", "ttf", "pos")
            }
            for cut, pos_cut, i in runs:
                lo, hi = int(cut[j]), int(cut[j + 1])
                if lo == hi:
                    continue
                parts["rank"].append(rank[np.asarray(self._load(i, "term")[lo:hi])] - a)
                for name in ("doc", "tf", "mask", "ttf"):
                    parts[name].append(np.asarray(self._load(i, name)[lo:hi]))
                parts["pos"].append(np.asarray(self._load(i, "pos")[pos_cut[j] : pos_cut[j + 1]]))
            if not parts["rank"]:
                # (every term occurs: not reached)
                positions.append(np.zeros(0, dtype=np.int64), np.zeros(b - a, dtype=np.int64))
                continue
            key = np.concatenate(parts["rank"]).astype(np.int32)
            perm = stable_argsort(key)
            tf = np.concatenate(parts["tf"])
            starts = np.zeros(len(tf), dtype=np.int64)
            np.cumsum(tf[:-1], out=starts[1:])
            lens = tf[perm].astype(np.int64)
            idx = np.repeat(
                starts[perm] - np.concatenate(([0], np.cumsum(lens)[:-1])), lens
            ) + np.arange(int(lens.sum()))
            doc_writer.append(np.concatenate(parts["doc"])[perm])
            ttf = np.concatenate(parts["ttf"])[perm]
            attr_writer.append(np.concatenate(parts["mask"])[perm], tf[perm], ttf)
            k = key[perm]
            post_count[a:b] += np.bincount(k, minlength=b - a)
            chunk_positions = np.bincount(k, weights=lens, minlength=b - a).astype(np.int64)
            positions.append(np.concatenate(parts["pos"])[idx], chunk_positions)
            pos_count[a:b] += chunk_positions
            text_df[a:b] += np.bincount(k[ttf > 0], minlength=b - a)
        entries = attr_writer.close()
        entries.update(doc_writer.close())
        entries.update(positions.close())
        post_ptr = np.zeros(n_terms + 1, dtype=np.int64)
        np.cumsum(post_count, out=post_ptr[1:])
        pos_ptr = np.zeros(n_terms + 1, dtype=np.int64)
        np.cumsum(pos_count, out=pos_ptr[1:])
        return {
            "entries": entries,
            "post_ptr": post_ptr,
            "pos_ptr": pos_ptr,
            "text_df": text_df.astype(np.int32),
            "postings": total,
        }
