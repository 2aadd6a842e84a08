"""The conditions registry: one list that the Toolset, the loop, the CLI and the harness read."""

from __future__ import annotations

import pytest

import sieve
from sieve.cli import make_parser
from sieve.errors import InvalidArgumentError
from sieve.tools import CONDITIONS, TOOL_NAMES, Toolset, condition
from sieve.tools.conditions import CONDITION_NAMES, FAMILIES, BOUNDED_TOOL_NAMES, FILE_TOOL_NAMES, check_tools


NAMES = ["one-shot", "autoread", "dci", "bounded-dci", "search-visit", "search-fetch", "sieve"]


def test_registry() -> None:
    """The paper's Table 1 rows, in its order, each with its tools and the rankers it is run with."""
    assert list(CONDITIONS) == NAMES
    assert condition("rag") is condition("one-shot") and condition("one-shot").one_shot
    assert not any(c.one_shot for name, c in CONDITIONS.items() if name != "one-shot")
    assert [n for n, c in CONDITIONS.items() if c.autoread] == ["autoread"]
    for c in CONDITIONS.values():
        assert set(c.tools) <= set(TOOL_NAMES if c.retriever else FILE_TOOL_NAMES if c.corpus == "files" else BOUNDED_TOOL_NAMES)
    assert condition("dci").rankers == () and condition("bounded-dci").rankers == ("bm25",) and condition("bounded-dci").bound == 10
    assert condition("search-visit").snippet == "lead" and condition("sieve").snippet == "query"
    assert FAMILIES == ("one-shot", "autoread", "dci", "search-visit", "search-fetch", "sieve")
    assert CONDITION_NAMES == (*NAMES, "rag")


def test_unknown_names_are_sieve_errors(gold: sieve.Index) -> None:
    with pytest.raises(InvalidArgumentError, match="unknown condition 'x'; choose from one-shot, autoread, dci, bounded-dci, search-visit, search-fetch, sieve, rag"):
        Toolset.for_condition(gold, "x")
    with pytest.raises(InvalidArgumentError, match=r"unknown tools \['grep'\]; choose from search, ranked_search, fetch, visit, show"):
        Toolset(gold, ("search", "grep"))
    with pytest.raises(InvalidArgumentError, match="no tools chosen"):
        check_tools(())
    with pytest.raises(InvalidArgumentError, match="a list of tool names"):
        check_tools("search")


def test_the_cli_offers_the_registry() -> None:
    parser = make_parser()
    for argv in (["ask", "IDX", "q", "--llm-url", "u", "--model", "m", "--condition"], ["eval", "run", "--collection", "c", "--out", "o", "--llm-url", "u", "--model", "m", "--condition"]):
        for name in CONDITION_NAMES:
            assert parser.parse_args(argv + [name]).condition == name
        with pytest.raises(SystemExit):
            parser.parse_args(argv + ["nope"])
    for name in ("bm25", "dense", "hybrid"):
        assert parser.parse_args(["search", "IDX", "q", "--ranker", name]).ranker == name
        assert parser.parse_args(["serve", "IDX", "--ranker", name]).ranker == name
