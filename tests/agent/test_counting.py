"""Counting as the paper counts, and a final answer that fits the window: a real loopback server
that reports reasoning beside the content (vLLM's reasoning parsers) and, where asked, refuses a
request over `max_model_len` exactly as vLLM does (HTTP 400, vLLM's error body)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from loopback import LoopbackServer, Say, count_tokens  # noqa: E402

import sieve  # noqa: E402
from sieve.agent.llm import ChatClient, ContextLengthError  # noqa: E402
from sieve.agent.loop import FINAL_NUDGE, Agent, Budgets  # noqa: E402
from sieve.agent.window import CUT_MARK, REMOVED, fit_messages  # noqa: E402
from sieve.tools import Toolset  # noqa: E402
from sieve.tools.shell.episode import make_tools  # noqa: E402
from sieve.corpus.demo import stdlib_documents  # noqa: E402

QUESTION = "What does the json module's documentation say JSON stands for?"
THOUGHT = "first I weigh which module documents the format and what its page says about the name"


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> sieve.Index:
    docs = [d for d in stdlib_documents() if d["id"] in {"json", "gzip", "zipfile", "csv", "smtplib"}]
    return sieve.build_index(docs, tmp_path_factory.mktemp("counting") / "idx")


def thinker(body: dict[str, Any]) -> Say:
    """Search, then answer; every reply thinks first (in the reasoning field, not the content)."""
    if not any(m["role"] == "tool" for m in body["messages"]):
        return Say("", [("search", json.dumps({"query": "json[title]"}))], reasoning=THOUGHT)
    return Say("<answer>JavaScript Object Notation</answer>", reasoning=THOUGHT + " and now I answer")


@pytest.mark.parametrize("field", ["reasoning_content", "reasoning"])
def test_distinct_is_the_largest_prompt_plus_every_completion_reasoning_included(index: sieve.Index, field: str) -> None:
    with LoopbackServer(thinker, reasoning_field=field) as srv:
        ep = Agent(ChatClient(srv.url, "scripted"), native_tools=True).run(QUESTION, Toolset.for_condition(index, "sieve"), "q1")
    assert ep.outcome == "answered" and len(ep.calls) == 2
    prompts = [count_tokens(b["messages"]) for b in srv.requests]
    thought = len(THOUGHT.split())
    # The server's usage counts the reasoning in the completion; the history never carries it.
    assert ep.calls[0]["completion_tokens"] == thought + len(json.dumps({"query": "json[title]"}).split())
    assert ep.calls[0]["reasoning"] == THOUGHT and ep.calls[1]["reasoning"].startswith(THOUGHT)
    assert all(THOUGHT not in json.dumps(m) for m in srv.requests[1]["messages"])
    tokens = ep.record()["tokens"]
    assert tokens["distinct"] == max(prompts) + ep.calls[0]["completion_tokens"] + ep.calls[1]["completion_tokens"]
    assert tokens["largest_prompt"] == max(prompts) == prompts[1]
    # sieve's earlier figure, kept under its own name, misses the first call's reasoning.
    assert tokens["final_context"] == prompts[1] + ep.calls[1]["completion_tokens"]
    assert tokens["distinct"] - tokens["final_context"] >= thought


@pytest.mark.parametrize("tokenize", [False, True])
def test_without_usage_the_reply_is_counted_reasoning_included(index: sieve.Index, tokenize: bool) -> None:
    """A server that reports no usage: the prompt and the reply (reasoning, content, tool-call
    arguments) are counted here, by the server's /tokenize where it has one (this model: 2 tokens
    per word), else in words; the call says it was counted."""
    per_word = 2 if tokenize else 1
    with LoopbackServer(thinker, usage=False, tokenize=tokenize, per_word=per_word) as srv:
        ep = Agent(ChatClient(srv.url, "scripted"), native_tools=True).run(QUESTION, Toolset.for_condition(index, "sieve"), "q1")
    answer = "<answer>JavaScript Object Notation</answer>"
    last = ep.calls[-1]
    assert last["counted"] is True
    assert last["completion_tokens"] == per_word * len((THOUGHT + " and now I answer " + answer).split())
    if tokenize:
        assert last["prompt_tokens"] == count_tokens(srv.requests[-1]["messages"], per_word)
    else:
        assert last["prompt_tokens"] == sum(len(str(m.get("content") or "").split()) for m in srv.requests[-1]["messages"])
    assert ep.record()["tokens"]["distinct"] >= ep.record()["tokens"]["largest_prompt"] > 0


@pytest.fixture(scope="module")
def long_index(tmp_path_factory: pytest.TempPathFactory) -> sieve.Index:
    """Six long documents about one thing: every AutoRead search brings back thousands of words."""
    filler = " ".join(f"word{i}" for i in range(350))
    docs = [{"id": f"d{i}", "title": f"Harbour report {i}", "sections": [{"heading": "(intro)", "text": f"The harbour master of port{i} wrote this. {filler}"}]}
            for i in range(6)]
    return sieve.build_index(docs, tmp_path_factory.mktemp("autoread") / "idx")


def autoreader(body: dict[str, Any]) -> Say:
    """AutoRead as the logs show it: search, search again with other words, and answer only when
    told to stop; it answers with the last document whose text it was shown."""
    joined = "\n".join(str(m.get("content") or "") for m in body["messages"])
    if FINAL_NUDGE in joined:
        shown = [w for w in joined.split() if w.startswith("port")]
        return Say(f"<answer>{len(shown)}</answer>")
    searched = sum(1 for m in body["messages"] if m["role"] == "tool")
    return Say("", [("ranked_search", json.dumps({"query": ["harbour master", "harbour report port", "port master"][min(searched, 2)]}))])


@pytest.mark.parametrize("tokenize", [False, True])
@pytest.mark.parametrize("per_word", [1, 2])
def test_autoread_final_answer_fits_the_window(long_index: sieve.Index, tokenize: bool, per_word: int) -> None:
    """The early stop fires after a search whose results pushed the history past the window: the
    final-answer request cuts those results, newest first, and fits the window as the server
    counts it (today it re-sent the oversized prompt, and the server refused it)."""
    window, answer_budget = 2600 * per_word, 200
    budgets = Budgets(max_tokens=answer_budget)
    with LoopbackServer(autoreader, max_model_len=window, enforce=True, tokenize=tokenize, per_word=per_word) as srv:
        agent = Agent(ChatClient(srv.url, "scripted", backoff=0.01), native_tools=True, budgets=budgets, condition="autoread")
        ep = agent.run("Which port's harbour master wrote the report?", make_tools(long_index, "autoread", k=5), "q1")
    assert ep.config["context_window"] == window
    assert ep.reason == "context budget" and ep.outcome == "answered", (ep.reason, ep.outcome)
    final = srv.requests[-1]["messages"]
    assert FINAL_NUDGE in str(final[-1]["content"])
    assert count_tokens(final, per_word) + answer_budget <= window
    assert any(CUT_MARK in str(m["content"]) or m["content"] == REMOVED for m in final if m["role"] == "tool")
    assert ep.messages[: len(final)] == final  # the trajectory holds what was sent
    tokens = ep.record()["tokens"]
    assert tokens["distinct"] >= tokens["largest_prompt"] == max(count_tokens(b["messages"], per_word) for b in srv.requests)


def test_no_episode_reports_fewer_distinct_tokens_than_its_largest_prompt() -> None:
    """A last call smaller than an earlier one (a history cut to fit, as the reference's trimmed
    history): the distinct figure still holds the largest prompt; the last call's figure does not."""
    from sieve.agent.loop import Episode

    ep = Episode("q1", "?", {}, calls=[{"prompt_tokens": 900, "completion_tokens": 40}, {"prompt_tokens": 1200, "completion_tokens": 30},
                                       {"prompt_tokens": 300, "completion_tokens": 5}])
    tokens = ep.record()["tokens"]
    assert tokens == {"distinct": 1200 + 75, "largest_prompt": 1200, "final_context": 305, "step_summed": 2475}
    assert Episode("q2", "?", {}).record()["tokens"]["distinct"] == 0


def test_a_refusal_cuts_again_until_the_request_fits(long_index: sieve.Index) -> None:
    """Counted by words (no /tokenize) and with no earlier call to learn the rate from, the first
    final request is too long for a 3-tokens-per-word model: the refusal's numbers rescale the
    count, and the request is cut again."""
    window, answer_budget = 3 * 1400, 100
    with LoopbackServer(autoreader, max_model_len=window, enforce=True, per_word=3) as srv:
        agent = Agent(ChatClient(srv.url, "scripted", backoff=0.01), native_tools=True, budgets=Budgets(max_tokens=answer_budget), condition="autoread")
        tools = make_tools(long_index, "autoread", k=5)
        messages = [{"role": "system", "content": "Answer."}, {"role": "user", "content": "Which port?"},
                    {"role": "assistant", "content": "", "tool_calls": [{"id": "c0", "type": "function", "function": {"name": "ranked_search", "arguments": "{}"}}]},
                    {"role": "tool", "tool_call_id": "c0", "content": tools.call("ranked_search", {"query": "harbour master"}).text},
                    {"role": "user", "content": FINAL_NUDGE}]
        from sieve.agent.loop import Episode

        ep = Episode("q1", "Which port?", {})
        c, sent = agent._complete_fitted(ep, messages)
    assert len(srv.refused) >= 1 and len(srv.requests) == 1
    assert count_tokens(sent, 3) + answer_budget <= window and CUT_MARK in sent[3]["content"]
    assert c.content.startswith("<answer>")


def test_a_window_smaller_than_configured_is_learnt_from_the_refusal(long_index: sieve.Index) -> None:
    """A server that reports no max_model_len but enforces 2,600 tokens, with /tokenize: the loop's
    call is refused mid-episode (its configured window is 8,000), and the final request takes the
    window the refusal names, is cut to it, and fits."""
    answer_budget = 200
    with LoopbackServer(autoreader, max_model_len=None, enforce=True, enforced_len=2600, tokenize=True) as srv:
        agent = Agent(ChatClient(srv.url, "scripted", backoff=0.01), native_tools=True,
                      budgets=Budgets(max_tokens=answer_budget, context_window=8000), condition="autoread")
        ep = agent.run("Which port's harbour master wrote the report?", make_tools(long_index, "autoread", k=5), "q1")
    assert ep.config["context_window"] == 8000 and srv.refused
    assert ep.reason == "context length" and ep.outcome == "answered", (ep.reason, ep.outcome)
    assert count_tokens(srv.requests[-1]["messages"]) + answer_budget <= 2600
    assert FINAL_NUDGE in str(srv.requests[-1]["messages"][-1]["content"])


def test_vllm_refusal_is_a_context_length_error() -> None:
    """The loopback's refusal is vLLM's: status 400, its body; the client reads it as a context error."""
    with LoopbackServer(lambda b: Say("x"), max_model_len=50, enforce=True) as srv:
        with pytest.raises(ContextLengthError, match=r"maximum context length is 50 tokens\. However, you requested 104 tokens \(4 in the messages, 100 in the completion\)"):
            ChatClient(srv.url, "scripted").complete([{"role": "user", "content": "hello"}], max_tokens=100)
        import urllib.request

        req = urllib.request.Request(srv.url + "/chat/completions", json.dumps({"model": "scripted", "messages": [], "max_tokens": 60}).encode(),
                                     {"Content-Type": "application/json"})
        with pytest.raises(urllib.error.HTTPError) as e:
            urllib.request.urlopen(req)
        body = json.loads(e.value.read())
    assert e.value.code == 400
    assert body == {"object": "error", "type": "BadRequestError", "param": None, "code": 400,
                    "message": "This model's maximum context length is 50 tokens. However, you requested 60 tokens (0 in the messages, 60 in the "
                               "completion). Please reduce the length of the messages or completion."}


def test_fit_messages_cuts_results_newest_first_and_keeps_the_question() -> None:
    msgs = [{"role": "system", "content": "s " * 10}, {"role": "user", "content": "q " * 10},
            {"role": "tool", "content": "old " * 50}, {"role": "user", "content": "<tool_response>\nline one\nnew " + "new " * 60 + "\n</tool_response>"}]

    def size(ms: list[dict[str, Any]]) -> int:
        return sum(len(str(m["content"]).split()) for m in ms)

    out = fit_messages(msgs, 100, size)
    assert size(out) <= 100 and out[:2] == msgs[:2] and out[2] == msgs[2]
    assert out[3]["content"].startswith("<tool_response>\nline one\nnew") and out[3]["content"].endswith(f"{CUT_MARK}\n</tool_response>")
    out = fit_messages(msgs, 40, size)
    assert out[3]["content"] == f"<tool_response>\n{REMOVED}\n</tool_response>" and CUT_MARK in out[2]["content"] and size(out) <= 40
    assert msgs[3]["content"].count("new") == 61  # the caller's messages are not changed
