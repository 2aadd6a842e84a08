"""Zero-hit diagnosis against the brute-force oracle: every clause count and every relaxation's
count equal what the oracle finds for its canonical BQL, every one-step drop that would admit
documents is reported, and the order is the size of the change."""

from __future__ import annotations

import random
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from test_match_oracle import HYPOTHESIS, Corpus, _Draws, gen_corpus, gen_tree, with_corpus

import oracle
import sieve
from sieve.engine.query.bql import And, Not
from sieve.corpus.documents import document_from_record
from sieve.engine.query.diagnose import ALL, KINDS, diagnose_parts, merge_diagnoses
from sieve.engine.query.plan import Plans
from sieve.engine.rank.searcher import Searcher
from sieve.engine.segment.snapshot import Snapshot
from sieve.index.index import parse_query


def zero_hit_conjunctions(r: Any, c: Corpus, want: int) -> list[str]:
    """Conjunctions of 2-4 random clauses that admit nothing (by the oracle)."""
    out: list[str] = []
    for _ in range(want * 40):
        q = str(And(tuple(gen_tree(r, 2) for _ in range(r.randint(2, 4)))))
        if not oracle.evaluate(parse_query(q), c.docs):
            out.append(q)
            if len(out) == want:
                break
    return out


def check(c: Corpus, query: str) -> None:
    ix = c.index
    plan = ix.plan(query)
    d = diagnose_parts(ix.searcher.pairs(plan), most=1000)
    for clause, count in d.clauses:
        assert count == len(oracle.evaluate(parse_query(clause), c.docs)), (query, clause)
    for x in d.relaxations:
        truth = oracle.evaluate(parse_query(x.query), c.docs)
        assert x.count == len(truth) > 0 and ix.match(x.query).count == x.count, (query, x)
    assert [KINDS.index(x.kind) for x in d.relaxations] == sorted(KINDS.index(x.kind) for x in d.relaxations)
    # Completeness of drops: dropping clause i admits something exactly when a drop of it is reported.
    nodes = [cl.node for cl in plan.clauses]
    dropped = {x.clause for x in d.relaxations if x.kind == "drop"}
    for i, node in enumerate(nodes):
        rest = nodes[:i] + nodes[i + 1:]
        if all(isinstance(m, Not) for m in rest):
            assert str(node) not in dropped
            continue
        admits = bool(oracle.evaluate(And(tuple(rest)) if len(rest) > 1 else rest[0], c.docs))
        assert (str(node) in dropped) == admits, (query, str(node))


@given(st.composite(lambda draw: gen_corpus(_Draws(draw)))(), st.integers(0, 2**32))
@HYPOTHESIS
def test_diagnosis_matches_the_oracle(recs: list[dict[str, Any]], seed: int) -> None:
    checked: list[int] = []
    def run(c: Corpus) -> None:
        queries = zero_hit_conjunctions(random.Random(seed), c, 12)
        for q in queries:
            check(c, q)
        checked.append(len(queries))

    with_corpus(recs, run)
    assert checked[0] >= 6  # random conjunctions over a small corpus mostly admit nothing: the test has material


@pytest.fixture(scope="module")
def small(tmp_path_factory: pytest.TempPathFactory) -> sieve.Index:
    recs = [
        {"id": "a", "title": "Heat plan for Paris", "date": "2019-06", "sections": [{"heading": "School closures", "text": "Schools closed when the heat came."}]},
        {"id": "b", "title": "Cold plan", "date": "2021-01", "text": "A plan for the heat of summer and the cold of winter."},
        {"id": "c", "title": "Heatwave", "date": "2022-07", "author": "A. Writer", "text": "The heat plan was announced."},
    ]
    return sieve.build_index(recs, tmp_path_factory.mktemp("diag") / "ix")


def test_each_kind_of_relaxation(small: sieve.Index) -> None:
    r = small.search('"heat plan"[section] AND date[2020..]')
    assert r.count == 0 and r.fallback and r.diagnosis is not None
    assert r.diagnosis.clauses == (('"heat plan"[section]', 0), ("date[2020-01-01..]", 2))
    by_kind = {x.kind: x for x in r.diagnosis.relaxations}
    assert by_kind["widen"].query == '"heat plan" AND date[2020-01-01..]' and by_kind["widen"].count == 1  # c (2022)
    assert by_kind["drop"].query == "date[2020-01-01..]" and by_kind["drop"].count == 2
    assert "phrase-to-words" not in by_kind  # heat[section] AND plan[section]: no heading has both
    assert [x.kind for x in r.diagnosis.relaxations] == ["widen", "drop"]  # dropping the date leaves the phrase: nothing
    near = small.search("NEAR/1(heat, closed)[body] AND schools")
    assert [(x.kind, x.query, x.count) for x in near.diagnosis.relaxations][0] == ("near-to-and", "heat[body] AND closed[body] AND schools", 1)
    words = small.search('"plan heat"[title] AND paris')
    assert words.diagnosis.relaxations[0].query == "plan[title] AND heat[title] AND paris"


def test_the_search_tool_says_what_would_admit_documents(small: sieve.Index) -> None:
    from sieve.tools import Toolset
    from sieve.tools.toolset import ToolConfig

    text = Toolset(small).call("search", {"query": '"heat plan"[section] AND date[2020..]'}).text
    lines = text.splitlines()
    assert lines[0] == '0 exact matches for "heat plan"[section] AND date[2020-01-01..]; no document has "heat plan"[section].'
    assert lines[1] == 'One change would admit documents: 1 with "heat plan" instead of "heat plan"[section]; 2 without "heat plan"[section].'
    assert lines[2] == "Ranked by the query's terms instead (bm25):"
    quiet = Toolset(small, config=ToolConfig(diagnose=False)).call("search", {"query": '"heat plan"[section] AND date[2020..]'}).text
    assert "One change" not in quiet
    assert small.search('"heat plan"[section] AND date[2020..]', diagnose=False).diagnosis is None
    assert small.search("heat").diagnosis is None  # only a query that admits nothing is diagnosed


@given(st.composite(lambda draw: gen_corpus(_Draws(draw)))(), st.integers(0, 2**32), st.integers(2, 4))
@HYPOTHESIS
def test_shards_diagnoses_merge_to_the_whole_collections(recs: list[dict[str, Any]], seed: int, shards: int) -> None:
    # What sieve.index.shard_service does with each shard's diagnosis: the merge equals one index's, order included.
    with tempfile.TemporaryDirectory() as d:
        one = sieve.build_index(recs, Path(d) / "one")
        sharded = sieve.build_index(recs, Path(d) / "sharded", shards=shards, jobs=1)
        parts = [Snapshot(sharded.path, sharded.commit_dir, shard=j) for j in range(shards)]
        searchers = [Searcher(p) for p in parts]
        c = Corpus(recs, oracle.prepare([document_from_record(r) for r in recs]), one)
        for q in zero_hit_conjunctions(random.Random(seed), c, 8):
            whole = diagnose_parts(one.searcher.pairs(one.plan(q)))
            each = [diagnose_parts(s.pairs(Plans.of(parse_query(q), [seg.reader for seg in p.segments])), most=ALL) for s, p in zip(searchers, parts)]
            assert merge_diagnoses(each) == whole, q
