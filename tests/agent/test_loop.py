"""The ReAct loop end to end: a real loopback server driven by a scripted policy that reads the tool
results it receives, against a real index. Both tool-call styles, malformed calls, faults, budgets,
early stop, recovery, resume, and token accounting checked by hand."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from loopback import Fault, LoopbackServer, Say, count_tokens  # noqa: E402

import sieve  # noqa: E402
from sieve.tools import Toolset  # noqa: E402
from sieve.agent.llm import ChatClient  # noqa: E402
from sieve.agent.loop import FINAL_NUDGE, Agent, Budgets  # noqa: E402
from sieve.agent.runner import Question, recorded, run_all  # noqa: E402
from sieve.corpus.demo import stdlib_documents  # noqa: E402

QUESTION = "What does the json module's documentation say JSON stands for?"


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> sieve.Index:
    docs = [d for d in stdlib_documents() if d["id"] in {"json", "gzip", "zipfile", "csv", "smtplib"}]
    return sieve.build_index(docs, tmp_path_factory.mktemp("loop") / "idx")


def texts(body: dict[str, Any]) -> list[str]:
    return [str(m.get("content") or "") for m in body["messages"]]


def researcher(native: bool, first: str = "") -> Any:
    """Search, then fetch the intro of rank 1, then answer with the first word of what it read."""

    def call(name: str, args: dict[str, Any]) -> Say:
        if native:
            return Say("", [(name, json.dumps(args))])
        return Say(f"<tool_call>{json.dumps({'name': name, 'arguments': args})}</tool_call>")

    def policy(body: dict[str, Any]) -> Say | Fault:
        seen = "\n".join(texts(body)[2:])
        if FINAL_NUDGE in seen:
            return Say("<answer>JSON</answer>")
        read = re.search(r"§ \(intro\)\n(\w+)", seen)  # the header line of a fetched section
        if read:
            return Say(f"I read it. <answer>{read.group(1)}</answer>")
        if "[1] json" in seen:
            return call("fetch", {"sections": [{"doc": 1, "section": "(intro)"}]})
        if first and not seen:
            return Say(first)
        return call("search", {"query": "json[title]"})

    return policy


def run(index: sieve.Index, policy: Any, native: bool = False, budgets: Budgets = Budgets(), **server: Any) -> tuple[Any, LoopbackServer]:
    with LoopbackServer(policy, **server) as srv:
        agent = Agent(ChatClient(srv.url, "scripted", backoff=0.01, timeout=2), native_tools=native, budgets=budgets)
        ep = agent.run(QUESTION, Toolset.for_condition(index, "sieve"), "q1")
    return ep, srv


def check_tokens(ep: Any, srv: LoopbackServer) -> None:
    """Recompute the server's usage from what it received, as the loopback counts it."""
    prompts = [count_tokens(b["messages"]) for b in srv.requests]
    assert [c["prompt_tokens"] for c in ep.calls] == prompts
    summed = sum(c["prompt_tokens"] + c["completion_tokens"] for c in ep.calls)
    largest = max(prompts)
    completions = sum(c["completion_tokens"] for c in ep.calls)
    assert ep.record()["tokens"] == {"step_summed": summed, "distinct": largest + completions, "largest_prompt": largest,
                                     "final_context": ep.calls[-1]["prompt_tokens"] + ep.calls[-1]["completion_tokens"]}
    assert ep.record()["llm_calls"] == len(srv.requests)


@pytest.mark.parametrize("native", [False, True])
def test_search_fetch_answer(index: sieve.Index, native: bool) -> None:
    ep, srv = run(index, researcher(native), native=native)
    assert ep.outcome == "answered" and ep.answer == "JSON"
    assert [t["name"] for t in ep.tool_calls] == ["search", "fetch"]
    assert ep.surfaced == ["json"] and ep.opened == ["json"]
    assert ep.record()["tool_calls_by_kind"] == {"search": 1, "fetch": 1}
    check_tokens(ep, srv)
    if native:
        assert srv.requests[0]["tools"][0]["function"]["name"] == "search"
        assert ep.messages[3]["role"] == "tool" and ep.messages[3]["tool_call_id"] == "call_0"
    else:
        assert "tools" not in srv.requests[0]
        assert ep.messages[3]["content"].startswith("<tool_response>\n1 document matches json[title]")
    assert ep.config["prompt_hash"] and ep.config["tool_style"] == ("native" if native else "text")


def test_truncated_call_json_is_repaired(index: sieve.Index) -> None:
    ep, _ = run(index, researcher(False, first='<tool_call>{"name": "search", "arguments": {"query": "json[title]'))
    assert ep.outcome == "answered" and ep.tool_calls[0]["arguments"] == {"query": "json[title]"}


def test_unknown_tool_and_no_call_are_explained(index: sieve.Index) -> None:
    ep, srv = run(index, researcher(False, first='<tool_call>{"name": "grep", "arguments": {}}</tool_call>'))
    assert ep.outcome == "answered"
    assert "unknown tool 'grep'; the tools are: answer, fetch, search" in texts(srv.requests[1])
    ep, srv = run(index, researcher(False, first="Let me think about it."))
    assert ep.outcome == "answered"
    assert any(t.startswith("No tool call or answer found in your reply.") for t in texts(srv.requests[1]))


def test_bad_query_comes_back_as_text(index: sieve.Index) -> None:
    ep, srv = run(index, researcher(False, first='<tool_call>{"name": "search", "arguments": {"query": "(json"}}</tool_call>'))
    assert ep.outcome == "answered"
    assert "expected a closing ')'" in ep.tool_calls[0]["result"]


@pytest.mark.parametrize("fault", [Fault(status=503), Fault(drop=True), Fault(delay=2.5)])
def test_server_failing_mid_run(index: sieve.Index, fault: Fault) -> None:
    inner = researcher(False)
    state = {"n": 0}

    def policy(body: dict[str, Any]) -> Say | Fault:
        state["n"] += 1
        return fault if state["n"] == 2 else inner(body)

    ep, srv = run(index, policy)
    assert ep.outcome == "answered" and ep.answer == "JSON"
    assert ep.calls[1]["attempts"] == 2


def test_server_down_for_good_is_a_recorded_failure(index: sieve.Index) -> None:
    inner = researcher(False)

    def policy(body: dict[str, Any]) -> Say | Fault:
        return Fault(status=500) if len(texts(body)) > 2 else inner(body)

    ep, _ = run(index, policy)
    assert ep.outcome == "failed" and ep.reason.startswith("model server: no answer from")


def searcher_forever(answer_on: str | None) -> Any:
    def policy(body: dict[str, Any]) -> Say:
        last = texts(body)[-1]
        if answer_on == "continue_final_message" and body.get("continue_final_message"):
            return Say("Paris</answer>")  # the server continues the pre-opened "<answer>"
        if answer_on is not None and answer_on in last:
            return Say("<answer>Paris</answer>")
        return Say('<tool_call>{"name": "search", "arguments": {"query": "json"}}</tool_call>')

    return policy


def test_step_budget_then_final_answer(index: sieve.Index) -> None:
    """The step budget holds the final-answer request: 3 tool-using calls, then the request, 5 at most."""
    ep, srv = run(index, searcher_forever(FINAL_NUDGE), budgets=Budgets(max_steps=5))
    assert ep.reason == "step budget" and ep.outcome == "answered" and ep.answer == "Paris"
    assert len(srv.requests) == 4 and len(ep.tool_calls) == 3


def test_recovery_by_re_asking(index: sieve.Index) -> None:
    ep, srv = run(index, searcher_forever("Reply with only your final answer"), budgets=Budgets(max_steps=3))
    assert ep.outcome == "recovered" and ep.answer == "Paris" and len(srv.requests) == 3


@pytest.mark.parametrize("steps", [100, 2, 1])
def test_an_episode_makes_at_most_max_steps_model_calls(index: sieve.Index, steps: int) -> None:
    """The paper's 100 steps bound every model call, the final request and its recovery included
    (the loop used to make 100 calls and then two more)."""
    ep, srv = run(index, searcher_forever(None), budgets=Budgets(max_steps=steps))
    assert len(srv.requests) == ep.record()["llm_calls"] == steps and ep.outcome == "failed"
    assert len(ep.tool_calls) == max(1, steps - 2)
    assert ep.reason == {100: "step budget; no answer after recovery", 2: "step budget; no model call left for the recovery",
                         1: "step budget; no model call left for the answer"}[steps]


def test_recovery_pre_opens_the_answer_on_vllm(index: sieve.Index) -> None:
    ep, srv = run(index, searcher_forever("continue_final_message"), budgets=Budgets(max_steps=3), owned_by="vllm")
    assert ep.outcome == "recovered" and ep.answer == "Paris"
    last = srv.requests[-1]
    assert last["continue_final_message"] is True and last["add_generation_prompt"] is False
    assert last["messages"][-1] == {"role": "assistant", "content": "<answer>"}


def test_nothing_ever_answers(index: sieve.Index) -> None:
    ep, srv = run(index, searcher_forever(None), budgets=Budgets(max_steps=3))
    assert ep.outcome == "failed" and ep.reason == "step budget; no answer after recovery"


def test_context_early_stop(index: sieve.Index) -> None:
    ep, srv = run(index, researcher(False), max_model_len=400)
    assert ep.config["context_window"] == 400
    assert ep.reason == "context budget" and ep.outcome == "answered"
    assert FINAL_NUDGE in texts(srv.requests[-1])[-1]


def test_context_length_error_ends_through_the_final_answer(index: sieve.Index) -> None:
    inner = researcher(False)
    error = '{"message": "This model\'s maximum context length is 1000 tokens. However, you requested 2000 tokens."}'

    def policy(body: dict[str, Any]) -> Say | Fault:
        joined = "\n".join(texts(body))
        if "§ (intro)\n" in joined and FINAL_NUDGE not in joined:  # a fetched section is in the prompt
            return Fault(status=400, body=error)
        return inner(body)

    ep, srv = run(index, policy)
    assert ep.reason == "context length" and ep.outcome == "answered"
    assert any("[result removed: it did not fit in the context window]" in t for t in texts(srv.requests[-1]))


def test_runs_resume_and_lose_nothing(index: sieve.Index, tmp_path: Path) -> None:
    out = tmp_path / "run" / "trajectories.jsonl"
    questions = [Question(f"q{i}", QUESTION) for i in range(6)]
    with LoopbackServer(researcher(False)) as a, LoopbackServer(researcher(True)) as b:
        agents = [Agent(ChatClient(s.url, "scripted", backoff=0.01)) for s in (a, b)]
        run_all(questions[:3], agents, lambda: Toolset.for_condition(index, "sieve"), out, workers=2)
        # A crash mid-write leaves half a line: it is dropped, and that question is redone.
        with open(out, "ab") as fh:
            fh.write(b'{"question_id": "q3", "answ')
        done = run_all(questions, agents, lambda: Toolset.for_condition(index, "sieve"), out, workers=3)
    lines = out.read_text().splitlines()
    assert sorted(json.loads(x)["question_id"] for x in lines) == [f"q{i}" for i in range(6)]
    assert set(done) == {f"q{i}" for i in range(6)} and all(r["outcome"] == "answered" for r in done.values())
    assert recorded(out) == done


@pytest.mark.parametrize("name", ["one-shot", "rag"])
def test_one_shot_retrieves_once_then_answers_without_tools(index: sieve.Index, name: str) -> None:
    def policy(body: dict[str, Any]) -> Say:
        system = texts(body)[0]
        assert "tools" not in body or not body["tools"]
        # the passages are the ranked listing of the question's words: the json page is among them
        return Say("<answer>JSON</answer>" if "[1] " in system and "json" in system else "<answer>none</answer>")

    with LoopbackServer(policy) as srv:
        agent = Agent(ChatClient(srv.url, "scripted", backoff=0.01, timeout=2), condition=name)
        ep = agent.run(QUESTION, Toolset.for_condition(index, name), "q1")
    assert ep.outcome == "answered" and ep.answer == "JSON"
    assert [t["name"] for t in ep.tool_calls] == ["ranked_search"] and len(srv.requests) == 1
    assert ep.tool_calls[0]["fallback"] is False and ep.tool_calls[0]["admitted"] > 0  # the search's facts are recorded
    assert ep.record()["config"]["condition"] == name and "json" in ep.surfaced


def test_search_facts_are_recorded_per_call(index: sieve.Index) -> None:
    ep, _ = run(index, researcher(False))
    search, fetch = ep.tool_calls
    assert (search["fallback"], search["admitted"]) == (False, 1)
    assert "fallback" not in fetch and "admitted" not in fetch


def test_an_unknown_condition_is_refused_before_any_call(index: sieve.Index) -> None:
    from sieve.errors import InvalidArgumentError

    with LoopbackServer(lambda body: Say("<answer>x</answer>")) as srv:
        with pytest.raises(InvalidArgumentError, match="unknown condition 'grep-agent'; choose from one-shot, autoread, dci, bounded-dci, search-visit, search-fetch, sieve, "
                           "sieve\\+diagnose, sieve\\+manual, sieve\\+ranked-fallback, sieve\\+all, indri-control, rag"):
            Agent(ChatClient(srv.url, "scripted", backoff=0.01, timeout=2), condition="grep-agent")
        assert not srv.requests or all(r.get("messages") is None for r in srv.requests)


@pytest.mark.parametrize("field,value", [("max_steps", 0), ("max_tokens", -1), ("early_stop", 0), ("early_stop", 1.5), ("context_window", -5), ("max_steps", True)])
def test_budgets_refuse_nonsense(field: str, value: object) -> None:
    from sieve.agent.loop import Budgets
    from sieve.errors import InvalidArgumentError

    with pytest.raises(InvalidArgumentError, match=field):
        Budgets(**{field: value})  # type: ignore[arg-type]
