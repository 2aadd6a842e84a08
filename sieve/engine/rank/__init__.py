"""Ordering what a query admits: BM25 (`bm25`, `search`), RRF fusion and the zero-hit fallback
(`search`), the ranker names (`rankers`), the Indri-style control (`indri`) and snippet windows
(`windows`). The top engine layer.
"""
