"""The text tool-call protocol: tolerant reading, strict refusal."""

from __future__ import annotations

import pytest

from sieve.agent.protocol import ParsedCall, parse_native, parse_text, repair_json

TOOLS = {"search", "fetch", "answer"}


@pytest.mark.parametrize(
    "text, value",
    [
        ('{"a": 1}', {"a": 1}),
        ('{"name": "search", "arguments": {"query": "a b', {"name": "search", "arguments": {"query": "a b"}}),
        ('{"a": [1, 2', {"a": [1, 2]}),
        ('{"a": 1,', {"a": 1}),
        ('{"a": 1, "b', {"a": 1}),
        ('{"a": 1, "b":', {"a": 1}),
        ('```json\n{"x": 1}\n```', {"x": 1}),
        ('{"q": "say \\"hi', {"q": 'say "hi'}),
    ],
)
def test_repair(text: str, value: object) -> None:
    assert repair_json(text) == value


def test_repair_gives_up_on_nonsense() -> None:
    with pytest.raises(ValueError):
        repair_json("not json at all")


def test_text_calls() -> None:
    r = parse_text('I will search. <tool_call>{"name": "search", "arguments": {"query": "x[title]"}}</tool_call>', TOOLS)
    assert r.calls == [ParsedCall("search", {"query": "x[title]"})] and r.answer is None and not r.problems
    r = parse_text('<tool_call>{"name": "fetch", "arguments": "{\\"doc\\": 1}"}</tool_call><tool_call>{"name": "search", "parameters": {"query": "y"}}', TOOLS)
    assert r.calls == [ParsedCall("fetch", {"doc": 1}), ParsedCall("search", {"query": "y"})]


def test_problems_are_explained() -> None:
    r = parse_text('<tool_call>{"name": "grep", "arguments": {}}</tool_call>', TOOLS)
    assert r.problems == ["unknown tool 'grep'; the tools are: answer, fetch, search"]
    r = parse_text("<tool_call>search for x</tool_call>", TOOLS)
    assert r.problems == ['a <tool_call> could not be read as JSON; write <tool_call>{"name": ..., "arguments": {...}}</tool_call>']
    r = parse_text('<tool_call>["search"]</tool_call>', TOOLS)
    assert r.problems == ['a tool call must be a JSON object with "name" and "arguments"']


def test_answers() -> None:
    assert parse_text("so <answer> Paris </answer>", TOOLS).answer == "Paris"
    assert parse_text("<answer>Paris", TOOLS).answer == "Paris"  # cut off by max_tokens
    assert parse_text("no answer here", TOOLS).answer is None


def test_native_calls() -> None:
    r = parse_native([("c1", "search", '{"query": "x"}'), ("c2", "answer", '{"answer": "42"}'), ("c3", "nope", "{}")], TOOLS)
    assert r.calls == [ParsedCall("search", {"query": "x"}, "c1"), ParsedCall("answer", {"answer": "42"}, "c2")]
    assert r.answer == "42"
    assert r.problems == ["unknown tool 'nope'; the tools are: answer, fetch, search"]
