"""A segment's tables checked against each other when it is opened: every length that must agree
does, so a cut or grown file is an error naming it before any query reads it."""

from __future__ import annotations

from typing import Any

import numpy as np

from sieve.engine.format import docids
from sieve.engine.format.position_blocks import BlockPositions
from sieve.engine.format.positions import BLOCK, PACKED_COLUMNS, PACKED_FILES_ROWS, ROW_FILES
from sieve.errors import IndexDamagedError


def check_shapes(r: Any) -> None:
    """Raise IndexDamagedError naming the first file whose length disagrees with the others'.
    `r`: a SegmentReader being opened (typed loosely: it is this module's caller)."""
    n, t = r.n_docs, len(r.terms)
    checks = [
        ("post.ptr.sva", len(r.post_ptr) == t + 1),
        ("terms.df.sva", len(r.text_df) == t),
        ("pos.ptr.sva", len(r.pos_ptr) == t + 1),
        ("post.mask.sva", len(r.attrs) == len(r.post_doc)),
        (
            "post.tfs.sva" if r.attrs.packed is not None else "post.tf.sva",
            r.attrs.agree(),
        ),
        ("doc.units.sva", len(r.doc_units) == n + 1),
        ("doc.date.sva", len(r.dates) == n),
        ("doc.len.sva", len(r.doc_len) == n),
        ("store.meta.off.sva", len(r.meta_off) == n + 1),
        ("store.sections.sva", len(r.doc_sections) == n + 1),
        ("ids.doc.sva", len(r.id_doc) == n),
        ("ids.rank.sva", len(r.id_rank) == n),
        ("ids.off.sva", len(r.ids) == n),
        ("unit.field.sva", len(r.unit_field) == len(r.unit_start)),
        ("unit.section.sva", len(r.unit_section) == len(r.unit_start)),
    ]
    if isinstance(r.pos, BlockPositions):
        # Lengths only (every token has one position): no table is read before a query needs it.
        p, tokens = r.pos, int(r.manifest["stats"]["tokens"])
        checks += [
            ("pos.blocks.ptr.sva", len(p.blocks_ptr) == t + 1),
            ("pos.dir.sva", len(p.dir) == len(p.first)),
            ("pos.tail.sva", len(p.tail) + BLOCK * len(p.first) == tokens),
        ]
        if p.exceptions is None:
            checks += [
                (name, r.ndim == 2 and (r.shape[0] == 0 or r.shape[1] == BLOCK - 1))
                for name, r in zip(ROW_FILES, p.rows)
            ]
        else:
            checks += [
                (name, r.ndim == 2 and (r.shape[0] == 0 or r.shape[1] == cols))
                for name, r, cols in zip(PACKED_FILES_ROWS, p.rows, PACKED_COLUMNS)
            ]
            ptr, at, val = p.exceptions
            checks += [
                ("pos.exc.ptr.sva", len(ptr) == len(p.first) + 1),
                ("pos.exc.val.sva", len(val) == len(at)),
            ]
    if r.dense is not None:
        # set together (opening, not a hot path)
        assert r.dense_ptr is not None and r.dense_field is not None
        rows = len(r.dense_field)
        checks += [
            (
                "post.bits.ptr.sva",
                len(r.dense_ptr) == t + 1
                and int(r.dense_ptr[-1]) == rows
                and bool(np.all(np.diff(r.dense_ptr.astype(np.int64)) >= 0)),
            ),
            (
                "post.bits.sva",
                len(r.dense) == rows and (rows == 0 or r.dense.shape[1] == (n + 63) // 64),
            ),
            ("post.bits.field.sva", bool(np.all(r.dense_field < 8))),
        ]
    if r.any is not None:
        assert r.any_terms is not None  # set together
        rows = len(r.any_terms)
        checks += [
            (
                "post.any.sva",
                len(r.any) == rows and (rows == 0 or r.any.shape[1] == (n + 63) // 64),
            ),
            (
                "post.any.terms.sva",
                rows == 0
                or (
                    int(r.any_terms[-1]) < t
                    and bool(np.all(np.diff(r.any_terms.astype(np.int64)) > 0))
                ),
            ),
        ]
    for prefix, ids in (("post.doc", r.post_doc), ("post.rest.doc", r.rest_doc)):
        if isinstance(ids, docids.SplitIds):
            checks.append((prefix + ".runs.sva", ids.tables_agree()))
    if r.rest_ptr is not None:
        assert r.rest_doc is not None and r.rest_mask is not None  # set together
        ends = r.rest_ptr.astype(np.int64)
        checks += [
            (
                "post.rest.ptr.sva",
                r.dense is not None
                and len(ends) == len(r.dense_field) + 1
                and int(ends[0]) == 0
                and int(ends[-1]) == len(r.rest_doc)
                and bool(np.all(np.diff(ends) >= 0)),
            ),
            ("post.rest.mask.sva", len(r.rest_mask) == len(r.rest_doc)),
        ]
    for name, ok in checks:
        if not ok:
            raise IndexDamagedError(r.label + name, "length disagrees with the other files")
