"""Ranking benchmark: BM25 top-10 latency beside peers, BM25 agreement with bm25s, embedding
throughput, dense/hybrid latency, the exact-vs-HNSW crossover and HNSW recall@10.

    python -m benchmarks.bench_rank --peer tantivy --peer sqlite-fts5            # everything
    python -m benchmarks.bench_rank --skip-dense                                # BM25 only

BM25 runs on the man-sections corpus (about 100k documents). Dense quality numbers use a subset
(`--dense-docs`, full section text embedded); dense speed at 100k uses title-only embeddings of the
whole corpus (`--scale-titles`), because embedding 100k full sections takes about an hour on 2 cores.
Prints tables and writes benchmarks/results/rank.json. With `--rounds R` the BM25 section is measured
R times on fresh queries (seed, seed + 1000, ...), each figure the median of the rounds'.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import time
from pathlib import Path
from typing import Any

import numpy as np

import sieve
from sieve.engine.format import bitset
from sieve.engine.analysis.analyzers import analyze
from sieve.engine.query.bql.lexer import OPERATORS
from sieve.index.index import parse_query

# parse_query was memoised itself in older sieves (ab.py --same-scripts runs these on them); now it wraps _parsed.
clear_parse_cache = getattr(parse_query, "cache_clear", None) or sieve.index.queries._parsed.cache_clear

HERE = Path(__file__).resolve().parent
from benchmarks.harness import percentiles, timed  # noqa: E402


def sample_queries(index: sieve.Index, n: int, seed: int) -> list[list[str]]:
    """Two or three words drawn from one random section: the shape of an agent's keyword query."""
    rng = random.Random(seed)
    out = []
    r = index.reader
    while len(out) < n:
        d = rng.randrange(len(index))
        words = [w for w in analyze(r.section_text(d, 0)) if w.upper() not in OPERATORS and len(w) > 2] if r.section_count(d) else []
        if len(words) >= 3:
            out.append(rng.sample(words, rng.choice([2, 3])))
    return out


def bm25_section(index: sieve.Index, queries: list[list[str]], peers: dict[str, Any]) -> dict[str, Any]:
    res: dict[str, Any] = {}
    for mode, joiner in (("and", " "), ("or", " OR ")):
        clear_parse_cache()
        index._plans.cache_clear()  # each pass parses and plans every query, as the peers do
        qs = [joiner.join(q) for q in queries]
        ms = [timed(lambda q=q: index.search(q, k=10))[0] for q in qs]
        clear_parse_cache()
        index._plans.cache_clear()
        bare = [timed(lambda q=q: index.search(q, k=10, explain=False))[0] for q in qs]
        row: dict[str, Any] = {"sieve": percentiles(ms), "sieve_ids_scores": percentiles(bare),
                               "median_admitted": int(np.median([index.match(q).count for q in qs[:100]]))}
        if mode == "or":
            # The same with no term's window maxima kept from an earlier search: each windowed scan
            # measures its terms' windows first (what the first search with a word costs).
            clear_parse_cache()
            index._plans.cache_clear()
            cold = []
            for q in qs:
                for part in index.searcher.parts:
                    part.bm25.windows.clear()
                cold.append(timed(lambda q=q: index.search(q, k=10, explain=False))[0])
            row["sieve_ids_scores_cold_windows"] = percentiles(cold)
        if mode == "or" and peers:  # the peers' module needs tantivy: imported only when asked for
            from benchmarks.peers import latency_ms

            for name, peer in peers.items():
                pms = [latency_ms(peer, timed(lambda peer=peer, q=q: peer.bm25_top(q, 10))[0]) for q in queries]
                row[name] = percentiles(pms)
        res[mode] = row
    return res


def merge_rounds(rounds: list[dict[str, Any]]) -> dict[str, Any]:
    """Rounds of `bm25_section` as one: each figure the median of the rounds' (the rounds under "rounds"),
    with each round's ratio of sieve's ids-and-scores p50 and p95 to each peer's."""
    if len(rounds) == 1:
        return rounds[0]
    out: dict[str, Any] = {}
    for mode in rounds[0]:
        rows = [r[mode] for r in rounds]
        row: dict[str, Any] = {"median_admitted": int(statistics.median(r["median_admitted"] for r in rows))}
        for key, first in rows[0].items():
            if isinstance(first, dict):
                row[key] = {k: round(statistics.median(r[key][k] for r in rows), 4) for k in ("p50", "p95", "mean")}
                if key not in ("sieve", "sieve_ids_scores", "sieve_ids_scores_cold_windows"):  # a peer
                    row[key]["ratio_p50_rounds"] = [round(r["sieve_ids_scores"]["p50"] / r[key]["p50"], 3) for r in rows]
                    row[key]["ratio_p95_rounds"] = [round(r["sieve_ids_scores"]["p95"] / r[key]["p95"], 3) for r in rows]
        row["rounds"] = rows
        out[mode] = row
    return out


def bm25_agreement(corpus: Path, index: sieve.Index, queries: list[list[str]]) -> dict[str, float]:
    """Top-10 overlap with bm25s (Lucene variant, same k1/b, fed sieve's own analysis of
    title + headings + body), for OR queries over the whole collection."""
    import bm25s

    r = index.reader
    tokens = []
    for d in range(len(index)):
        meta = r.meta(d)
        toks = analyze(meta["title"])
        for j, h in enumerate(meta["headings"]):
            if h != "(intro)":
                toks += analyze(h)
            toks += analyze(r.section_text(d, j))
        tokens.append(toks)
    model = bm25s.BM25(method="lucene", k1=0.9, b=0.4)
    model.index(tokens, show_progress=False)
    overlaps, exact = [], 0
    for q in queries:
        ours = [h.doc for h in index.search(" OR ".join(q), k=10).hits]
        docs, scores = model.retrieve([q], k=10, show_progress=False)
        theirs = [int(x) for x, s in zip(docs[0], scores[0]) if s > 0]
        overlaps.append(len(set(ours) & set(theirs)) / max(1, len(theirs)))
        exact += int(ours == theirs)
    return {"top10_overlap_mean": round(float(np.mean(overlaps)), 4), "identical_top10_share": round(exact / len(queries), 4), "queries": len(queries)}


def dense_section(corpus: Path, work: Path, n_docs: int, queries: list[list[str]]) -> dict[str, Any]:
    from sieve.dense import store
    from sieve.dense.encoder import SentenceTransformerEncoder

    subset = work / f"man-sections-{n_docs}.jsonl"
    with open(corpus) as src, open(subset, "w") as dst:
        for i, line in enumerate(src):
            if i >= n_docs:
                break
            dst.write(line)
    index = sieve.build_index(subset, work / f"man-sections-{n_docs}.sieve", force=True)
    enc = SentenceTransformerEncoder()
    t0 = time.perf_counter()
    store.embed(index, encoder=enc, force=True)
    secs = time.perf_counter() - t0
    index.use_dense(encoder=enc)
    dense = index.searcher.dense
    assert dense is not None
    out: dict[str, Any] = {"documents": n_docs, "embed_seconds": round(secs, 1), "embed_docs_per_s": round(n_docs / secs, 1)}
    vecs = [dense.query_vector(" ".join(q)) for q in queries[:100]]
    recalls = []
    for v in vecs:
        e, _ = dense.exact(v, None, 10)
        a, _ = dense.approximate(v, None, 10)
        recalls.append(len(set(e.tolist()) & set(a.tolist())) / 10)
    out["hnsw_recall_at_10"] = round(float(np.mean(recalls)), 4)
    for ranker in ("dense", "hybrid"):
        ms = [timed(lambda q=q, ranker=ranker: index.search(" OR ".join(q), k=10, ranker=ranker))[0] for q in queries[:200]]
        out[f"{ranker}_search_ms"] = percentiles(ms)
    return out


def scale_section(index: sieve.Index, work: Path, queries: list[list[str]], seed: int) -> dict[str, Any]:
    """Dense top-10 speed at 100k vectors (title embeddings), exact against HNSW by admitted-set size."""
    from sieve.dense import store
    from sieve.dense.encoder import SentenceTransformerEncoder

    enc = SentenceTransformerEncoder()
    t0 = time.perf_counter()
    store.embed(index, encoder=enc, batch_size=64, text=lambda ix, d: ix.reader.meta(d)["title"])
    secs = time.perf_counter() - t0
    index.use_dense(encoder=enc)
    dense = index.searcher.dense
    assert dense is not None
    n = len(index)
    rng = np.random.default_rng(seed)
    vecs = [dense.query_vector(" ".join(q)) for q in queries[:50]]
    rows = []
    for size in (1_000, 5_000, 10_000, 20_000, 50_000, n):
        docs = np.sort(rng.choice(n, size, replace=False))
        bits = bitset.from_ids(docs, n)
        e_ms, a_ms, rec = [], [], []
        for v in vecs:
            t, (e, _) = timed(lambda v=v, docs=docs: dense.exact(v, docs, 10))
            e_ms.append(t)
            t, (a, _) = timed(lambda v=v, bits=bits: dense.approximate(v, bits, 10))
            a_ms.append(t)
            rec.append(len(set(e.tolist()) & set(a.tolist())) / 10)
        rows.append({"admitted": size, "exact_ms": percentiles(e_ms), "hnsw_ms": percentiles(a_ms), "hnsw_recall_at_10": round(float(np.mean(rec)), 3)})
    return {"vectors": n, "embed_seconds": round(secs, 1), "by_admitted_size": rows}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", type=Path, default=HERE / "data" / "man-sections.jsonl")
    ap.add_argument("--work", type=Path, default=HERE / "work")
    ap.add_argument("--queries", type=int, default=300)
    ap.add_argument("--peer", action="append", default=[])
    ap.add_argument("--dense-docs", type=int, default=3000)
    ap.add_argument("--skip-dense", action="store_true")
    ap.add_argument("--skip-scale", action="store_true")
    ap.add_argument("--seed", type=int, default=11)
    ap.add_argument("--rounds", type=int, default=1, help="BM25: measure this many times on fresh queries; report medians")
    ap.add_argument("--out", type=Path, default=HERE / "results" / "rank.json")
    args = ap.parse_args()

    args.work.mkdir(parents=True, exist_ok=True)
    idx_path = args.work / f"{args.corpus.stem}.sieve"
    index = sieve.open_index(idx_path) if idx_path.exists() else sieve.build_index(args.corpus, idx_path)
    queries = sample_queries(index, args.queries, args.seed)
    for q in sample_queries(index, 20, args.seed + 1):  # warm-up
        index.search(" ".join(q), k=10)
    peers: dict[str, Any] = {}
    if args.peer:
        from benchmarks.peers import PEERS, ensure

        for name in args.peer:
            peer = PEERS[name]()
            ensure(peer, args.corpus, args.work)
            peers[name] = peer
    result: dict[str, Any] = {"corpus": str(args.corpus), "documents": len(index)}
    rounds = [bm25_section(index, queries if r == 0 else sample_queries(index, args.queries, args.seed + 1000 * r), peers)
              for r in range(max(1, args.rounds))]
    result["bm25"] = merge_rounds(rounds)
    result["bm25_agreement_bm25s"] = bm25_agreement(args.corpus, index, queries[:200])
    if not args.skip_dense:
        result["dense_subset"] = dense_section(args.corpus, args.work, args.dense_docs, queries)
        if not args.skip_scale:
            result["dense_scale"] = scale_section(index, args.work, queries, args.seed)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1))

    print(f"\nBM25 top-10 search on {args.corpus.name} ({len(index)} documents), ms: with each hit's matched fields and sections"
          " (what cards show), and ids+scores only (search(explain=False), what the peers return)")
    for mode, row in result["bm25"].items():
        line = (f"  {mode:4} admitted~{row['median_admitted']:>6}: sieve p50 {row['sieve']['p50']:.3f} p95 {row['sieve']['p95']:.3f}"
                f" | ids+scores only p50 {row['sieve_ids_scores']['p50']:.3f} p95 {row['sieve_ids_scores']['p95']:.3f}")
        if "sieve_ids_scores_cold_windows" in row:
            c = row["sieve_ids_scores_cold_windows"]
            line += f" (no window maxima kept: p50 {c['p50']:.3f} p95 {c['p95']:.3f})"
        for name in peers:
            if name in row:
                ids = row["sieve_ids_scores"]
                line += (f" | {name} p50 {row[name]['p50']:.3f} p95 {row[name]['p95']:.3f}"
                         f" (ids+scores / {name}: p50 {ids['p50'] / row[name]['p50']:.2f}, p95 {ids['p95'] / row[name]['p95']:.2f})")
        print(line)
    a = result["bm25_agreement_bm25s"]
    print(f"BM25 vs bm25s (same analysis, Lucene idf, k1 0.9, b 0.4): top-10 overlap {a['top10_overlap_mean']}, identical lists {a['identical_top10_share']}")
    if "dense_subset" in result:
        d = result["dense_subset"]
        print(f"dense on {d['documents']} docs: embedding {d['embed_docs_per_s']} docs/s; HNSW recall@10 {d['hnsw_recall_at_10']}; "
              f"dense search p50 {d['dense_search_ms']['p50']:.2f} ms, hybrid p50 {d['hybrid_search_ms']['p50']:.2f} ms (query encoding included)")
    if "dense_scale" in result:
        s = result["dense_scale"]
        print(f"dense top-10 over admitted sets of {s['vectors']} title vectors (query vector given), ms:")
        for row in s["by_admitted_size"]:
            print(f"  admitted {row['admitted']:>6}: exact p50 {row['exact_ms']['p50']:.2f} | hnsw p50 {row['hnsw_ms']['p50']:.2f} p95 {row['hnsw_ms']['p95']:.2f} recall@10 {row['hnsw_recall_at_10']}")
    print(f"\nwrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
