"""Filter fields: what declaring metadata columns costs to build and to query, beside `date[...]`.

    python -m benchmarks.bench_filters [--corpus benchmarks/data/man-sections.jsonl]

The corpus's own metadata is declared (man-sections: `package` and `manual_section` as keywords),
plus `words`, a number this script adds to each record (the words of its text), `updated`, a date
copied from the record's date, and `summary`, a text field holding the page's one-line description
(from its infobox). The same corpus is built without and with the declaration
(build time and index size), then each query below runs alternately, best of 5 per query, and the
median over rounds is reported; `date[...]` is the column filter sieve already had. Prints a table
and writes results/filters.json.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import sieve

HERE = Path(__file__).resolve().parent
FIELDS = {"package": "keyword", "manual_section": "keyword", "words": "number", "updated": "date", "summary": "text"}
QUERIES = [
    "date[2026-08..]", "updated[2026-08..]", "words[100..200]", "words[>250]", "package[=openssl]", "manual_section[=3]",
    "socket", "socket AND date[..2026-08-25]", "socket AND words[..200]", "socket AND package[=manpages-dev]",
    "(socket OR file) AND NOT manual_section[=3] AND words[>=50]",
    "socket[summary]", '"shared memory"[summary]', "file*[summary]", "socket AND NOT socket[summary]",
    "socket[infobox]", '"shared memory"[infobox]', "file*[infobox]",  # the same words in a built-in field, for scale
]


def _corpus(src: Path, out: Path) -> int:
    n = 0
    with src.open(encoding="utf-8") as fin, out.open("w", encoding="utf-8") as fout:
        for line in fin:
            rec = json.loads(line)
            rec["words"] = sum(len(s.get("text", "").split()) for s in rec.get("sections", []))
            if rec.get("date"):
                rec["updated"] = rec["date"]
            if (rec.get("infobox") or {}).get("description"):
                rec["summary"] = rec["infobox"]["description"]
            fout.write(json.dumps(rec) + "\n")
            n += 1
    return n


def _size(path: Path) -> float:
    return round(sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) / 1e6, 1)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", type=Path, default=HERE / "data" / "man-sections.jsonl")
    ap.add_argument("--work", type=Path, default=HERE / "work" / "filters")
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--out", type=Path, default=HERE / "results" / "filters.json")
    args = ap.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    corpus = args.work / "corpus.jsonl"
    docs = _corpus(args.corpus, corpus)
    build = {}
    for name, fields in (("plain", None), ("declared", FIELDS)):
        t0 = time.perf_counter()
        sieve.build_index(corpus, args.work / name, force=True, jobs=1, fields=fields).close()
        build[name] = round(time.perf_counter() - t0, 2)
    ix = sieve.open_index(args.work / "declared")
    times: dict[str, list[float]] = {q: [] for q in QUERIES}
    counts = {q: ix.match(q).count for q in QUERIES}
    for _ in range(args.rounds):
        for q in QUERIES:
            best = []
            for _ in range(5):
                t0 = time.perf_counter()
                _ = ix.match(q).count  # the count, as a caller reads it
                best.append(time.perf_counter() - t0)
            times[q].append(min(best))
    rows = [{"query": q, "admitted": counts[q], "p50_ms": round(statistics.median(times[q]) * 1000, 3)} for q in QUERIES]
    result = {"corpus": str(args.corpus), "documents": docs, "fields": FIELDS, "build_s": build,
              "index_mb": {n: _size(args.work / n) for n in build}, "queries": rows}
    print(f"{docs:,} documents; build {build['plain']} s without the fields, {build['declared']} s with them; "
          f"index {result['index_mb']['plain']} MB / {result['index_mb']['declared']} MB\n")
    print("| query | admitted | match p50 ms |\n|---|---|---|")
    for r in rows:
        print(f"| `{r['query']}` | {r['admitted']:,} | {r['p50_ms']} |")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
