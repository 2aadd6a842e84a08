"""What a tool is (`Tool`: a name, a JSON schema and the function that runs it), what a call
returns (`ToolResult`), how a tool fails (`ToolFailure`), and the schema fragments the tools
share. The tools themselves, and the session that dispatches calls, are in `toolset`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any


class ToolFailure(Exception):
    """Raised inside a tool to return `message` to the agent as an error."""


@dataclass(frozen=True)
class ToolResult:
    """What a call returns. Also unpacks as `(text, tokens)`."""

    name: str
    text: str
    tokens: int  # of `text`, by the read counter
    ok: bool
    # Facts about a search call for run statistics: whether the zero-hit fallback fired, how many
    # documents the query admitted. Empty for other calls and for calls that failed.
    facts: Mapping[str, Any] = field(default_factory=dict)

    def __iter__(self) -> Iterator[Any]:
        return iter((self.text, self.tokens))


@dataclass(frozen=True)
class Tool:
    name: str
    description: str
    parameters: dict[str, Any]
    # (arguments, facts to fill for run statistics) -> (text, whether all went well)
    run: Callable[[dict[str, Any], dict[str, Any]], tuple[str, bool]] = field(repr=False)
    example: str = ""  # a valid call, quoted in argument errors

    def schema(self) -> dict[str, Any]:
        """The OpenAI function-calling form."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.parameters,
            },
        }


DOC = {
    "type": ["integer", "string"],
    "description": "a rank from the last search (a number) or a document id (a string)",
}
# Where calls share nothing (a stateless server connection), ranks cannot work, so none is offered.
DOC_ID = {
    "type": "string",
    "description": "a document id as a card shows it (this connection keeps no listing, so "
    "no rank)",
}
PART = {
    "type": "integer",
    "minimum": 1,
    "description": "which part of a text too long for one read (default 1)",
}


def _caret(query: str, pos: int, width: int = 40) -> str:
    """Two lines that point at a character of the query."""
    lo = max(0, pos - width)
    line = "".join(c if c.isprintable() else " " for c in query[lo : pos + width])
    return f"  {'…' if lo else ''}{line}\n  {' ' * (pos - lo + (1 if lo else 0))}^"
