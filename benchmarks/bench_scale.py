"""Builds at scale: peak memory, throughput, size, open cost and query latency at N documents.

    python -m benchmarks.bench_scale --corpus /work/benchwork/data/man-sections.jsonl --sizes 1000000 [--memory-mb 1024] [--jobs 2]

The corpus of N documents is the given corpus repeated with new ids (`ID~k` for the k-th copy) and
its first N records, written once to --work. Each build is `sieve index` in a child process under
/usr/bin/time -v (peak RSS of the whole process tree's largest member, as the kernel reports it).
Then: open time, RSS after open (a fresh process), Boolean match and BM25 top-10 p50/p95 on
queries sampled as bench_engine does (two words of a random document, AND, and OR), and match
p50/p95 for phrases and NEAR/3 of neighbouring words of those documents; then the writes:
add 1,000 new documents (`sieve add`: one new segment), delete 1,000 of the built ones (`sieve
delete`: a deletion bitset on the big segment), replace 1,000 (`sieve add` of known ids), the same
query latencies over the resulting segments and deletions, and `sieve merge` back to one segment
(with --merge). Prints a table and writes JSON (default benchmarks/results/scale.json).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent


def make_corpus(src: Path, n: int, out: Path) -> Path:
    if out.exists():
        return out
    tmp = out.with_suffix(".tmp")
    written = 0
    with open(tmp, "w", encoding="utf-8") as fh:
        copy = 0
        while written < n:
            with open(src, encoding="utf-8") as f:
                for line in f:
                    rec = json.loads(line)
                    if copy:
                        rec["id"] = f"{rec['id']}~{copy}"
                    fh.write(json.dumps(rec, ensure_ascii=False) + "\n")
                    written += 1
                    if written >= n:
                        break
            copy += 1
    os.replace(tmp, out)
    return out


def timed_child(cmd: list[str]) -> tuple[float, int, str]:
    """(seconds, peak RSS in MB, stdout) of a command run under /usr/bin/time -v."""
    t0 = time.perf_counter()
    p = subprocess.run(["/usr/bin/time", "-v", *cmd], capture_output=True, text=True)
    seconds = time.perf_counter() - t0
    if p.returncode:
        raise SystemExit(f"{' '.join(cmd)} failed: {p.stderr[-2000:]}")
    rss = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", p.stderr).group(1)) // 1024  # type: ignore[union-attr]
    return seconds, rss, p.stdout


PROBE = r"""
import json, random, resource, sys, time
t0 = time.perf_counter()
import sieve
ix = sieve.open_index(sys.argv[1])
opened = time.perf_counter() - t0
rss_open = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
from sieve.engine.analysis.analyzers import analyze
r = random.Random(3)
qs, positional = [], []
while len(qs) < 200:
    d = ix.document(ix.reader.doc_id(int(r.choice(ix.doc_numbers()))))
    text = " ".join(s.text for s in d.sections)
    w = [x for x in analyze(text) if x.isalpha() and x not in ("and", "or", "not", "near", "date", "all")]
    if len(w) >= 2:
        a, b = r.sample(w, 2)
        qs.append(f"{a} AND {b}" if len(qs) % 2 else f"{a} OR {b}")
        words = analyze(text)  # neighbours as the text has them: a phrase, or a NEAR within 3
        i = r.randrange(max(1, len(words) - 3))
        if len(words) >= 4:
            positional.append(f'"{words[i]} {words[i + 1]}"' if len(positional) % 2 else f"NEAR/3({words[i]}, {words[i + r.choice([1, 2, 3])]})")
def pct(xs, q):
    xs = sorted(xs); return round(xs[min(len(xs) - 1, int(q * len(xs)))], 3) if xs else None
m, s, ph, nr = [], [], [], []
for q in qs:
    t = time.perf_counter(); ix.match(q); m.append((time.perf_counter() - t) * 1e3)
    t = time.perf_counter(); ix.search(q, k=10, explain=False); s.append((time.perf_counter() - t) * 1e3)
refused = 0
for q in positional:
    try:
        t = time.perf_counter(); ix.match(q); (ph if q.startswith('"') else nr).append((time.perf_counter() - t) * 1e3)
    except sieve.BQLLimitError:  # past the positions cap (a NEAR with "the" at 10M): refused at once, not timed
        refused += 1
files = ix.snapshot.files()
print(json.dumps({"open_ms": round(opened * 1e3, 1), "rss_after_open_mb": rss_open, "documents": len(ix), "segments": len(ix.segments),
                  "index_mb": round(sum(e["size"] for _, n, e in files if "store." not in n) / 1e6, 1),
                  "store_mb": round(sum(e["size"] for _, n, e in files if "store." in n) / 1e6, 1),
                  "match_p50_ms": pct(m, .5), "match_p95_ms": pct(m, .95), "bm25_p50_ms": pct(s, .5), "bm25_p95_ms": pct(s, .95),
                  "phrase_p50_ms": pct(ph, .5), "phrase_p95_ms": pct(ph, .95), "near_p50_ms": pct(nr, .5), "near_p95_ms": pct(nr, .95),
                  "positional_refused": refused}))
"""


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", type=Path, required=True)
    ap.add_argument("--sizes", default="1000000")
    ap.add_argument("--memory-mb", type=int, default=1024)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--work", type=Path, default=Path("/work/benchwork/scale"))
    ap.add_argument("--skip-writes", action="store_true")
    ap.add_argument("--reuse", action="store_true", help="query an index a previous run left in --work instead of building it")
    ap.add_argument("--merge", action="store_true", help="after the writes, time `sieve merge` back to one segment")
    ap.add_argument("--out", type=Path, default=HERE / "results" / "scale.json")
    args = ap.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    rows: list[dict[str, Any]] = []
    for n in [int(x) for x in args.sizes.split(",")]:
        corpus = make_corpus(args.corpus, n, args.work / f"corpus-{n}.jsonl")
        ix = args.work / f"index-{n}"
        row: dict[str, Any] = {"documents": n, "memory_mb": args.memory_mb, "jobs": args.jobs}
        if not (args.reuse and ix.exists()):
            seconds, rss, _ = timed_child([sys.executable, "-m", "sieve", "index", str(corpus), str(ix), "--force", "--quiet",
                                           "--jobs", str(args.jobs), "--memory-mb", str(args.memory_mb)])
            row.update({"build_seconds": round(seconds, 1), "docs_per_second": round(n / seconds), "peak_rss_mb": rss})
        row.update(json.loads(subprocess.run([sys.executable, "-c", PROBE, str(ix)], capture_output=True, text=True, check=True).stdout))
        if not args.skip_writes:
            with open(args.corpus, encoding="utf-8") as src:
                first = [json.loads(line) for line, _ in zip(src, range(3000))]
            batch = args.work / "add-1000.jsonl"
            batch.write_text("".join(json.dumps({**rec, "id": f"added-{i}"}) + "\n" for i, rec in enumerate(first[:1000])))
            row["add_1000_seconds"], row["add_peak_rss_mb"], _ = timed_child([sys.executable, "-m", "sieve", "add", str(ix), str(batch)])
            ids = args.work / "delete-1000.txt"  # documents of the built segment: a deletion bitset there
            ids.write_text("".join(rec["id"] + "\n" for rec in first[1000:2000]))
            row["delete_1000_seconds"], _, _ = timed_child([sys.executable, "-m", "sieve", "delete", str(ix), "--ids-file", str(ids)])
            again = args.work / "replace-1000.jsonl"  # known ids: deleted where they were, added as a new segment
            again.write_text("".join(json.dumps({**rec, "title": rec["title"] + " (revised)"}) + "\n" for rec in first[2000:3000]))
            row["replace_1000_seconds"], _, _ = timed_child([sys.executable, "-m", "sieve", "add", str(ix), str(again)])
            after = json.loads(subprocess.run([sys.executable, "-c", PROBE, str(ix)], capture_output=True, text=True, check=True).stdout)
            row.update({f"after_writes_{k}": after[k] for k in ("segments", "documents", "match_p50_ms", "bm25_p50_ms", "open_ms")})
            if args.merge:
                row["merge_seconds"], row["merge_peak_rss_mb"], _ = timed_child([sys.executable, "-m", "sieve", "merge", str(ix)])
            for k in ("add_1000_seconds", "delete_1000_seconds", "replace_1000_seconds", "merge_seconds"):
                if k in row:
                    row[k] = round(row[k], 2)
        rows.append(row)
        print(json.dumps(row), flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"corpus": str(args.corpus), "rows": rows}, indent=1))
    keys = ["documents", "build_seconds", "docs_per_second", "peak_rss_mb", "index_mb", "store_mb", "open_ms", "rss_after_open_mb",
            "match_p50_ms", "match_p95_ms", "bm25_p50_ms", "bm25_p95_ms", "phrase_p50_ms", "phrase_p95_ms", "near_p50_ms", "near_p95_ms", "add_1000_seconds", "delete_1000_seconds",
            "replace_1000_seconds", "after_writes_segments", "after_writes_match_p50_ms", "after_writes_bm25_p50_ms", "merge_seconds"]
    print(" | ".join(keys))
    for r in rows:
        print(" | ".join(str(r.get(k, "")) for k in keys))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
