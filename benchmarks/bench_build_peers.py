"""Build speed beside the peers, in one run: sieve in one process and with worker processes, and each peer.

    python -m benchmarks.bench_build_peers --corpus benchmarks/data/man-sections.jsonl --peer tantivy --peer lucene [--rounds 5]

Every build runs in a fresh process, the engines in turn within each round (this machine's state moves
single runs by 10-20%, so rounds interleave them), into a fresh folder. Wall seconds from the start of the
build call to an index on disk: sieve's `build_index`; the peers' own builds (benchmarks/peers.py: tantivy
with one indexing thread, Lucene with one indexing thread in a JVM whose start is counted). Prints the
median documents a second of each and sieve's ratios to each peer; writes JSON (default
benchmarks/results/build-peers.json).
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent

SIEVE = r"""
import json, sys, time
import sieve
t0 = time.perf_counter()
index = sieve.build_index(sys.argv[1], sys.argv[2], force=True, jobs=int(sys.argv[3]))
print(json.dumps({"seconds": time.perf_counter() - t0, "documents": len(index)}))
"""


def _last_json(argv: list[str]) -> dict:
    """The JSON object on the last line a command prints (`peers.py --build` prefixes the peer's name)."""
    last = subprocess.run(argv, check=True, capture_output=True, text=True, cwd=HERE).stdout.strip().splitlines()[-1]
    return json.loads(last[last.index("{"):])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", type=Path, required=True)
    ap.add_argument("--peer", action="append", default=[], help="tantivy, lucene, sqlite-fts5")
    ap.add_argument("--jobs", type=int, default=2, help="sieve's worker processes besides the one-process build")
    ap.add_argument("--rounds", type=int, default=5, help="tantivy's builds here vary by up to 40%% from run to run: 3 rounds are too few for a stable ratio")
    ap.add_argument("--out", type=Path, default=HERE / "results" / "build-peers.json")
    args = ap.parse_args()
    corpus = args.corpus.resolve()
    engines = ["sieve (one process)", f"sieve ({args.jobs} workers)", *args.peer]
    runs: dict[str, list[dict]] = {e: [] for e in engines}
    work = Path(tempfile.mkdtemp(prefix="sieve-build-peers-"))
    try:
        for r in range(args.rounds):
            for e in engines:
                out = work / "out"
                shutil.rmtree(out, ignore_errors=True)
                if e.startswith("sieve"):
                    jobs = 1 if "one process" in e else args.jobs
                    got = _last_json([sys.executable, "-c", SIEVE, str(corpus), str(out), str(jobs)])
                else:
                    got = _last_json([sys.executable, str(HERE / "peers.py"), "--build", str(corpus), str(out), "--peer", e])
                runs[e].append(got)
                print(f"round {r + 1} {e:22s} {got['seconds']:.2f} s, {got['documents'] / got['seconds']:,.0f} docs/s", flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    med = {e: statistics.median(x["seconds"] for x in rs) for e, rs in runs.items()}
    spread = {e: (min(x["seconds"] for x in rs), max(x["seconds"] for x in rs)) for e, rs in runs.items()}
    docs = runs[engines[0]][0]["documents"]
    print(f"\nmedians of {args.rounds} rounds, {docs:,} documents (fastest and slowest round beside)")
    for e in engines:
        print(f"{e:22s} {med[e]:6.2f} s {docs / med[e]:>9,.0f} docs/s   ({spread[e][0]:.2f}-{spread[e][1]:.2f} s)")
    ratios = {f"{s} / {p}": med[p] / med[s] for s in engines[:2] for p in args.peer}
    # The ratio's range: sieve's slowest round against the peer's fastest, and the other way round.
    ranges = {f"{s} / {p}": (spread[p][0] / spread[s][1], spread[p][1] / spread[s][0]) for s in engines[:2] for p in args.peer}
    for k, v in ratios.items():
        print(f"docs/s ratio {k}: {v:.2f} (rounds' extremes {ranges[k][0]:.2f}-{ranges[k][1]:.2f})")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"corpus": str(args.corpus), "documents": docs, "rounds": args.rounds, "median_seconds": med,
                                    "docs_per_s_ratios": ratios, "ratio_extremes": ranges, "range_seconds": spread, "runs": runs}, indent=1) + "\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
