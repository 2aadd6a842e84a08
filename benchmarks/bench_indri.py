"""The Indri-style control rankers beside BM25, dense and hybrid: known-item quality and latency.

    python -m benchmarks.bench_indri --corpus /work/benchwork/data/man-sections.jsonl [--pages 150] [--skip-dense]

Quality (a known-item task on man pages): for each of `--pages` sampled pages, the query is the
page's one-line description (its NAME line, from the infobox), the target is the page's DESCRIPTION
section. The index holds every section of the sampled pages (about 13 per page; embeddings of full
section text, so dense is measured on this subset). Each ranker gets the same plain-words query, an OR
of the words over title and text (as `ranked_search` builds it), so BM25, dense and hybrid rank
every section holding a word; Indri reads that OR as #or. `indri (AND)` is the same words as a BQL
AND, which Indri reads as #combine, its usual keyword query (BM25 on the AND would only rank the
sections holding every word). Reported: MRR@10 and success@10.

Latency (the whole corpus, about 100k sections): BM25 and indri on the same OR queries, p50/p95.
Prints tables and writes JSON (default benchmarks/results/indri.json).
"""

from __future__ import annotations

import argparse
import json
import random
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent

import sieve  # noqa: E402
from benchmarks.harness import rank_quantile as percentile  # noqa: E402
from sieve.corpus.formats import records  # noqa: E402
from sieve.engine.analysis.analyzers import analyze  # noqa: E402
from sieve.tools.toolset import free_text_query  # noqa: E402

RESERVED = {"and", "or", "not", "near", "date", "all"}


def and_query(text: str) -> str | None:
    words = [w for w in dict.fromkeys(analyze(text)) if w not in RESERVED]
    return " AND ".join(f'"{w}"[tiab]' for w in words) if words else None


def sample(corpus: Path, pages: int, seed: int) -> tuple[list[dict[str, Any]], list[tuple[str, str]]]:
    by_page: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for _, _, rec in records(corpus):
        by_page[rec["page"]].append(rec)
    good = sorted(p for p, recs in by_page.items()
                  if (recs[0].get("infobox") or {}).get("description") and any(r["sections"][0]["heading"] == "DESCRIPTION" for r in recs))
    chosen = random.Random(seed).sample(good, pages)
    docs = [r for p in chosen for r in by_page[p]]
    tasks = [(by_page[p][0]["infobox"]["description"], next(r["id"] for r in by_page[p] if r["sections"][0]["heading"] == "DESCRIPTION")) for p in chosen]
    return docs, tasks


def quality(index: sieve.Index, tasks: list[tuple[str, str]], rankers: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name in rankers + ["indri (AND)"]:
        ranker = "indri" if name == "indri (AND)" else name
        rr: list[float] = []
        for text, target in tasks:
            q = and_query(text) if name == "indri (AND)" else free_text_query(text)
            if q is None:
                rr.append(0.0)
                continue
            ids = [h.doc_id for h in index.search(q, k=10, ranker=ranker, fallback=False, explain=False).hits]
            rr.append(1.0 / (ids.index(target) + 1) if target in ids else 0.0)
        out[name] = {"mrr@10": round(sum(rr) / len(rr), 4), "success@10": round(sum(1 for x in rr if x) / len(rr), 4)}
    return out


def latency(index: sieve.Index, queries: list[str], rounds: int) -> dict[str, Any]:
    times: dict[str, list[float]] = {"bm25": [], "indri": []}
    for q in queries:
        for _ in range(rounds):
            for ranker in ("bm25", "indri"):  # interleaved: drift hits both alike
                t0 = time.perf_counter()
                index.search(q, k=10, ranker=ranker, fallback=False, explain=False)
                times[ranker].append((time.perf_counter() - t0) * 1e3)
    return {r: {"p50_ms": round(percentile(t, 0.5), 3), "p95_ms": round(percentile(t, 0.95), 3)} for r, t in times.items()}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", type=Path, required=True)
    ap.add_argument("--index", type=Path, help="an index of the whole corpus, for latency (built if absent)")
    ap.add_argument("--pages", type=int, default=150)
    ap.add_argument("--latency-queries", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--skip-dense", action="store_true")
    ap.add_argument("--seed", type=int, default=5)
    ap.add_argument("--out", type=Path, default=HERE / "results" / "indri.json")
    args = ap.parse_args()

    docs, tasks = sample(args.corpus, args.pages, args.seed)
    rankers = ["bm25", "indri"] + ([] if args.skip_dense else ["dense", "hybrid", "indri+dense"])
    with tempfile.TemporaryDirectory() as tmp:
        sub = sieve.build_index(docs, Path(tmp) / "sub")
        embed_s = None
        if not args.skip_dense:
            from sieve.dense.store import embed

            t0 = time.perf_counter()
            embed(sub)
            embed_s = round(time.perf_counter() - t0, 1)
            sub.use_dense()
        q = quality(sub, tasks, rankers)

    path = args.index or Path("/tmp") / f"sieve-diagnose-{args.corpus.stem}"
    big = sieve.open_index(path) if (path / "CURRENT").exists() else sieve.build_index(args.corpus, path)
    r = random.Random(args.seed)
    texts = []
    while len(texts) < args.latency_queries:
        d = r.randrange(len(big))
        words = [w for w in analyze(big.document(big.reader.doc_id(d)).title) if w.isalpha() and w not in RESERVED]
        if len(words) >= 2:
            texts.append(free_text_query(" ".join(r.sample(words, 2))) or "")
    lat = latency(big, texts, args.rounds)
    result = {"quality": {"pages": args.pages, "documents": len(docs), "embed_seconds": embed_s, "rankers": q},
              "latency": {"documents": len(big), "queries": len(texts), **lat}}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1))
    print(f"known-item quality: {args.pages} man pages, {len(docs):,} sections; query = the NAME line, target = DESCRIPTION")
    print(f"{'ranker':14} {'MRR@10':>7} {'S@10':>6}")
    for name, v in q.items():
        print(f"{name:14} {v['mrr@10']:>7} {v['success@10']:>6}")
    print(f"\nlatency, {len(big):,} documents, {len(texts)} two-word OR queries, k = 10")
    for name, v in lat.items():
        print(f"{name:14} p50 {v['p50_ms']:>8} ms  p95 {v['p95_ms']:>8} ms")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
