"""Issue 50: a Lucene-style `name:value` word whose name is a field is searched as written (it may
be meant: `std::move`, "title: zlib" in a text), and the results carry a hint with the BQL that
scopes the word instead, shown by every listing (the CLI, the agent's tools)."""

from __future__ import annotations

from pathlib import Path

import pytest

import sieve
from sieve.cli.main import main
from sieve.engine.query.bql import parse
from sieve.engine.query.bql.hints import colon_hints
from sieve.tools import cards

RECS = [
    {"id": "zlib", "title": "zlib manual", "text": "A compression library.", "year": 2005},
    {
        "id": "gzip",
        "title": "gzip",
        "text": "gzip uses zlib; see std::move and re:search.",
        "date": "2020-03",
    },
]
TITLE_HINT = (
    "title:zlib is read as words to search for, not as a field query (BQL writes the field as a"
    " tag after the word); for zlib in title, write zlib[title]"
)


@pytest.fixture(scope="module")
def index() -> sieve.Index:
    return sieve.build_index(RECS, fields={"year": "number"})


def test_a_field_before_a_colon_gets_a_hint_on_the_results(index: sieve.Index) -> None:
    r = index.search("title:zlib")
    assert r.fallback and r.hints == (TITLE_HINT,)
    assert [h.doc_id for h in index.search("zlib[title]").hits] == [
        "zlib"
    ]  # what the hint suggests finds it
    assert index.search("zlib[title]").hints == ()


def test_every_field_name_and_alias_and_date_and_declared_fields(index: sieve.Index) -> None:
    assert index.search("TI:zlib").hints[0].endswith("for zlib in ti, write zlib[ti]")
    assert index.search("date:2020").hints[0].endswith("for documents dated 2020, write date[2020]")
    assert index.search("year:2005").hints[0].endswith("for 2005 in year, write 2005[year]")
    assert index.search("title: zlib").hints[0].endswith("as in word[title]")
    both = index.search("body:gzip OR title:zlib").hints
    assert [h.split(" ")[0] for h in both] == ["body:gzip", "title:zlib"]  # in query order


def test_a_colon_that_names_no_field_is_searched_without_a_hint(index: sieve.Index) -> None:
    assert index.search("std::move").hints == ()
    assert index.search("re:search").hints == ()
    assert index.search('"title:zlib"').hints == ()  # quoted: the user means the text
    assert colon_hints(parse("zlib OR gzip")) == ()


def test_the_listing_shows_the_hint(index: sieve.Index) -> None:
    header = cards.search_header(index.search("title:zlib"))
    assert header.splitlines()[-1] == f"Hint: {TITLE_HINT}."


def test_sieve_search_prints_the_hint(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    sieve.build_index(RECS, tmp_path / "ix", fields={"year": "number"})
    assert main(["search", str(tmp_path / "ix"), "title:zlib"]) == 0
    out = capsys.readouterr().out
    assert f"Hint: {TITLE_HINT}." in out
