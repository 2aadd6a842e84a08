"""Engine benchmark: build speed, index size, open cost, and Boolean `match` latency per query class.

    python -m benchmarks.bench_engine --corpus benchmarks/data/man-sections.jsonl --peer sqlite-fts5 --peer tantivy

Prints a table and writes JSON (default benchmarks/results/engine-<corpus>.json). Queries are sampled
from the corpus with a fixed seed; each is run once, cold (parsed and planned, never from a cache,
even when a class draws it twice), after a warm-up pass over other queries. Peers (benchmarks/peers.py) answer the same queries in the same run, so the
ratios are what to quote. With `--rounds R`, each class is measured R times on fresh queries (seed,
seed + 1000, ...), sieve and the peers in turn each round, and every figure is the median of the
rounds' (a single round's p95 of 200 queries moves by a fifth from run to run on this machine).
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

import sieve
from benchmarks.harness import MAN_SECTIONS, RESULTS, corpus_arg, median_of, open_peers, peer_arg, percentiles, timed, write_json
from sieve.engine.analysis.analyzers import analyze
from sieve.engine.query.bql.lexer import OPERATORS
from sieve.index.index import parse_query

# parse_query was memoised itself in older sieves (ab.py --same-scripts runs these on them); now it wraps _parsed.
clear_parse_cache = getattr(parse_query, "cache_clear", None) or sieve.index.queries._parsed.cache_clear

HERE = Path(__file__).resolve().parent
CLASSES = ["term", "field", "and", "or", "not", "phrase", "prefix", "date", "near", "nested"]


# ---------------------------------------------------------------- query specs and their BQL


def to_bql(spec: dict[str, Any]) -> str:
    op = spec["op"]
    # Peers index title, headings and body only; "any field" means those three here too.
    tag = f"[{spec['field']}]" if spec.get("field") else "[title,section,body]"
    if op == "term":
        return spec["term"] + tag
    if op == "phrase":
        return '"' + " ".join(spec["terms"]) + '"' + tag
    if op == "prefix":
        return spec["stem"] + "*" + tag
    if op == "near":
        return f"NEAR/{spec['n']}({spec['a']}, {spec['b']})[title,section,body]"
    if op == "date":
        def day(v: int | None) -> str:
            return "" if v is None else f"{v // 10000:04d}-{v // 100 % 100:02d}-{v % 100:02d}"
        return f"date[{day(spec['lo'])}..{day(spec['hi'])}]"
    if op == "not":
        return "NOT " + _group(spec["child"])
    joiner = " AND " if op == "and" else " OR "
    return joiner.join(_group(c) for c in spec["children"])


def _group(spec: dict[str, Any]) -> str:
    return f"({to_bql(spec)})" if spec["op"] in ("and", "or") else to_bql(spec)


WORD_KEYS = ("term", "stem", "a", "b")


def absent(spec: dict[str, Any], rng: random.Random) -> dict[str, Any]:
    """The same query shape with each word replaced by one in no document (ten letters from
    "qxzj..."): what sieve spends on a query before reading any postings (parsing, planning, an
    evaluation that finds every term absent, the count)."""
    def word() -> str:
        return "qxzj" + "".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(6))
    out = {k: (word() if k in WORD_KEYS else v) for k, v in spec.items()}
    if "terms" in spec:
        out["terms"] = [word() for _ in spec["terms"]]
    if "child" in spec:
        out["child"] = absent(spec["child"], rng)
    if "children" in spec:
        out["children"] = [absent(c, rng) for c in spec["children"]]
    return out


def sieve_runs(index: sieve.Index, specs: list[dict[str, Any]]) -> tuple[list[float], list[int]]:
    """(ms, count) of each query through sieve's `match`, the BQL made from its spec and parsed and
    planned afresh: a class draws some queries twice (frequent title words), and each is answered
    as the peers answer it, never from the index's plan cache."""
    ms, counts = [], []
    for spec in specs:
        clear_parse_cache()
        index._plans.cache_clear()
        took, m = timed(lambda spec=spec: index.match(to_bql(spec)))
        ms.append(took)
        counts.append(m.count)
    return ms, counts


def floor(index: sieve.Index, specs: list[dict[str, Any]], seed: int) -> dict[str, float]:
    """`absent` of each query, timed as `measure_class` times sieve's."""
    rng = random.Random(seed)
    ms, counts = sieve_runs(index, [absent(spec, rng) for spec in specs])
    assert not any(counts)
    return percentiles(ms)


class Sampler:
    """Draws query words the way text uses them: a random word of a random section of a random document."""

    def __init__(self, index: sieve.Index, seed: int) -> None:
        self.index = index
        self.rng = random.Random(seed)
        # Documents are drawn segment by segment (an index of several has gaps between the
        # segments' internal numbers): a segment in proportion to its documents, then one of them.
        self.readers = [seg.reader for seg in index.segments]
        self.cum = np.cumsum([r.n_docs for r in self.readers])
        dates = np.asarray(index.segments[0].reader.dates)  # a fresh build: one segment
        years = dates[dates >= 0] // 10000
        self.years = sorted(set(int(y) for y in years)) or [2000]

    def doc(self) -> tuple[Any, int]:
        """(a segment's reader, one of its documents), at random."""
        at = self.rng.randrange(int(self.cum[-1]))
        i = int(np.searchsorted(self.cum, at, side="right"))
        return self.readers[i], at - (int(self.cum[i - 1]) if i else 0)

    def words(self) -> list[str]:
        for _ in range(100):
            r, d = self.doc()
            j = self.rng.randrange(max(1, r.section_count(d)))
            terms = analyze(r.section_text(d, j)) if r.section_count(d) else []
            terms = [w for w in terms if w.upper() not in OPERATORS]  # bare and/or/not are operators in BQL
            if len(terms) >= 4:
                return terms
        return ["the", "of", "a", "file"]

    def term(self) -> str:
        return self.rng.choice(self.words())

    def title_term(self) -> str:
        for _ in range(100):
            r, d = self.doc()
            terms = [w for w in analyze(r.meta(d)["title"]) if w.upper() not in OPERATORS]
            if terms:
                return self.rng.choice(terms)
        return self.term()

    def spec(self, cls: str) -> dict[str, Any]:
        t = lambda: {"op": "term", "term": self.term(), "field": None}  # noqa: E731
        if cls == "term":
            return t()
        if cls == "field":
            return {"op": "term", "term": self.title_term(), "field": "title"}
        if cls == "and":
            w = self.words()
            return {"op": "and", "children": [{"op": "term", "term": x, "field": None} for x in self.rng.sample(w, 2)]}
        if cls == "or":
            return {"op": "or", "children": [t(), t(), t()]}
        if cls == "not":
            return {"op": "and", "children": [t(), {"op": "not", "child": t()}]}
        if cls == "phrase":
            w = self.words()
            i = self.rng.randrange(len(w) - 1)
            return {"op": "phrase", "terms": w[i : i + 2], "field": None}
        if cls == "prefix":
            for _ in range(100):
                word = self.term()
                if len(word) >= 4 and word.isalpha():
                    stem = word[: self.rng.choice([3, 4, 5])]
                    lo, hi = self.index.segments[0].reader.terms.prefix_range(stem.encode())
                    if hi - lo <= self.index.limits.max_prefix_terms:
                        return {"op": "prefix", "stem": stem, "field": None}
            return t()
        if cls == "date":
            a, b = sorted(self.rng.sample(self.years, 2)) if len(self.years) > 1 else (self.years[0], self.years[0])
            return {"op": "date", "lo": a * 10000 + 101, "hi": b * 10000 + 1231}
        if cls == "near":
            w = self.words()
            i = self.rng.randrange(len(w) - 3)
            return {"op": "near", "a": w[i], "b": w[i + self.rng.choice([1, 2, 3])], "n": 3}
        if cls == "nested":
            w = self.words()
            a, b, c = self.rng.sample(w, 3)
            return {
                "op": "and",
                "children": [
                    {"op": "or", "children": [{"op": "term", "term": a, "field": None}, {"op": "term", "term": b, "field": "title"}]},
                    {"op": "term", "term": c, "field": None},
                    {"op": "not", "child": t()},
                ],
            }
        raise ValueError(cls)


# ---------------------------------------------------------------- measurement


def open_cost(path: Path) -> dict[str, float]:
    """Open time and resident memory after open, measured in a fresh interpreter."""
    code = (
        "import time, json, sieve\n"
        "def rss():\n"
        "    for line in open('/proc/self/status'):\n"
        "        if line.startswith('VmRSS'): return int(line.split()[1]) / 1024\n"
        f"r0 = rss(); t = time.perf_counter(); ix = sieve.open_index({str(path)!r}); dt = time.perf_counter() - t\n"
        "print(json.dumps({'open_ms': dt * 1000, 'rss_before_mb': r0, 'rss_after_open_mb': rss()}))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    return {k: round(v, 2) for k, v in json.loads(out).items()}


def measure_class(index: sieve.Index, specs: list[dict[str, Any]], peers: dict[str, Any]) -> dict[str, Any]:
    """One round of one class: each query once through sieve (parsed and planned afresh), then
    through each peer that can express it."""
    row: dict[str, Any] = {"queries": len(specs)}
    sieve_ms, counts = sieve_runs(index, specs)
    row["sieve"] = percentiles(sieve_ms)
    row["median_count"] = int(statistics.median(counts))
    if peers:
        from benchmarks.peers import latency_ms
    for pname, p in peers.items():
        peer = p["peer"]
        ok = [i for i, s in enumerate(specs) if peer.supports(s)]
        if not ok:
            row[pname] = None
            continue
        pms, agree = [], 0
        for i in ok:
            ms, c = timed(lambda peer=peer, i=i: peer.count(specs[i]))
            pms.append(latency_ms(peer, ms))
            agree += int(c == counts[i])
        sub = percentiles([sieve_ms[i] for i in ok])
        row[pname] = {**percentiles(pms), "queries": len(ok), "count_agreement": round(agree / len(ok), 3), "sieve_same_queries": sub}
    return row


def merge_rounds(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """A class's rounds as one row: each figure the median of the rounds' (the rounds' own rows under "rounds")."""
    if len(rows) == 1:
        return rows[0]

    med = median_of
    out: dict[str, Any] = {"queries": sum(r["queries"] for r in rows), "sieve": med([r["sieve"] for r in rows]),
                           "median_count": int(statistics.median(r["median_count"] for r in rows))}
    for key in rows[0]:
        if key in out or key == "queries":
            continue
        got = [r[key] for r in rows]
        if any(g is None for g in got):
            out[key] = None
            continue
        out[key] = {**med(got), "queries": sum(g["queries"] for g in got),
                    "count_agreement": round(statistics.mean(g["count_agreement"] for g in got), 3),
                    "sieve_same_queries": med([g["sieve_same_queries"] for g in got]),
                    "ratio_p50_rounds": [round(g["sieve_same_queries"]["p50"] / g["p50"], 3) if g["p50"] else None for g in got],
                    "ratio_p95_rounds": [round(g["sieve_same_queries"]["p95"] / g["p95"], 3) if g["p95"] else None for g in got]}
    out["rounds"] = rows
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    corpus_arg(ap, MAN_SECTIONS)
    ap.add_argument("--queries", type=int, default=200, help="queries per class")
    peer_arg(ap)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--reuse", action="store_true", help="reuse an index already built in --work")
    ap.add_argument("--rounds", type=int, default=1, help="measure each class this many times on fresh queries; report medians")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()

    name = args.corpus.stem
    idx_path = args.work / f"{name}.sieve"
    corpus_mb = args.corpus.stat().st_size / 1e6
    result: dict[str, Any] = {"corpus": str(args.corpus), "corpus_mb": round(corpus_mb, 2), "seed": args.seed}
    if args.reuse and idx_path.exists():
        index = sieve.open_index(idx_path)
    else:
        t0 = time.perf_counter()
        index = sieve.build_index(args.corpus, idx_path, force=True)
        secs = time.perf_counter() - t0
        result["build"] = {"seconds": round(secs, 2), "docs_per_s": round(len(index) / secs, 1), "mb_per_s": round(corpus_mb / secs, 2)}
    files = [(name, entry) for _, name, entry in index.snapshot.files()]
    store = sum(v["size"] for k, v in files if "store." in k)
    result["documents"] = len(index)
    result["index_mb"] = round((sum(v["size"] for _, v in files) - store) / 1e6, 2)
    result["store_mb"] = round(store / 1e6, 2)
    result["open"] = open_cost(idx_path)

    def draw(seed: int) -> dict[str, list[dict[str, Any]]]:
        sampler = Sampler(index, seed)
        return {cls: [sampler.spec(cls) for _ in range(args.queries)] for cls in CLASSES}

    rounds = [draw(args.seed + 1000 * r) for r in range(max(1, args.rounds))]  # round 1: the queries of a run without --rounds
    specs = rounds[0]
    warm = Sampler(index, args.seed + 1)
    for cls in CLASSES:  # warm-up on different queries: page cache, numpy, code paths
        for _ in range(10):
            index.match(to_bql(warm.spec(cls)))

    peers: dict[str, Any] = {}
    for pname, peer in open_peers(args.peer).items():
        pdir = args.work / f"{name}.{pname}"
        if args.reuse and pdir.exists():
            peer.open(pdir)
            peers[pname] = {"peer": peer}
        else:
            info = peer.build(args.corpus, pdir)
            peers[pname] = {"peer": peer, "build": info}

    per_round = [{cls: measure_class(index, round_specs[cls], peers) for cls in CLASSES} for round_specs in rounds]
    table = {cls: merge_rounds([t[cls] for t in per_round]) for cls in CLASSES}
    result["match"] = table
    overall = [timed(lambda s=s: index.match(to_bql(s)))[0] for cls in CLASSES for s in specs[cls]]
    result["match_all_classes"] = percentiles(overall)
    result["floor"] = {cls: floor(index, specs[cls], args.seed) for cls in CLASSES if cls != "date"}
    for pname, p in peers.items():
        if "build" in p:
            result.setdefault("peers", {})[pname] = p["build"]

    out = write_json(args.out or RESULTS / f"engine-{name}.json", result)

    print(f"\ncorpus {args.corpus.name}: {result['documents']} documents, {result['corpus_mb']} MB")
    if "build" in result:
        b = result["build"]
        print(f"build: {b['seconds']} s, {b['docs_per_s']} docs/s, {b['mb_per_s']} MB/s")
    print(f"index {result['index_mb']} MB (+ document store {result['store_mb']} MB); open {result['open']['open_ms']} ms, RSS after open {result['open']['rss_after_open_mb']} MB")
    for pname, info in result.get("peers", {}).items():
        print(f"peer {pname}: build {info['seconds']:.1f} s, index {info['index_mb']:.1f} MB")
    head = f"{'class':8} {'median hits':>11} {'sieve p50':>9} {'p95':>7}"
    for pname in peers:
        head += f" | {pname + ' p50':>16} {'p95':>7} {'ratio p50':>9} {'agree':>6}"
    print("\nBoolean match latency, ms (each query once, cold parse)")
    print(head)
    for cls, row in table.items():
        line = f"{cls:8} {row['median_count']:>11} {row['sieve']['p50']:>9.3f} {row['sieve']['p95']:>7.3f}"
        for pname in peers:
            pr = row.get(pname)
            if pr is None:
                line += f" | {'n/a':>16} {'':>7} {'':>9} {'':>6}"
            else:
                ratio = pr["sieve_same_queries"]["p50"] / pr["p50"] if pr["p50"] else float("nan")
                line += f" | {pr['p50']:>16.3f} {pr['p95']:>7.3f} {ratio:>9.2f} {pr['count_agreement']:>6.2f}"
        print(line)
    a = result["match_all_classes"]
    print(f"all classes: p50 {a['p50']:.3f} ms, p95 {a['p95']:.3f} ms")
    print("floor, p50 ms (the same shapes with words in no document: parsing, planning, nothing read): "
          + ", ".join(f"{cls} {f['p50']:.3f}" for cls, f in result["floor"].items()))
    print(f"\nwrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
