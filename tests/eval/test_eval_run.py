"""`eval run` + `eval report` end to end with the scripted loopback model on a small real collection;
the summary must equal the numbers recomputed from the trajectory records."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from loopback import LoopbackServer, Say  # noqa: E402
from scripted_runs import FIX, scripted  # noqa: E402,F401  (the judge and report tests import them from here too)

from sieve.eval.metrics import exact_match  # noqa: E402
from sieve.eval.report.report import compare, load_run, plots, table  # noqa: E402
from sieve.eval.run import run_collection  # noqa: E402


@pytest.fixture()
def collection(tmp_path: Path) -> Path:
    import shutil

    shutil.copytree(FIX, tmp_path / "beir")
    return tmp_path / "beir"


def test_run_and_report(collection: Path, tmp_path: Path) -> None:
    with LoopbackServer(scripted) as srv:
        s = run_collection(collection, tmp_path / "runA", "sieve", "bm25", [srv.url], "scripted", native=False, progress=False)
        run_collection(collection, tmp_path / "runB", "search-fetch", "bm25", [srv.url], "scripted", native=False, progress=False, workers=2)
    assert s["questions"] == 2
    recs = [json.loads(x) for x in (tmp_path / "runA" / "trajectories.jsonl").read_text().splitlines()]
    golds = {"q1": ["Miguel López de Legazpi"], "q2": ["Manila", "City of Manila"]}
    acc = sum(exact_match(r["answer"] or "", golds[r["question_id"]]) for r in recs) / len(recs)
    assert s["accuracy"] == acc == 0.5
    assert s["distinct_tokens"] == pytest.approx(sum(r["tokens"]["distinct"] for r in recs) / 2, abs=0.05)
    assert s["step_summed_tokens"] == pytest.approx(sum(r["tokens"]["step_summed"] for r in recs) / 2, abs=0.05)
    assert s["llm_calls"] == sum(r["llm_calls"] for r in recs) / 2
    assert s["gold_recall"] == 0.5  # q1's gold surfaced; q2 never searched
    assert s["failures"] == {"retrieval": 1, "selection": 0, "synthesis": 0}
    assert s["bql_usage"]["field"] == {"questions": 0.5, "calls": 1.0} and s["bql_usage"]["phrase"] == {"questions": 0.0, "calls": 0.0}
    searches = [t for r in recs for t in r["tool_calls"] if t["name"] == "search"]
    assert [(t["fallback"], t["admitted"]) for t in searches] == [(False, 1)] and s["fallback_rate"] == 0.0
    on_disk = json.loads((tmp_path / "runA" / "summary.json").read_text())
    assert on_disk["accuracy"] == s["accuracy"] and on_disk["per_question"]["q1"]["em"] == 1.0
    rows = compare([load_run(tmp_path / "runA"), load_run(tmp_path / "runB")])
    text = table(rows)
    assert "runA" in text and "runB" in text and rows[1]["p"]["accuracy"] == 1.0
    pictures = plots([load_run(tmp_path / "runA"), load_run(tmp_path / "runB")], tmp_path / "report")
    assert [p.name for p in pictures] == ["figure-1.png", "figure-3.png", "figure-7.png", "figure-8.png"]  # type: ignore[union-attr]
    assert all(p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and p.stat().st_size > 2000 for p in pictures)  # type: ignore[union-attr]
    # Resuming a finished run redoes nothing.
    with LoopbackServer(scripted) as srv:
        again = run_collection(collection, tmp_path / "runA", "sieve", "bm25", [srv.url], "scripted", native=False, progress=False)
        assert srv.requests == []
    assert again["accuracy"] == s["accuracy"]


def test_the_papers_budgets_hold_in_a_run(collection: Path, tmp_path: Path) -> None:
    """k = 5 per search is also the most an agent may ask for, and reads stop at the ceiling."""
    asked: list[str] = []

    def greedy(body: dict[str, Any]) -> Say:
        seen = "\n".join(str(m.get("content") or "") for m in body["messages"][2:])
        asked.append(seen)
        if len(asked) == 1:
            return Say('<tool_call>{"name": "search", "arguments": {"query": "Manila OR Intramuros OR church", "k": 50}}</tool_call>')
        if len(asked) == 2:
            return Say('<tool_call>{"name": "fetch", "arguments": {"sections": [{"doc": "d1", "section": "History", "part": 2}]}}</tool_call>')
        return Say("<answer>x</answer>")

    with LoopbackServer(greedy) as srv:
        s = run_collection(collection, tmp_path / "run", "sieve", "bm25", [srv.url], "scripted", native=False, progress=False, limit=1)
    assert (s["k"], s["read_cap"], s["read_parts"]) == (5, 12_000, False)
    rec = json.loads((tmp_path / "run" / "trajectories.jsonl").read_text().splitlines()[0])
    search, fetch = rec["tool_calls"][0], rec["tool_calls"][1]
    assert search["name"] == "search" and "k" in search["result"] and "at most 5" in search["result"], search["result"][:300]
    assert fetch["name"] == "fetch" and "only part 1" in fetch["result"], fetch["result"][:300]
