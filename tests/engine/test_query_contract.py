"""The contract every query type keeps (Lucene's QueryUtils is the model), over one real on-disk
corpus built twice: as one segment, and as several segments of the same documents in the same order.

For every syntax node class of BQL (and of the Indri language), generated trees of that class
(at the root, and mixed with the others below AND / OR / NOT):
- the canonical form round-trips: `parse(str(tree)) == tree`, and printing is stable;
- match agrees with the brute-force oracle (tests/support/oracle.py);
- explain agrees with match for every document, and each explained node with the oracle;
- the several-segment index answers as the one-segment index: ids, ranking and scores, explanations.

A node class the generators below do not cover fails `test_every_node_class_is_covered`: a new
operator comes with its generator here.
"""

from __future__ import annotations

import dataclasses
import random
from typing import Any, Callable, Iterator

import oracle
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_match_oracle import (
    QUERY_WORDS,
    SINGLE_WORDS,
    STEMS,
    _Draws,
    flatten,
    gen_date_range,
    gen_fields,
    gen_record,
    gen_tree,
)

from sieve.corpus.documents import document_from_record
from sieve.engine.query.bql import ast, parse
from sieve.engine.query.indriql import ast as iql
from sieve.engine.query.indriql import parse as parse_indri
from sieve.index.index import Index, build_index

DECLARED = {"year": "number"}
SETTINGS = settings(
    max_examples=25,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.function_scoped_fixture,
    ],
)


@dataclasses.dataclass
class Twins:
    one: Index  # every document in one segment
    many: Index  # the same documents, in the same order, in several segments
    docs: list[oracle.OracleDoc]


@pytest.fixture(scope="module")
def twins(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Twins]:
    r = random.Random(49)
    recs = []
    for i in range(40):
        rec = gen_record(r, i)
        year = r.choice([None, 1999, 2005, 2010])
        if year is not None:
            rec["year"] = year
        recs.append(rec)
    tmp = tmp_path_factory.mktemp("contract")
    one = build_index(recs, tmp / "one", fields=DECLARED)
    with pytest.MonkeyPatch.context() as m:
        m.setattr("sieve.index.batches.BATCH_DOCS", 6)  # a segment ends only between batches
        many = build_index(recs, tmp / "many", fields=DECLARED, segment_bytes=1_000)
    assert len(one.segments) == 1 and len(many.segments) >= 3
    docs = oracle.prepare((document_from_record(x) for x in recs), declared=DECLARED)
    yield Twins(one, many, docs)
    one.close()
    many.close()


# ------------------------------------------------------------------ generators, one per node class


def _filter(r: Any) -> ast.Filter:
    n = r.choice(["1999", "2005", "2007", "2010"])
    return ast.Filter("year", r.choice([n, f"{n}..", f"..{n}", f"1990..{n}", f"={n}"]))


def _children(r: Any, depth: int) -> tuple[Any, ...]:
    return tuple(gen_tree(r, depth) for _ in range(r.randint(2, 3)))


# Each builds a tree whose root is the class (its children drawn from every class, by gen_tree).
BQL: dict[type, Callable[[Any], Any]] = {
    ast.Term: lambda r: ast.Term(r.choice(QUERY_WORDS), gen_fields(r)),
    ast.Phrase: lambda r: ast.Phrase(
        " ".join(r.choice(QUERY_WORDS) for _ in range(r.randint(2, 3))), gen_fields(r)
    ),
    ast.Prefix: lambda r: ast.Prefix(r.choice(STEMS), gen_fields(r)),
    ast.Near: lambda r: ast.Near(
        r.choice(SINGLE_WORDS), r.choice(SINGLE_WORDS), r.choice([1, 2, 3, 5]), gen_fields(r)
    ),
    ast.DateRange: gen_date_range,
    ast.Filter: _filter,
    ast.Not: lambda r: ast.Not(gen_tree(r, 2)),
    ast.And: lambda r: ast.And(_children(r, 2) + (_filter(r),) * r.randint(0, 1)),
    ast.Or: lambda r: ast.Or(_children(r, 2)),
}

_WORDS = ["alpha", "beta", "gamma", "delta", "zurich", "theta"]


def _iw(r: Any) -> str:
    return r.choice(_WORDS)


def _ileaf(r: Any) -> str:
    return r.choice(
        [
            _iw(r),
            _iw(r) + ".title",
            _iw(r)[:2] + "*",
            f"#1({_iw(r)} {_iw(r)})",
            f"#uw4({_iw(r)} {_iw(r)})",
            f"#syn({_iw(r)} {_iw(r)[:2]}*)",
            f"#od2({_iw(r)} {_iw(r)} {_iw(r)})",
        ]
    )


# Indri queries as text (its parser builds the tree); the root's class is the key.
INDRI: dict[type, Callable[[Any], str]] = {
    iql.Word: _iw,
    iql.Wildcard: lambda r: _iw(r)[:2] + "*",
    iql.Window: lambda r: r.choice(["#1", "#od3", "#uw5", "#uw"]) + f"({_iw(r)} {_iw(r)})",
    iql.Syn: lambda r: (
        f"#syn({_iw(r)} "
        + r.choice([_iw(r), _iw(r)[:2] + "*", f"#1({_iw(r)} {_iw(r)})", f"#uw4({_iw(r)} {_iw(r)})"])
        + ")"
    ),
    iql.Dates: lambda r: r.choice(
        ["#dateafter(2016)", "#datebefore(2020-06)", "#datebetween(2015 2019)", "#dateequals(2018)"]
    ),
    iql.Combine: lambda r: (
        f"#combine({_ileaf(r)} {_ileaf(r)})"
        if r.randint(0, 1)
        else f"#weight(0.3 {_ileaf(r)} 0.7 {_ileaf(r)})"
    ),
    iql.Or: lambda r: f"#or({_ileaf(r)} {_ileaf(r)})",
    iql.Not: lambda r: f"#not({_ileaf(r)})",
    iql.Band: lambda r: f"#band({_ileaf(r)} {_ileaf(r)})",
    iql.Filter: lambda r: (
        f"#{r.choice(['filreq', 'filrej'])}({_ileaf(r)} #combine({_ileaf(r)} {_ileaf(r)}))"
    ),
}


def _node_classes(module: Any) -> set[type]:
    """The syntax node classes a module defines: its dataclasses that print (have a span)."""
    return {
        v
        for v in vars(module).values()
        if isinstance(v, type)
        and v.__module__ == module.__name__
        and dataclasses.is_dataclass(v)
        and "span" in {f.name for f in dataclasses.fields(v)}
    }


def test_every_node_class_is_covered() -> None:
    assert set(BQL) == _node_classes(ast), (
        "a BQL node class without a generator in this contract test"
    )
    assert set(INDRI) == _node_classes(iql), (
        "an Indri node class without a generator in this contract test"
    )


def _classes(node: Any) -> set[type]:
    return {type(n) for n in ast.walk(node)}


# ------------------------------------------------------------------ the contract


def _ids(ix: Index, q: str) -> list[str]:
    return ix.match(q).ids


def check_bql(t: Twins, tree: Any) -> None:
    text = str(tree)
    parsed = parse(text)
    assert parsed == flatten(tree), text
    assert str(parsed) == text and parse(str(parsed)) == parsed, text  # canonical and stable
    want = oracle.evaluate(parsed, t.docs)
    got = _ids(t.one, text)
    assert got == want, (text, got, want)
    assert _ids(t.many, text) == got, text
    admitted = set(got)
    for doc in t.docs:
        e = t.one.explain(text, doc.id)
        assert e.admits == (doc.id in admitted), (text, doc.id)
        stack = [e]
        while stack:
            n = stack.pop()
            assert n.admits == oracle.matches(parse(n.query), doc), (
                text,
                doc.id,
                n.query,
                n.reason,
            )
            stack.extend(n.children)
        assert t.many.explain(text, doc.id).to_dict() == e.to_dict(), (text, doc.id)
    for ranker in ("bm25", "indri"):
        a = t.one.search(text, k=len(t.docs), ranker=ranker)
        b = t.many.search(text, k=len(t.docs), ranker=ranker)
        assert (a.count, a.fallback, a.missing, a.diagnosis) == (
            b.count,
            b.fallback,
            b.missing,
            b.diagnosis,
        ), text
        assert [h.doc_id for h in a.hits] == [h.doc_id for h in b.hits], (text, ranker)
        assert [h.score for h in a.hits] == pytest.approx(
            [h.score for h in b.hits], rel=1e-9, abs=1e-12
        ), (text, ranker)
        assert [(h.fields, h.sections) for h in a.hits] == [
            (h.fields, h.sections) for h in b.hits
        ], (text, ranker)


@pytest.mark.parametrize("cls", list(BQL), ids=lambda c: c.__name__)
@given(seed=st.integers(0, 2**32))
@SETTINGS
def test_bql_contract(twins: Twins, cls: type, seed: int) -> None:
    tree = BQL[cls](random.Random(seed))
    assert type(tree) is cls
    check_bql(twins, tree)


@given(data=st.data())
@SETTINGS
def test_bql_contract_mixed(twins: Twins, data: st.DataObject) -> None:
    """Trees of every class below every other (drawn, so a failure shrinks)."""
    r = _Draws(data.draw)
    tree = ast.And((gen_tree(r, 3), _filter(r))) if r.randint(0, 3) == 0 else gen_tree(r, 3)
    check_bql(twins, tree)


def check_indri(t: Twins, text: str) -> None:
    tree = parse_indri(text)
    assert parse_indri(str(tree)) == tree and str(parse_indri(str(tree))) == str(tree), text
    a = t.one.indri_search(text, k=len(t.docs))
    b = t.many.indri_search(text, k=len(t.docs))
    assert [h.doc_id for h in a.hits] == [h.doc_id for h in b.hits], text
    assert [h.score for h in a.hits] == pytest.approx(
        [h.score for h in b.hits], rel=1e-9, abs=1e-12
    ), text
    assert [(h.fields, h.sections) for h in a.hits] == [(h.fields, h.sections) for h in b.hits], (
        text
    )


@pytest.mark.parametrize("cls", list(INDRI), ids=lambda c: c.__name__)
@given(seed=st.integers(0, 2**32))
@SETTINGS
def test_indri_contract(twins: Twins, cls: type, seed: int) -> None:
    text = INDRI[cls](random.Random(seed))
    assert type(parse_indri(text)) is cls, text
    check_indri(twins, text)


def test_generated_trees_reach_every_bql_class() -> None:
    """The mixed trees hold every class somewhere (not only at the root of its own test)."""
    r = random.Random(0)
    seen: set[type] = set()
    for _ in range(200):
        seen |= _classes(ast.And((gen_tree(r, 3), _filter(r))))
    assert seen == set(BQL)


def test_the_twins_differ_in_segments_only(twins: Twins) -> None:
    assert [twins.one.reader.doc_id(d) for d in twins.one.doc_numbers().tolist()] == [
        twins.many.reader.doc_id(d) for d in twins.many.doc_numbers().tolist()
    ]
