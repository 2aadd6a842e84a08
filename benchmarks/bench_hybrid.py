"""Why hybrid (RRF) ranks as it does against dense and BM25 on the man-page NAME-line task.

    python -m benchmarks.bench_hybrid --corpus /work/benchdata/man-pages.jsonl [--pages 300]

The first `--pages` man pages (each without its NAME section) are indexed and embedded with the
default model and encoder (`sieve embed`). For every query (a page's NAME line, as an agent's
plain words) the target page's rank under BM25, dense and hybrid (`Index.search`), MRR@10 of
each, how many queries hybrid ranks above and below dense (and BM25's rank of the target where it
is below), and, recomputed from the two ranked lists, what other RRF constants and a lower BM25
weight would give (for the record; the default stays the paper's k=60, equal weights). Writes
benchmarks/results/hybrid.json.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

import sieve
from benchmarks.bench_dense import pages
from benchmarks.bench_dense_units import measures
from benchmarks.harness import MAN_PAGES, RESULTS, print_table, write_json
from sieve.dense import store
from sieve.tools.toolset import free_text_query

POOL = 1000


def mrr(ranks: list[int | None]) -> float:
    """MRR@10 of ranks in the whole pool (bench_dense_units' measure, over the top 10)."""
    return measures([r if r and r <= 10 else None for r in ranks])["mrr@10"]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", type=Path, default=MAN_PAGES)
    ap.add_argument("--pages", type=int, default=300)
    ap.add_argument("--out", type=Path, default=RESULTS / "hybrid.json")
    args = ap.parse_args()
    docs, tasks = pages(args.corpus, args.pages)
    with tempfile.TemporaryDirectory() as tmp:
        ix = sieve.build_index(docs, Path(tmp) / "idx")
        store.embed(ix)
        ix.use_dense()
        lists: dict[str, list[list[str]]] = {r: [] for r in ("bm25", "dense", "hybrid")}
        for q, _ in tasks:
            text = free_text_query(q) or q
            for r in lists:
                hits = ix.search(text, k=POOL, ranker=r, fallback=False, explain=False).hits
                lists[r].append([h.doc_id for h in hits])
    targets = [t for _, t in tasks]
    ranks = {r: [got.index(t) + 1 if t in got else None for got, t in zip(ls, targets)]
             for r, ls in lists.items()}
    below = [(b, d) for b, d, h in zip(ranks["bm25"], ranks["dense"], ranks["hybrid"])
             if (h or POOL + 1) > (d or POOL + 1)]
    above = sum((h or POOL + 1) < (d or POOL + 1) for d, h in zip(ranks["dense"], ranks["hybrid"]))

    def fused(k: int, weight: float) -> float:
        out: list[int | None] = []
        for b, d, t in zip(lists["bm25"], lists["dense"], targets):
            score: dict[str, float] = {}
            for i, x in enumerate(b):
                score[x] = score.get(x, 0.0) + weight / (k + i + 1)
            for i, x in enumerate(d):
                score[x] = score.get(x, 0.0) + 1.0 / (k + i + 1)
            top = sorted(score, key=lambda x: -score[x])[:10]
            out.append(top.index(t) + 1 if t in top else None)
        return mrr(out)

    result = {
        "command": " ".join(["python -m benchmarks.bench_hybrid", *sys.argv[1:]]),
        "pages": len(docs),
        "mrr@10": {r: mrr(v) for r, v in ranks.items()},
        "hybrid_above_dense": above,
        "hybrid_below_dense": len(below),
        "bm25_rank_where_below_median": statistics.median(b or POOL + 1 for b, _ in below)
        if below else None,
        "rrf_by_hand": {f"k={k} bm25 weight {w}": fused(k, w) for k in (60, 20, 5)
                        for w in (1.0, 0.5)},
    }
    print_table(["ranker", "MRR@10"], list(result["mrr@10"].items()), "NAME-line task")
    print_table(["RRF (by hand)", "MRR@10"], list(result["rrf_by_hand"].items()))
    print(f"hybrid above dense on {above} queries, below on {len(below)}; BM25's rank of the "
          f"target where below: median {result['bm25_rank_where_below_median']}")
    write_json(args.out, result)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
