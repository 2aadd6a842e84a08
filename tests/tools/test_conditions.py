"""The conditions registry: one list that the Toolset, the loop, the CLI and the harness read."""

from __future__ import annotations

import pytest

import sieve
from sieve.cli.main import make_parser
from sieve.errors import InvalidArgumentError
from sieve.tools import CONDITIONS, TOOL_NAMES, Toolset, condition
from sieve.tools.conditions import CONDITION_NAMES, EXTENSIONS, FAMILIES, BOUNDED_TOOL_NAMES, FILE_TOOL_NAMES, PAPER_CONDITIONS, check_tools


NAMES = ["one-shot", "autoread", "dci", "bounded-dci", "search-visit", "search-fetch", "sieve"]
EXTRA = ["sieve+diagnose", "sieve+manual", "sieve+ranked-fallback", "sieve+all"]


def test_registry() -> None:
    """The paper's Table 1 rows, in its order, each with its tools and the rankers it is run with;
    then sieve's extensions of SIEVE, each named for what it adds."""
    assert list(CONDITIONS) == NAMES + EXTRA + ["indri-control"] and list(PAPER_CONDITIONS) == NAMES and list(EXTENSIONS) == EXTRA
    assert condition("rag") is condition("one-shot") and condition("one-shot").one_shot
    assert not any(c.one_shot for name, c in CONDITIONS.items() if name != "one-shot")
    assert [n for n, c in CONDITIONS.items() if c.autoread] == ["autoread"]
    for c in CONDITIONS.values():
        assert set(c.tools) <= set(TOOL_NAMES if c.retriever else FILE_TOOL_NAMES if c.corpus == "files" else BOUNDED_TOOL_NAMES)
    assert condition("dci").rankers == () and condition("bounded-dci").rankers == ("bm25",) and condition("bounded-dci").bound == 10
    assert condition("search-visit").snippet == "lead" and condition("sieve").snippet == "query"
    assert FAMILIES == ("one-shot", "autoread", "dci", "search-visit", "search-fetch", "sieve", "indri-control")
    assert condition("indri-control").tools == ("indri_search", "fetch") and condition("indri-control").rankers == ("indri", "indri+dense")
    assert CONDITION_NAMES == (*NAMES, *EXTRA, "indri-control", "rag")


def test_the_papers_sieve_and_its_extensions() -> None:
    """Inside eval, `sieve` is the paper's: no diagnosis, a BM25 fallback, the paper's manual; each
    extension changes one of these (sieve+all: every one, as the Toolset does)."""
    got = {n: (CONDITIONS[n].diagnose, CONDITIONS[n].fallback_ranker, CONDITIONS[n].manual) for n in ["sieve", *EXTRA]}
    assert got == {"sieve": (False, "bm25", "paper"), "sieve+diagnose": (True, "bm25", "paper"), "sieve+manual": (False, "bm25", "generated"),
                   "sieve+ranked-fallback": (False, None, "paper"), "sieve+all": (True, None, "generated")}
    assert all(CONDITIONS[n].tools == ("search", "fetch") and CONDITIONS[n].family == "sieve" and not CONDITIONS[n].paper for n in EXTRA)
    assert condition("sieve+ranked-fallback").rankers == ("dense", "hybrid")  # with bm25 it is the paper's sieve


def test_unknown_names_are_sieve_errors(gold: sieve.Index) -> None:
    with pytest.raises(InvalidArgumentError, match="unknown condition 'x'; choose from one-shot, autoread, dci, bounded-dci, search-visit, search-fetch, sieve, sieve\\+diagnose, "
                       "sieve\\+manual, sieve\\+ranked-fallback, sieve\\+all, indri-control, rag"):
        Toolset.for_condition(gold, "x")
    with pytest.raises(InvalidArgumentError, match=r"unknown tools \['grep'\]; choose from search, ranked_search, fetch, visit, show, indri_search"):
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


def test_eval_runs_the_papers_sieve_and_ask_keeps_sieves_defaults(gold: sieve.Index) -> None:
    """make_tools(as_paper=True) is eval's `sieve`: a zero-hit search names no relaxations, the
    manual is the paper's, a fetch's ceiling bounds each document; without it (sieve ask) and for
    sieve+diagnose the diagnosis is there."""
    from sieve.tools.shell.episode import make_tools

    zero = {"query": "nothing[title] snow"}
    paper = make_tools(gold, "sieve", as_paper=True)
    assert (paper.config.diagnose, paper.config.fallback_ranker, paper.config.manual, paper.config.cap_scope) == (False, "bm25", "paper", "document")
    assert "One change would admit" not in paper.call("search", zero).text
    assert "One change would admit documents: 1 without nothing[title]." in make_tools(gold, "sieve+diagnose", as_paper=True).call("search", zero).text
    ask = make_tools(gold, "sieve")
    assert (ask.config.diagnose, ask.config.fallback_ranker, ask.config.manual, ask.config.cap_scope) == (True, None, "generated", "call")
    assert "One change would admit documents" in ask.call("search", zero).text
    assert paper.manual().startswith("The collection is a set of web pages.") and "NEAR" not in paper.manual()
    assert "NEAR/5" in make_tools(gold, "sieve+manual", as_paper=True).manual() and "NEAR/5" in ask.manual()
    forced = make_tools(gold, "sieve", as_paper=True, diagnose=True, manual="paper-wikipedia")
    assert forced.config.diagnose and forced.manual().startswith("The collection is a set of Wikipedia articles.")
