"""The compared conditions as data: which tools an agent gets (the loop is the same for all)."""

from __future__ import annotations

from sieve.agent.tools import CONDITIONS as TOOLSETS
from sieve.agent.tools import ToolConfig, Toolset
from sieve.index import Index

# rag: one ranked retrieval of the question, then one answering call.
CONDITIONS: dict[str, tuple[str, ...]] = {**TOOLSETS, "rag": ("ranked_search",)}


def make_tools(index: Index, condition: str, ranker: str = "bm25", k: int = 5, read_cap: int = 12_000) -> Toolset:
    """A fresh tool session for one episode of `condition`."""
    if condition not in CONDITIONS:
        raise ValueError(f"unknown condition {condition!r}; choose from {', '.join(CONDITIONS)}")
    from sieve.agent.reading import ReadConfig

    return Toolset(index, CONDITIONS[condition], ToolConfig(k=k, ranker=ranker, read=ReadConfig(cap=read_cap)))
