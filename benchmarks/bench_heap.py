"""What keeping freed memory in the heap buys (sieve.engine.heap): the same queries in child processes,
with glibc's default thresholds (`SIEVE_MALLOC=system`) and with sieve's, alternating round by round.

    python benchmarks/bench_heap.py INDEX [--rounds 3] [--queries 200]

Each child opens INDEX, warms up on other queries, then runs each query once (first run, plans not
cached) per class: bench_engine's Boolean classes and bench_rank's BM25 top-10 (AND and OR, with
and without each hit's matched fields and sections). Prints, per class, the median over rounds of
each side's p50 and p95 and the ratio sieve/system, and the children's peak RSS; writes
`results/heap.json`.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent

CHILD = r"""
import json, resource, statistics, sys, time
sys.path.insert(0, sys.argv[3]); sys.path.insert(0, sys.argv[4])
import sieve
from sieve.engine import heap
from sieve.index import parse_query
from bench_engine import CLASSES, Sampler, to_bql
from bench_rank import sample_queries
ix = sieve.open_index(sys.argv[1])
n = int(sys.argv[2])
out = {"heap": heap.keep_freed_memory()}
warm = Sampler(ix, 8)
for c in CLASSES:
    for _ in range(10):
        ix.match(to_bql(warm.spec(c)))
def pcts(ts):
    ts = sorted(ts)
    return [statistics.median(ts), ts[min(len(ts) - 1, int(0.95 * len(ts)))]]
s = Sampler(ix, 7)
for c in CLASSES:
    parse_query.cache_clear()
    ts = []
    for _ in range(n):
        q = to_bql(s.spec(c))
        t = time.perf_counter(); ix.match(q); ts.append((time.perf_counter() - t) * 1e3)
    out[c] = pcts(ts)
qs = sample_queries(ix, n, 7)
for mode, joiner in (("and", " "), ("or", " OR ")):
    for explain in (True, False):
        parse_query.cache_clear(); ix._plans.cache_clear()
        ts = []
        for q in qs:
            q = joiner.join(q)
            t = time.perf_counter(); ix.search(q, k=10, explain=explain); ts.append((time.perf_counter() - t) * 1e3)
        out[f"bm25-{mode}" + ("" if explain else "-ids")] = pcts(ts)
out["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
print(json.dumps(out))
"""


def child(index: Path, queries: int, system: bool) -> dict:
    env = dict(os.environ)
    env.pop("SIEVE_MALLOC", None)
    if system:
        env["SIEVE_MALLOC"] = "system"
    p = subprocess.run([sys.executable, "-c", CHILD, str(index), str(queries), str(HERE), str(HERE.parent)],
                       capture_output=True, text=True, env=env, check=True)
    return json.loads(p.stdout)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("index", type=Path)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--out", type=Path, default=HERE / "results" / "heap.json")
    args = ap.parse_args()
    runs: dict[str, list[dict]] = {"system": [], "sieve": []}
    for r in range(args.rounds):
        for side in (("system", "sieve") if r % 2 == 0 else ("sieve", "system")):
            runs[side].append(child(args.index, args.queries, side == "system"))
            print(f"round {r + 1} {side} done", file=sys.stderr)
    if not all(x["heap"] for x in runs["sieve"]):
        print("note: the thresholds could not be raised here (not glibc?): both sides ran alike", file=sys.stderr)
    classes = [k for k in runs["sieve"][0] if k not in ("heap", "peak_rss_mb")]
    table = {}
    print(f"\n{args.rounds} rounds, {args.queries} queries a class, first run each; ms (median of rounds)\n")
    print(f"{'class':<14}{'p50 system':>11}{'sieve':>8}{'ratio':>7}{'p95 system':>12}{'sieve':>8}{'ratio':>7}")
    for c in classes:
        a50, b50 = (statistics.median(x[c][0] for x in runs[s]) for s in ("system", "sieve"))
        a95, b95 = (statistics.median(x[c][1] for x in runs[s]) for s in ("system", "sieve"))
        table[c] = {"system": [round(a50, 4), round(a95, 4)], "sieve": [round(b50, 4), round(b95, 4)],
                    "ratio_p50": round(b50 / a50, 3), "ratio_p95": round(b95 / a95, 3)}
        print(f"{c:<14}{a50:>11.3f}{b50:>8.3f}{b50 / a50:>7.2f}{a95:>12.3f}{b95:>8.3f}{b95 / a95:>7.2f}")
    rss = {s: statistics.median(x["peak_rss_mb"] for x in runs[s]) for s in runs}
    print(f"\npeak RSS MB: system {rss['system']:.0f}, sieve {rss['sieve']:.0f}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"index": str(args.index), "rounds": args.rounds, "queries": args.queries,
                                    "command": "python benchmarks/bench_heap.py INDEX --rounds N", "classes": table, "peak_rss_mb": rss}, indent=1))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
