"""The tool surface an agent (or a person) uses over an index: result cards, section fetch,
whole-document visit, outlines, and `Toolset`, which turns calls into text.

`Toolset(index)` is the entry point: JSON schemas for a model, `call(name, arguments) ->
ToolResult`, and the generated manual. The modules below it are usable on their own: `cards` (what a
search shows), `reading` (fetch and visit under a token cap), `tokens` (token counters),
`conditions` (the compared conditions: which tools an agent gets), `files` and `shell` (the DCI
conditions' files, read-only shell and reader), `episode` (`make_tools`: one episode's tools for a
condition), `tool` (what a tool and a call's result are). Nothing here talks to a model: that is
`sieve.agent`.
"""

from sieve.tools.cards import CardConfig
from sieve.tools.conditions import CONDITIONS, TOOL_NAMES, Condition, condition
from sieve.tools.fetch.reading import ReadConfig, read_document, read_section
from sieve.tools.fetch.tokens import (
    FunctionCounter,
    TokenCounter,
    TokenizerCounter,
    WhitespaceCounter,
    make_counter,
)
from sieve.tools.shell.episode import make_tools
from sieve.tools.tool import ToolResult
from sieve.tools.toolset import ToolConfig, Toolset, free_text_query

__all__ = [
    "CONDITIONS",
    "TOOL_NAMES",
    "CardConfig",
    "Condition",
    "FunctionCounter",
    "ReadConfig",
    "TokenCounter",
    "TokenizerCounter",
    "ToolConfig",
    "ToolResult",
    "Toolset",
    "WhitespaceCounter",
    "condition",
    "free_text_query",
    "make_counter",
    "make_tools",
    "read_document",
    "read_section",
]
