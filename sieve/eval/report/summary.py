"""Per-run numbers computed from trajectory records alone, so anyone can recompute them."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

from sieve.agent.episode import (
    distinct_tokens,
    final_context_tokens,
    largest_prompt,
    step_summed_tokens,
)
from sieve.engine.query.bql import constructs, parse
from sieve.engine.query.bql.lexer import tokenize
from sieve.errors import SieveError
from sieve.eval.metrics import exact_match, f1

SEARCH_TOOLS = ("search", "ranked_search")
# The rows of the paper's Table 3 (BQL usage): field
# restriction, Boolean operators (any, then each),
# quoted phrases, prefix wildcards, date filters, NEAR, and "plain": none of field, Boolean or date
# (a question counts when none of its searches used them).
OPERATORS = ("field", "boolean", "and", "or", "not", "phrase", "wildcard", "date", "near", "plain")
_STRUCTURED = {"field", "boolean", "date"}  # what a "plain" query does without
_EXPLICIT = {"AND": "and", "OR": "or", "NOT": "not", "MINUS": "not"}


def bql_features(query: str) -> set[str]:
    """Which of OPERATORS a query uses (`plain` when it parses and uses no field, Boolean operator
    or date); an unparseable query uses none.

    Boolean operators count only when written (`AND`, `OR`, `NOT`, `-x`, any case): words side by
    side are ANDed too, but that is how a plain query reads, not a Boolean combination the agent
    chose.
    """
    try:
        found = constructs(parse(query)) - {"boolean"}
        ops = {_EXPLICIT[t.type] for t in tokenize(query) if t.type in _EXPLICIT}
    except SieveError:
        return set()
    used = found | ops | ({"boolean"} if ops else set())
    return used if used & _STRUCTURED else used | {"plain"}


def _query(call: dict[str, Any]) -> str:
    args = call.get("arguments")
    return str(args.get("query", "")) if isinstance(args, dict) else ""


def bql_usage(records: list[dict[str, Any]]) -> tuple[dict[str, dict[str, float]], int]:
    """Table 3: for each of OPERATORS, the share of questions whose `search` calls used it at least
    once and the share of `search` calls that used it; and the number of `search` calls."""
    per_call = [
        [bql_features(_query(t)) for t in r.get("tool_calls", []) if t["name"] == "search"]
        for r in records
    ]
    calls = [f for q in per_call for f in q]
    per_q = [set().union(*q) if q else set() for q in per_call]
    n = len(records)
    # A question is plain when it searched and none of its
    # searches used a field, Boolean operator or date.
    per_q = [
        f - {"plain"} | ({"plain"} if q and not f & _STRUCTURED else set())
        for f, q in zip(per_q, per_call)
    ]
    usage = {
        op: {
            "questions": round(sum(1 for f in per_q if op in f) / n, 4) if n else 0.0,
            "calls": round(sum(1 for f in calls if op in f) / len(calls), 4) if calls else 0.0,
        }
        for op in OPERATORS
    }
    return usage, len(calls)


def episode_tokens(rec: dict[str, Any]) -> dict[str, int]:
    """A record's token figures (sieve.agent.loop): distinct (the largest prompt plus every
    completion), final_context (the last call's prompt and completion), largest_prompt and
    step_summed. A record written before distinct followed the reference implementation carries
    the last call's figure as "distinct": its figures are recomputed from its calls."""
    t = rec.get("tokens") or {}
    if "largest_prompt" in t or not rec.get("calls"):
        return {"final_context": t.get("distinct", 0), "largest_prompt": 0, **t}
    calls = rec["calls"]
    return {
        "step_summed": step_summed_tokens(calls),
        "distinct": distinct_tokens(calls),
        "final_context": final_context_tokens(calls),
        "largest_prompt": largest_prompt(calls),
    }


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


def summarize(
    records: Iterable[dict[str, Any]],
    gold_answers: dict[str, list[str]],
    gold_docs: dict[str, list[str]],
) -> dict[str, Any]:
    """A run's numbers over the records of questions with gold answers: accuracy (exact match), F1,
    means per question of distinct tokens (the reference implementation's: largest prompt plus every
    completion), final-context tokens (sieve's earlier figure) and step-summed tokens, LLM calls and
    tool calls by kind, the fallback rate of searches, gold-document recall, the failure
    composition, outcomes (answered, recovered, failed) and the recovered share, the number of
    `search` calls and their BQL usage."""
    recs = [r for r in records if r["question_id"] in gold_answers]
    n = len(recs)
    if n == 0:
        return {"questions": 0}
    scores = [score(r, gold_answers[r["question_id"]]) for r in recs]
    tokens = [episode_tokens(r) for r in recs]
    em = np.array([s["em"] for s in scores])
    searches = [t for r in recs for t in r.get("tool_calls", []) if t["name"] in SEARCH_TOOLS]
    usage, search_calls = bql_usage(recs)
    fails = [
        failure(r, gold_docs.get(r["question_id"], []), bool(s["em"])) for r, s in zip(recs, scores)
    ]
    with_gold = [r for r in recs if gold_docs.get(r["question_id"])]
    tools: dict[str, float] = {}
    for r in recs:
        for name, k in r.get("tool_calls_by_kind", {}).items():
            tools[name] = tools.get(name, 0) + k
    return {
        "questions": n,
        "accuracy": round(float(em.mean()), 4),
        "f1": round(float(np.mean([s["f1"] for s in scores])), 4),
        "distinct_tokens": round(float(np.mean([t["distinct"] for t in tokens])), 1),
        "final_context_tokens": round(float(np.mean([t["final_context"] for t in tokens])), 1),
        "step_summed_tokens": round(float(np.mean([t["step_summed"] for t in tokens])), 1),
        "llm_calls": round(float(np.mean([r["llm_calls"] for r in recs])), 3),
        "tool_calls": {k: round(v / n, 3) for k, v in sorted(tools.items())},
        "fallback_rate": round(sum(1 for t in searches if t.get("fallback")) / len(searches), 4)
        if searches
        else 0.0,
        "gold_recall": round(
            sum(
                1
                for r in with_gold
                if set(gold_docs[r["question_id"]]) & set(r.get("surfaced", []))
            )
            / len(with_gold),
            4,
        )
        if with_gold
        else None,
        "failures": {
            k: sum(1 for f in fails if f == k) for k in ("retrieval", "selection", "synthesis")
        },
        "outcomes": {
            k: sum(1 for r in recs if r["outcome"] == k)
            for k in ("answered", "recovered", "failed")
        },
        "recovered_share": round(sum(1 for r in recs if r["outcome"] == "recovered") / n, 4),
        # Episodes an exception inside sieve ended (a
        # bug, not the model): a resumed run redoes them.
        "crashed": sum(1 for r in recs if r.get("crashed")),
        "search_calls": search_calls,
        "bql_usage": usage,
    }
