"""The text protocol deep-research models speak: `<tool_call>{json}</tool_call>` and `<answer>`.

The answer contract (the paper's): the final answer is the last complete `<answer>...</answer>`
once the thinking is removed: `<think>...</think>` blocks, an unterminated `<think>` (the rest is
thought), and a leading text closed by `</think>` without an opening tag (chat templates that open
the think block themselves). Answers and tool calls inside thinking never count. A reply cut off
inside its answer has no answer (the loop's final-answer path asks again), except where the caller
pre-opened the tag (`open_answer=True`, the recovery step).

Parsing is tolerant where a model is sloppy (truncated JSON is repaired, `arguments` given as a
JSON string is decoded) and strict where guessing would be wrong (an unknown tool or a call that
cannot be read becomes a problem the loop reports back to the model).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

_CALL = re.compile(r"<tool_call>\s*(.*?)\s*(?:</tool_call>|$)", re.S)
_ANSWER = re.compile(r"<answer>((?:(?!<answer>).)*?)</answer>", re.S)  # complete, innermost
_OPEN_ANSWER = re.compile(r"<answer>((?:(?!<answer>).)*)$", re.S)  # the last one, left open
_THINK = re.compile(r"<think>.*?(?:</think>|$)", re.S)
_FENCE = re.compile(r"^```(?:json)?\s*|\s*```$")


@dataclass(frozen=True)
class ParsedCall:
    name: str
    arguments: dict[str, Any]
    id: str = ""


@dataclass
class Reply:
    """What one model message asks for: tool calls, a final answer, and what could not be read."""

    calls: list[ParsedCall] = field(default_factory=list)
    answer: str | None = None
    problems: list[str] = field(default_factory=list)


def repair_json(text: str) -> Any:
    """Decode JSON, closing what a truncated reply left open (strings, objects, arrays) and
    dropping a dangling comma or key. Raises ValueError if that is not enough."""
    text = _FENCE.sub("", text.strip())
    try:
        return json.loads(text)
    except ValueError:
        pass
    stack: list[str] = []
    in_str = escape = False
    for ch in text:
        if in_str:
            if escape:
                escape = False
            elif ch == "\\":
                escape = True
            elif ch == '"':
                in_str = False
        elif ch == '"':
            in_str = True
        elif ch in "{[":
            stack.append("}" if ch == "{" else "]")
        elif ch in "}]" and stack:
            stack.pop()
    fixed = text + ('"' if in_str else "")
    fixed = re.sub(r"[,:\s]+$", "", fixed)
    candidate = fixed + "".join(reversed(stack))
    try:
        return json.loads(candidate)
    except ValueError:
        # A half-written key at the end of an object: drop it and close again.
        trimmed = re.sub(r',?\s*"[^"]*"\s*$', "", fixed)
        return json.loads(trimmed + "".join(reversed(stack)))


def _call_from(obj: Any, known: set[str], call_id: str = "") -> ParsedCall | str:
    if not isinstance(obj, dict) or not isinstance(obj.get("name"), str):
        return 'a tool call must be a JSON object with "name" and "arguments"'
    name = obj["name"]
    args = obj.get("arguments", obj.get("parameters", {}))
    if isinstance(args, str):
        try:
            args = repair_json(args) if args.strip() else {}
        except ValueError:
            return f"the arguments of {name} are not valid JSON"
    if not isinstance(args, dict):
        return f"the arguments of {name} must be a JSON object"
    if name not in known:
        return f"unknown tool {name!r}; the tools are: {', '.join(sorted(known))}"
    return ParsedCall(name, args, call_id)


def without_thinking(content: str) -> str:
    """The reply with its thinking removed (see the module docstring)."""
    head, closed, rest = content.partition("</think>")
    if closed and "<think>" not in head:
        content = rest  # the template opened the think block; the model only closed it
    return _THINK.sub("", content)


def final_answer(content: str, open_answer: bool = False) -> str | None:
    """The answer the contract reads from a reply: the last complete `<answer>` outside thinking;
    with `open_answer`, a last `<answer>` left open also counts."""
    text = without_thinking(content)
    found = [m.group(1) for m in _ANSWER.finditer(text)]
    if found:
        return found[-1].strip()
    if open_answer:
        m = _OPEN_ANSWER.search(text)
        if m:
            return m.group(1).strip()
    return None


def parse_text(content: str, known: set[str], open_answer: bool = False) -> Reply:
    """Tool calls and answer written in the text of a message (thinking ignored)."""
    reply = Reply()
    content = without_thinking(content)
    for m in _CALL.finditer(content):
        try:
            obj = repair_json(m.group(1))
        except ValueError:
            reply.problems.append(
                'a <tool_call> could not be read as JSON; write <tool_call>{"name": ..., '
                '"arguments": {...}}</tool_call>'
            )
            continue
        call = _call_from(obj, known)
        if isinstance(call, str):
            reply.problems.append(call)
        else:
            reply.calls.append(call)
    if "<tool_call>" not in content:
        reply.answer = final_answer(content, open_answer)
    return reply


def parse_native(calls: list[tuple[str, str, str]], known: set[str]) -> Reply:
    """Tool calls delivered in the protocol's `tool_calls` field: (id, name, JSON arguments)."""
    reply = Reply()
    for call_id, name, arguments in calls:
        try:
            args = repair_json(arguments) if arguments.strip() else {}
        except ValueError:
            reply.problems.append(f"the arguments of {name} are not valid JSON")
            continue
        call = _call_from({"name": name, "arguments": args}, known, call_id)
        if isinstance(call, str):
            reply.problems.append(call)
        else:
            reply.calls.append(call)
        if isinstance(call, ParsedCall) and call.name == "answer":
            reply.answer = str(call.arguments.get("answer", "")).strip()
    return reply
