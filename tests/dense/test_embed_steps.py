"""`sieve embed`'s encoding loop: a chunk's rows go to the encoder longest first, a step at a
time (little padding in the encoder's batches, progress between saves), and the vectors land in
row order."""

from __future__ import annotations

import random
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("hnswlib", reason="embeddings need the dense extra: pip install -e '.[dense]'")

import sieve
from sieve.dense import store, units

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "hardening"))
from synth import HashEncoder  # noqa: E402

WORDS = "river mill dawn bread salt copper engine harbor violin glacier tunnel lantern".split()


def test_a_chunk_is_encoded_longest_first_in_steps(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("sieve.dense.embedding.CHUNK", 8)
    monkeypatch.setattr("sieve.dense.embedding.STEP", 3)
    r = random.Random(5)
    docs = [{"id": f"d{i}", "title": f"doc {i}",
             "sections": [{"heading": f"part {j}",
                           "text": " ".join(r.choice(WORDS) for _ in range(r.randint(1, 300)))}
                          for j in range(r.randint(1, 3))]} for i in range(8)]
    ix = sieve.build_index(docs, tmp_path / "ix")
    calls: list[list[str]] = []

    class Recording(HashEncoder):
        def encode(self, texts: list[str], batch_size: int = 32) -> Any:
            calls.append(list(texts))
            return super().encode(texts, batch_size)

    seen: list[int] = []
    store.embed(ix, model="hash-64", encoder=Recording(), unit="passage", dtype="float32",
                progress=lambda done, total: seen.append(done))
    rows = [t for d in ix.doc_numbers().tolist() for t in units.passages(ix, d)]
    assert len(rows) > 8 and max(len(c) for c in calls) == 3
    flat = [t for c in calls for t in c]
    for a in range(0, len(rows), 8):  # each chunk: its own rows, longest first
        chunk = flat[a : a + 8]
        assert sorted(chunk) == sorted(rows[a : a + 8])
        assert [len(t) for t in chunk] == sorted((len(t) for t in chunk), reverse=True)
    assert seen[0] == 0 and seen[-1] == len(rows) and seen == sorted(set(seen))
    assert any(v % 8 and v != len(rows) for v in seen)  # progress between saves
    got = np.asarray(store.DenseIndex.open(ix, model="hash-64", encoder=HashEncoder()).vectors.whole())
    assert np.array_equal(got, HashEncoder().encode(rows))
