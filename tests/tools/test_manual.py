"""The tool manual: generated from the index, rendered strictly, true to the code."""

from __future__ import annotations

from pathlib import Path


import sieve
from sieve.tools import Toolset
from sieve.tools.cards import CardConfig
from sieve.engine.query.bql import parse


def test_manual_lists_only_the_fields_this_index_has(gold: sieve.Index, tmp_path: Path) -> None:
    full = Toolset(gold).manual()
    assert "| `author` | `au` | author names | 1 |" in full
    assert "| `infobox` | `ib` | infobox values (not the keys) | 1 |" in full
    assert "2 of the 4 documents have a date." in full
    assert "some also have an author (1), a date (2) and an infobox (1)" in full
    plain = sieve.build_index([{"id": "a", "title": "Alpha", "text": "one two"}, {"id": "b", "title": "Beta", "text": "three"}], tmp_path / "plain")
    bare = Toolset(plain).manual()
    for promise in ("author", "`au`", "date[", "infobox", "ib[", "Dates", "| `section`"):
        assert promise not in bare, promise
    assert "| `title` | `ti` | the title | 2 |" in bare and "| `body` | `text`, `ab` | section texts | 2 |" in bare


def test_manual_follows_the_tools(gold: sieve.Index) -> None:
    sieve_manual = Toolset.for_condition(gold, "sieve").manual()
    assert "## search" in sieve_manual and "## fetch" in sieve_manual and "## visit" not in sieve_manual
    assert "up to 8 per call" in sieve_manual and "at most 12,000 words" in sieve_manual
    visit = Toolset.for_condition(gold, "search-visit").manual()
    assert "## ranked_search" in visit and "## visit" in visit
    assert "NEAR" not in visit and "## Result cards" not in visit and "give it as `doc` to `visit`" in visit
    fetch = Toolset.for_condition(gold, "search-fetch").manual()
    assert "## Result cards" in fetch and "NEAR" not in fetch


def test_the_manuals_queries_mean_what_it_says(gold: sieve.Index) -> None:
    manual = Toolset(gold).manual()
    claims = {
        "a b": "a AND b",
        "a NOT b": "a AND NOT b",
        "a OR b c": "a OR b AND c",
        "Fort Santiago[title]": "Fort[title] AND Santiago[title]",
        "(a OR b)[title]": "a[title] OR b[title]",
        "date[2018]": "date[2018-01-01..2018-12-31]",
        "date[>=2020-06]": "date[2020-06-01..]",
        "date[<2019]": "date[..2018-12-31]",
        "date[>2019]": "date[2020-01-01..]",
        "a NEAR/5 b": "NEAR/5(a, b)",
        "-a": "NOT a",
    }
    for query, canonical in claims.items():
        assert f"`{query}`" in manual, query
        assert str(parse(query)) == canonical


def test_manual_says_how_words_are_matched(tmp_path: Path) -> None:
    docs = [{"id": "a", "title": "Closing time", "text": "the shop closed"}]
    plain = Toolset(sieve.build_index(docs, tmp_path / "p")).manual()
    english = Toolset(sieve.build_index(docs, tmp_path / "e", analyzer="english")).manual()
    assert "Words are not stemmed" in plain and "matched by their stem" not in plain
    assert "Words are matched by their stem (english stemming)" in english and "Words are not stemmed" not in english


def test_the_papers_manual_is_the_collections_not_the_indexs(gold: sieve.Index, tmp_path: Path) -> None:
    """The paper's manual (Table 4's content): Wikipedia-style collections search title, section and
    body with their aliases; BrowseComp-Plus adds author and date. The same text whatever the index
    holds; only the tool settings (k, caps, fallback, cards) change it."""
    from sieve.tools import ToolConfig
    from sieve.tools.paper_manual import paper_collection, render_paper_manual

    plain = sieve.build_index([{"id": "a", "title": "Alpha", "text": "one two"}], tmp_path / "plain")
    config = ToolConfig(manual="paper")
    wiki = render_paper_manual(Toolset(plain, config=config))
    assert paper_collection(plain) == "wikipedia" and paper_collection(gold) == "browsecomp"  # gold has dates and an author
    assert render_paper_manual(Toolset(gold, config=config), "wikipedia") == wiki == Toolset(plain, config=config).manual()
    for row in ("| `title` | `ti` | the title |", "| `section` | `sec` | the section headings |", "| `body` | `ab`, `text` | the text of the sections |",
                "| `tiab` | | the title or the text |"):
        assert row in wiki
    assert "`author`" not in wiki and "date[" not in wiki and "`ib[...]`: the keys of the infobox" in wiki and "`infobox` (its keys and values)" in wiki
    bcp = Toolset(gold, config=config).manual()
    assert "| `author` | | the author's name |" in bcp and "`date[2018..2020]`" in bcp and "ib[" not in bcp
    assert "NEAR" not in wiki + bcp and "| " + "`infobox`" not in wiki  # neither the paper's manual nor its fields had them
    assert "the whole collection ranked by the query's words instead" in " ".join(bcp.split()) and "One call returns at most 12,000 words." in bcp
    strict = Toolset(gold, config=ToolConfig(manual="paper", fallback=False, cap_scope="document", cards=CardConfig(snippet="none", fields=False))).manual()
    assert "the search lists nothing" in strict and "ranked by the query's words" not in " ".join(strict.split())
    assert "`matched:`" not in strict and "»" not in strict and "at most 12,000 words of each document it reads" in strict


def test_the_papers_manuals_queries_mean_what_they_say(gold: sieve.Index) -> None:
    from sieve.tools import ToolConfig

    manual = Toolset(gold, config=ToolConfig(manual="paper-browsecomp")).manual()
    claims = {
        "x[title] OR x[body] AND y": "x[title] OR x[body] AND y",
        "x[title] OR (x[body] AND y)": "x[title] OR x[body] AND y",
        "(x[title] OR x[body]) AND y": "(x[title] OR x[body]) AND y",
        '"several words"[section]': '"several words"[section]',
        "(a OR b)[title]": "a[title] OR b[title]",
        "date[2018]": "date[2018-01-01..2018-12-31]",
        "date[>=2019-06]": "date[2019-06-01..]",
        "date[<2019]": "date[..2018-12-31]",
    }
    for query, canonical in claims.items():
        assert f"`{query}`" in manual, query
        assert str(parse(query)) == canonical
    for query in ("word*", "word[title,body]", "date[2019-06..]", "date[2018..2020]", "a AND b", "a OR b", "NOT a"):
        parse(query)  # no syntax error
