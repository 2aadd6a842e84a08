"""The indri-control condition: the `indri_search` tool over a real index, its manual, its errors,
and an agent that uses it through the real loop against the loopback model server."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from loopback import LoopbackServer, Say  # noqa: E402

import sieve
from sieve.agent.llm import ChatClient
from sieve.agent.loop import FINAL_NUDGE, Agent
from sieve.corpus.demo import stdlib_documents
from sieve.errors import InvalidArgumentError
from sieve.eval.grid import plan
from sieve.tools.shell.episode import make_tools


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> sieve.Index:
    docs = [d for d in stdlib_documents() if d["id"] in {"json", "gzip", "zipfile", "csv", "smtplib"}]
    return sieve.build_index(docs, tmp_path_factory.mktemp("indri") / "idx")


def test_the_tool_ranks_an_indri_query_and_fetch_reads_its_ranks(index: sieve.Index) -> None:
    tools = make_tools(index, "indri-control", ranker="indri")
    assert list(tools.tools) == ["indri_search", "fetch"]
    got = tools.call("indri_search", {"query": "#band(json.title #syn(encode* decode*))"})
    assert got.ok and got.text.startswith("1 document matches #band(json.title #syn(encode* decode*)); top 1 by indri:\n[1] json")
    assert got.facts == {"fallback": False, "admitted": 1}
    assert tools.call("fetch", {"sections": [{"doc": 1, "section": "intro"}]}).text.startswith("[json]")
    wide = tools.call("indri_search", {"query": "#combine(json gzip)", "k": 5})
    assert wide.text.startswith("2 documents match #combine(json gzip); top 2 by indri:")


def test_errors_are_observations_with_a_caret(index: sieve.Index) -> None:
    tools = make_tools(index, "indri-control", ranker="indri")
    got = tools.call("indri_search", {"query": "#combine(json gzip"})
    assert not got.ok
    assert got.text == ("indri_search error: #combine( is not closed at 18 (add ')' at the end of its operands)\n"
                        "  #combine(json gzip\n" + " " * 20 + "^")
    # BQL is not Indri: a BQL query reads as Indri words, and a tag is a syntax error.
    assert "unexpected '['" in tools.call("indri_search", {"query": "json[title]"}).text


def test_the_manual_teaches_indri_not_bql(index: sieve.Index) -> None:
    manual = make_tools(index, "indri-control", ranker="indri").manual()
    assert "## indri_search" in manual and "#band(a b)" in manual and "#uw8(a b)" in manual and "word.title" in manual
    assert "## search" not in manual and "NEAR/5" not in manual


def test_the_control_ranks_with_indri_only(index: sieve.Index) -> None:
    with pytest.raises(InvalidArgumentError, match="condition 'indri-control' ranks with indri or indri\\+dense"):
        make_tools(index, "indri-control", ranker="bm25")


def test_controls_run_the_indri_condition() -> None:
    names = [c.name for c in plan(["sieve"], ["bm25"], controls=True)]
    assert names == ["sieve-bm25", "indri-control-indri", "indri-control-indri+dense"]
    assert "indri-control-indri" not in [c.name for c in plan()]  # the paper's grid leaves the control out unless asked
    assert [c.name for c in plan(["indri-control"])] == ["indri-control-indri", "indri-control-indri+dense"]


def test_an_agent_searches_in_indri_and_answers(index: sieve.Index) -> None:
    """The real loop over the loopback server: the scripted model writes an Indri query, reads the
    card, fetches the intro of rank 1, and answers with its first word."""

    def policy(body: dict[str, Any]) -> Say:
        seen = "\n".join(str(m.get("content") or "") for m in body["messages"][2:])
        if FINAL_NUDGE in seen:
            return Say("<answer>none</answer>")
        read = re.search(r"§ \(intro\)\n(\w+)", seen)
        if read:
            return Say(f"<answer>{read.group(1)}</answer>")
        if "[1] json" in seen:
            call = {"name": "fetch", "arguments": {"sections": [{"doc": 1, "section": "(intro)"}]}}
        else:
            call = {"name": "indri_search", "arguments": {"query": "#combine(#1(json encoder).body json.title)"}}
        return Say(f"<tool_call>{json.dumps(call)}</tool_call>")

    with LoopbackServer(policy) as srv:
        agent = Agent(ChatClient(srv.url, "scripted", backoff=0.01, timeout=2))
        ep = agent.run("What does JSON stand for?", make_tools(index, "indri-control", ranker="indri"), "q1")
        system = srv.requests[0]["messages"][0]["content"] + srv.requests[0]["messages"][1]["content"]
    assert ep.outcome == "answered" and ep.answer
    assert [t["name"] for t in ep.tool_calls] == ["indri_search", "fetch"]
    assert ep.surfaced[0] == "json" and ep.opened == ["json"]
    assert "#combine" in system  # the manual reached the model
