"""Hits that cost what is read (sieve.engine.rank.results `_MatchedField`, searcher `_Deferred`): a
search leaves each hit's matched `fields`, `sections` and `section_numbers` to the first read of
any hit's, then finds them for all its hits at once; the values, equality, hashing, repr, copies
and pickles are those of hits built with them."""

from __future__ import annotations

import copy
import dataclasses
import pickle
import threading
from pathlib import Path
from typing import Any

import pytest

import sieve
from sieve.engine.rank.results import Hit
from sieve.index.merges import MergePolicy

NEVER = MergePolicy(factor=1000, floor=1, max_documents=1, max_deleted=1.0)

DOCS: list[dict[str, Any]] = [
    {"id": f"d{i}", "title": f"zlib {'inflate' if i % 2 else 'deflate'} page {i}",
     "sections": [
         {"heading": "NAME", "text": f"zlib number {i}"},
         {"heading": "DESCRIPTION", "text": "compress data with deflate" if i % 3 else "other"},
         {"heading": "NAME", "text": "inflate" if i % 4 == 0 else "nothing"}]}
    for i in range(40)
]
QUERIES = ["zlib", "deflate OR inflate", "title:zlib AND deflate", '"compress data"',
           "infl* AND NOT d3"]


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> sieve.Index:
    return sieve.build_index(DOCS, tmp_path_factory.mktemp("lazy") / "ix")


def eager(hits: list[Hit]) -> list[tuple[Any, ...]]:
    return [(h.doc_id, h.rank, h.score, h.fields, h.sections, h.doc, h.section_numbers)
            for h in hits]


def test_a_search_finds_where_it_matched_only_when_read(index: sieve.Index) -> None:
    hits = index.search("deflate OR inflate", k=10).hits
    assert hits and all("fields" not in h.__dict__ and "_matched" in h.__dict__ for h in hits)
    assert [h.doc_id for h in hits] and [h.score for h in hits]  # ids and scores: nothing found
    assert all("fields" not in h.__dict__ for h in hits)
    finder = hits[0].__dict__["_matched"][0]
    assert finder.found is None
    assert hits[3].sections  # one read finds them for every hit; each keeps its own when read
    assert finder.found is not None and len(finder.found) == len(hits) and finder.find is None
    assert "_matched" not in hits[3].__dict__ and "section_numbers" in hits[3].__dict__
    assert [h.fields for h in hits] == [f for f, _, _ in finder.found]


@pytest.mark.parametrize("query", QUERIES)
def test_values_read_late_are_those_found_at_once(index: sieve.Index, query: str) -> None:
    late = index.search(query, k=40).hits
    _ = index.search("zlib", k=40).hits[0].fields  # another search's reads between change nothing
    found = index.searcher.matched(index.plan(query), [h.doc for h in late])
    assert [(h.fields, h.sections, h.section_numbers) for h in late] == found
    assert late == index.search(query, k=40).hits  # equality reads them on both sides
    assert any(h.fields for h in late)


def test_a_hit_with_its_values_given_equals_one_found_late(index: sieve.Index) -> None:
    hit = index.search("title:zlib AND deflate", k=1).hits[0]
    given = Hit(hit.doc_id, hit.rank, hit.score, hit.fields, hit.sections, hit.doc,
                hit.section_numbers)
    late = index.search("title:zlib AND deflate", k=1).hits[0]
    assert late == given and hash(late) == hash(given) and repr(late) == repr(given)
    assert dataclasses.replace(late, rank=9).sections == given.sections
    assert copy.copy(index.search("title:zlib AND deflate", k=1).hits[0]) == given
    assert Hit("x", 1, 1.0).fields == () and Hit("x", 1, 1.0).section_numbers == ()
    with pytest.raises(dataclasses.FrozenInstanceError):
        late.fields = ()  # type: ignore[misc]


def test_hits_and_results_pickle_with_their_values(index: sieve.Index) -> None:
    results = index.search("deflate OR inflate", k=10)
    back = pickle.loads(pickle.dumps(results))
    assert eager(back.hits) == eager(results.hits) and back == results
    assert all("_matched" not in h.__dict__ for h in back.hits)


def test_threads_reading_the_same_hits_get_the_same_values(index: sieve.Index) -> None:
    hits = index.search("zlib", k=40).hits
    got: list[list[tuple[Any, ...]]] = []
    barrier = threading.Barrier(6)

    def read() -> None:
        barrier.wait()
        got.append([(h.fields, h.sections, h.section_numbers) for h in reversed(hits)])

    threads = [threading.Thread(target=read) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(got) == 6 and all(g == got[0] for g in got) and any(f for f, _, _ in got[0])


def test_hits_of_several_segments_are_found_in_their_own(tmp_path: Path) -> None:
    ix = sieve.build_index(DOCS[:20], tmp_path / "ix")
    with ix.writer(policy=NEVER) as w:
        for rec in DOCS[20:]:
            w.add(rec)
    ix = ix.reopen()
    fresh = sieve.build_index(DOCS, tmp_path / "fresh")
    assert len(ix.segments) == 2
    for q in QUERIES:
        # Internal numbers differ (a segment's start is padded); all else is the same.
        assert ix.search(q, k=40).hits == fresh.search(q, k=40).hits, q
        assert [h.section_numbers for h in ix.search(q, k=40).hits] == [
            h.section_numbers for h in fresh.search(q, k=40).hits], q


def test_explain_false_leaves_them_empty_at_once(index: sieve.Index) -> None:
    hits = index.search("zlib", k=5, explain=False).hits
    assert all(h.__dict__["fields"] == () and h.sections == () for h in hits)
