"""`sieve embed` after a change computes only what lacks a vector: documents kept with the same id
and text reuse theirs; added and replaced ones are encoded; the result equals a fresh embedding."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("hnswlib", reason="embeddings need the dense extra: pip install -e '.[dense]'")

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "hardening"))
from synth import HashEncoder  # noqa: E402

import sieve  # noqa: E402
from sieve.dense import store, units  # noqa: E402


class Counting(HashEncoder):
    def __init__(self) -> None:
        super().__init__(32)
        self.texts: list[str] = []

    def encode(self, texts: list[str], batch_size: int = 32) -> Any:
        self.texts.extend(texts)
        return super().encode(texts, batch_size)


def test_embeddings_are_reused_across_a_change(tmp_path: Path) -> None:
    recs = [{"id": f"d{i}", "title": f"title {i}", "text": f"alpha beta {i}"} for i in range(6)]
    ix = sieve.build_index(recs, tmp_path / "ix")
    first = Counting()
    store.embed(ix, encoder=first)
    assert len(first.texts) == 6
    with ix.writer() as w:
        w.add({"id": "new", "title": "new", "text": "gamma"})
        w.add({"id": "d2", "title": "title 2", "text": "changed text"})  # replaced: a new text
        w.delete("d4")
    ix = ix.reopen()
    second = Counting()
    out = store.embed(ix, encoder=second)
    assert sorted(second.texts) == sorted([units.document_text(ix, ix.reader.doc_number(i)) for i in ("new", "d2")])
    meta = json.loads((out / "meta.json").read_text())
    assert meta["reused"] == 4 and meta["rows"] == 6
    fresh = sieve.build_index([r for r in recs if r["id"] not in ("d2", "d4")] + [{"id": "new", "title": "new", "text": "gamma"},
                              {"id": "d2", "title": "title 2", "text": "changed text"}], tmp_path / "fresh")
    store.embed(fresh, encoder=HashEncoder(32))
    ours = np.asarray(store.DenseIndex.open(ix, encoder=HashEncoder(32)).vectors.whole())
    theirs = np.asarray(store.DenseIndex.open(fresh, encoder=HashEncoder(32)).vectors.whole())
    assert np.array_equal(ours, theirs)
    assert f"embeddings/{out.name}/keys.sva" in ix.check()
    third = Counting()
    store.embed(ix, encoder=third, force=True)  # forced: everything again
    assert len(third.texts) == 6
