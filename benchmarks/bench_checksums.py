"""What verifying index blocks on first read costs: the same queries with checks off, cold and warm.

    python -m benchmarks.bench_checksums --index benchmarks/work/man-sections.sieve   # built by bench_engine.py

Three modes, each over a fresh `open_index` in a fresh process (interleaved, --rounds times):
- `trusted`: every block marked verified without reading it (what format 1 did: no check at all);
- `cold`:    the shipped behaviour; a block is checksummed the first time a query reads it, so
             each query pays for the blocks it is first to touch (the benchmark's queries differ);
- `warm`:    opened with `verify=True` (every block checked up front), so reads only test a flag.
Workloads: bench_engine's ten Boolean classes (`match`, 100 queries each) and bench_rank's BM25
top-10 with explanation (OR and AND, 200 each). Prints p50/p95 per mode with the ratio to
`trusted`, and the open time; writes benchmarks/results/checksums.json.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks.harness import rank_quantile as pct

HERE = Path(__file__).resolve().parent
MODES = ("trusted", "cold", "warm")


def child(index_path: Path, mode: str, n: int, seed: int) -> dict[str, Any]:
    import sieve
    from benchmarks.bench_engine import CLASSES, Sampler, to_bql
    from benchmarks.bench_rank import sample_queries

    t = time.perf_counter()
    index = sieve.open_index(index_path, verify=mode == "warm")
    open_ms = (time.perf_counter() - t) * 1000
    if mode == "trusted":
        for f in index.reader.files.values():
            f._ok[:] = b"\1" * len(f._ok)
            f._left = 0
            if f.on_verified is not None:  # as a reader does once a table is verified: read it directly
                f.on_verified(f.a)
    sampler = Sampler(index, seed)
    specs = [to_bql(sampler.spec(cls)) for cls in CLASSES for _ in range(n)]
    words = sample_queries(index, 2 * n, seed)
    searches = [" OR ".join(q) for q in words] + [" AND ".join(q) for q in words]
    out: dict[str, Any] = {"open_ms": open_ms}
    for name, qs, run in (("match", specs, index.match), ("search", searches, lambda q: index.search(q, k=10))):
        ms = []
        for q in qs:
            t = time.perf_counter()
            run(q)
            ms.append((time.perf_counter() - t) * 1000)
        out[name] = ms
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--index", type=Path, default=HERE / "work" / "man-sections.sieve")
    ap.add_argument("--queries", type=int, default=100, help="per Boolean class; BM25 uses twice as many")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--out", type=Path, default=HERE / "results" / "checksums.json")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(child(args.index, args.child, args.queries, args.seed)))
        return 0
    runs: dict[str, list[dict[str, Any]]] = {m: [] for m in MODES}
    for r in range(args.rounds):
        for mode in MODES:
            print(f"round {r + 1} {mode}", file=sys.stderr)
            cmd = [sys.executable, "-m", "benchmarks.bench_checksums", "--index", str(args.index), "--queries", str(args.queries), "--seed", str(args.seed), "--child", mode]
            runs[mode].append(json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True, cwd=HERE.parent).stdout))
    table: dict[str, dict[str, float]] = {}
    for mode in MODES:
        row = {"open_ms": statistics.median(x["open_ms"] for x in runs[mode])}
        for w in ("match", "search"):
            row[f"{w}_p50"] = statistics.median(pct(x[w], 0.5) for x in runs[mode])
            row[f"{w}_p95"] = statistics.median(pct(x[w], 0.95) for x in runs[mode])
        table[mode] = row
    cols = ["match_p50", "match_p95", "search_p50", "search_p95", "open_ms"]
    print(f"index {args.index}; {args.rounds} rounds, medians; ms (ratio to trusted)\n")
    print("| mode | " + " | ".join(cols) + " |")
    print("|---|" + "---:|" * len(cols))
    for mode in MODES:
        cells = [f"{table[mode][c]:.3f} ({table[mode][c] / table['trusted'][c]:.2f})" for c in cols]
        print(f"| {mode} | " + " | ".join(cells) + " |")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"index": str(args.index), "rounds": args.rounds, "queries": args.queries, "table": table}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
