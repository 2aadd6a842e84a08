"""Reading benchmark: how many tokens an agent reads per result card, per section fetch and per
whole-document visit on the man-page corpus, i.e. how much less it reads when it fetches the
matched section instead of visiting the page.

    python -m benchmarks.bench_reading                      # words and the MiniLM tokenizer
    python -m benchmarks.bench_reading --counter words --queries 100

Builds benchmarks/work/man-pages.sieve from benchmarks/data/man-pages.jsonl once (see
benchmarks/README.md for the corpus). Queries: two or three words of one section of a random page,
as BQL (each word quoted, side by side = AND; zero hits fall back to ranking). For each of the top
5 hits: its card as `search` shows it, a `fetch` of the section its snippet comes from (the one the
card points to), every section of the page fetched one by one, and a `visit` (the first part, under
the 12,000 cap). Prints a table per counter and writes benchmarks/results/reading.json.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

import sieve
from sieve.tools import ReadConfig, ToolConfig, Toolset, make_counter
from sieve.tools.cards import hit_snippet
from sieve.tools.fetch.reading import body_text, read_section
from sieve.tools.fetch.sections import label
from sieve.tools.fetch.snippets import Matcher
from sieve.engine.analysis.analyzers import analyze

HERE = Path(__file__).resolve().parent
CORPUS = HERE / "data" / "man-pages.jsonl"
INDEX = HERE / "work" / "man-pages.sieve"
RESULTS = HERE / "results" / "reading.json"
CARD = re.compile(r"\n(?=\[\d+\] )")


def stats(values: list[int]) -> dict[str, float]:
    a = np.asarray(values, dtype=np.float64)
    return {"n": int(len(a)), "median": float(np.median(a)), "p90": float(np.percentile(a, 90)), "mean": round(float(a.mean()), 1), "max": float(a.max())}


def queries(index: sieve.Index, n: int, seed: int) -> list[str]:
    """Two or three words of one random section (not NAME, which restates the title) of a random
    page, each quoted so that words like `or` stay words: an agent's keyword query."""
    rng = random.Random(seed)
    r = index.reader
    out: list[str] = []
    while len(out) < n:
        d = rng.randrange(len(index))
        js = [j for j, h in enumerate(r.meta(d)["headings"]) if h != "NAME"]
        if not js:
            continue
        words = sorted({w for w in analyze(r.section_text(d, rng.choice(js))) if len(w) > 2 and not w.isdigit()})
        if len(words) >= 5:
            out.append(" ".join(f'"{w}"' for w in rng.sample(words, rng.choice([2, 3]))))
    return out


def measure(index: sieve.Index, qs: list[str], counter_spec: str, k: int) -> dict[str, Any]:
    counter = make_counter(counter_spec)
    ts = Toolset(index, ("search", "fetch", "visit"), ToolConfig(read=ReadConfig(counter=counter)))
    card, listing, fetch, every, visit, whole, ratio = [], [], [], [], [], [], []
    truncated = fallback = 0
    t0 = time.perf_counter()
    for q in qs:
        result = ts.call("search", {"query": q, "k": k})
        listing.append(result.tokens)
        card.extend(counter.count(c) for c in CARD.split(result.text)[1:])
        r = index.search(q, k=k)  # the same hits, for the section each card points to
        fallback += r.fallback
        matcher = Matcher.of(r)
        for h in r.hits:
            doc = index.document(h.doc_id)
            snip = hit_snippet(index, h, doc.headings, matcher)
            f = ts.call("fetch", {"sections": [{"doc": h.doc_id, "section": label(doc, snip.section if snip else 0)}]})
            v = ts.call("visit", {"doc": h.doc_id})
            assert f.ok and v.ok, (f.text[:200], v.text[:200])
            fetch.append(f.tokens)
            visit.append(v.tokens)
            ratio.append(f.tokens / v.tokens)
            truncated += "[continued in part 2" in v.text
            whole.append(counter.count(body_text(doc)))
            every.extend(counter.count(read_section(doc, f"#{j + 1}", 1, ts.config.read).text) for j in range(len(doc.sections)))
    return {
        "counter": counter.name,
        "queries": len(qs),
        "fallback_queries": fallback,
        "hits": len(fetch),
        "card": stats(card),
        "listing": stats(listing),
        "fetch": stats(fetch),
        "fetch_any_section": stats(every),
        "visit": stats(visit),
        "visit_uncapped": stats(whole),
        "visits_over_cap": truncated,
        "fetch_over_visit": {"median": round(float(np.median(ratio)), 4), "p90": round(float(np.percentile(ratio, 90)), 4)},
        "seconds": round(time.perf_counter() - t0, 1),
    }


def table(res: dict[str, Any], k: int) -> str:
    rows = [
        ("card (one hit)", res["card"]),
        (f"search listing (k={k})", res["listing"]),
        ("fetch (the card's section)", res["fetch"]),
        ("fetch (any section of a hit)", res["fetch_any_section"]),
        ("visit (capped at 12,000)", res["visit"]),
        ("whole page, uncapped", res["visit_uncapped"]),
    ]
    unit = "words" if res["counter"] == "words" else "tokens"
    out = [f"counter: {res['counter']} ({unit}); {res['queries']} queries ({res['fallback_queries']} zero-hit fallbacks), {res['hits']} hits",
           f"{'':28} {'median':>8} {'p90':>8} {'mean':>8} {'max':>8}"]
    for name, s in rows:
        out.append(f"{name:28} {s['median']:>8,.0f} {s['p90']:>8,.0f} {s['mean']:>8,.0f} {s['max']:>8,.0f}")
    ratio = res["fetch_over_visit"]
    out.append(f"fetch / visit per hit: median {ratio['median']:.3f}, p90 {ratio['p90']:.3f}; visits cut at the cap: {res['visits_over_cap']} of {res['hits']}")
    return "\n".join(out)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--seed", type=int, default=11)
    ap.add_argument("-k", type=int, default=5)
    ap.add_argument("--counter", choices=["words", "minilm", "both"], default="both")
    ap.add_argument("--rebuild", action="store_true", help="rebuild the index even if it exists")
    args = ap.parse_args()
    if not CORPUS.exists():
        print(f"no corpus at {CORPUS}: build it with benchmarks/corpora/manpages.py (benchmarks/README.md)", file=sys.stderr)
        return 1
    if args.rebuild or not INDEX.exists():
        t0 = time.perf_counter()
        sieve.build_index(CORPUS, INDEX, force=True)
        print(f"built {INDEX} in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
    index = sieve.open_index(INDEX)
    qs = queries(index, args.queries, args.seed)
    specs = ["words", "minilm"] if args.counter == "both" else [args.counter]
    out: dict[str, Any] = {"corpus": str(CORPUS.relative_to(HERE.parent)), "documents": len(index), "seed": args.seed, "k": args.k,
                           "cap": ReadConfig().cap, "example_queries": qs[:5], "counters": {}}
    for spec in specs:
        res = measure(index, qs, spec, args.k)
        out["counters"][spec] = res
        print(table(res, args.k) + "\n")
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(out, indent=1) + "\n")
    print(f"wrote {RESULTS.relative_to(HERE.parent)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
