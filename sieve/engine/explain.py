"""Which fields and sections of one document each positive atom of a query really matched.

Computed for the few documents shown to a reader, from positions and the query's own field scopes
(never guessed from token overlap).
"""

from __future__ import annotations

import numpy as np

from sieve.engine.analysis import analyze
from sieve.engine.bql import ast
from sieve.engine.fields import Field, mask_of
from sieve.engine.reader import IndexReader, search_sorted


def _doc_range(r: IndexReader, d: int) -> tuple[int, int]:
    start = int(r.unit_start[int(r.doc_units[d])])
    end = int(r.unit_start[int(r.doc_units[d + 1])]) if d + 1 < r.n_docs else 2**63 - 1
    return start, end


def positions_in_doc(r: IndexReader, tid: int, d: int) -> np.ndarray:
    """Positions of a term inside document d (int64), by binary search on its position list."""
    pos = r.positions(max(tid, 0))
    if tid < 0:
        return pos[:0]
    start, end = _doc_range(r, d)
    a, b = search_sorted(pos, [start, min(end, np.iinfo(pos.dtype).max)])
    return pos[a:b]


def _phrase_starts(r: IndexReader, terms: list[str], d: int) -> np.ndarray:
    start = positions_in_doc(r, r.term_id(terms[0]), d).astype(np.int64)
    for i, t in enumerate(terms[1:], 1):
        start = start[np.isin(start + i, positions_in_doc(r, r.term_id(t), d).astype(np.int64))]
    return start


def _near_positions(r: IndexReader, node: ast.Near, d: int) -> np.ndarray:
    a = positions_in_doc(r, r.term_id(analyze(node.left)[0]), d)
    b = positions_in_doc(r, r.term_id(analyze(node.right)[0]), d)
    if not len(a) or not len(b):
        return np.zeros(0, dtype=np.int64)
    ua, ub = r.units_of(a), r.units_of(b)
    a, b = a.astype(np.int64), b.astype(np.int64)
    close = (np.abs(a[:, None] - b[None, :]) <= node.distance) & (ua[:, None] == ub[None, :]) & (a[:, None] != b[None, :])
    return np.concatenate([a[close.any(axis=1)], b[close.any(axis=0)]])


def _prefix_positions(r: IndexReader, stem: str, d: int) -> np.ndarray:
    lo, hi = r.terms.prefix_range(stem.encode())
    a, b = int(r.post_ptr[lo]), int(r.post_ptr[hi])
    hits = np.flatnonzero(np.asarray(r.post_doc[a:b]) == d) + a
    if not len(hits):
        return np.zeros(0, dtype=np.int64)
    tids = search_sorted(r.post_ptr, hits, side="right") - 1
    return np.concatenate([positions_in_doc(r, int(t), d).astype(np.int64) for t in tids])


def leaf_positions(r: IndexReader, leaf: ast.Leaf, d: int) -> np.ndarray:
    """Positions in document d where a leaf matches (for a phrase, where it starts)."""
    if isinstance(leaf, ast.Prefix):
        return _prefix_positions(r, analyze(leaf.stem)[0], d)
    if isinstance(leaf, ast.Near):
        return _near_positions(r, leaf, d)
    terms = analyze(leaf.word if isinstance(leaf, ast.Term) else leaf.text)
    if len(terms) == 1:
        return positions_in_doc(r, r.term_id(terms[0]), d)
    return _phrase_starts(r, terms, d)


def matched(r: IndexReader, node: ast.Node, d: int) -> tuple[list[Field], list[int]]:
    """(fields, section numbers) where the query's positive atoms match document d, in order."""
    fields: set[Field] = set()
    sections: set[int] = set()
    for leaf in ast.positive_leaves(node):
        pos = leaf_positions(r, leaf, d)
        if not len(pos):
            continue
        units = r.units_of(pos)
        ufield = np.asarray(r.unit_field)[units]
        keep = ((np.uint8(1) << ufield) & mask_of(leaf.fields)) != 0
        units = units[keep]
        fields.update(Field(int(f)) for f in np.unique(ufield[keep]))
        sec = np.asarray(r.unit_section)[units]
        sections.update(int(s) for s in np.unique(sec[sec >= 0]))
    return sorted(fields), sorted(sections)
