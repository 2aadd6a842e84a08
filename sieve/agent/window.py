"""Fitting an episode's messages into the model's context window: the prompt's size (counted
here, or read from a server's context-length refusal) and `fit_messages`, which cuts tool
results, newest first.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

MESSAGE_ALLOWANCE = 8  # tokens a chat template adds per message, when the server cannot count


_SENT = re.compile(
    r"(\d[\d,]*) (?:tokens )?in the messages|you requested (\d[\d,]*) tokens", re.IGNORECASE
)


def _prompt_tokens_in(message: str, max_tokens: int) -> int | None:
    """The prompt's size by the server's count, from its context-length refusal (vLLM and
    llama.cpp: `you requested N tokens (M in the messages, ...)`), or None."""
    found = _SENT.findall(message)
    for in_messages, _ in found:
        if in_messages:
            return int(in_messages.replace(",", ""))
    for _, requested in found:
        if requested:
            return max(0, int(requested.replace(",", "")) - max_tokens)
    return None


CUT_MARK = "[… cut to fit the context window]"
REMOVED = "[result removed: it did not fit in the context window]"


_WORD = re.compile(r"\S+")
_WINDOW = re.compile(r"maximum context length is (\d[\d,]*)", re.IGNORECASE)


def _window_in(message: str) -> int | None:
    """The context window a server's refusal names (vLLM: `maximum context length is N tokens`)."""
    m = _WINDOW.search(message)
    return int(m.group(1).replace(",", "")) if m else None


def _local_size(messages: list[dict[str, Any]]) -> int:
    """A prompt's size counted here: whitespace words of every message (tool-call arguments
    included) plus a per-message allowance for the chat template."""
    total = 0
    for m in messages:
        total += MESSAGE_ALLOWANCE + len(str(m.get("content") or "").split())
        for t in m.get("tool_calls") or []:
            total += len(str(t.get("function", {}).get("arguments", "")).split())
    return total


def _is_result(m: dict[str, Any]) -> bool:
    """A tool result, in either tool-call style."""
    return m.get("role") == "tool" or (
        m.get("role") == "user" and str(m.get("content") or "").startswith("<tool_response>")
    )


def fit_messages(
    messages: list[dict[str, Any]], limit: int, size: Callable[[list[dict[str, Any]]], int]
) -> list[dict[str, Any]]:
    """`messages` with tool results cut, newest first, until `size` of them is at most `limit`
    (or no result is left to cut). A cut result keeps its first words and says it was cut; one cut
    to nothing says it was removed. The system prompt and the question are never cut."""
    out = list(messages)
    results = [j for j in range(2, len(out)) if _is_result(out[j])]
    mark = len(CUT_MARK.split())
    while results:
        n = size(out)
        if n <= limit:
            return out
        j = results[-1]
        m = out[j]
        text = str(m.get("content") or "")
        wrapped = text.startswith("<tool_response>")
        inner = (
            text[len("<tool_response>") :].removesuffix("</tool_response>") if wrapped else text
        ).strip()
        ends = [w.end() for w in _WORD.finditer(inner)]
        # At least the excess in words (a word is at least one token), and the cut mark's words.
        keep = max(0, len(ends) - (n - limit) - mark)
        if keep and inner != REMOVED:
            body = inner[: ends[keep - 1]] + f" {CUT_MARK}"
        else:
            body = REMOVED
            results.pop()
        out[j] = {**m, "content": f"<tool_response>\n{body}\n</tool_response>" if wrapped else body}
    return out
