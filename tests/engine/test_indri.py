"""The Indri-style control ranker against query likelihoods computed by hand: a reference written
from the formulas in sieve/engine/rank/indri.py over the brute-force oracle's text units (no index),
compared on every document for random corpora and queries, plus worked examples per operator."""

from __future__ import annotations

import math
import random
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from test_match_oracle import HYPOTHESIS, Corpus, _Draws, gen_corpus, gen_tree, with_corpus

import oracle
import sieve
from sieve.engine.analysis.analyzers import analyze
from sieve.engine.query.bql import ast
from sieve.engine.analysis.fields import Field
from sieve.index.index import parse_query

MU = 2500.0


def _allowed(u: oracle.Unit, fields: Any) -> bool:
    return fields is None or u.field in fields


def _count(node: Any, doc: oracle.OracleDoc) -> int:
    """Occurrences of a leaf in the allowed units (a phrase: its starts; NEAR: either word near the other)."""
    n = 0
    for u in doc.units:
        if not _allowed(u, node.fields):
            continue
        t = u.terms
        if isinstance(node, (ast.Term, ast.Phrase)):
            seq = analyze(node.word if isinstance(node, ast.Term) else node.text)
            n += sum(1 for i in range(len(t) - len(seq) + 1) if tuple(t[i : i + len(seq)]) == tuple(seq))
        elif isinstance(node, ast.Prefix):
            stem = analyze(node.stem)[0]
            n += sum(1 for w in t if w.startswith(stem))
        else:
            a, b = analyze(node.left)[0], analyze(node.right)[0]
            pa = [i for i, w in enumerate(t) if w == a]
            pb = [j for j, w in enumerate(t) if w == b]
            n += sum(1 for i in pa if any(j != i and abs(i - j) <= node.distance for j in pb))
            n += sum(1 for j in pb if any(i != j and abs(i - j) <= node.distance for i in pa))
    return n


def _length(node: Any, doc: oracle.OracleDoc) -> int:
    return sum(len(u.terms) for u in doc.units if _allowed(u, node.fields))


def belief(node: Any, docs: list[oracle.OracleDoc]) -> list[float]:
    """log beliefs of one node for every document, by the formulas, in plain Python."""
    if isinstance(node, ast.DateRange):
        return [0.0 if oracle.leaf_matches(node, d) else -math.inf for d in docs]
    if isinstance(node, ast.Not):
        return [math.log1p(-math.exp(x)) if x < 0 else -math.inf for x in belief(node.child, docs)]
    if isinstance(node, ast.Or):
        kids = [belief(c, docs) for c in node.children]
        out = []
        for i in range(len(docs)):
            miss = 1.0
            for k in kids:
                miss *= -math.expm1(k[i])
            out.append(math.log1p(-miss) if miss < 1 else -math.inf)
        return out
    if isinstance(node, ast.And):
        dates = [c for c in node.children if isinstance(c, ast.DateRange)]
        rest = [belief(c, docs) for c in node.children if not isinstance(c, ast.DateRange)]
        out = []
        for i, d in enumerate(docs):
            ok = all(oracle.leaf_matches(c, d) for c in dates)
            mean = sum(k[i] for k in rest) / len(rest) if rest else 0.0
            out.append(mean if ok else -math.inf)
        return out
    tf = [_count(node, d) for d in docs]
    dl = [_length(node, d) for d in docs]
    cl = sum(dl) or 1
    pc = sum(tf) / cl if sum(tf) else 0.5 / cl
    return [math.log((t + MU * pc) / (n + MU)) for t, n in zip(tf, dl)]


def check(c: Corpus, text: str) -> None:
    tree = parse_query(text)
    want = belief(tree, c.docs)
    got = c.index.searcher.indri_scores(c.index.plan(text))
    order = [c.index.reader.doc_number(d.id) for d in c.docs]
    for w, g, d in zip(want, got[order].tolist(), c.docs):
        if math.isinf(w) or math.isinf(g):
            assert w == g, (text, d.id, w, g)
        else:
            assert g == pytest.approx(w, rel=1e-9, abs=1e-12), (text, d.id)


@given(st.composite(lambda draw: gen_corpus(_Draws(draw)))(), st.integers(0, 2**32))
@HYPOTHESIS
def test_indri_scores_equal_the_formulas(recs: list[dict[str, Any]], seed: int) -> None:
    r = random.Random(seed)
    with_corpus(recs, lambda c: [check(c, str(gen_tree(r, 3))) for _ in range(8)])


@pytest.fixture(scope="module")
def small() -> sieve.Index:
    return sieve.build_index([
        {"id": "a", "title": "heat wave", "date": "2022-07", "text": "the heat plan for the city"},
        {"id": "b", "title": "cold snap", "date": "2021-01", "text": "no heat in the cold city city"},
        {"id": "c", "title": "spring", "text": "nothing"},
    ])


def test_worked_example(small: sieve.Index) -> None:
    """heat[title]: title lengths 2, 2, 1 (|C| = 5); heat occurs once, in a's title: P = 1/5."""
    s = small.searcher.indri_scores(small.plan("heat[title]"))
    pc = 1 / 5
    assert s.tolist() == pytest.approx([math.log((1 + MU * pc) / (2 + MU)), math.log((MU * pc) / (2 + MU)), math.log((MU * pc) / (1 + MU))])
    r = small.search("heat[title] AND city", ranker="indri", k=3)
    # Softly: b lacks heat in its title (the Boolean AND rejects it) but says city twice, and with
    # mu = 2,500 one title word moves the belief less than that.
    assert [h.doc_id for h in r.hits] == ["b", "a", "c"] and r.count == 1
    dated = small.search("city AND date[2022]", ranker="indri", k=3)
    assert [h.doc_id for h in dated.hits] == ["a"]  # only a date excludes
    missing = small.search("heat AND zebra", ranker="indri", k=3)  # Boolean: nothing; softly: still a ranking
    assert missing.count == 0 and len(missing.hits) == 3 and not missing.fallback and missing.diagnosis is not None


def test_only_the_plan_is_read(small: sieve.Index) -> None:
    """Equal plans give equal scores, whatever was searched before (no state between calls)."""
    first = small.searcher.indri_scores(small.plan('"heat plan" OR NEAR/2(cold, city)'))
    small.search("city", ranker="bm25")
    small.search("spring*", ranker="indri")
    again = small.searcher.indri_scores(small.plan('"heat plan" OR NEAR/2(cold, city)'))
    assert np.array_equal(first, again)
    assert set(Field) and small.searcher.parts[0].indri.lengths(Field.TITLE.bit)[1] == 5
