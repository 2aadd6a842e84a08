"""Two indexes of one corpus, this tree's code, interleaved query by query in one process.

    python -m benchmarks.bench_pair A_INDEX B_INDEX [--queries 200] [--classes phrase,near,bm25-and,bm25-or]

For comparing index formats (a format 4 and a format 5 build of the same corpus, say) without the
drift between separate processes that `ab.py` rounds suffer on a shared machine: each query runs
five times on A and five times on B, A first for every other query and B first for the rest. Reports, per class, the first run's p50/p90 (what a query pays when
its blocks are first read) and the best of five (a warm reader), and the ratio B/A.
Classes: bench_engine's Boolean classes, and `bm25-and` / `bm25-or` (BM25 top-10 with each hit's
matched fields and sections, as bench_rank samples them). Writes `results/pair.json`.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path
from typing import Any, Callable

HERE = Path(__file__).resolve().parent

import sieve  # noqa: E402
from sieve.index.index import parse_query  # noqa: E402

# parse_query was memoised itself in older sieves (ab.py --same-scripts runs these on them); now it wraps _parsed.
clear_parse_cache = getattr(parse_query, "cache_clear", None) or sieve.index.queries._parsed.cache_clear  # noqa: E402
from benchmarks.bench_engine import CLASSES, Sampler, to_bql  # noqa: E402
from benchmarks.bench_rank import sample_queries  # noqa: E402

REPEATS = 5


def runner(index: sieve.Index, cls: str) -> Callable[[str], Any]:
    if cls.startswith("bm25"):
        return lambda q: index.search(q, k=10)
    return index.match


def queries(index: sieve.Index, cls: str, n: int, seed: int) -> list[str]:
    if cls.startswith("bm25"):
        joiner = " " if cls == "bm25-and" else " OR "
        return [joiner.join(q) for q in sample_queries(index, n, seed)]
    s = Sampler(index, seed)
    return [to_bql(s.spec(cls)) for _ in range(n)]


def pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return round(xs[min(len(xs) - 1, int(q * len(xs)))], 4)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("a", type=Path)
    ap.add_argument("b", type=Path)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--classes", default="phrase,near,bm25-and,bm25-or")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--out", type=Path, default=HERE / "results" / "pair.json")
    args = ap.parse_args()
    classes = args.classes.split(",")
    for cls in classes:
        if cls not in CLASSES and cls not in ("bm25-and", "bm25-or"):
            raise SystemExit(f"unknown class {cls!r}: one of {', '.join(CLASSES)}, bm25-and, bm25-or")
    indexes = {"a": sieve.open_index(args.a), "b": sieve.open_index(args.b)}
    result: dict[str, Any] = {"a": str(args.a), "b": str(args.b), "queries": args.queries, "classes": {}}
    print(f"A {args.a}\nB {args.b}\n{args.queries} queries a class, each run {REPEATS} times on each (A first for every other query); ms\n")
    print(f"{'class':9s} {'first p50 A':>12s} {'B':>7s} {'B/A':>5s} {'first p90 A':>12s} {'B':>7s} {'B/A':>5s} "
          f"{'best p50 A':>11s} {'B':>7s} {'B/A':>5s} {'best p90 A':>11s} {'B':>7s} {'B/A':>5s}")
    for cls in classes:
        qs = queries(indexes["a"], cls, args.queries, args.seed)
        first: dict[str, list[float]] = {"a": [], "b": []}
        best: dict[str, list[float]] = {"a": [], "b": []}
        for i, q in enumerate(qs):
            for side in ("a", "b") if i % 2 == 0 else ("b", "a"):  # alternate which goes first: the second finds caches warm
                index = indexes[side]
                run = runner(index, cls)
                times = []
                for _ in range(REPEATS):
                    clear_parse_cache()  # parse and plan every run, as a new query would be
                    index._plans.cache_clear()
                    t = time.perf_counter()
                    run(q)
                    times.append((time.perf_counter() - t) * 1e3)
                first[side].append(times[0])
                best[side].append(min(times))
        row = {side: {"first_p50": statistics.median(first[side]), "first_p90": pct(first[side], 0.9),
                      "best_p50": statistics.median(best[side]), "best_p90": pct(best[side], 0.9)} for side in indexes}
        result["classes"][cls] = row
        cells = []
        for key in ("first_p50", "first_p90", "best_p50", "best_p90"):
            a, b = row["a"][key], row["b"][key]
            cells += [f"{a:12.3f}" if key.startswith("first") else f"{a:11.3f}", f"{b:7.3f}", f"{b / a:5.2f}"]
        print(f"{cls:9s} " + " ".join(cells))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1))
    print(f"\nwrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
