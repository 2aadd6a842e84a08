"""Reciprocal rank fusion (`rrf`) of rankings, and how deep each ranker's list fused is."""

from __future__ import annotations

import numpy as np

from sieve.engine.rank.topk import top_k

RRF_K = 60
# each ranker's depth fused by RRF: deep enough for dense to promote BM25's low ranks
FUSION_POOL = 1000


def rrf(
    orderings: list[np.ndarray], k: int, c: int = RRF_K, order: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Reciprocal rank fusion: score(d) = sum over orderings of 1 / (c + rank), rank from 1
    (equal fused scores in index order: `order` as for `top_k`)."""
    fused: dict[int, float] = {}
    for ranking in orderings:
        for rank, d in enumerate(ranking.tolist(), 1):
            fused[d] = fused.get(d, 0.0) + 1.0 / (c + rank)
    if not fused:
        return np.zeros(0, dtype=np.int64), np.zeros(0)
    docs = np.fromiter(fused.keys(), dtype=np.int64, count=len(fused))
    scores = np.fromiter(fused.values(), dtype=np.float64, count=len(fused))
    return top_k(docs, scores, k, order)
