"""What testing search costs: building a 20-document temporary index, and explaining one document's
admission or rejection in a large index.

    python -m benchmarks.bench_testing --corpus /work/benchwork/data/man-sections.jsonl [--index DIR]

1. `sieve.build_index(records)` (no path: a temporary index) of 20 real documents, N times, each
   closed after use; p50/p95 ms, beside an on-disk build of the same records into a fresh folder.
2. `Index.explain(query, doc)` on the large index: queries sampled as in bench_diagnose (a title word
   AND a body word of a sampled document, a heading phrase, a NEAR, and those with an extra clause),
   each explained for the document it came from and for a random other document; p50/p95 ms.

Prints a table and writes JSON (default benchmarks/results/testing.json).
"""

from __future__ import annotations

import argparse
import json
import random
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent

import sieve  # noqa: E402
from benchmarks.bench_diagnose import over_constrained  # noqa: E402
from benchmarks.harness import rank_quantile as percentile  # noqa: E402
from sieve.corpus.formats import records  # noqa: E402


def first_records(corpus: Path, n: int) -> list[dict]:
    out = []
    for _, _, rec in records(corpus):
        out.append(rec)
        if len(out) == n:
            break
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", type=Path, required=True)
    ap.add_argument("--index", type=Path, help="the large index (built from --corpus if absent)")
    ap.add_argument("--builds", type=int, default=100)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--seed", type=int, default=11)
    ap.add_argument("--out", type=Path, default=HERE / "results" / "testing.json")
    args = ap.parse_args()

    recs = first_records(args.corpus, 20)
    temp, disk = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(args.builds):
            t0 = time.perf_counter()
            ix = sieve.build_index(recs)
            t1 = time.perf_counter()
            ix.close()
            t2 = time.perf_counter()
            sieve.build_index(recs, Path(tmp) / f"ix{i}")
            t3 = time.perf_counter()
            temp.append((t1 - t0) * 1e3)
            disk.append((t3 - t2) * 1e3)
        del t2

    path = args.index or Path("/tmp") / f"sieve-diagnose-{args.corpus.stem}"
    big = sieve.open_index(path) if (path / "CURRENT").exists() else sieve.build_index(args.corpus, path)
    r = random.Random(args.seed)
    cases = over_constrained(big, args.queries // 2, args.seed)
    explain_ms: list[float] = []
    admitted = 0
    for c in cases:
        for query in (c["base"], c["query"]):
            for d in (c["doc"], r.randrange(len(big))):
                doc_id = big.reader.doc_id(d)
                t0 = time.perf_counter()
                e = big.explain(query, doc_id)
                explain_ms.append((time.perf_counter() - t0) * 1e3)
                admitted += int(e.admits)
    result = {
        "temporary_build_20_docs_ms": {"p50": round(percentile(temp, 0.5), 2), "p95": round(percentile(temp, 0.95), 2)},
        "disk_build_20_docs_ms": {"p50": round(percentile(disk, 0.5), 2), "p95": round(percentile(disk, 0.95), 2)},
        "explain": {"documents": len(big), "explanations": len(explain_ms), "admitted": admitted,
                    "p50_ms": round(percentile(explain_ms, 0.5), 3), "p95_ms": round(percentile(explain_ms, 0.95), 3)},
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1))
    t, k, e = result["temporary_build_20_docs_ms"], result["disk_build_20_docs_ms"], result["explain"]
    print(f"{'':36} {'p50 ms':>8} {'p95 ms':>8}")
    print(f"{'temporary index of 20 documents':36} {t['p50']:>8} {t['p95']:>8}")
    print(f"{'on-disk index of the same 20':36} {k['p50']:>8} {k['p95']:>8}")
    print(f"{'explain one document (' + format(e['documents'], ',') + ' docs)':36} {e['p50_ms']:>8} {e['p95_ms']:>8}   ({e['explanations']} explanations, {e['admitted']} admitted)")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
