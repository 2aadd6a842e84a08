"""The text tool-call protocol: tolerant reading, strict refusal."""

from __future__ import annotations

import pytest

from sieve.agent.protocol import ParsedCall, final_answer, parse_native, parse_text, repair_json, without_thinking

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
    assert parse_text("<answer>Paris", TOOLS).answer is None  # cut off by max_tokens: not complete
    assert parse_text("<answer>Paris", TOOLS, open_answer=True).answer == "Paris"  # the recovery step pre-opened it
    assert parse_text("no answer here", TOOLS).answer is None


# Realistic replies of thinking models, and what the answer contract reads from them.
CONTRACT = [
    ("I will write it inside <answer> tags. Thus: <answer>Galati</answer>", "Galati"),
    ("<think>maybe <answer>Braila</answer>? no.</think>The port is <answer>Galati</answer>", "Galati"),
    ("<think>the answer could be <answer>Braila</answer>", None),  # all thinking, cut off
    ("let me think... <answer>Braila</answer> wait</think>\n<answer>Galati</answer>", "Galati"),  # template opened the think
    ("First guess <answer>Braila</answer>, corrected: <answer>Galati</answer>", "Galati"),  # the last complete one
    ("<answer>Galati</answer> and then <answer>Bra", "Galati"),  # a cut-off later one does not count
    ("<think>a</think><think>b <answer>x</answer></think><answer> Galați </answer>", "Galați"),
    ("<answer></answer>", ""),
]


@pytest.mark.parametrize("reply, want", CONTRACT)
def test_the_answer_contract(reply: str, want: str | None) -> None:
    assert final_answer(reply) == want
    assert parse_text(reply, TOOLS).answer == want


def test_tool_calls_inside_thinking_are_not_made() -> None:
    r = parse_text('<think>try <tool_call>{"name": "search", "arguments": {"query": "a"}}</tool_call></think>'
                   '<tool_call>{"name": "search", "arguments": {"query": "b"}}</tool_call>', TOOLS)
    assert r.calls == [ParsedCall("search", {"query": "b"})]
    assert without_thinking("x</think>y<think>z") == "y"


def test_native_calls() -> None:
    r = parse_native([("c1", "search", '{"query": "x"}'), ("c2", "answer", '{"answer": "42"}'), ("c3", "nope", "{}")], TOOLS)
    assert r.calls == [ParsedCall("search", {"query": "x"}, "c1"), ParsedCall("answer", {"answer": "42"}, "c2")]
    assert r.answer == "42"
    assert r.problems == ["unknown tool 'nope'; the tools are: answer, fetch, search"]
