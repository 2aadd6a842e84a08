"""A model server that misbehaves at the byte level cannot take the client down: every broken reply
is a retried server fault with a recorded reason, memory and time per attempt are bounded, and a
resumed evaluation run redoes the episodes such faults failed. Real sockets on loopback throughout."""

from __future__ import annotations

import json
import re
import resource
import time
from pathlib import Path
from typing import Any

import pytest

import sieve
from loopback import LoopbackServer, RawServer, Say, completion, http_reply
from sieve.agent.llm import ChatClient, LLMError
from sieve.agent.loop import Agent
from sieve.agent.runner import Question, recorded, run_all
from sieve.corpus.demo import stdlib_documents
from sieve.tools import Toolset

MSGS = [{"role": "user", "content": "hi"}]
GOOD = http_reply(completion({"role": "assistant", "content": "fine"}, {"prompt_tokens": 3, "completion_tokens": 1}))


def client(url: str, **kw: Any) -> ChatClient:
    return ChatClient(url, "m", **{"max_retries": 1, "backoff": 0.01, "timeout": 2.0, **kw})


def _fails(server: RawServer, reason: str, **kw: Any) -> LLMError:
    with server:
        with pytest.raises(LLMError) as info:
            client(server.url, **kw).complete(MSGS)
    e = info.value
    assert e.fault and reason in str(e) and "after 2 attempts" in str(e), str(e)
    assert server.requests == 2  # retried once
    return e


MALFORMED = {
    "choices not a list": (b'{"choices": "x"}', "no choices list"),
    "content an int": (completion({"role": "assistant", "content": 7}), "message content is int"),
    "deeply nested": (b"[" * 100_000 + b"]" * 100_000, "not JSON"),
    "usage overflows": (b'{"choices": [{"message": {"content": "a"}}], "usage": {"prompt_tokens": 1e400}}', "usage.prompt_tokens is inf"),
    "usage negative": (completion({"content": "a"}, {"prompt_tokens": -4}), "usage.prompt_tokens is -4"),
    "tool call without a name": (completion({"content": None, "tool_calls": [{"function": {"arguments": "{}"}}]}), "tool call 0 has no function name"),
    "a JSON list": (b"[]", "a JSON list, not an object"),
    "not JSON": (b"<html>busy</html>", "not JSON"),
}


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_malformed_replies_are_retried_server_faults(case: str) -> None:
    body, reason = MALFORMED[case]
    _fails(RawServer(lambda path: http_reply(body)), reason)


def test_a_malformed_reply_then_a_good_one_succeeds() -> None:
    replies = iter([http_reply(b'{"choices": "x"}'), GOOD])
    with RawServer(lambda path: next(replies)) as server:
        c = client(server.url).complete(MSGS)
    assert (c.content, c.attempts, c.prompt_tokens) == ("fine", 2, 3)


def test_content_as_a_list_of_parts_is_accepted() -> None:
    parts = [{"type": "text", "text": "Paris "}, {"type": "image_url", "image_url": {"url": "x"}}, {"type": "text", "text": "is the capital."}]
    with RawServer(lambda path: http_reply(completion({"role": "assistant", "content": parts}))) as server:
        c = client(server.url).complete(MSGS)
    assert c.content == "Paris is the capital." and c.attempts == 1


BROKEN_HTTP = {
    "short body": (http_reply(b'{"choices": []}', length=500), "IncompleteRead"),
    "bad status line": (b"HTTP/1.1 OK-ish\r\n\r\n{}", "BadStatusLine"),
    "no status line": (b"hello\r\n\r\n", "BadStatusLine"),
    "huge header": (http_reply(b"{}", headers=("X-Big: " + "a" * 100_000,)), "LineTooLong"),
    "too many headers": (http_reply(b"{}", headers=tuple(f"X-{i}: v" for i in range(500))), "got more than 100 headers"),
    "connection closed": (b"", "RemoteDisconnected"),
    "503": (http_reply(b'{"error": "busy"}', status="503 Service Unavailable"), "HTTP 503"),
}


@pytest.mark.parametrize("case", sorted(BROKEN_HTTP))
def test_broken_http_is_a_retried_server_fault(case: str) -> None:
    raw, reason = BROKEN_HTTP[case]
    _fails(RawServer(lambda path: raw), reason)


def test_a_refusal_is_not_a_fault_and_is_not_retried() -> None:
    with RawServer(lambda path: http_reply(b'{"error": "bad request: unknown field"}', status="400 Bad Request")) as server:
        with pytest.raises(LLMError) as info:
            client(server.url).complete(MSGS)
    assert not info.value.fault and info.value.status == 400 and server.requests == 1


def test_an_endless_reply_is_cut_at_the_size_cap_with_bounded_memory() -> None:
    """The server sends a body without end (no Content-Length): the client stops at 4 MiB."""

    def endless(path: str) -> Any:
        yield b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n"
        while True:
            yield b'{"choices": [' * 4096

    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    _fails(RawServer(endless), "reply larger than 4194304 bytes", max_reply_bytes=4 << 20)
    grown_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    assert grown_mb < 64, grown_mb


def test_a_large_reply_with_a_length_is_refused_too() -> None:
    body = completion({"content": "x" * (3 << 20)})
    _fails(RawServer(lambda path: http_reply(body)), "reply larger than 1048576 bytes", max_reply_bytes=1 << 20)


@pytest.mark.parametrize("where", ["headers", "body"])
def test_a_dribbling_server_is_cut_at_the_deadline(where: str) -> None:
    """One byte at a time: every read succeeds, so only an overall deadline ends the attempt,
    whether it runs out while the headers or the body are arriving."""
    body = completion({"role": "assistant", "content": "fine"})
    data = http_reply(body if where == "headers" else b" " * 2000 + body)  # leading spaces: still valid JSON
    fast = 0 if where == "headers" else len(data) - len(body) - 2000

    def dribble(path: str) -> Any:
        yield data[:fast]
        for i in range(fast, len(data)):
            yield data[i : i + 1]

    t0 = time.monotonic()
    _fails(RawServer(dribble, pace=0.05 if where == "headers" else 0.002), "no complete reply within 0.5 s", timeout=0.5)
    assert time.monotonic() - t0 < 3.0


# ------------------------------------------------------------------ the call's total deadline

DEADLINE_FIRED = (r"llm deadline: no answer from http://127\.0\.0\.1:\d+/v1/chat/completions within the call's total deadline of {deadline} s "
                  r"\({attempts} in \d+\.\d s; last: {last}\)")


def dribbling(path: str) -> Any:
    """A chat reply sent one byte at a time (RawServer's `pace` apart), slower than any test waits;
    anything but a chat completion is a quick 404."""
    if not path.endswith("/chat/completions"):
        return http_reply(b'{"error": "not found"}', status="404 Not Found")
    data = http_reply(b" " * 100_000 + completion({"role": "assistant", "content": "fine"}))
    return (data[i : i + 1] for i in range(len(data)))


def test_a_dribbling_server_cannot_hold_a_call_past_its_total_deadline() -> None:
    """Every read succeeds and each attempt stops at its timeout, so only the total deadline bounds
    the call: without it these retries would take five times the timeout."""
    with RawServer(dribbling, pace=0.05) as server:
        t0 = time.monotonic()
        with pytest.raises(LLMError) as info:
            client(server.url, timeout=1.0, max_retries=4, backoff=0.05, deadline=1.5).complete(MSGS)
        took = time.monotonic() - t0
    e = info.value
    assert re.fullmatch(DEADLINE_FIRED.format(deadline="1.5", attempts="2 attempts", last=r"no complete reply within 0\.\d+ s"), str(e)), str(e)
    assert e.fault and server.requests == 2
    assert took < 1.5 + 1.0, took  # the deadline, not (retries + 1) x timeout


def test_no_backoff_sleeps_past_the_deadline() -> None:
    with RawServer(lambda path: http_reply(b'{"error": "busy"}', status="503 Service Unavailable")) as server:
        t0 = time.monotonic()
        with pytest.raises(LLMError) as info:
            client(server.url, max_retries=3, backoff=4.0, deadline=1.0).complete(MSGS)  # the first backoff sleeps 2 to 4 s
        took = time.monotonic() - t0
    e = info.value
    assert re.fullmatch(DEADLINE_FIRED.format(deadline="1", attempts="1 attempt", last=r'HTTP 503: \{"error": "busy"\}'), str(e)), str(e)
    assert e.fault and e.status == 503 and server.requests == 1 and took < 1.0


def test_a_slow_reply_within_the_deadline_still_succeeds() -> None:
    body = completion({"role": "assistant", "content": "fine"}, {"prompt_tokens": 3, "completion_tokens": 1})
    data = http_reply(body)
    slow = [data[i : i + len(data) // 20 + 1] for i in range(0, len(data), len(data) // 20 + 1)]  # about 20 pieces, 30 ms apart
    with RawServer(lambda path: iter(slow), pace=0.03) as server:
        c = client(server.url, timeout=1.0, max_retries=4, deadline=1.5).complete(MSGS)
    assert (c.content, c.attempts, server.requests) == ("fine", 1, 1)
    # A first attempt cut at its timeout, then a quick answer: the retry fits in the deadline.
    replies = iter([(data[i : i + 1] for i in range(len(data))), [data]])
    with RawServer(lambda path: next(replies), pace=0.05) as server:
        c = client(server.url, timeout=0.5, max_retries=4, backoff=0.05, deadline=1.5).complete(MSGS)
    assert (c.content, c.attempts, server.requests) == ("fine", 2, 2)


def test_a_deadline_is_a_positive_number_of_seconds(capsys: pytest.CaptureFixture[str]) -> None:
    for bad in (0, -1.0, float("nan"), float("inf"), True):
        with pytest.raises(sieve.InvalidArgumentError) as info:
            ChatClient("http://127.0.0.1:9/v1", "m", deadline=bad)
        assert str(info.value) == f"the model call's deadline is a number of seconds above 0, not {bad!r}"


def test_models_answering_nonsense_means_unknown() -> None:
    cases = {b"[]": "unknown", b'{"data": "x"}': "unknown", b"[" * 50_000: "unknown",
             b'{"data": [1, {"id": "m", "max_model_len": true}]}': "openai-compatible"}
    for body, kind in cases.items():
        with RawServer(lambda path, body=body: http_reply(body)) as server:
            c = client(server.url, max_retries=0)
            assert c.server_kind() == kind
            assert c.max_model_len() is None


def test_a_url_that_is_not_http_is_refused_clearly() -> None:
    with pytest.raises(LLMError, match="model server URL must be http"):
        ChatClient("localhost:8000/v1", "m")


# ------------------------------------------------------------------ eval resume


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> sieve.Index:
    docs = [d for d in stdlib_documents() if d["id"] in {"json", "gzip", "csv"}]
    return sieve.build_index(docs, tmp_path_factory.mktemp("faults") / "idx")


def test_resume_redoes_episodes_that_failed_on_server_faults(index: sieve.Index, tmp_path: Path) -> None:
    out = tmp_path / "run.jsonl"
    questions = [Question(f"q{i}", f"question {i}?") for i in range(4)]

    def flaky(body: dict[str, Any]) -> Say:
        return Say("<answer>42</answer>")

    broken = {"q1", "q3"}
    with LoopbackServer(flaky) as good:
        with RawServer(lambda path: http_reply(b'{"choices": "x"}')) as bad:
            class Routing(ChatClient):
                """Questions q1 and q3 go to the broken server."""

                def complete(self, messages: list[dict[str, Any]], *a: Any, **kw: Any) -> Any:
                    user = next(m["content"] for m in messages if m["role"] == "user")
                    target = bad if any(f"question {q[1:]}?" == user for q in broken) else good
                    return ChatClient(target.url, "m", max_retries=1, backoff=0.01).complete(messages, *a, **kw)

            agent = Agent(Routing(good.url, "m"), native_tools=False)
            first = run_all(questions, [agent], lambda: Toolset.for_condition(index, "sieve"), out)
        assert {q for q, r in first.items() if r["outcome"] == "failed"} == broken
        assert all(first[q]["server_fault"] and "malformed reply" in first[q]["reason"] for q in broken)
        assert not any(first[q]["server_fault"] for q in first if q not in broken)
        # The server is mended; a resumed run redoes the two, and only them.
        agent = Agent(ChatClient(good.url, "m", backoff=0.01), native_tools=False)
        n_before = len(good.requests)
        done = run_all(questions, [agent], lambda: Toolset.for_condition(index, "sieve"), out)
        assert len(good.requests) - n_before == 2
    assert all(r["outcome"] == "answered" and not r["server_fault"] for r in done.values())
    assert recorded(out) == done and len(out.read_text().splitlines()) == 6
    assert [json.loads(x)["question_id"] for x in out.read_text().splitlines()][-2:] in (["q1", "q3"], ["q3", "q1"])


def test_an_episode_against_a_dribbling_server_records_the_deadline(index: sieve.Index, tmp_path: Path) -> None:
    """The loop ends the episode (no crash) and its record says the deadline fired; a resumed run
    would redo it (server_fault)."""
    out = tmp_path / "run.jsonl"
    with RawServer(dribbling, pace=0.05) as server:
        agent = Agent(client(server.url, timeout=1.0, max_retries=4, backoff=0.05, deadline=1.5), native_tools=False)
        done = run_all([Question("q0", "what is json?")], [agent], lambda: Toolset.for_condition(index, "sieve"), out)
    rec = json.loads(out.read_text().splitlines()[0])
    assert rec == done["q0"] and rec["outcome"] == "failed" and rec["server_fault"] and not rec["crashed"] and rec["llm_calls"] == 0
    assert re.fullmatch("model server: " + DEADLINE_FIRED.format(deadline="1.5", attempts="2 attempts", last=r"no complete reply within 0\.\d+ s"),
                        rec["reason"]), rec["reason"]


def test_sieve_ask_takes_the_deadline_and_says_when_it_fired(index: sieve.Index, capsys: pytest.CaptureFixture[str]) -> None:
    from sieve.cli.main import main

    with RawServer(dribbling, pace=0.05) as server:
        code = main(["ask", str(index.path), "what is json?", "--llm-url", server.url, "--model", "m", "--tool-style", "text", "--llm-deadline", "1.5"])
    err = capsys.readouterr().err
    assert code == 1 and re.search(DEADLINE_FIRED.format(deadline="1.5", attempts="1 attempt", last=r"no complete reply within 1\.5 s"), err), err
