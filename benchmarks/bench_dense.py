"""Dense retrieval at CPU speed: the default model's encoders side by side in one run.

    python -m benchmarks.bench_dense --corpus /work/benchdata/man-pages.jsonl [--pages 600]

The first `--pages` man pages, each without its NAME section, are indexed; every encoder embeds
the same texts (sieve's document text: the title and the first 2,000 characters) with the same
threads: plain sentence-transformers float32 (`SentenceTransformer.encode(texts, batch_size=32)`),
sieve's old path (`sieve embed` on torch) and its new one (`sieve embed` on ONNX Runtime, the
fused float32 graph, and the opt-in int8), and the opt-in static model (sieve.dense.static, with
MRR@10 dense and hybrid of its own). On a shared machine the load drifts within a run, so
the pages are cut into `--pieces` small indexes and every piece is embedded by every encoder in
turn, the order rotating from piece to piece; an encoder's figure is its pages over the sum of its
pieces' seconds, and the ratio to float32 is also given as the median of the per-piece ratios.
Reported beside it: query encoding p50/p95 (one text at a time); the cold start of the first dense
query in a fresh process against a BM25 one (median of `--cold` runs each, alternating); quality on
the known-item task (query = the page's NAME line, target = the page): MRR@10 of BM25, dense (each
encoder) and hybrid (the new path), and the mean top-10 overlap of each encoder's dense ranking
with float32 sentence-transformers'. More encoders join as entries of `encoders` in main().
Writes benchmarks/results/dense.json.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

import sieve
from benchmarks.harness import (
    MAN_PAGES,
    RESULTS,
    ROOT,
    percentiles,
    print_table,
    repeat,
    write_json,
)
from sieve.dense import store, units
from sieve.dense.encoder import DEFAULT_MODEL, SentenceTransformerEncoder, loaded_encoder
from sieve.tools.toolset import free_text_query

COLD = """import sys, time
t0 = time.perf_counter()
import sieve
ix = sieve.open_index(sys.argv[1])
ranker = sys.argv[2]
if ranker != "bm25":
    ix.use_dense()
ix.search(sys.argv[3], k=10, ranker=ranker, fallback=False, explain=False)
print(time.perf_counter() - t0)
"""


def pages(corpus: Path, n: int) -> tuple[list[dict[str, Any]], list[tuple[str, str]]]:
    """The first n pages with a NAME line and more, NAME removed; (query, target id) pairs."""
    docs, tasks = [], []
    with open(corpus, encoding="utf-8") as fh:
        for line in fh:
            rec = json.loads(line)
            desc = (rec.get("infobox") or {}).get("description")
            rest = [s for s in rec["sections"] if s["heading"] != "NAME"]
            if not desc or not rest:
                continue
            docs.append({"id": rec["id"], "title": rec["title"], "sections": rest})
            tasks.append((desc, rec["id"]))
            if len(docs) == n:
                break
    return docs, tasks


REFERENCE = "sentence-transformers fp32"
NEW = "sieve new (onnx fp32)"


class Replay:
    """An encoder that hands back vectors already computed for known texts (so the quality
    figures use exactly the vectors that were timed, without a further pass of the model)."""

    def __init__(self, texts: list[str], vecs: np.ndarray, like: Any) -> None:
        self.known = {t: v for t, v in zip(texts, vecs)}
        self.name, self.dim, self.backend = like.name, like.dim, like.backend

    def encode(self, texts: list[str], batch_size: int = 32) -> np.ndarray:
        return np.stack([self.known[t] for t in texts]).astype(np.float32)


def embed_interleaved(encoders: dict[str, Any], st: SentenceTransformerEncoder,
                      docs: list[dict[str, Any]], work: Path, pieces: int,
                      rounds: int) -> tuple[dict[str, list[float]], dict[str, np.ndarray]]:
    """Seconds per piece of every encoder (all pieces of round 1, then round 2 ...), and the
    vectors of every text (from the first round), in page order."""
    cut = np.array_split(np.arange(len(docs)), max(1, min(pieces, len(docs))))
    parts = [sieve.build_index([docs[i] for i in p], work / f"piece{k}") for k, p in enumerate(cut)]
    names = list(encoders)
    for enc in encoders.values():  # first-call costs (allocations, weight packing) are not speed
        (enc or st).encode([docs[0]["title"]] * 2)
    seconds: dict[str, list[float]] = {name: [] for name in names}
    got: dict[str, list[np.ndarray]] = {name: [] for name in names}
    for r in range(rounds):
        for k, part in enumerate(parts):
            texts = [units.document_text(part, d) for d in part.doc_numbers().tolist()]
            turn = (r + k) % len(names)
            for name in names[turn:] + names[:turn]:
                enc = encoders[name]
                t0 = time.perf_counter()
                if enc is None:  # the library as its users call it
                    vecs = np.asarray(st._model.encode(
                        texts, batch_size=32, normalize_embeddings=True, convert_to_numpy=True,
                        show_progress_bar=False), dtype=np.float32)
                else:
                    store.embed(part, model=enc.name, encoder=enc, force=True)
                    vecs = np.array(store.DenseIndex.open(part, model=enc.name).vectors.whole())
                seconds[name].append(time.perf_counter() - t0)
                if r == 0:
                    got[name].append(vecs)
    return seconds, {name: np.concatenate(v) for name, v in got.items()}


def cold_start(path: Path, ranker: str, query: str, backend: str) -> float:
    env = {**os.environ, "SIEVE_ENCODER": backend, "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, "-c", COLD, str(path), ranker, query], env=env,
                         capture_output=True, text=True, check=True)
    return float(out.stdout.split()[-1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", type=Path, default=MAN_PAGES)
    ap.add_argument("--pages", type=int, default=600)
    ap.add_argument("--rounds", type=int, default=1, help="times every piece is embedded")
    ap.add_argument("--pieces", type=int, default=10, help="small indexes the pages are cut into")
    ap.add_argument("--cold", type=int, default=3, help="fresh processes per cold-start figure")
    ap.add_argument("--queries", type=int, default=200, help="texts timed one at a time")
    ap.add_argument("--no-int8", action="store_true")
    ap.add_argument("--no-static", action="store_true")
    ap.add_argument("--out", type=Path, default=RESULTS / "dense.json")
    args = ap.parse_args()

    docs, tasks = pages(args.corpus, args.pages)
    threads = os.cpu_count() or 1
    tmp = tempfile.TemporaryDirectory()
    ix = sieve.build_index(docs, Path(tmp.name) / "idx")
    texts = [units.document_text(ix, d) for d in ix.doc_numbers().tolist()]
    st = SentenceTransformerEncoder(DEFAULT_MODEL)
    # name -> an Encoder run through `sieve embed`, or None for plain sentence-transformers
    encoders: dict[str, Any] = {
        REFERENCE: None,
        "sieve old (torch fp32)": loaded_encoder(backend="torch"),
        NEW: loaded_encoder(backend="onnx", threads=threads),
    }
    if not args.no_int8:
        encoders["sieve onnx int8 (opt-in)"] = loaded_encoder(backend="onnx-int8", threads=threads)
    if not args.no_static:  # a model of its own (static:<model>): embedded beside MiniLM's
        encoders["sieve static (opt-in)"] = loaded_encoder(backend="static")
    seconds, vectors = embed_interleaved(encoders, st, docs, Path(tmp.name), args.pieces,
                                         args.rounds)
    # The whole index gets the new path's vectors (as timed above) for the hybrid figures.
    store.embed(ix, encoder=Replay(texts, vectors[NEW], encoders[NEW]), force=True)
    ix.use_dense()
    run = {name: (st if enc is None else enc) for name, enc in encoders.items()}

    ids = [ix.reader.doc_id(d) for d in ix.doc_numbers().tolist()]
    queries = [q for q, _ in tasks]
    targets = [ids.index(t) for _, t in tasks]
    ref_top: np.ndarray | None = None
    command = " ".join(["python -m benchmarks.bench_dense", *sys.argv[1:]])
    rows: list[list[Any]] = []
    result: dict[str, Any] = {"command": command, "pages": len(docs), "threads": threads,
                              "pieces": args.pieces, "rounds": args.rounds, "encoders": {}}
    enc_ms: dict[str, list[float]] = {name: [] for name in encoders}
    for q in queries[: args.queries]:  # interleaved: drift hits every encoder alike
        for name, enc in run.items():
            enc_ms[name] += repeat(lambda e=enc, t=q: e.encode([t]), 1)
    for name, enc in run.items():
        qv = enc.encode(queries)
        top = np.argsort(-(qv @ vectors[name].T), axis=1, kind="stable")[:, :10]
        if ref_top is None:
            ref_top = top
        agree = float(np.mean([len(set(a) & set(b)) / 10 for a, b in zip(top, ref_top)]))
        rr = [1.0 / (list(t).index(g) + 1) if g in t else 0.0 for t, g in zip(top, targets)]
        total = float(np.sum(seconds[name]))
        same = vectors[name].shape == vectors[REFERENCE].shape  # static: another width
        cos = (vectors[name] * vectors[REFERENCE]).sum(1) if same else np.full(1, np.nan)
        ratios = np.asarray(seconds[REFERENCE]) / np.asarray(seconds[name])
        entry = {"docs_per_s": round(len(texts) * args.rounds / total, 2),
                 "seconds": round(total, 2),
                 "speed_vs_fp32": round(float(np.sum(seconds[REFERENCE])) / total, 3),
                 "median_piece_ratio": round(float(np.median(ratios)), 3),
                 "query_encode_ms": percentiles(enc_ms[name], 2),
                 "mrr@10": round(float(np.mean(rr)), 4), "top10_agreement": round(agree, 4),
                 "min_cosine_vs_fp32": round(float(cos.min()), 5)}
        result["encoders"][name] = entry
        ms = entry["query_encode_ms"]
        ref_mrr = result["encoders"][REFERENCE]["mrr@10"]
        rows.append([name, entry["docs_per_s"], entry["speed_vs_fp32"], entry["median_piece_ratio"],
                     ms["p50"], ms["p95"], entry["mrr@10"], round(entry["mrr@10"] - ref_mrr, 4),
                     entry["top10_agreement"], entry["min_cosine_vs_fp32"]])

    def mrr_of(ranker: str) -> float:
        rr = []
        for (q, t) in tasks:
            got = [h.doc_id for h in ix.search(free_text_query(q) or q, k=10, ranker=ranker,
                                               fallback=False, explain=False).hits]
            rr.append(1.0 / (got.index(t) + 1) if t in got else 0.0)
        return round(float(np.mean(rr)), 4)

    quality = {ranker: mrr_of(ranker) for ranker in ("bm25", "dense", "hybrid")}
    result["mrr@10 (sieve, new path)"] = quality
    if not args.no_static:
        static = encoders["sieve static (opt-in)"]
        store.embed(ix, model=static.name, encoder=Replay(texts, vectors["sieve static (opt-in)"],
                                                          static), force=True)
        ix.use_dense(model=static.name)
        result["mrr@10 (sieve, static)"] = {r: mrr_of(r) for r in ("dense", "hybrid")}
        print(f"MRR@10 with the static encoder: {result['mrr@10 (sieve, static)']}")
        ix.use_dense()

    probe = free_text_query(queries[0]) or queries[0]
    cold: dict[str, list[float]] = {"bm25": [], "dense (torch)": [], "dense (onnx)": []}
    for _ in range(args.cold):
        cold["bm25"].append(cold_start(ix.path, "bm25", probe, "auto"))
        cold["dense (torch)"].append(cold_start(ix.path, "dense", probe, "torch"))
        cold["dense (onnx)"].append(cold_start(ix.path, "dense", probe, "auto"))
    starts = {k: round(statistics.median(v), 3) for k, v in cold.items()}
    starts["onnx minus bm25"] = round(starts["dense (onnx)"] - starts["bm25"], 3)
    starts["torch minus bm25"] = round(starts["dense (torch)"] - starts["bm25"], 3)
    result["cold_start_s"] = starts

    head = ["encoder", "docs/s", "x fp32", "x fp32 (median piece)", "q p50 ms", "q p95 ms",
            "MRR@10", "MRR - fp32", "top10 agr", "min cos"]
    print_table(head, rows, title=f"{len(docs)} man pages, {threads} threads, {args.pieces} pieces "
                                  f"x {args.rounds} round(s), interleaved")
    print(f"\nMRR@10 (NAME line -> page, sieve new path): {quality}")
    print(f"cold start of the first query in a fresh process (s): {result['cold_start_s']}")
    print(f"wrote {write_json(args.out, result)}")
    tmp.cleanup()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
