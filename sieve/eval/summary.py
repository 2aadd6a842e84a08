"""Per-run numbers computed from trajectory records alone, so anyone can recompute them."""

from __future__ import annotations

from typing import Any, Iterable

import numpy as np

from sieve.engine.bql import CONSTRUCTS, constructs, parse
from sieve.errors import SieveError
from sieve.eval.metrics import exact_match, f1

OPERATORS = CONSTRUCTS
SEARCH_TOOLS = ("search", "ranked_search")


def bql_features(query: str) -> set[str]:
    """Which BQL constructs a query uses (an unparseable query uses none)."""
    try:
        return constructs(parse(query))
    except SieveError:
        return set()


def score(rec: dict[str, Any], answers: list[str]) -> dict[str, float]:
    pred = rec.get("answer") or ""
    return {"em": exact_match(pred, answers), "f1": f1(pred, answers)}


def failure(rec: dict[str, Any], gold: list[str], correct: bool) -> str | None:
    """Why a wrong answer was wrong: retrieval (no gold document surfaced), selection (surfaced,
    never opened), synthesis (opened, still wrong). None for a right answer or unknown gold."""
    if correct or not gold:
        return None
    g = set(gold)
    if not g & set(rec.get("surfaced", [])):
        return "retrieval"
    if not g & set(rec.get("opened", [])):
        return "selection"
    return "synthesis"


def summarize(records: Iterable[dict[str, Any]], gold_answers: dict[str, list[str]], gold_docs: dict[str, list[str]]) -> dict[str, Any]:
    recs = [r for r in records if r["question_id"] in gold_answers]
    n = len(recs)
    if n == 0:
        return {"questions": 0}
    scores = [score(r, gold_answers[r["question_id"]]) for r in recs]
    em = np.array([s["em"] for s in scores])
    searches = [t for r in recs for t in r.get("tool_calls", []) if t["name"] in SEARCH_TOOLS]
    per_q_ops = [set().union(*[bql_features(str(t["arguments"].get("query", ""))) for t in r.get("tool_calls", []) if t["name"] == "search"] or [set()]) for r in recs]
    fails = [failure(r, gold_docs.get(r["question_id"], []), bool(s["em"])) for r, s in zip(recs, scores)]
    with_gold = [r for r in recs if gold_docs.get(r["question_id"])]
    tools: dict[str, float] = {}
    for r in recs:
        for name, k in r.get("tool_calls_by_kind", {}).items():
            tools[name] = tools.get(name, 0) + k
    return {
        "questions": n,
        "accuracy": round(float(em.mean()), 4),
        "f1": round(float(np.mean([s["f1"] for s in scores])), 4),
        "distinct_tokens": round(float(np.mean([r["tokens"]["distinct"] for r in recs])), 1),
        "step_summed_tokens": round(float(np.mean([r["tokens"]["step_summed"] for r in recs])), 1),
        "llm_calls": round(float(np.mean([r["llm_calls"] for r in recs])), 3),
        "tool_calls": {k: round(v / n, 3) for k, v in sorted(tools.items())},
        "fallback_rate": round(sum(1 for t in searches if t.get("fallback")) / len(searches), 4) if searches else 0.0,
        "gold_recall": round(sum(1 for r in with_gold if set(gold_docs[r["question_id"]]) & set(r.get("surfaced", []))) / len(with_gold), 4) if with_gold else None,
        "failures": {k: sum(1 for f in fails if f == k) for k in ("retrieval", "selection", "synthesis")},
        "outcomes": {k: sum(1 for r in recs if r["outcome"] == k) for k in ("answered", "recovered", "failed")},
        "bql_usage": {op: round(sum(1 for s in per_q_ops if op in s) / n, 4) for op in OPERATORS},
    }
