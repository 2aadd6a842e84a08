"""`indri+dense`: the dense similarity as one more belief, log((1 + cos) / 2), averaged with the
query's Indri belief, over the union of each one's best documents; checked by recomputing it."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("hnswlib", reason="embeddings need the dense extra: pip install -e '.[dense]'")

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "hardening"))
from synth import HashEncoder  # noqa: E402

import sieve  # noqa: E402
from sieve.corpus.demo import stdlib_documents  # noqa: E402
from sieve.dense import store  # noqa: E402


@pytest.fixture(scope="module")
def index() -> sieve.Index:
    ix = sieve.build_index(list(stdlib_documents(limit=60)))
    enc = HashEncoder(64)
    store.embed(ix, encoder=enc)
    ix.use_dense(encoder=enc)
    return ix


@pytest.mark.parametrize("query", ["file read", '"command line" AND args*', "socket OR NEAR/4(read, file)", "path NOT windows"])
def test_indri_plus_dense_is_the_mean_of_the_two_beliefs(index: sieve.Index, query: str) -> None:
    r = index.search(query, ranker="indri+dense", k=10)
    plan = index.plan(query)
    indri = index.searcher.indri_scores(plan)
    q = HashEncoder(64).encode([plan.text])[0]
    vectors = np.asarray(index.searcher.dense.vectors.whole())  # type: ignore[union-attr]
    assert len(r.hits) == 10
    for h in r.hits:
        cos = float(vectors[h.doc] @ q)
        assert h.score == pytest.approx((indri[h.doc] + math.log((1 + cos) / 2)) / 2, rel=1e-6)
    assert [h.score for h in r.hits] == sorted((h.score for h in r.hits), reverse=True)
    plain = index.search(query, ranker="indri", k=10)
    assert [h.doc for h in plain.hits] == np.argsort(-indri, kind="stable")[:10].tolist() or plain.hits[0].score == indri.max()
