"""Ordering what a query admits, top to bottom: the searcher over a snapshot's segments
(`searcher`), BM25's top k per segment (`scorer`: scan, MaxScore, windows over `windows`' maxima)
from its formulas (`bm25`), the Indri-style control (`indri`), RRF fusion (`fusion`), the zero-hit
recovery (`fallback`), the k-best ordering they share (`topk`), what a search returns (`results`)
and the ranker names (`rankers`). The top engine layer.
"""
