"""Tools for agents: result cards, section fetch, whole-document visit, and their tool surface.

`Toolset(index)` is the entry point: JSON schemas for a model, `call(name, arguments) -> text`,
and the generated manual. The modules below it are usable on their own: `cards` (what a search
shows), `reading` (fetch and visit under a token cap), `tokens` (token counters).
"""

from sieve.agent.cards import CardConfig
from sieve.agent.reading import ReadConfig, read_document, read_section
from sieve.agent.tokens import FunctionCounter, TokenCounter, TokenizerCounter, WhitespaceCounter, make_counter
from sieve.agent.tools import CONDITIONS, ToolConfig, ToolResult, Toolset, free_text_query

__all__ = [
    "CONDITIONS", "CardConfig", "FunctionCounter", "ReadConfig", "TokenCounter", "TokenizerCounter", "ToolConfig",
    "ToolResult", "Toolset", "WhitespaceCounter", "free_text_query", "make_counter", "read_document", "read_section",
]
