"""The compared conditions, by name: the one registry the Toolset, the agent loop, the CLI, the
evaluation harness and the MCP server read.

A condition says which tools an agent gets and whether it works in a loop of tool calls or in one
shot (retrieve once with the question, then answer). Names follow the paper's table
(docs/architecture.md lists them); `rag` is kept as an alias of `one-shot` so older trajectory
records still name a known condition.

Inside `eval` a condition runs as the paper ran it: `sieve` has no zero-hit diagnosis, a BM25
fallback whatever its ranker, and the paper's BQL manual for the collection. sieve's own
improvements are conditions of their own (`sieve+diagnose`, `sieve+manual`, `sieve+ranked-fallback`,
`sieve+all`), extra rows beside the paper's; the Toolset, MCP, the CLI and the web page keep those
improvements by default (`make_tools(as_paper=False)`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sieve.errors import InvalidArgumentError

# tools over an index (the Toolset)
TOOL_NAMES = ("search", "ranked_search", "fetch", "visit", "show", "indri_search")
# tools over a folder of document files (sieve.tools.shell.files)
FILE_TOOL_NAMES = ("bash", "read")
# bounded DCI also searches the whole collection, live (as the paper gives it)
BOUNDED_TOOL_NAMES = FILE_TOOL_NAMES + ("bm25_search",)
ALL_RANKERS = ("bm25", "dense", "hybrid")
# what a result card quotes: a query-focused window, the opening words, nothing
SNIPPETS = ("query", "lead", "none")
CORPORA = ("index", "files", "bounded")
# The manual of BQL `search`: the paper's for the collection ("paper": Wikipedia-style or
# BrowseComp-Plus by the index's fields; or named), or sieve's, generated from the index.
MANUALS = ("paper", "paper-wikipedia", "paper-browsecomp", "generated")


@dataclass(frozen=True)
class Condition:
    """One compared condition. `family` groups rows as the paper's Table 1 does; `rankers` are
    the ones the paper runs it with (what a grid runs by default; a run may choose any)."""

    name: str
    family: str
    tools: tuple[str, ...]
    one_shot: bool = False  # one retrieval with the question, then one answering call without tools
    # every search result carries the document's text (up to the read ceiling)
    autoread: bool = False
    # what the tools act on: the index, the collection as files, or BM25's top documents as files
    corpus: str = "index"
    bound: int = 10  # bounded: how many documents BM25 puts in the folder
    snippet: str = "query"
    rankers: tuple[str, ...] = ALL_RANKERS
    description: str = ""
    # How `eval` runs it (the paper's method unless an extension says otherwise):
    # a zero-hit search names the one-step relaxations that would admit documents
    diagnose: bool = False
    fallback_ranker: str | None = "bm25"  # what ranks the zero-hit fallback; None: the run's ranker
    manual: str = "generated"  # for the BQL `search` tool: "paper" or "generated" (MANUALS)
    paper: bool = True  # a row of the paper's Table 1; False: one of sieve's extensions

    @property
    def retriever(self) -> bool:
        return self.corpus == "index"


CONDITIONS: dict[str, Condition] = {
    c.name: c
    for c in (
        Condition(
            "one-shot",
            "one-shot",
            ("ranked_search",),
            one_shot=True,
            rankers=("bm25", "dense"),
            description=(
                "one ranked retrieval of the question, the documents' text in one answering call"
            ),
        ),
        Condition(
            "autoread",
            "autoread",
            ("ranked_search",),
            autoread=True,
            rankers=("bm25", "dense"),
            description=(
                "ranked search whose results carry each document's full text; no separate read"
            ),
        ),
        Condition(
            "dci",
            "dci",
            FILE_TOOL_NAMES,
            corpus="files",
            rankers=(),
            description=(
                "no retriever: a read-only shell and a file reader over the collection as files"
            ),
        ),
        Condition(
            "bounded-dci",
            "dci",
            BOUNDED_TOOL_NAMES,
            corpus="bounded",
            rankers=("bm25",),
            description=(
                "BM25 puts the question's top 10 documents in a folder; "
                "shell and reader over that folder, and a BM25 search of "
                "the whole collection that adds its results to the folder"
            ),
        ),
        Condition(
            "search-visit",
            "search-visit",
            ("ranked_search", "visit"),
            snippet="lead",
            description="plain ranked search, title and opening words, whole-document visit",
        ),
        Condition(
            "search-fetch",
            "search-fetch",
            ("ranked_search", "fetch"),
            description="plain ranked search, result cards, section fetch",
        ),
        Condition(
            "sieve",
            "sieve",
            ("search", "fetch"),
            manual="paper",
            description="BQL search, result cards, section fetch",
        ),
        # sieve's extensions of SIEVE, each one change from the paper's, and all of them together.
        Condition(
            "sieve+diagnose",
            "sieve",
            ("search", "fetch"),
            manual="paper",
            diagnose=True,
            paper=False,
            description=(
                "SIEVE whose zero-hit searches name the "
                "one-step relaxations that would admit documents"
            ),
        ),
        Condition(
            "sieve+manual",
            "sieve",
            ("search", "fetch"),
            paper=False,
            description=(
                "SIEVE with sieve's manual, generated from the "
                "index (its fields, NEAR, stemming), not the paper's"
            ),
        ),
        Condition(
            "sieve+ranked-fallback",
            "sieve",
            ("search", "fetch"),
            manual="paper",
            fallback_ranker=None,
            rankers=("dense", "hybrid"),
            paper=False,
            description="SIEVE whose zero-hit fallback ranks with the run's ranker, not BM25",
        ),
        Condition(
            "sieve+all",
            "sieve",
            ("search", "fetch"),
            diagnose=True,
            fallback_ranker=None,
            paper=False,
            description=(
                "SIEVE with sieve's defaults (as the Toolset, MCP and the CLI): diagnosis, the "
                "run's ranker for the fallback, the generated manual"
            ),
        ),
        Condition(
            "indri-control",
            "indri-control",
            ("indri_search", "fetch"),
            rankers=("indri", "indri+dense"),
            description=(
                "the paper's Table 6 control: Indri's own "
                "query language, result cards, section fetch"
            ),
        ),
    )
}
ALIASES: dict[str, str] = {"rag": "one-shot"}
CONDITION_NAMES: tuple[str, ...] = tuple(CONDITIONS) + tuple(ALIASES)  # what the CLI accepts
# The paper's controls rank only with rankers outside its three (Table 6's Indri control).
CONTROLS: tuple[str, ...] = tuple(
    n for n, c in CONDITIONS.items() if c.rankers and not set(c.rankers) & set(ALL_RANKERS)
)
# Table 1's rows: the default grid
PAPER_CONDITIONS: tuple[str, ...] = tuple(
    n for n, c in CONDITIONS.items() if c.paper and n not in CONTROLS
)
EXTENSIONS: tuple[str, ...] = tuple(n for n, c in CONDITIONS.items() if not c.paper)
# Table 1's order
FAMILIES: tuple[str, ...] = tuple(dict.fromkeys(c.family for c in CONDITIONS.values()))


def condition(name: str) -> Condition:
    """The condition called `name` (or one of its aliases); raises InvalidArgumentError listing the
    known ones."""
    found = CONDITIONS.get(ALIASES.get(name, name)) if isinstance(name, str) else None
    if found is None:
        raise InvalidArgumentError(
            f"unknown condition {name!r}; choose from {', '.join(CONDITION_NAMES)}"
        )
    return found


def check_tools(names: object) -> tuple[str, ...]:
    """`names` as a tuple of known tool names; raises InvalidArgumentError naming the unknown
    ones."""
    items: Any = names  # unchecked input: the test below is the check
    if isinstance(items, str) or not all(isinstance(t, str) for t in items):
        raise InvalidArgumentError(f"tools must be a list of tool names, got {names!r}")
    tools: tuple[str, ...] = tuple(items)
    unknown = [t for t in tools if t not in TOOL_NAMES]
    if unknown:
        raise InvalidArgumentError(f"unknown tools {unknown}; choose from {', '.join(TOOL_NAMES)}")
    if not tools:
        raise InvalidArgumentError(f"no tools chosen; choose from {', '.join(TOOL_NAMES)}")
    return tools
