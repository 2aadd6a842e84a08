"""The chat client against a real loopback server: replies, usage, retries, faults, context errors."""

from __future__ import annotations

import json
from typing import Any

import pytest

from loopback import Fault, LoopbackServer, Say, count_tokens  # noqa: E402

from sieve.agent.llm import ChatClient, ContextLengthError, LLMError  # noqa: E402

MSGS = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "capital of France?"}]


def test_reply_and_usage() -> None:
    with LoopbackServer(lambda body: Say("Paris it is")) as srv:
        c = ChatClient(srv.url, "scripted").complete(MSGS, max_tokens=50, temperature=0.6, seed=42)
    assert c.content == "Paris it is" and c.tool_calls == ()
    assert c.prompt_tokens == count_tokens(MSGS) == 3 + 2 + 3 + 3
    assert c.completion_tokens == 3
    body = srv.requests[0]
    assert body["model"] == "scripted" and body["max_tokens"] == 50 and body["temperature"] == 0.6 and body["seed"] == 42


def test_native_tool_calls() -> None:
    tools = [{"type": "function", "function": {"name": "search", "parameters": {"type": "object"}}}]
    with LoopbackServer(lambda body: Say("", [("search", json.dumps({"query": "x"}))])) as srv:
        c = ChatClient(srv.url, "scripted").complete(MSGS, tools=tools)
    assert [(t.name, json.loads(t.arguments)) for t in c.tool_calls] == [("search", {"query": "x"})]
    assert srv.requests[0]["tool_choice"] == "auto" and srv.requests[0]["tools"] == tools


@pytest.mark.parametrize("fault", [Fault(status=503), Fault(status=429), Fault(status=500), Fault(drop=True), Fault(delay=0.6)])
def test_transient_faults_are_retried(fault: Fault) -> None:
    calls = {"n": 0}

    def policy(body: dict[str, Any]) -> Say | Fault:
        calls["n"] += 1
        return fault if calls["n"] <= 2 else Say("ok")

    with LoopbackServer(policy) as srv:
        c = ChatClient(srv.url, "scripted", timeout=0.3, backoff=0.01).complete(MSGS)
    assert c.content == "ok" and c.attempts == 3 and calls["n"] == 3


def test_retries_are_bounded() -> None:
    with LoopbackServer(lambda body: Fault(status=503, body='{"error": "overloaded"}')) as srv:
        with pytest.raises(LLMError) as info:
            ChatClient(srv.url, "scripted", max_retries=2, backoff=0.01).complete(MSGS)
    assert len(srv.requests) == 3
    assert "after 3 attempts (HTTP 503" in str(info.value)


def test_context_length_is_its_own_error() -> None:
    body = '{"object": "error", "message": "This model\'s maximum context length is 2048 tokens. However, you requested 5000 tokens (4000 in the messages, 1000 in the completion).", "code": 400}'
    with LoopbackServer(lambda b: Fault(status=400, body=body)) as srv:
        with pytest.raises(ContextLengthError):
            ChatClient(srv.url, "scripted", backoff=0.01).complete(MSGS)
    assert len(srv.requests) == 1  # never retried


def test_other_client_errors_fail_at_once() -> None:
    with LoopbackServer(lambda b: Fault(status=404, body='{"error": "no such model"}')) as srv:
        with pytest.raises(LLMError) as info:
            ChatClient(srv.url, "scripted", backoff=0.01).complete(MSGS)
    assert info.value.status == 404 and len(srv.requests) == 1


def test_connection_refused_is_an_llm_error() -> None:
    with pytest.raises(LLMError, match="after 2 attempts"):
        ChatClient("http://127.0.0.1:9/v1", "m", max_retries=1, backoff=0.01, timeout=1).complete(MSGS)


def test_max_model_len_from_models() -> None:
    with LoopbackServer(lambda b: Say("x"), max_model_len=32768) as srv:
        assert ChatClient(srv.url, "scripted").max_model_len() == 32768
    with LoopbackServer(lambda b: Say("x"), max_model_len=None) as srv:
        assert ChatClient(srv.url, "scripted").max_model_len() is None
