"""The compared conditions, by name: the one registry the Toolset, the agent loop, the CLI, the
evaluation harness and the MCP server read.

A condition says which tools an agent gets and whether it works in a loop of tool calls or in one
shot (retrieve once with the question, then answer). Names follow the paper's table
(docs/architecture.md lists them); `rag` is kept as an alias of `one-shot` so older trajectory
records still name a known condition.
"""

from __future__ import annotations

from dataclasses import dataclass

from sieve.errors import InvalidArgumentError

TOOL_NAMES = ("search", "ranked_search", "fetch", "visit", "show")


@dataclass(frozen=True)
class Condition:
    name: str
    tools: tuple[str, ...]
    one_shot: bool = False  # one retrieval with the question, then one answering call without tools
    description: str = ""


CONDITIONS: dict[str, Condition] = {c.name: c for c in (
    Condition("sieve", ("search", "fetch"), description="BQL search, result cards, section fetch"),
    Condition("search-fetch", ("ranked_search", "fetch"), description="plain ranked search, result cards, section fetch"),
    Condition("search-visit", ("ranked_search", "visit"), description="plain ranked search, title and snippet, whole-document visit"),
    Condition("one-shot", ("ranked_search",), one_shot=True, description="one ranked retrieval of the question, then one answering call"),
)}
ALIASES: dict[str, str] = {"rag": "one-shot"}
CONDITION_NAMES: tuple[str, ...] = tuple(CONDITIONS) + tuple(ALIASES)  # what the CLI accepts


def condition(name: str) -> Condition:
    """The condition called `name` (or one of its aliases); raises InvalidArgumentError listing the known ones."""
    found = CONDITIONS.get(ALIASES.get(name, name)) if isinstance(name, str) else None
    if found is None:
        raise InvalidArgumentError(f"unknown condition {name!r}; choose from {', '.join(CONDITION_NAMES)}")
    return found


def check_tools(names: object) -> tuple[str, ...]:
    """`names` as a tuple of known tool names; raises InvalidArgumentError naming the unknown ones."""
    if isinstance(names, str) or not all(isinstance(t, str) for t in names):  # type: ignore[attr-defined]
        raise InvalidArgumentError(f"tools must be a list of tool names, got {names!r}")
    tools = tuple(names)  # type: ignore[arg-type]
    unknown = [t for t in tools if t not in TOOL_NAMES]
    if unknown:
        raise InvalidArgumentError(f"unknown tools {unknown}; choose from {', '.join(TOOL_NAMES)}")
    if not tools:
        raise InvalidArgumentError(f"no tools chosen; choose from {', '.join(TOOL_NAMES)}")
    return tools
