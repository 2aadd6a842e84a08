"""The LLM judge against the real loopback OpenAI-protocol server: parsing, caching, the empty and
unparsed cases, and `judge_run` end to end on a run made by `run_collection` on the fixture collection."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from loopback import LoopbackServer, Say
from test_eval_run import FIX, scripted

from sieve.agent.llm import ChatClient
from sieve.cli import main
from sieve.eval.judge import Judge, judge_run, parse_verdict
from sieve.eval.run import run_collection


def field(body: dict[str, Any], name: str) -> str:
    m = re.search(rf"^{name}: (.*)$", body["messages"][-1]["content"], re.MULTILINE)
    assert m, body
    return m.group(1)


def fair(body: dict[str, Any]) -> Say:
    """CORRECT when the prediction appears in the reference line of the prompt."""
    pred, gold = field(body, "Predicted answer"), field(body, "Reference answer")
    return Say("CORRECT" if pred.lower() in gold.lower() else "INCORRECT")


def client(srv: LoopbackServer, model: str = "scripted") -> ChatClient:
    return ChatClient(srv.url, model, max_retries=0)


@pytest.mark.parametrize("reply,want", [
    ("CORRECT", True), ("incorrect", False), ("Correct.", True), ("  InCorrect - it names a different city", False),
    ("INCORRECT, though a correct answer exists", False), ("Verdict: correct (not incorrect)", True), ("yes", None), ("", None),
    ("incorrectly formatted", None),
])
def test_parse_verdict(reply: str, want: bool | None) -> None:
    assert parse_verdict(reply) is want


def test_verdicts_sent_and_parsed(tmp_path: Path) -> None:
    replies = iter(["Correct", "INCORRECT."])
    with LoopbackServer(lambda body: Say(next(replies))) as srv:
        j = Judge(client(srv), tmp_path / "cache.jsonl")
        assert j.verdict("Who founded Manila?", ["Legazpi"], "Miguel López de Legazpi") is True
        assert j.verdict("Capital?", ["Manila", "City of Manila"], "Quezon City") is False
    body = srv.requests[0]
    assert body["temperature"] == 0 and body["max_tokens"] == 16 and body["model"] == "scripted"
    prompt = srv.requests[1]["messages"][-1]["content"]
    assert "Capital?" in prompt and "Manila | City of Manila" in prompt and "Quezon City" in prompt and "{" not in prompt
    assert (j.asked, j.cached) == (2, 0)


def test_cache_hit_sends_nothing(tmp_path: Path) -> None:
    cache = tmp_path / "cache.jsonl"
    with LoopbackServer(fair) as srv:
        assert Judge(client(srv), cache).verdict("Q", ["Manila"], "Manila") is True
        assert len(srv.requests) == 1
    with LoopbackServer(lambda body: Say("INCORRECT")) as srv:
        j = Judge(client(srv), cache)  # a fresh instance reads the file
        assert j.verdict("Q", ["Manila"], "Manila") is True
        assert srv.requests == [] and (j.asked, j.cached) == (0, 1)
        # gold order does not matter; a different model or prediction is a different key
        assert j.verdict("Q", ["Manila"], "manila") is False and len(srv.requests) == 1
        assert Judge(client(srv, "other"), cache).verdict("Q", ["Manila"], "Manila") is False and len(srv.requests) == 2
    a, b = Judge(ChatClient("http://x/v1", "m"), cache), Judge(ChatClient("http://x/v1", "m"), cache)
    assert a.key("Q", ["x", "y"], "p") == b.key("Q", ["y", "x"], "p")
    assert len(cache.read_text().splitlines()) == 3


def test_empty_prediction_not_sent(tmp_path: Path) -> None:
    with LoopbackServer(lambda body: Say("CORRECT")) as srv:
        j = Judge(client(srv), tmp_path / "cache.jsonl")
        assert j.verdict("Q", ["Manila"], "") is False
        assert j.verdict("Q", ["Manila"], "   ") is False
    assert srv.requests == [] and (j.asked, j.cached) == (0, 0)


def test_unparsed_retried_once_then_incorrect(tmp_path: Path) -> None:
    cache = tmp_path / "cache.jsonl"
    with LoopbackServer(lambda body: Say("I cannot say.")) as srv:
        assert Judge(client(srv), cache).verdict("Q", ["Manila"], "Manila") is False
        assert len(srv.requests) == 2
    rec = json.loads(cache.read_text())
    assert rec["unparsed"] is True and rec["verdict"] is False and rec["replies"] == ["I cannot say.", "I cannot say."]
    replies = iter(["hmm", "correct"])
    with LoopbackServer(lambda body: Say(next(replies))) as srv:
        assert Judge(client(srv), tmp_path / "c2.jsonl").verdict("Q", ["Manila"], "Manila") is True
        assert len(srv.requests) == 2


def test_judge_run_end_to_end(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    collection = tmp_path / "beir"
    shutil.copytree(FIX, collection)
    run = tmp_path / "run"
    with LoopbackServer(scripted) as srv:
        s = run_collection(collection, run, "sieve", "bm25", [srv.url], "scripted", native=False, progress=False)
    assert s["accuracy"] == 0.5  # q1 right, q2 "Quezon City" wrong
    with LoopbackServer(fair, model="judge") as srv:
        block = judge_run(run, collection, client(srv, "judge"))
        assert len(srv.requests) == 2
    assert block == {"model": "judge", "accuracy": 0.5, "unparsed": 0, "cached": 0, "asked": 2}
    on_disk = json.loads((run / "summary.json").read_text())
    assert on_disk["judge"] == block and on_disk["accuracy"] == 0.5
    assert on_disk["per_question"]["q1"] == {"em": 1.0, "f1": 1.0, "judged": True}
    assert on_disk["per_question"]["q2"]["judged"] is False and on_disk["per_question"]["q2"]["em"] == 0.0
    assert (run / "judge-cache.jsonl").exists()
    # The CLI on the same run: every verdict from the cache, nothing sent.
    with LoopbackServer(lambda body: Say("CORRECT"), model="judge") as srv:
        assert main(["eval", "judge", str(run), "--collection", str(collection), "--llm-url", srv.url, "--model", "judge"]) == 0
        assert srv.requests == []
    assert "judged accuracy 0.500" in capsys.readouterr().out
    assert json.loads((run / "summary.json").read_text())["judge"] == {**block, "cached": 2, "asked": 0}
