"""The twins differ only in structure: on generated structured documents, every query without
field tags admits the same documents in both twins and ranks them in the same order with the same
BM25 scores; a visit reads the same; only the structured twin has sections to search."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import sieve
from sieve.eval.collections import flat_twin
from sieve.tools.fetch.reading import ReadConfig, read_document

# Words shared by titles, headings, texts, authors and infobox keys and values, so that a query's
# words land in every field, and words that look like the flat twin's old labels and dates.
WORDS = ["alpha", "beta", "gamma", "delta", "author", "date", "infobox", "location", "2019", "manila", "café", "straße", "x1"]
PROBES = WORDS + ["cafe", "strasse", "nowhere"]

word = st.sampled_from(WORDS)
words = st.lists(word, min_size=0, max_size=8).map(" ".join)
# A heading may be missing ("(intro)", also after other sections), repeated, or hold a line break.
heading = st.one_of(st.just("(intro)"), st.just(""), words, words.map(lambda w: w.replace(" ", "\n", 1)))
section = st.fixed_dictionaries({"heading": heading, "text": st.one_of(words, words.map(lambda w: w.replace(" ", "\x1b\r\n", 1)))})
author = st.one_of(st.none(), words, st.lists(words.filter(bool), min_size=1, max_size=3))
infobox = st.dictionaries(word, words, max_size=3)
date = st.one_of(st.none(), st.sampled_from(["2019", "2019-03", "2021-11-05"]))


@st.composite
def corpus(draw: Any) -> list[dict[str, Any]]:
    out = []
    for i in range(draw(st.integers(1, 12))):
        rec: dict[str, Any] = {"id": f"d{i}", "title": draw(words), "sections": draw(st.lists(section, max_size=4))}
        for key, value in (("author", draw(author)), ("date", draw(date)), ("infobox", draw(infobox))):
            if value:
                rec[key] = value
        out.append(rec)
    return out


def _atom(draw: Any) -> str:
    w = draw(st.sampled_from(PROBES))
    return f"{w[:2]}*" if draw(st.integers(0, 5)) == 0 and len(w) > 2 else w


@st.composite
def field_free(draw: Any, depth: int = 2) -> str:
    """A BQL query without field tags or dates: words, prefixes, AND, OR, AND NOT."""
    if depth == 0 or draw(st.integers(0, 2)) == 0:
        return _atom(draw)
    a, b = draw(field_free(depth - 1)), draw(field_free(depth - 1))
    op = draw(st.sampled_from(["AND", "OR", "AND NOT"]))
    return f"({a} {op} {b})"


def ranked(index: sieve.Index, query: str) -> list[tuple[str, float]]:
    return [(h.doc_id, h.score) for h in index.search(query, k=len(index), fallback=True, diagnose=False).hits]


TWINS = settings(max_examples=60, deadline=None, derandomize=True, database=None, suppress_health_check=[HealthCheck.too_slow])


@given(corpus(), st.lists(field_free(), min_size=1, max_size=8))
@TWINS
def test_field_free_queries_admit_and_rank_alike_in_both_twins(records: list[dict[str, Any]], queries: list[str]) -> None:
    s = sieve.build_index(records)
    f = sieve.build_index(flat_twin(records))
    for q in queries:
        assert s.match(q).ids == f.match(q).ids, q
        assert ranked(s, q) == ranked(f, q), q  # the same ids in the same order, scores equal to the last bit


@given(corpus(), st.lists(st.tuples(st.sampled_from(WORDS), st.sampled_from(WORDS)), min_size=1, max_size=4))
@TWINS
def test_phrases_differ_only_where_a_section_ended(records: list[dict[str, Any]], pairs: list[tuple[str, str]]) -> None:
    """A phrase finds in the flat twin everything it finds in the structured one, with the same
    scores; it may also run across what were two sections (the structure the flat twin lacks)."""
    s = sieve.build_index(records)
    f = sieve.build_index(flat_twin(records))
    for a, b in pairs:
        q = f'"{a} {b}"'
        both = dict(ranked(f, q))
        assert set(s.match(q).ids) <= set(f.match(q).ids), q
        assert all(both[d] == score for d, score in ranked(s, q) if score > 0), q


@given(corpus())
@TWINS
def test_visits_read_the_same_and_only_the_structured_twin_has_sections(records: list[dict[str, Any]]) -> None:
    s = sieve.build_index(records)
    f = sieve.build_index(flat_twin(records))
    for rec in records:
        a, b = s.document(rec["id"]), f.document(rec["id"])
        assert read_document(a, 1, ReadConfig()).text == read_document(b, 1, ReadConfig()).text
        assert (a.title, a.author, a.date, dict(a.infobox)) == (b.title, b.author, b.date, dict(b.infobox))
        assert b.headings == (["(intro)"] if a.sections else [])
