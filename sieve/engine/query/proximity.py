"""Indri's windows of any number of words, as positions: where each match starts.

- ordered, width N (`#odN`): positions p1 < p2 < ... < pk of the words in order with
  p(i+1) - p(i) <= N, all in one unit (a section text, heading or field value); a match is
  counted once per p1 from which such a chain exists. `#od1` is the phrase.
- unordered, width N (`#uwN`; None: the whole unit, `#uw`): a position s holding one of the
  words such that the N positions from s (cut at the end of s's unit) hold every word (a word
  written twice, twice); counted once per such s.

Both are exact and vectorised: a binary search per candidate and word, never a |a| x |b| matrix.
"""

from __future__ import annotations

from collections import Counter

import numpy as np

from sieve.engine.segment.reader import SegmentReader


def window_starts(
    reader: SegmentReader, lists: list[np.ndarray], width: int | None, ordered: bool
) -> np.ndarray:
    """Where each match of the window starts (int64, ascending), given each word's positions in
    order of the words (int64, ascending; equal words may share one array)."""
    if any(not len(p) for p in lists):
        return np.zeros(0, dtype=np.int64)
    if ordered:
        assert width is not None  # the parser refuses #od without a width
        ok = lists[-1]
        for p in reversed(lists[:-1]):
            # The next word's first chain start after p is the one to test: if it is too far or in
            # a later unit, so is every later one (units are consecutive runs of positions).
            at = np.searchsorted(ok, p, side="right")
            has = at < len(ok)
            q = ok[np.minimum(at, len(ok) - 1)]
            ends = reader.unit_ends(reader.units_of(p))
            ok = p[has & (q - p <= width) & (q < ends)]
            if not len(ok):
                break
        return ok
    distinct: dict[int, np.ndarray] = {}
    for p in lists:
        distinct.setdefault(id(p), p)
    starts = np.unique(np.concatenate(list(distinct.values())))
    end = reader.unit_ends(reader.units_of(starts))
    if width is not None:
        end = np.minimum(end, starts + width)
    keep = np.ones(len(starts), dtype=bool)
    for key, times in Counter(id(p) for p in lists).items():
        p = distinct[key]
        inside = np.searchsorted(p, end, side="left") - np.searchsorted(p, starts, side="left")
        keep &= inside >= times
    return starts[keep]
