"""Zero-hit diagnosis: how often a one-step relaxation exists and is reported, what it costs, and
what it saves an agent.

    python -m benchmarks.bench_diagnose --corpus /work/benchwork/data/man-sections.jsonl [--queries 300]

1. Over-constrained queries from real documents: a query that matches a sampled document (a title
   word AND a body word, a heading phrase, or a NEAR of two body words), plus one clause that
   excludes it (a body word scoped to the title, the phrase reversed, a date before any document, a
   word of another document). Only queries that then admit nothing are kept. Reported: the share
   with at least one reported relaxation, the share whose first relaxation admits the source
   document again, and the time the diagnosis adds to `search` (p50/p95, same queries, same run).
2. Agents recovering, against the scripted loopback model server (tests/support/loopback.py): a
   policy that applies the first reported relaxation, and one that drops the last clause until a
   listing is non-empty (with and without the diagnosis line in its results). Reported: LLM calls
   and tokens (the server's usage) to the first non-empty listing.

Prints a table and writes JSON (default benchmarks/results/diagnose.json).
"""

from __future__ import annotations

import argparse
import json
import random
import re
import statistics
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent

import sieve  # noqa: E402
from benchmarks.harness import rank_quantile as percentile  # noqa: E402
from sieve.engine.analysis.analyzers import analyze  # noqa: E402
from sieve.agent.llm import ChatClient  # noqa: E402
from sieve.agent.loop import Agent, Budgets  # noqa: E402
from sieve.tools.shell.episode import make_tools  # noqa: E402

WORD = re.compile(r"^[a-z][a-z0-9]{2,}$")


RESERVED = {"and", "or", "not", "near", "date", "all"}  # operators and tag names, never bare words here


def words(text: str) -> list[str]:
    return [w for w in analyze(text) if WORD.match(w) and w not in RESERVED]


def over_constrained(index: sieve.Index, n: int, seed: int) -> list[dict[str, Any]]:
    """Queries that admit nothing, each made from a document it would match but for one clause."""
    r = random.Random(seed)
    out: list[dict[str, Any]] = []
    tries = 0
    while len(out) < n and tries < n * 50:
        tries += 1
        d = r.randrange(len(index))
        doc = index.document(index.reader.doc_id(d))
        title = words(doc.title)
        body = words(" ".join(s.text for s in doc.sections))
        heads = [words(h) for h in doc.headings]
        if not title or len(body) < 8:
            continue
        t, b = r.choice(title), r.choice(body)
        i = r.randrange(len(body) - 1)
        base = r.choice([f"{t}[title] AND {b}", f"{t}[title] AND NEAR/3({body[i]}, {body[i + 1]})"]
                        + [f'"{" ".join(h[:2])}"[section] AND {b}' for h in heads if len(h) >= 2])
        other = words(index.document(index.reader.doc_id(r.randrange(len(index)))).title) or ["zzzz"]
        extra = r.choice([f"{w}[title]" for w in body if w not in title][:1] + [f'"{body[i + 1]} {body[i]}"', "date[..1970]", r.choice(other)])
        clauses = base.split(" AND ")
        clauses.insert(r.randint(0, len(clauses)), extra)  # anywhere: a blind policy gets no hint from the order
        query = " AND ".join(clauses)
        if index.match(base).count == 0 or index.match(query).count:
            continue
        out.append({"query": query, "doc": d, "base": base, "extra": extra})
    return out


def measure_engine(index: sieve.Index, queries: list[dict[str, Any]], rounds: int) -> dict[str, Any]:
    reported = restores = 0
    kinds: dict[str, int] = {}
    with_d: list[float] = []
    without: list[float] = []
    for q in queries:
        r = index.search(q["query"], k=5, explain=False)
        assert r.count == 0 and r.diagnosis is not None
        if r.diagnosis.relaxations:
            reported += 1
            first = r.diagnosis.relaxations[0]
            kinds[first.kind] = kinds.get(first.kind, 0) + 1
            restores += int(q["doc"] in set(index.match(first.query).docs.tolist()))
        for _ in range(rounds):  # interleaved, so drift in the machine's speed hits both alike
            t0 = time.perf_counter()
            index.search(q["query"], k=5, explain=False, diagnose=True)
            t1 = time.perf_counter()
            index.search(q["query"], k=5, explain=False, diagnose=False)
            t2 = time.perf_counter()
            with_d.append((t1 - t0) * 1e3)
            without.append((t2 - t1) * 1e3)
    added = [a - b for a, b in zip(with_d, without)]
    n = len(queries)
    return {
        "queries": n, "reported_share": round(reported / n, 4), "first_restores_source_share": round(restores / n, 4),
        "first_kind": kinds,
        "search_ms": {"with_p50": round(percentile(with_d, 0.5), 3), "with_p95": round(percentile(with_d, 0.95), 3),
                      "without_p50": round(percentile(without, 0.5), 3), "without_p95": round(percentile(without, 0.95), 3)},
        "added_ms": {"p50": round(percentile(added, 0.5), 3), "p95": round(percentile(added, 0.95), 3)},
    }


RELAX = re.compile(r"^One change would admit documents: (.*)\.$", re.M)
HEAD = re.compile(r"^0 (?:exact matches for|documents match) (.*?)(?:;| \(|\.$)", re.M)


def follow(body: dict[str, Any]) -> Any:
    """Apply the first reported relaxation to the canonical query, as an agent reading it would."""
    from tests.support.loopback import Say

    return _policy(body, smart=True, Say=Say)


def blind(body: dict[str, Any]) -> Any:
    from tests.support.loopback import Say

    return _policy(body, smart=False, Say=Say)


def _policy(body: dict[str, Any], smart: bool, Say: Any) -> Any:
    msgs = body["messages"]
    results = [str(m["content"]) for m in msgs if m["role"] == "user" and str(m["content"]).startswith("<tool_response>")]
    if not results:
        return Say('<tool_call>{"name": "search", "arguments": {"query": %s}}</tool_call>' % json.dumps(str(msgs[1]["content"])))
    last = results[-1]
    if re.search(r"^<tool_response>\n[\d,]+ documents? match", last, re.M) and "0 documents match" not in last:
        return Say("<answer>found</answer>")
    head = HEAD.search(last)
    query = head.group(1) if head else str(msgs[1]["content"])
    relax = RELAX.search(last)
    if smart and relax:
        first = relax.group(1).split("; ")[0]
        m = re.match(r"^[\d,]+ without (.*)$", first)
        if m:
            parts = query.split(" AND ")
            parts.remove(m.group(1))
            nxt = " AND ".join(parts)
        else:
            m = re.match(r"^[\d,]+ with (.*) instead of (.*)$", first)
            nxt = query.replace(m.group(2), m.group(1), 1) if m else query
    else:
        parts = query.split(" AND ")
        nxt = " AND ".join(parts[:-1]) if len(parts) > 1 else parts[0]
    return Say('<tool_call>{"name": "search", "arguments": {"query": %s}}</tool_call>' % json.dumps(nxt))


def measure_agents(index: sieve.Index, queries: list[dict[str, Any]]) -> dict[str, Any]:
    from tests.support.loopback import LoopbackServer

    out: dict[str, Any] = {}
    for name, policy, diagnose in (("follow the diagnosis", follow, True), ("drop blindly", blind, True), ("drop blindly, no diagnosis", blind, False)):
        calls: list[int] = []
        summed: list[int] = []
        distinct: list[int] = []
        found = 0
        with LoopbackServer(policy) as srv:
            agent = Agent(ChatClient(srv.url, "scripted", max_retries=0), native_tools=False, budgets=Budgets(max_steps=8))
            for q in queries:
                tools = make_tools(index, "sieve", k=5, k_max=5, read_parts=False, diagnose=diagnose)
                ep = agent.run(q["query"], tools)
                found += int(ep.answer == "found")
                calls.append(len(ep.calls))
                summed.append(ep.step_summed_tokens)
                distinct.append(ep.distinct_tokens)
        out[name] = {"episodes": len(queries), "found": found, "llm_calls_mean": round(statistics.mean(calls), 3),
                     "step_summed_mean": round(statistics.mean(summed), 1), "distinct_mean": round(statistics.mean(distinct), 1),
                     "step_summed_median": statistics.median(summed)}
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", type=Path, required=True)
    ap.add_argument("--index", type=Path, help="index folder (built from --corpus if absent)")
    ap.add_argument("--queries", type=int, default=300)
    ap.add_argument("--agent-queries", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--out", type=Path, default=HERE / "results" / "diagnose.json")
    args = ap.parse_args()
    path = args.index or Path("/tmp") / f"sieve-diagnose-{args.corpus.stem}"
    index = sieve.open_index(path) if (path / "CURRENT").exists() else sieve.build_index(args.corpus, path)
    queries = over_constrained(index, args.queries, args.seed)
    engine = measure_engine(index, queries, args.rounds)
    agents = measure_agents(index, queries[: args.agent_queries])
    result = {"corpus": str(args.corpus), "documents": len(index), "engine": engine, "agents": agents}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1))
    e = engine
    print(f"{len(index):,} documents; {e['queries']} over-constrained queries (each admits nothing)")
    print(f"  a one-step relaxation reported: {100 * e['reported_share']:.1f}%; the first one admits the source document again: "
          f"{100 * e['first_restores_source_share']:.1f}%; first kinds {e['first_kind']}")
    s = e["search_ms"]
    print(f"  search ms with diagnosis p50 {s['with_p50']} p95 {s['with_p95']}; without p50 {s['without_p50']} p95 {s['without_p95']}; "
          f"added p50 {e['added_ms']['p50']} p95 {e['added_ms']['p95']}")
    print(f"\n{'policy':28} {'episodes':>8} {'found':>6} {'calls':>6} {'step-summed':>12} {'distinct':>9}")
    for name, a in agents.items():
        print(f"{name:28} {a['episodes']:>8} {a['found']:>6} {a['llm_calls_mean']:>6} {a['step_summed_mean']:>12} {a['distinct_mean']:>9}")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
