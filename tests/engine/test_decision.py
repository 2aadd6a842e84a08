"""`Index.explain`: every node's verdict equals the brute-force oracle's for that document (property
test over random corpora and queries), the reasons say what the documents hold, and temporary
indexes live exactly as long as their object."""

from __future__ import annotations

import gc
import random
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from test_match_oracle import HYPOTHESIS, Corpus, _Draws, gen_corpus, gen_tree, with_corpus

import oracle
import sieve
from sieve.engine.query.decision import Explanation
from sieve.errors import UnknownDocumentError
from sieve.index.index import parse_query


def nodes(e: Explanation) -> list[Explanation]:
    return [e] + [n for c in e.children for n in nodes(c)]


def check(c: Corpus, query: str) -> int:
    """Every node of every document's explanation against the oracle; returns nodes checked."""
    checked = 0
    by_id = {d.id: d for d in c.docs}
    for doc_id, doc in by_id.items():
        e = c.index.explain(query, doc_id)
        assert e.admits == (doc_id in c.index.match(query).ids)
        for n in nodes(e):
            assert n.admits == oracle.matches(parse_query(n.query), doc), (query, doc_id, n.query, n.reason)
            assert n.reason
            if n.kind in ("term", "phrase", "prefix", "near") and n.admits:
                assert n.matches > 0 and n.places and n.reason.startswith("matches in ")
            checked += 1
    return checked


@given(st.composite(lambda draw: gen_corpus(_Draws(draw)))(), st.integers(0, 2**32))
@HYPOTHESIS
def test_every_verdict_matches_the_oracle(recs: list[dict[str, Any]], seed: int) -> None:
    r = random.Random(seed)
    total = with_corpus(recs, lambda c: sum(check(c, str(gen_tree(r, 3))) for _ in range(6)))
    assert total > 0


@pytest.fixture(scope="module")
def index() -> sieve.Index:
    recs = [
        {"id": "a", "title": "Heat plan for Paris", "date": "2019-06", "author": "A. Writer",
         "sections": [{"heading": "School closures", "text": "Schools closed when the heat came to the city."}]},
        {"id": "b", "title": "Cold plan", "text": "A plan for cold winters, not heat."},
    ]
    return sieve.build_index(recs)


def test_reasons_say_where_and_why(index: sieve.Index) -> None:
    e = index.explain('heat[title] AND "school closures"[section] AND date[2020..]', "a")
    assert not e.admits and e.reason == "1 of 3 parts does not match"
    title, heading, date = e.children
    assert title.admits and title.places[0].field == "title" and title.places[0].word == 1 and title.reason == "matches in title word 1"
    assert heading.admits and heading.places[0].section == "School closures" and heading.places[0].field == "section"
    assert not date.admits and date.reason == "its date 2019-06 is outside the range"
    assert index.explain("writer[title]", "a").reason == 'only in author (first at author word 2), not in title'
    assert index.explain('"city the"', "a").reason.startswith("the words are all in the document, but never next to each other")
    assert index.explain("NEAR/2(schools, city)", "a").reason == (
        "the nearest the two words come in one field value or section is 8 apart; at most 2 asked")
    assert index.explain("paris", "b").reason == "the document does not contain 'paris'"
    assert index.explain("zebra", "b").reason == "no document in the index has 'zebra'"
    assert index.explain("date[2019]", "b").reason == "the document has no date"
    n = index.explain("NOT cold", "b")
    assert not n.admits and n.reason == "the excluded part matches" and n.children[0].admits
    assert n.to_dict()["children"][0]["places"][0] == {"field": "title", "section": None, "word": 1}
    with pytest.raises(UnknownDocumentError):
        index.explain("heat", "nope")


def test_a_temporary_index_goes_with_its_object(tmp_path: Path) -> None:
    recs = [{"id": str(i), "title": f"doc {i}", "text": "alpha beta" if i % 2 else "gamma"} for i in range(20)]
    ix = sieve.build_index(recs)
    on_disk = sieve.build_index(recs, tmp_path / "ix")
    assert ix.temporary and not on_disk.temporary
    assert ix.match("alpha").ids == on_disk.match("alpha").ids and len(ix.match("alpha").ids) == 10
    folder = ix.path.parent
    assert folder.exists()
    ix.close()
    assert not folder.exists()
    again = sieve.Index.from_documents(recs)
    folder = again.path.parent
    del again
    gc.collect()
    assert not folder.exists()
    with sieve.build_index(recs) as third:
        folder = third.path.parent
        assert third.search("gamma").count == 10
    assert not folder.exists()
    on_disk.close()  # an index on disk stays
    assert (tmp_path / "ix" / "CURRENT").exists()
