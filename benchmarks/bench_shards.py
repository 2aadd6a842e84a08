"""Sharded indexes at scale: build speed-up, and query latency one index vs shards (local) vs shards
served by Ray actors, with the per-shard figures docs/scale.md builds on.

    python -m benchmarks.bench_shards --corpus /work/benchwork/data/man-sections.jsonl --size 1000000 --shards 4 [--jobs 2] [--ray-build]

The corpus of N documents is the given corpus repeated with new ids (bench_scale.make_corpus),
written once to --work. Builds run as `sieve index` in a child process under /usr/bin/time -v
(seconds, peak RSS): one index (`--jobs J`), then the same corpus with `--shards S --jobs J` (S
shards, J processes), and with --ray-build as Ray tasks on a private local cluster of J CPUs.
Then, in one process, 200 queries sampled as bench_scale does (two words of a random document,
AND and OR; and phrases / NEAR/3 of neighbouring words): Boolean count and BM25 top-10 p50/p95 on
the one index, on the sharded index opened locally (one snapshot over every shard's segments),
and on the sharded index served by S Ray actors (two rounds per search). Every answer of the
shards is checked against the one index (ids and scores of the top 10, and counts). Prints a
table and writes JSON (default benchmarks/results/shards.json).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
from benchmarks.bench_scale import make_corpus, timed_child  # noqa: E402


def pct(xs: list[float], q: float) -> float | None:
    xs = sorted(xs)
    return round(xs[min(len(xs) - 1, int(q * len(xs)))], 3) if xs else None


def build(corpus: Path, out: Path, extra: list[str], env: dict[str, str] | None = None) -> dict[str, Any]:
    if out.exists():
        subprocess.run(["rm", "-rf", str(out)], check=True)
    cmd = [sys.executable, "-m", "sieve", "index", str(corpus), str(out), "--quiet", "--json", *extra]
    old = dict(os.environ)
    os.environ.update(env or {})
    try:
        seconds, rss, stdout = timed_child(cmd)
    finally:
        os.environ.clear()
        os.environ.update(old)
    s = json.loads(stdout)
    return {"seconds": round(seconds, 1), "docs_per_s": round(s["documents"] / seconds), "peak_rss_mb": rss, "documents": s["documents"],
            "index_mb": s["index_mb"], "store_mb": s["store_mb"], "segments": s["segments"], "shards": s["shards"]}


def sample_queries(ix: Any, n: int, seed: int = 3) -> tuple[list[str], list[str]]:
    from sieve.engine.analysis.analyzers import analyze

    r = random.Random(seed)
    docs = ix.doc_numbers()
    qs: list[str] = []
    positional: list[str] = []
    while len(qs) < n:
        d = ix.document(ix.reader.doc_id(int(r.choice(docs))))
        text = " ".join(s.text for s in d.sections)
        w = [x for x in analyze(text) if x.isalpha() and x not in ("and", "or", "not", "near", "date", "all")]
        if len(w) >= 2:
            a, b = r.sample(w, 2)
            qs.append(f"{a} AND {b}" if len(qs) % 2 else f"{a} OR {b}")
            words = analyze(text)
            if len(words) >= 4:
                i = r.randrange(len(words) - 3)
                positional.append(f'"{words[i]} {words[i + 1]}"' if len(positional) % 2 else f"NEAR/3({words[i]}, {words[i + r.choice([1, 2, 3])]})")
    return qs, positional


def timings(count: Any, search: Any, qs: list[str], positional: list[str]) -> dict[str, Any]:
    b, s, p = [], [], []
    for q in qs:
        t = time.perf_counter(); count(q); b.append((time.perf_counter() - t) * 1e3)  # noqa: E702
        t = time.perf_counter(); search(q); s.append((time.perf_counter() - t) * 1e3)  # noqa: E702
    for q in positional:
        t = time.perf_counter(); count(q); p.append((time.perf_counter() - t) * 1e3)  # noqa: E702
    return {"boolean_p50_ms": pct(b, .5), "boolean_p95_ms": pct(b, .95), "bm25_p50_ms": pct(s, .5), "bm25_p95_ms": pct(s, .95),
            "positional_p50_ms": pct(p, .5), "positional_p95_ms": pct(p, .95)}


def shard_figures(ix: Any) -> list[dict[str, Any]]:
    """Per shard: documents, index and store megabytes (its segments' files)."""
    snap = ix.snapshot
    listed = {e["name"]: e for e in snap.manifest["segments"]}
    out: dict[int, dict[str, Any]] = {}
    for seg in snap.segments:
        j = listed[seg.name]["shard"]
        f = out.setdefault(j, {"shard": j, "documents": 0, "index_mb": 0.0, "store_mb": 0.0})
        f["documents"] += seg.n_live
        for name, entry in seg.reader.manifest["files"].items():
            f["store_mb" if name.startswith("store.") else "index_mb"] += entry["size"] / 1e6
    return [{**f, "index_mb": round(f["index_mb"], 1), "store_mb": round(f["store_mb"], 1)} for _, f in sorted(out.items())]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus", type=Path, required=True)
    ap.add_argument("--size", type=int, default=1_000_000)
    ap.add_argument("--shards", type=int, default=4)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--ray-build", action="store_true", help="also build the shards as Ray tasks on a private local cluster")
    ap.add_argument("--work", type=Path, default=HERE / "work" / "shards")
    ap.add_argument("--out", type=Path, default=HERE / "results" / "shards.json")
    args = ap.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    corpus = make_corpus(args.corpus, args.size, args.work / f"corpus-{args.size}.jsonl")
    one_dir, sharded_dir = args.work / "one", args.work / "sharded"
    result: dict[str, Any] = {"size": args.size, "shards": args.shards, "jobs": args.jobs, "corpus": f"{args.corpus.name} repeated with new ids",
                              "cpus": os.cpu_count()}
    print(f"building one index of {args.size:,} documents (--jobs {args.jobs}) ...", file=sys.stderr)
    result["build_one"] = build(corpus, one_dir, ["--jobs", str(args.jobs)])
    print(f"building {args.shards} shards (--jobs {args.jobs}) ...", file=sys.stderr)
    result["build_sharded"] = build(corpus, sharded_dir, ["--shards", str(args.shards), "--jobs", str(args.jobs)])
    if args.ray_build:
        print("building the shards as Ray tasks ...", file=sys.stderr)
        result["build_sharded_ray"] = build(corpus, args.work / "sharded-ray", ["--shards", str(args.shards), "--ray", "local"],
                                            {"SIEVE_RAY_CPUS": str(args.jobs)})
    result["build_speedup"] = round(result["build_one"]["seconds"] / result["build_sharded"]["seconds"], 2)

    import sieve
    from sieve.index.shard_service import open_ray_index

    one = sieve.open_index(one_dir)
    t = time.perf_counter()
    local = sieve.open_index(sharded_dir)
    result["open_sharded_local_ms"] = round((time.perf_counter() - t) * 1e3, 1)
    os.environ.setdefault("SIEVE_RAY_CPUS", str(args.jobs))
    t = time.perf_counter()
    served = open_ray_index(sharded_dir, "local")
    result["open_ray_s"] = round(time.perf_counter() - t, 2)
    qs, positional = sample_queries(one, args.queries)
    wrong = 0
    for q in qs + positional:  # exactness before speed
        a, b, c = one.search(q, k=10, explain=False), local.search(q, k=10, explain=False), served.search(q, k=10, explain=False)
        want = (a.count, [h.doc_id for h in a.hits])
        for got in (b, c):
            if (got.count, [h.doc_id for h in got.hits]) != want or any(abs(x.score - y.score) > 1e-9 for x, y in zip(a.hits, got.hits)):
                wrong += 1
    result["answers_checked"] = 2 * len(qs + positional)
    result["answers_differing"] = wrong
    result["one"] = timings(lambda q: one.match(q).count, lambda q: one.search(q, k=10, explain=False), qs, positional)
    result["sharded_local"] = timings(lambda q: local.match(q).count, lambda q: local.search(q, k=10, explain=False), qs, positional)
    result["sharded_ray"] = timings(served.count, lambda q: served.search(q, k=10, explain=False), qs, positional)
    result["per_shard"] = shard_figures(local)
    infos = served._get([a.info.remote() for a in served.actors])
    for f, info in zip(result["per_shard"], infos):
        f["actor_rss_mb"] = info["rss_mb"]
    served.close()

    print(f"\n{args.size:,} documents, {args.shards} shards, {args.jobs} jobs, {os.cpu_count()} CPUs")
    print(f"{'build':<26}{'seconds':>9}{'docs/s':>9}{'peak RSS MB':>13}{'index MB':>10}{'store MB':>10}")
    for key in ("build_one", "build_sharded", "build_sharded_ray"):
        if key in result:
            b = result[key]
            print(f"{key:<26}{b['seconds']:>9}{b['docs_per_s']:>9}{b['peak_rss_mb']:>13}{b['index_mb']:>10}{b['store_mb']:>10}")
    print(f"speed-up of the sharded build: {result['build_speedup']}x; answers checked {result['answers_checked']}, differing {wrong}")
    print(f"\n{'queries (ms)':<18}{'bool p50':>10}{'bool p95':>10}{'bm25 p50':>10}{'bm25 p95':>10}{'pos p50':>10}{'pos p95':>10}")
    for key in ("one", "sharded_local", "sharded_ray"):
        r = result[key]
        print(f"{key:<18}{r['boolean_p50_ms']:>10}{r['boolean_p95_ms']:>10}{r['bm25_p50_ms']:>10}{r['bm25_p95_ms']:>10}"
              f"{r['positional_p50_ms']:>10}{r['positional_p95_ms']:>10}")
    print("\nper shard: " + "; ".join(f"{f['shard']}: {f['documents']:,} docs, index {f['index_mb']} MB, store {f['store_mb']} MB, actor RSS "
                                       f"{f['actor_rss_mb']} MB" for f in result["per_shard"]))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
