"""Dense and hybrid search at 100,000 documents: latency, bytes per vector, exact vs HNSW.

    python -m benchmarks.bench_dense_scale [--rows 100000] [--queries 100]

The collection: the first `--rows` sections of man-sections (81,676 real sections; past them the
sections again under new ids), indexed by sieve. Their VECTORS ARE RANDOM UNIT VECTORS (384
dimensions, one per text, seeded by its checksum), as are the queries': embedding 100,000 texts
with MiniLM takes hours on this machine. Random vectors are HNSW's hard case (no clusters), so the
graph's figures here are pessimistic. The MiniLM query encoding (ONNX Runtime) is timed apart on
real query strings and added to the search figures in the table's last columns.

Measured, interleaved query by query: dense and hybrid top-10 p50/p95 through `Index.search`
(query vector cached, so the figure is the search alone), over the whole collection and under a
Boolean filter (the free-text OR of the query's words), with int8 (the default) and float32
vectors and with exact (`search="exact"`) and approximate (automatic) ranking; bytes per vector
of each file; the exact/HNSW crossover (exact scan of an admitted set vs filtered hnswlib, for
admitted sets of 100 to all rows); and the quantisation's effect on a top-10 (agreement with
float32) on the same random vectors and, with MiniLM, on `--quality-pages` man pages (with MRR@10
on the NAME-line task). Writes benchmarks/results/dense_scale.json.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
import zlib
from pathlib import Path
from typing import Any

import numpy as np

import sieve
from benchmarks.harness import (
    MAN_PAGES,
    MAN_SECTIONS,
    RESULTS,
    WORK,
    percentiles,
    print_table,
    timed,
    write_json,
)
from sieve.dense import compact, layout, store
from sieve.engine.format import bitset, storage
from sieve.engine.query.bql.free_text import free_text_query

DIM = 384
SIZES = (100, 300, 1_000, 3_000, 10_000, 30_000, 100_000)


class RandomEncoder:
    """A unit vector per text, seeded by its checksum: the same text, the same vector."""

    name, dim, backend = "random-384", DIM, "random"

    def encode(self, texts: list[str], batch_size: int = 32) -> np.ndarray:
        out = np.stack([
            np.random.default_rng(zlib.crc32(t.encode())).standard_normal(DIM) for t in texts
        ]).astype(np.float32)
        return out / np.linalg.norm(out, axis=1, keepdims=True)


def sections(corpus: Path, rows: int) -> list[dict[str, Any]]:
    docs: list[dict[str, Any]] = []
    with open(corpus, encoding="utf-8") as fh:
        recs = [json.loads(line) for line in fh]
    for lap in range(rows // max(1, len(recs)) + 1):
        for rec in recs:
            if len(docs) == rows:
                return docs
            docs.append({"id": rec["id"] + (f"~{lap}" if lap else ""), "title": rec["title"],
                         "sections": rec["sections"]})
    return docs


def collection(corpus: Path, rows: int, work: Path) -> sieve.Index:
    """The index and its int8 embeddings, built once per row count (kept in benchmarks/work)."""
    path = work / f"dense-scale-{rows}"
    try:
        ix = sieve.open_index(path)
        ix.use_dense(model=RandomEncoder.name, encoder=RandomEncoder())
        return ix
    except sieve.SieveError:
        shutil.rmtree(path, ignore_errors=True)
    t0 = time.perf_counter()
    ix = sieve.build_index(sections(corpus, rows), path)
    t1 = time.perf_counter()
    store.embed(ix, model=RandomEncoder.name, encoder=RandomEncoder())
    print(f"built {rows} rows: index {t1 - t0:.0f} s, vectors and graph "
          f"{time.perf_counter() - t1:.0f} s", file=sys.stderr)
    ix.use_dense(model=RandomEncoder.name, encoder=RandomEncoder())
    return ix


def float32_twin(dense: store.DenseIndex, work: Path) -> compact.Vectors:
    """The same vectors decoded to float32, written and memory-mapped as vectors.sva would be."""
    path = work / "dense-scale-float32.sva"
    entry = storage.write_array(path, dense.vectors.whole())
    return compact.Vectors(storage.open_array(path, "vectors.sva", entry), None)


def crossover(dense: store.DenseIndex, f32: compact.Vectors, queries: int, cap: int) -> list[dict]:
    """Exact scan (int8 and float32) vs filtered HNSW per admitted-set size, medians in ms."""
    n, rng, out = len(dense.docs), np.random.default_rng(1), []
    int8 = dense.vectors
    for size in [s for s in SIZES if s <= n] + ([n] if n not in SIZES else []):
        ms: dict[str, list[float]] = {"exact int8": [], "exact float32": [], "hnsw": []}
        for _ in range(min(queries, cap)):
            docs = np.sort(rng.choice(dense.docs, size=size, replace=False))
            bits = bitset.from_ids(docs, dense.index.snapshot.capacity)
            q = RandomEncoder().encode([str(rng.integers(1 << 30))])[0]
            for name, vec in (("exact int8", int8), ("exact float32", f32)):
                dense.vectors = vec
                ms[name].append(timed(lambda q=q, d=docs: dense.exact(q, d, 10))[0])
            dense.vectors = int8
            ms["hnsw"].append(timed(lambda q=q, b=bits: dense.approximate(q, b, 10))[0])
        out.append({"admitted": size, **{k: round(float(np.median(v)), 3) for k, v in ms.items()}})
    return out


def agreement(base: np.ndarray, qs: np.ndarray, targets: np.ndarray | None = None) -> dict:
    """Top-10 agreement with float32 of int8 per row (stored), int8 per dimension and float16,
    and MRR@10 of each where the queries have targets (row numbers)."""
    per_dim = np.abs(base).max(0) / 127
    variants = {
        "float32": base,
        "int8 per row": compact.Vectors(*compact.quantize(base, "int8")).whole(),
        "int8 per dimension": np.rint(base / per_dim).clip(-127, 127) * per_dim,
        "float16": base.astype(np.float16).astype(np.float32),
    }
    ref = np.argsort(-(qs @ base.T), axis=1, kind="stable")[:, :10]
    found: dict[str, Any] = {}
    for name, v in variants.items():
        top = np.argsort(-(qs @ v.T), axis=1, kind="stable")[:, :10]
        found[name] = {"top10_agreement": round(float(np.mean(
            [len(set(a) & set(b)) / 10 for a, b in zip(top, ref)])), 4)}
        if targets is not None:
            rr = [1 / (list(t).index(g) + 1) if g in t else 0.0 for t, g in zip(top, targets)]
            found[name]["mrr@10"] = round(float(np.mean(rr)), 4)
    return found


def man_page_quality(corpus: Path, n: int) -> dict:
    """The same on real vectors: the default MiniLM over the first n man pages (query = the NAME
    line, target = the page), as bench_dense builds them."""
    from benchmarks.bench_dense import pages
    from sieve.dense.encoder import loaded_encoder
    from sieve.dense.units import document_text

    docs, tasks = pages(corpus, n)
    ix = sieve.build_index(docs, WORK / "dense-scale-quality", force=True)
    numbers = ix.doc_numbers().tolist()
    ids = [ix.reader.doc_id(d) for d in numbers]
    enc = loaded_encoder()
    base = np.asarray(enc.encode([document_text(ix, d) for d in numbers]), dtype=np.float32)
    qs = np.asarray(enc.encode([q for q, _ in tasks]), dtype=np.float32)
    return agreement(base, qs, np.asarray([ids.index(t) for _, t in tasks]))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", type=Path, default=MAN_SECTIONS)
    ap.add_argument("--work", type=Path, default=WORK)
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--queries", type=int, default=100)
    ap.add_argument("--crossover-queries", type=int, default=15)
    ap.add_argument("--quality-pages", type=int, default=600,
                    help="man pages embedded with MiniLM for the quantisation's quality (0: none)")
    ap.add_argument("--pages-corpus", type=Path, default=MAN_PAGES)
    ap.add_argument("--out", type=Path, default=RESULTS / "dense_scale.json")
    args = ap.parse_args()
    if not args.corpus.exists():
        args.corpus = Path("/work/benchdata/man-sections.jsonl")
    if not args.pages_corpus.exists():
        args.pages_corpus = Path("/work/benchdata/man-pages.jsonl")
    args.work.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

    ix = collection(args.corpus, args.rows, args.work)
    dense = ix.searcher.dense
    assert dense is not None
    f32 = float32_twin(dense, args.work)
    int8 = dense.vectors
    folder = dense.dir
    meta = layout.read_meta(folder)
    n = meta["rows"]
    per_vector = {name: round(e["size"] / n, 1) for name, e in meta["files"].items()
                  if name in ("vectors.sva", "scales.sva", "hnsw.bin")}
    per_vector["float32 vectors.sva"] = round((f32.stored.a.nbytes + storage.HEADER_SIZE) / n, 1)

    rng = np.random.default_rng(3)
    titles = [ix.reader.meta(int(d))["title"] for d in rng.choice(ix.doc_numbers(), args.queries)]
    words = [" ".join(t.replace("(", " ").replace(")", " ").split()[:2]) for t in titles]
    cases = {"all": [f"({w}) OR NOT zzzzqx" for w in words],
             "filtered": [free_text_query(w) or w for w in words]}
    timings: dict[str, list[float]] = {}
    admitted: dict[str, list[int]] = {"all": [], "filtered": []}
    setups = [("int8", "approximate"), ("int8", "exact"), ("float32", "approximate"),
              ("float32", "exact")]
    for i in range(args.queries):  # interleaved: drift on a shared machine hits every setup alike
        for case, qs in cases.items():
            admitted[case].append(len(ix.match(qs[i]).docs))
            for dtype, search in setups:
                dense.vectors = int8 if dtype == "int8" else f32
                dense.exact_max = store.EXACT_MAX if search == "approximate" else float("inf")
                for ranker in ("dense", "hybrid"):
                    dense.query_vector(qs[i])  # encoded once; the search alone is timed
                    ms, _ = timed(lambda t=qs[i], r=ranker: ix.search(
                        t, k=10, ranker=r, fallback=False, explain=False))
                    timings.setdefault(f"{ranker} {case} {dtype} {search}", []).append(ms)
    dense.vectors, dense.exact_max = int8, store.EXACT_MAX

    from sieve.dense.encoder import loaded_encoder  # the real query encoder, timed apart
    encoder = loaded_encoder()
    encoder.encode(["warm up"])
    encode_ms = percentiles([timed(lambda t=t: encoder.encode([t]))[0] for t in words], 3)

    cross = crossover(dense, f32, args.queries, args.crossover_queries)
    sample = np.random.default_rng(2).choice(n, size=min(n, 20_000), replace=False)
    agree = {"random vectors": agreement(np.asarray(f32.rows(np.sort(sample))),
                                         RandomEncoder().encode([f"q{i}" for i in range(200)]))}
    if args.quality_pages:
        agree[f"{args.quality_pages} man pages, MiniLM"] = man_page_quality(
            args.pages_corpus, args.quality_pages)

    rows_out, table = [], {}
    for key, ms in timings.items():
        p = percentiles(ms, 3)
        table[key] = p
        rows_out.append([key, p["p50"], p["p95"], round(p["p50"] + encode_ms["p50"], 2),
                         round(p["p95"] + encode_ms["p95"], 2)])
    result = {
        "command": " ".join(["python -m benchmarks.bench_dense_scale", *sys.argv[1:]]),
        "note": "vectors and queries are random unit vectors (384 dims) over real man-sections "
                "texts; query encoding timed apart with the default MiniLM encoder",
        "rows": n, "exact_max": store.EXACT_MAX or "cost model",
        "chosen": {c["admitted"]: "exact" if dense.prefers_exact(c["admitted"], 10) else "hnsw"
                   for c in cross},
        "admitted_median": {k: int(np.median(v)) for k, v in admitted.items()},
        "query_encode_ms": encode_ms, "search_ms": table,
        "bytes_per_vector": per_vector, "crossover_ms": cross,
        "top10_agreement_vs_float32": agree,
    }
    print_table(["search (ms; vector cached)", "p50", "p95", "p50 + encode", "p95 + encode"],
                rows_out, title=f"{n} rows, {DIM} dims; query encode {encode_ms}")
    print()
    print_table(["admitted", "exact int8", "exact float32", "hnsw"],
                [[c["admitted"], c["exact int8"], c["exact float32"], c["hnsw"]] for c in cross],
                title="exact scan vs filtered HNSW, top-10, median ms")
    print(f"\nbytes per vector: {per_vector}")
    for what, found in agree.items():
        print(f"against float32, {what}: {found}")
    print(f"wrote {write_json(args.out, result)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
