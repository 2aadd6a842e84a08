"""The calls users make, timed per query class against tantivy and SQLite FTS5 in the same run.

    python -m benchmarks.bench_calls --corpus benchmarks/data/man-sections.jsonl \\
        --index /path/to/a/built/sieve/index   # optional: else built into --work

Rows, each query parsed and planned afresh (no parse or plan cache, as bench_engine):
- `count`: `match(q).count` (the figure bench_engine times; one row beside the others);
- `ids`: `match(q).ids`, every admitted id as a Python list of str;
- `search`: `search(q, k=10)` with each hit's id and score read;
- `search+where`: the same, also reading each hit's matched `fields` and `sections` (what cards
  and explanations read);
- `cards5`: the Toolset's `search` tool (five hits rendered as cards, what an agent reads).
Peers answer the same queries (bench_engine's query classes, `Sampler`/`to_bql`): `ids`, each
admitted document's stored id as a Python list; `top10`, their BM25 best 10 of the same Boolean
query with ids read (SQLite only where the query is one FTS5 MATCH: its rank needs one). Prints
p50/p95 per class and sieve's ratio to tantivy on the same queries; writes JSON (default
benchmarks/results/calls-<corpus>.json).
"""

from __future__ import annotations

import argparse
import functools
import random
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import sieve
from benchmarks.bench_engine import CLASSES, Sampler, clear_parse_cache, to_bql
from benchmarks.harness import (
    MAN_SECTIONS,
    RESULTS,
    corpus_arg,
    percentiles,
    print_table,
    write_json,
)
from sieve.tools import Toolset

SIEVE_ROWS = ("count", "ids", "search", "search+where", "cards5")
PEER_ROWS = ("ids", "top10")


def cold(index: sieve.Index, fn: Callable[[], Any]) -> tuple[float, Any]:
    """(ms, result) of `fn`, the index's parse and plan caches emptied first (not timed)."""
    clear_parse_cache()
    index._plans.cache_clear()  # type: ignore[attr-defined]
    t0 = time.perf_counter()
    out = fn()
    return (time.perf_counter() - t0) * 1000, out


def sieve_calls(index: sieve.Index, tools: Toolset) -> dict[str, Callable[[str], Any]]:
    def search(q: str) -> Any:
        return [(h.doc_id, h.score) for h in index.search(q, k=10).hits]

    def where(q: str) -> Any:
        return [(h.doc_id, h.score, h.fields, h.sections) for h in index.search(q, k=10).hits]

    return {"count": lambda q: index.match(q).count, "ids": lambda q: index.match(q).ids,
            "search": search, "search+where": where,
            "cards5": lambda q: tools.call("search", {"query": q, "k": 5}).text}


class TantivyCalls:
    """tantivy (benchmarks.peers.TantivyPeer's index): ids of every hit, and the BM25 top 10."""

    def __init__(self, peer: Any) -> None:
        self.peer, self.searcher = peer, peer.searcher
        self.n = self.searcher.num_docs

    def ids(self, spec: dict[str, Any]) -> list[str]:
        # Every hit (a limit of the collection's size; count=False: no second pass), then its id.
        s = self.searcher
        hits = s.search(self.peer._query(spec), limit=max(self.n, 1), count=False).hits
        return [s.doc(a).get_first("id") for _, a in hits]

    def top10(self, spec: dict[str, Any]) -> list[str]:
        s = self.searcher
        hits = s.search(self.peer._query(spec), limit=10, count=False).hits
        return [s.doc(a).get_first("id") for _, a in hits]


class SqliteCalls:
    """SQLite FTS5 (benchmarks.peers.SqlitePeer's database): ids via the docs table."""

    def __init__(self, peer: Any) -> None:
        self.peer, self.db = peer, peer.db

    def ids(self, spec: dict[str, Any]) -> list[str]:
        sql, params = self.peer._rows(spec)
        rows = self.db.execute(f"SELECT id FROM docs WHERE rowid IN ({sql})", params)
        return [r[0] for r in rows]

    def top10(self, spec: dict[str, Any]) -> list[str] | None:
        m = self.peer._match(spec)
        if m is None:
            return None
        rows = self.db.execute(
            "SELECT d.id FROM (SELECT rowid, rank FROM fts WHERE fts MATCH ? ORDER BY rank"
            " LIMIT 10) r JOIN docs d ON d.rowid = r.rowid ORDER BY r.rank", (m,))
        return [r[0] for r in rows]


def peers(work: Path, corpus: Path, names: list[str]) -> dict[str, Any]:
    from benchmarks.peers import PEERS, ensure

    out: dict[str, Any] = {}
    for name in names:
        peer = PEERS[name]()
        ensure(peer, corpus, work)
        out[name] = TantivyCalls(peer) if name == "tantivy" else SqliteCalls(peer)
    return out


def measure(index: sieve.Index, tools: Toolset, specs: list[dict[str, Any]],
            others: dict[str, Any]) -> dict[str, Any]:
    """One class: every query through each sieve call, then through each peer's; p50/p95 each,
    and sieve's ratio to each peer on the queries the peer answered."""
    calls = sieve_calls(index, tools)
    queries = [to_bql(s) for s in specs]
    ms: dict[str, list[float]] = {row: [] for row in SIEVE_ROWS}
    counts = []
    for q in queries:
        for row, call in calls.items():
            took, answer = cold(index, functools.partial(call, q))
            ms[row].append(took)
            if row == "ids":
                counts.append(len(answer))
    out: dict[str, Any] = {"queries": len(queries), "median_ids": sorted(counts)[len(counts) // 2],
                           "sieve": {row: percentiles(v) for row, v in ms.items()}}
    for name, peer in others.items():
        got: dict[str, Any] = {}
        for row in PEER_ROWS:
            pms, at, agree = [], [], 0
            for i, spec in enumerate(specs):
                if not peer.peer.supports(spec):
                    continue
                t0 = time.perf_counter()
                ans = getattr(peer, row)(spec)
                took = (time.perf_counter() - t0) * 1000
                if ans is None:
                    continue
                pms.append(took)
                at.append(i)
                agree += int(row != "ids" or len(ans) == counts[i])
            if not pms:
                got[row] = None
                continue
            mine = "ids" if row == "ids" else "search"
            same = percentiles([ms[mine][i] for i in at])
            got[row] = {**percentiles(pms), "queries": len(pms), "sieve_same_queries": same,
                        "ratio_p50": round(same["p50"] / pms_p(pms, 50), 3),
                        "ratio_p95": round(same["p95"] / pms_p(pms, 95), 3)}
            if row == "ids":
                got[row]["count_agreement"] = round(agree / len(pms), 3)
        out[name] = got
    return out


def pair(row: dict[str, Any], prefix: str = "", digits: int = 3) -> str:
    return f"{row[prefix + 'p50']:.{digits}f}/{row[prefix + 'p95']:.{digits}f}"


def pms_p(values: list[float], q: int) -> float:
    return percentiles(values)[f"p{q}"] or 1e-9


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    corpus_arg(ap, MAN_SECTIONS)
    ap.add_argument("--index", type=Path,
                    help="a sieve index of --corpus already built (else built into --work)")
    ap.add_argument("--queries", type=int, default=100, help="queries per class")
    ap.add_argument("--peer", action="append", default=None,
                    help="tantivy and/or sqlite-fts5 (default both)")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    names = args.peer if args.peer is not None else ["tantivy", "sqlite-fts5"]
    name = args.corpus.stem
    path = args.index or args.work / f"{name}.sieve"
    index = sieve.open_index(path) if path.exists() else sieve.build_index(args.corpus, path)
    assert isinstance(index, sieve.Index)
    tools = Toolset(index)
    others = peers(args.work, args.corpus, names)

    sampler = Sampler(index, args.seed)
    specs = {cls: [sampler.spec(cls) for _ in range(args.queries)] for cls in CLASSES}
    warm = Sampler(index, args.seed + 1)  # page cache, numpy, code paths, each segment's id table
    for cls in CLASSES:
        for _ in range(5):
            spec = warm.spec(cls)
            for call in sieve_calls(index, tools).values():
                call(to_bql(spec))
            for peer in others.values():
                if peer.peer.supports(spec):
                    peer.ids(spec), peer.top10(spec)
    random.seed(args.seed)
    table = {cls: measure(index, tools, specs[cls], others) for cls in CLASSES}
    result = {"corpus": str(args.corpus), "documents": len(index), "sieve": sieve.__file__,
              "queries_per_class": args.queries, "seed": args.seed, "classes": table}
    out = write_json(args.out or RESULTS / f"calls-{name}.json", result)

    head = ["class", "ids"] + [f"{r} p50/p95" for r in SIEVE_ROWS]
    rows = [[cls, t["median_ids"]] + [pair(t["sieve"][r]) for r in SIEVE_ROWS]
            for cls, t in table.items()]
    print_table(head, rows, f"\nsieve, ms ({len(index)} documents, {args.queries} queries a class,"
                " parsed afresh)")
    for pname in others:
        head = ["class"] + [f"{pname} {r} p50/p95" for r in PEER_ROWS]
        head += ["ids x p50/p95", "search x p50/p95"]
        rows = []
        for cls, t in table.items():
            p = t[pname]
            cells: list[Any] = [cls]
            cells += [pair(p[r]) if p[r] else None for r in PEER_ROWS]
            cells += [pair(p[r], "ratio_", 2) if p[r] else None for r in PEER_ROWS]
            rows.append(cells)
        print_table(head, rows, f"\n{pname}, ms, and sieve's ratio to it on the same queries"
                    " (ids: match().ids; search: search(k=10), ids and scores read)")
    print(f"\nwrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
