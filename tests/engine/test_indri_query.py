"""Indri's own query language evaluated by the Indri-style scorer, against brute force over the
oracle's text units (no index): windows match exactly the windows, #band and #filreq admit exactly
the documents they should, and a query that BQL can also say scores as BQL's under ranker indri."""

from __future__ import annotations

import math
from collections import Counter
from typing import Any

import numpy as np
from hypothesis import given
from hypothesis import strategies as st
from test_match_oracle import HYPOTHESIS, Corpus, _Draws, gen_corpus, with_corpus

import oracle
from sieve.engine.analysis.fields import Field
from sieve.engine.query.indriql import parse
from sieve.engine.query.plan import Plans

WORDS = ["alpha", "beta", "gamma", "delta", "eps", "zeta", "theta", "o", "rdonly", "intro"]
corpora = st.composite(lambda draw: gen_corpus(_Draws(draw)))()
words = st.sampled_from(WORDS)


def plans(c: Corpus, text: str) -> Plans:
    return Plans.of(parse(text), [s.reader for s in c.index.segments])


def by_doc(c: Corpus, values: np.ndarray) -> list[Any]:
    """An array over internal numbers, in the oracle's document order."""
    return values[[c.index.reader.doc_number(d.id) for d in c.docs]].tolist()


def od_count(terms: list[str], width: int, t: tuple[str, ...]) -> int:
    """Starts p1 of the first word from which p1 < p2 < ... with each step at most `width` exists."""
    n = 0
    for p1, w in enumerate(t):
        if w != terms[0]:
            continue
        frontier = {p1}
        for want in terms[1:]:
            frontier = {q for p in frontier for q in range(p + 1, min(p + width, len(t) - 1) + 1) if t[q] == want}
        n += bool(frontier)
    return n


def uw_count(terms: list[str], width: int | None, t: tuple[str, ...]) -> int:
    """Positions s holding a word of the window whose next `width` positions hold them all."""
    need = Counter(terms)
    n = 0
    for s, w in enumerate(t):
        if w in need:
            seen = Counter(t[s : len(t) if width is None else s + width])
            n += all(seen[x] >= k for x, k in need.items())
    return n


def window_tf(c: Corpus, text: str) -> list[float]:
    (seg,) = c.index.segments  # a small corpus is one segment
    plan = plans(c, text).first
    tf = c.index.searcher.parts[0].indri.tf(plan.leaves[0])
    return by_doc(c, tf)


@given(corpora, st.lists(words, min_size=2, max_size=4), st.integers(1, 5), st.sampled_from([None, "title", "body"]))
@HYPOTHESIS
def test_windows_match_exactly_the_windows(recs: list[dict[str, Any]], terms: list[str], width: int, field: str | None) -> None:
    restrict = f".{field}" if field else ""
    allowed = None if field is None else {Field.TITLE if field == "title" else Field.BODY}

    def units(d: oracle.OracleDoc) -> list[tuple[str, ...]]:
        return [u.terms for u in d.units if allowed is None or u.field in allowed]

    def check(c: Corpus) -> None:
        body = " ".join(terms)
        got = window_tf(c, f"#od{width}({body}){restrict}")
        assert got == [sum(od_count(terms, width, t) for t in units(d)) for d in c.docs], body
        got = window_tf(c, f"#uw{width}({body}){restrict}")
        assert got == [sum(uw_count(terms, width, t) for t in units(d)) for d in c.docs], body
        got = window_tf(c, f"#uw({body}){restrict}")
        assert got == [sum(uw_count(terms, None, t) for t in units(d)) for d in c.docs], body

    with_corpus(recs, check)


def has(d: oracle.OracleDoc, word: str) -> bool:
    return any(word in u.terms for u in d.units)


@given(corpora, st.lists(words, min_size=1, max_size=3), words, words)
@HYPOTHESIS
def test_band_and_filreq_admit_exactly(recs: list[dict[str, Any]], band: list[str], a: str, b: str) -> None:
    def admitted(c: Corpus, text: str) -> list[bool]:
        return [math.isfinite(s) for s in by_doc(c, c.index.searcher.indri_scores(plans(c, text), candidates=True))]

    def check(c: Corpus) -> None:
        want = [all(has(d, w) for w in band) for d in c.docs]
        q = f"#band({' '.join(band)})"
        assert admitted(c, q) == want
        assert c.index.indri_search(q, k=50).count == sum(want)
        assert {h.doc_id for h in c.index.indri_search(q, k=50).hits} == {d.id for d, ok in zip(c.docs, want) if ok}
        # Inside a #combine, the #band still filters the whole query.
        assert admitted(c, f"#combine({q} {a})") == want
        assert admitted(c, f"#filreq({a} #combine({b} {band[0]}))") == [has(d, a) and (has(d, b) or has(d, band[0])) for d in c.docs]
        assert admitted(c, f"#filrej({a} {b})") == [not has(d, a) and has(d, b) for d in c.docs]
        # #combine ranks every document holding any of its words, and no other.
        assert admitted(c, f"{a} {b}") == [has(d, a) or has(d, b) for d in c.docs]

    with_corpus(recs, check)


PAIRS = [  # (Indri, BQL): the same inference network (sieve/engine/rank/indri.py's table)
    ("#combine({a} {b})", "{a} AND {b}"),
    ("{a} {b}.title", "{a} AND {b}[title]"),
    ("#or({a} {b}.(title,body))", "{a} OR {b}[title,body]"),
    ("#combine({a} #not({b}))", "{a} AND NOT {b}"),
    ("#1({a} {b})", '"{a} {b}"'),
    ("#combine[body]({a}* #od1({b} {c}))", '{a}*[body] AND "{b} {c}"[body]'),
    ("#combine({a} #datebetween(2017 2020-06))", "{a} AND date[2017..2020-06]"),
    ("#combine(#or({a} {b}) #not(#1({c} {a})).section)".replace(".section", ""), '({a} OR {b}) AND NOT "{c} {a}"'),
]


@given(corpora, words, words, words)
@HYPOTHESIS
def test_scores_equal_bql_under_ranker_indri(recs: list[dict[str, Any]], a: str, b: str, c_: str) -> None:
    def check(c: Corpus) -> None:
        for indri, bql in PAIRS:
            i, q = indri.format(a=a, b=b, c=c_), bql.format(a=a, b=b, c=c_)
            got = c.index.searcher.indri_scores(plans(c, i))
            want = c.index.searcher.indri_scores(c.index.plan(q))
            assert np.array_equal(got, want), (i, q)

    with_corpus(recs, check)


@given(corpora, words, words)
@HYPOTHESIS
def test_syn_sums_and_weight_weighs(recs: list[dict[str, Any]], a: str, b: str) -> None:
    def tf(c: Corpus, text: str) -> np.ndarray:
        return c.index.searcher.parts[0].indri.tf(plans(c, text).first.leaves[0])

    def check(c: Corpus) -> None:
        assert np.array_equal(tf(c, f"#syn({a} {b})"), tf(c, a) + (tf(c, b) if a != b else tf(c, a)))
        s = c.index.searcher
        wa, wb = s.indri_scores(plans(c, a)), s.indri_scores(plans(c, b))
        got = s.indri_scores(plans(c, f"#weight(3 {a} 1 {b})"))
        assert np.allclose(got, (3 * wa + wb) / 4, rtol=1e-12, atol=0)

    with_corpus(recs, check)


def test_a_search_lists_cards_data() -> None:
    import sieve

    ix = sieve.build_index([
        {"id": "a", "title": "heat wave", "date": "2022-07", "text": "the heat plan for the city"},
        {"id": "b", "title": "cold snap", "date": "2021-01", "text": "no heat in the cold city city"},
        {"id": "c", "title": "spring", "text": "nothing"},
    ])
    r = ix.indri_search("heat.title #uw4(plan city)", k=5)  # plan at 2, city at 5 in a's text: 4 positions
    assert r.query == "#combine(heat.title #uw4(plan city))" and r.count == 1
    assert [h.doc_id for h in r.hits] == ["a"] and r.hits[0].fields == ("title", "body")
    assert r.terms == ("heat", "plan", "city")
    assert ix.indri_search("#uw3(plan city)", k=5).count == 0
    assert ix.indri_search("#band(heat cold) #dateafter(2021-06)", k=5).count == 0
    assert [h.doc_id for h in ix.indri_search("#syn(cold spr*)", k=5).hits] == ["c", "b"]
