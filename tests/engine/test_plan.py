"""The plan: each leaf of a query is analysed and looked up once, against one index, and everything
after it (evaluation, ranking, explanation, cards, snippets) reads the plan instead of the query."""

from __future__ import annotations

import sys
from collections import Counter
from typing import Any, Iterator

import pytest

import sieve
from sieve.engine.analysis import analyzers as analysis
from sieve.engine.query.plan import AndPlan, LeafPlan, Limits, NotPlan, Plan
from sieve.errors import BQLLimitError
from sieve.index.index import parse_query
from sieve.tools import Toolset

# Leaf spellings no document has as a whitespace word (odd case), so that analysing the
# documents' words while making snippets is never mistaken for analysing the query.
QUERY = 'HeatWAVE[title] AND "SCHOOL Closure" AND clos* AND NEAR/3(MANY, SCHOOLS) NOT ZURICH AND date[2022] AND O_RDONLY'
LEAF_TEXTS = ["HeatWAVE", "SCHOOL Closure", "clos", "MANY", "SCHOOLS", "ZURICH", "O_RDONLY"]


@pytest.fixture()
def counted(monkeypatch: pytest.MonkeyPatch) -> Iterator[Counter[str]]:
    """Counts every call of the analyzer, from whichever module calls it."""
    calls: Counter[str] = Counter()
    original = analysis.analyze

    def counting(text: str) -> list[str]:
        calls[text] += 1
        return original(text)

    for module in list(sys.modules.values()):
        if getattr(module, "__name__", "").startswith("sieve") and getattr(module, "analyze", None) is original:
            monkeypatch.setattr(module, "analyze", counting)
    yield calls


def test_each_leaf_is_analysed_once_per_query(gold: sieve.Index, counted: Counter[str]) -> None:
    index = sieve.open_index(gold.path)  # a fresh index: no plan cached
    parse_query(QUERY)  # the syntax tree is cached and index-independent; the parser's checks are not counted
    counted.clear()
    tools = Toolset(index)
    result = tools.call("search", {"query": QUERY, "k": 5})  # match, rank, explain, cards, snippets
    assert result.ok, result.text
    index.search(QUERY, k=3, explain=True)
    index.match(QUERY)
    assert {t: counted[t] for t in LEAF_TEXTS} == {t: 1 for t in LEAF_TEXTS}
    counted.clear()
    Toolset(index).call("search", {"query": QUERY})  # the plan is cached per index: nothing analysed again
    assert not any(counted[t] for t in LEAF_TEXTS)


def test_the_analyzer_count_sees_every_caller(gold: sieve.Index, counted: Counter[str]) -> None:
    """Guards the test above: the counting wrapper must see analysis done elsewhere too."""
    from sieve.tools.fetch.snippets import Matcher

    Matcher(frozenset({"x"})).hits("HeatWAVE")
    assert counted["HeatWAVE"] == 1


def plan(index: sieve.Index, query: str, limits: Limits = Limits()) -> Plan:
    return Plan.of(parse_query(query), index.segments[0].reader, limits)


def test_leaves_are_resolved_to_what_runs(gold: sieve.Index) -> None:
    p = plan(gold, 'O_RDONLY "heatwave" clos*[title] NEAR/2(school, closure) date[2022] NOT snow')
    kinds = [(leaf.kind, leaf.terms) for leaf in p.leaves]
    assert kinds == [("phrase", ("o", "rdonly")), ("term", ("heatwave",)), ("prefix", ("clos",)), ("near", ("school", "closure")),
                     ("date", ()), ("term", ("snow",))]
    by_kind = {leaf.kind: leaf for leaf in reversed(p.leaves)}  # the first leaf of each kind
    assert by_kind["phrase"].unknown and by_kind["phrase"].tids[0] < 0  # no `o` or `rdonly` in this corpus
    assert not by_kind["term"].unknown and by_kind["term"].tids[0] == gold.segments[0].reader.term_id("heatwave")
    lo, hi = by_kind["prefix"].term_range
    assert [gold.segments[0].reader.terms[i].decode() for i in range(lo, hi)] == ["closed", "closure", "closures"]
    assert by_kind["prefix"].mask == 1  # title only
    assert by_kind["date"].dates == (20220101, 20221231)
    assert by_kind["near"].distance == 2


def test_whole_query_facts(gold: sieve.Index) -> None:
    p = plan(gold, 'Heatwave "school closure" OR clos* NOT (snow OR heat) AND NEAR/3(many, schools) date[2022]')
    assert p.terms == ("heatwave", "school", "closure", "many", "schools")  # positive, each once, query order; no prefix
    assert p.term_ids == tuple(gold.segments[0].reader.term_id(t) for t in p.terms)
    assert p.stems == ("clos",)
    assert p.text == "Heatwave school closure clos many schools"  # as written: what a dense encoder reads
    assert p.query == str(parse_query('Heatwave "school closure" OR clos* NOT (snow OR heat) AND NEAR/3(many, schools) date[2022]'))


def test_clauses_keep_the_written_order_and_and_runs_cheapest_first(gold: sieve.Index) -> None:
    p = plan(gold, '"school closure" NOT snow heatwave')
    assert [str(c.node) for c in p.clauses] == ['"school closure"', "NOT snow", "heatwave"]
    assert isinstance(p.root, AndPlan)
    costs = [c.cost for c in p.root.by_cost]
    assert costs == sorted(costs) and isinstance(p.root.by_cost[-1], LeafPlan) and p.root.by_cost[-1].kind == "phrase"
    assert isinstance(p.root.by_cost[1], NotPlan)
    single = plan(gold, "heatwave")
    assert [str(c.node) for c in single.clauses] == ["heatwave"]


def test_equal_leaves_are_resolved_once(gold: sieve.Index, counted: Counter[str]) -> None:
    query = "ZURICH OR (ZURICH AND ZURICH[title])"
    parse_query(query)
    counted.clear()
    p = plan(gold, query)
    assert counted["ZURICH"] == 2  # ZURICH and ZURICH[title] are different leaves; the repeat is not analysed again
    assert p.leaves[0] is p.leaves[1]


def test_limits_are_checked_when_planning(gold: sieve.Index) -> None:
    with pytest.raises(BQLLimitError) as e:
        plan(gold, "zzzz AND s*", Limits(max_prefix_terms=3))  # even behind a clause that matches nothing
    assert e.value.limit == "prefix expansion"
    volume = plan(gold, '"school closure" NEAR/2(school, closure)').volume
    assert volume > 0
    with pytest.raises(BQLLimitError) as e:
        plan(gold, '"school closure" NEAR/2(school, closure)', Limits(max_positions=volume - 1))
    assert e.value.limit == "positions" and e.value.value == volume


def test_results_carry_what_cards_need(gold: sieve.Index) -> None:
    r = gold.search('heatwave clos* NOT snow', k=2)
    assert (r.terms, r.stems, r.text) == (("heatwave",), ("clos",), "heatwave clos")
    assert r.ranked
    only_prefix: Any = gold.search("clos*", k=2)
    assert not only_prefix.ranked and only_prefix.stems == ("clos",)
