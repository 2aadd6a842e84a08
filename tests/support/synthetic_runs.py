"""Synthetic but realistic run folders, as `sieve eval run` (and `eval judge`) leave them: one
`trajectories.jsonl` record per question in the loop's format and a `summary.json` written by the
harness's own `write_summary`. Seeded, so the same call writes the same bytes: the report's
snapshot tests read them.

`paper_runs(root)` writes 37 runs: two collections (`hotpotqa`, EM; `bcp-s`, judged with some
questions unjudged) and two backbones; on hotpotqa with the primary backbone the whole grid
(15 paper cells, the ablations on BM25+dense, the flat twins, the Indri controls, a second encoder)."""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sieve.eval.run import write_summary

PRIMARY, OTHER = "Tongyi-DeepResearch-30B-A3B", "Qwen-AgentWorld-35B-A3B"
BGE, MINILM = "BAAI/bge-base-en-v1.5", "sentence-transformers/all-MiniLM-L6-v2"
QUESTIONS = 12
# (condition, ranker) of the paper's 15 cells
PAPER = [("one-shot", "bm25"), ("one-shot", "dense"), ("autoread", "bm25"), ("autoread", "dense"), ("dci", "none"), ("bounded-dci", "bm25"),
         ("search-visit", "bm25"), ("search-visit", "dense"), ("search-visit", "hybrid"), ("search-fetch", "bm25"), ("search-fetch", "dense"),
         ("search-fetch", "hybrid"), ("sieve", "bm25"), ("sieve", "dense"), ("sieve", "hybrid")]
FAMILY = {"one-shot": "one-shot", "autoread": "autoread", "dci": "dci", "bounded-dci": "dci", "search-visit": "search-visit",
          "search-fetch": "search-fetch", "sieve": "sieve"}
SKILL = {"one-shot": 0.3, "autoread": 0.35, "dci": 0.3, "bounded-dci": 0.35, "search-visit": 0.45, "search-fetch": 0.5, "sieve": 0.6}
COST = {"one-shot": 3000, "autoread": 40000, "dci": 30000, "bounded-dci": 25000, "search-visit": 20000, "search-fetch": 15000, "sieve": 14000}
QUERIES = ['"Fort Santiago"[title] AND built', "Legazpi[title,body] OR founder", "manila -province", "intram* AND date[1500..1600]",
           '"walled city"', "Spanish fort", "Intramuros[section]"]


@dataclass(frozen=True)
class Q:
    id: str
    question: str
    answers: tuple[str, ...]
    gold_docs: tuple[str, ...]


def questions(collection: str) -> list[Q]:
    # Both collections number their questions q01..: a report must pair by (collection, id).
    return [Q(f"q{i + 1:02d}", f"{collection} question {i + 1}?", (f"answer {i + 1}",), (f"d{i + 1}",) if i % 6 else ()) for i in range(QUESTIONS)]


def _record(rng: random.Random, q: Q, condition: str, ranker: str, backbone: str, skill: float, cost: int) -> dict[str, Any]:
    # A question's difficulty is the same in every run, so runs agree on most questions, as real ones do.
    hard = random.Random(f"difficulty/{q.question}").random()
    right = 0.7 * hard + 0.3 * rng.random() < skill
    calls = 1 if condition == "one-shot" else rng.randint(3, 30)
    prompts = [1400 + int(cost * (k + 1) / calls * rng.uniform(0.6, 1.4)) for k in range(calls)]
    completions = [rng.randint(20, 400) for _ in range(calls)]
    tools: list[dict[str, Any]] = []
    if condition in ("sieve",):
        for _ in range(rng.randint(1, 4)):
            fallback = rng.random() < 0.4
            tools.append({"name": "search", "arguments": {"query": rng.choice(QUERIES)}, "result_tokens": rng.randint(80, 300), "result": "cards",
                          "fallback": fallback, "admitted": 0 if fallback else rng.randint(1, 40)})
        tools.append({"name": "fetch", "arguments": {"sections": [{"doc": 1, "section": "History"}]}, "result_tokens": rng.randint(100, 2000),
                      "result": "section text"})
    elif condition in ("search-visit", "search-fetch", "autoread"):
        for _ in range(rng.randint(1, 4)):
            tools.append({"name": "ranked_search", "arguments": {"query": rng.choice(QUERIES)}, "result_tokens": rng.randint(80, 300), "result": "hits",
                          "fallback": False, "admitted": 5})
        tools.append({"name": "visit" if condition == "search-visit" else "fetch", "arguments": {"doc": 1}, "result_tokens": rng.randint(100, 4000),
                      "result": "text"})
    elif condition in ("dci", "bounded-dci"):
        tools += [{"name": "bash", "arguments": {"command": "rg -l Santiago . | head"}, "result_tokens": 40, "result": "./d1.txt"},
                  {"name": "read", "arguments": {"path": "d1.txt"}, "result_tokens": 900, "result": "text"}]
    gold = list(q.gold_docs)
    roll = rng.random()
    surfaced = gold if (right or roll < 0.6) else []
    opened = surfaced if (right or roll < 0.3) else []
    outcome = "answered" if rng.random() < 0.85 else rng.choice(["recovered", "failed"])
    answer = q.answers[0] if right else ("" if outcome == "failed" else "a wrong answer")
    by_kind: dict[str, int] = {}
    for t in tools:
        by_kind[t["name"]] = by_kind.get(t["name"], 0) + 1
    return {
        "question_id": q.id, "question": q.question,
        "config": {"model": backbone, "condition": condition, "ranker": ranker, "tool_style": "native",
                   "budgets": {"max_steps": 100, "context_window": 131072, "early_stop": 0.9, "max_tokens": 4096, "temperature": 0.6, "seed": 42},
                   "context_window": 131072, "prompt_hash": "0123456789abcdef"},
        "messages": [{"role": "system", "content": "You are a research agent."}, {"role": "user", "content": q.question},
                     {"role": "assistant", "content": f"<answer>{answer}</answer>"}],
        "calls": [{"prompt_tokens": p, "completion_tokens": c, "seconds": 0.5, "attempts": 1, "finish_reason": "stop"} for p, c in zip(prompts, completions)],
        "tool_calls": tools, "answer": answer or None, "outcome": outcome, "reason": "answer" if outcome != "failed" else "budget",
        "server_fault": False, "crashed": False, "seconds": 12.5, "surfaced": surfaced, "opened": opened, "format": 1,
        "tokens": {"step_summed": sum(prompts) + sum(completions), "distinct": max(prompts) + sum(completions)}, "llm_calls": calls,
        "tool_calls_by_kind": by_kind,
    }


def write_run(folder: Path, collection: str, condition: str, ranker: str, backbone: str = PRIMARY, *, twin: str = "structured", fallback: bool = True,
              snippet: str | None = None, diagnose: bool = False, fields: bool | None = None, encoder: str | None = None, judged: bool = False,
              unjudged: int = 0, seed: int = 0, skill: float | None = None) -> Path:
    """One run folder; `judged`: verdicts per question as `eval judge` writes them, the first
    `unjudged` of them left unjudged."""
    rng = random.Random(f"{collection}/{folder.name}/{backbone}/{seed}")
    qs = questions(collection)
    base = SKILL[condition] if skill is None else skill
    base += (0.05 if backbone == PRIMARY else -0.05) + (0.05 if ranker == "hybrid" else 0.0) - (0.1 if not fallback else 0.0)
    recs = {q.id: _record(rng, q, condition, ranker, backbone, base, COST[condition] * (2 if collection == "bcp-s" else 1)) for q in qs}
    folder.mkdir(parents=True)
    with (folder / "trajectories.jsonl").open("w", encoding="utf-8") as f:
        for r in recs.values():
            f.write(json.dumps(r, ensure_ascii=False) + "\n")
    dense = ranker in ("dense", "hybrid", "indri+dense")
    about: dict[str, Any] = {"name": folder.name, "condition": condition, "family": FAMILY[condition], "ranker": ranker, "twin": twin, "model": backbone,
                             "collection": f"/data/collections/{collection}", "format": "beir", "k": 5, "k_max": 5, "read_cap": 12000, "read_parts": False,
                             "max_steps": 100, "fallback": fallback, "diagnose": diagnose, "snippet": snippet or ("lead" if condition == "search-visit" else "query"),
                             "unparsed_dates": 0, "shell_sandbox": {"mechanism": "bwrap"} if "dci" in condition else None}
    if fields is not None:
        about["fields"] = fields
    if dense:
        model = encoder or BGE  # as eval run records it (sieve.eval.run: the encoder's identity)
        about["encoder"] = {"model": model, "dim": 384 if model == MINILM else 768, "fingerprint": f"sha256:{len(model):064x}",
                            "unit": "document", "search": "exact"}
    summary = write_summary(folder, recs, None, qs, about)  # type: ignore[arg-type]
    if judged:
        for k, q in enumerate(qs):
            if k < unjudged:
                summary["per_question"][q.id]["judged"] = None
            else:  # the judge forgives a few answers exact match calls wrong
                summary["per_question"][q.id]["judged"] = bool(summary["per_question"][q.id]["em"]) or (k % 5 == 0)
        summary["judge"] = {"model": "judge", "questions": len(qs), "unjudged": unjudged}
        (folder / "summary.json").write_text(json.dumps(summary, indent=1, ensure_ascii=False))
    return folder


def paper_runs(root: Path) -> list[Path]:
    """The fixed set of runs of the report's snapshot tests (see the module's docstring)."""
    runs = []
    hot = root / "hotpotqa" / "primary"
    for cond, ranker in PAPER:
        runs.append(write_run(hot / f"{cond}-{ranker}", "hotpotqa", cond, ranker))
    runs += [write_run(hot / "sieve-hybrid-strict", "hotpotqa", "sieve", "hybrid", fallback=False),
             write_run(hot / "sieve-hybrid-snippet-none", "hotpotqa", "sieve", "hybrid", snippet="none"),
             write_run(hot / "sieve-hybrid-no-fields", "hotpotqa", "sieve", "hybrid", fields=False),
             write_run(hot / "sieve-hybrid-diagnose", "hotpotqa", "sieve", "hybrid", diagnose=True),
             write_run(hot / "sieve-hybrid-flat", "hotpotqa", "sieve", "hybrid", twin="flat"),
             write_run(hot / "search-visit-bm25-flat", "hotpotqa", "search-visit", "bm25", twin="flat"),
             write_run(hot / "sieve-indri", "hotpotqa", "sieve", "indri"),
             write_run(hot / "sieve-indri+dense", "hotpotqa", "sieve", "indri+dense"),
             write_run(hot / "sieve-dense-minilm", "hotpotqa", "sieve", "dense", encoder=MINILM)]
    other = root / "hotpotqa" / "other"
    for cond, ranker in (("one-shot", "bm25"), ("search-visit", "bm25"), ("search-fetch", "hybrid"), ("sieve", "hybrid")):
        runs.append(write_run(other / f"{cond}-{ranker}", "hotpotqa", cond, ranker, OTHER))
    bcp = root / "bcp-s" / "primary"
    for cond, ranker in (("search-visit", "bm25"), ("search-fetch", "bm25"), ("search-fetch", "hybrid"), ("sieve", "bm25"), ("sieve", "hybrid"), ("dci", "none")):
        runs.append(write_run(bcp / f"{cond}-{ranker}", "bcp-s", cond, ranker, judged=True, unjudged=1 if cond == "sieve" else 0))
    runs.append(write_run(bcp / "sieve-hybrid-strict", "bcp-s", "sieve", "hybrid", fallback=False, judged=True))
    for cond, ranker in (("search-visit", "bm25"), ("sieve", "hybrid")):
        runs.append(write_run(root / "bcp-s" / "other" / f"{cond}-{ranker}", "bcp-s", cond, ranker, OTHER, judged=True))
    return runs
