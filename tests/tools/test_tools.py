"""The tool surface: schemas, argument checking, session state, error texts (word for word)."""

from __future__ import annotations

import json
from typing import Any

import pytest

import sieve
from sieve.tools import CONDITIONS, ReadConfig, ToolConfig, Toolset, free_text_query
from sieve.tools.schema import validate
from sieve.engine.query.bql import parse


@pytest.fixture()
def tools(gold: sieve.Index) -> Toolset:
    return Toolset(gold, ("search", "ranked_search", "fetch", "visit"))


def text(ts: Toolset, name: str, args: Any) -> str:
    return ts.call(name, args).text


def test_schemas_are_openai_function_specs(tools: Toolset) -> None:
    specs = tools.schemas()
    assert [s["function"]["name"] for s in specs] == ["search", "ranked_search", "fetch", "visit"]
    for s in specs:
        assert s["type"] == "function" and set(s["function"]) == {"name", "description", "parameters"}
        params = s["function"]["parameters"]
        assert params["type"] == "object" and params["additionalProperties"] is False
        json.dumps(s)  # serialisable as sent to a model server
    search = specs[0]["function"]["parameters"]
    assert search["properties"]["k"] == {"type": "integer", "minimum": 1, "maximum": 50, "description": "how many results (default 5, at most 50)"}
    assert specs[2]["function"]["parameters"]["properties"]["sections"]["maxItems"] == 8


def test_every_example_validates(tools: Toolset) -> None:
    for tool in tools.tools.values():
        assert validate(tool.parameters, json.loads(tool.example)) is None


@pytest.mark.parametrize(
    "schema, value, problem",
    [
        ({"type": "integer"}, True, 'the arguments must be an integer, got true'),
        ({"type": ["integer", "string"]}, None, "the arguments must be an integer or a string, got null"),
        ({"type": "object", "properties": {"k": {"type": "integer", "maximum": 50}}}, {"k": 51}, '"k" must be at most 50, got 51'),
        ({"type": "object", "properties": {"k": {"type": "integer", "minimum": 1}}}, {"k": 0}, '"k" must be at least 1, got 0'),
        ({"type": "object", "required": ["q"]}, {}, 'missing "q"'),
        ({"type": "object", "properties": {"q": {}}, "additionalProperties": False}, {"x": 1}, 'unknown argument "x" (allowed: q)'),
        ({"type": "array", "minItems": 1}, [], "the arguments must list at least 1 item"),
        ({"type": "array", "maxItems": 2}, [1, 2, 3], "the arguments may list at most 2 items, got 3"),
        ({"type": "string", "minLength": 1}, "  ", "the arguments must not be empty"),
        ({"type": "string", "maxLength": 3}, "abcd", "the arguments may be at most 3 characters long, got 4"),
        ({"type": "string", "maxLength": 4}, "abcd", None),
        ({"enum": ["a", "b"]}, "c", 'the arguments must be one of "a", "b", got "c"'),
        ({"type": "array", "items": {"type": "object", "properties": {"doc": {"type": "integer"}}}}, [{"doc": 1}, {"doc": "x"}], '"[1].doc" must be an integer, got "x"'),
        ({"type": "string"}, "x" * 60, None),
        ({"type": "integer"}, "x" * 60, 'the arguments must be an integer, got "' + "x" * 38 + '…'),
    ],
)
def test_validator(schema: dict[str, Any], value: Any, problem: str | None) -> None:
    assert validate(schema, value) == problem


def test_validator_refuses_keywords_it_does_not_check() -> None:
    with pytest.raises(ValueError):
        validate({"type": "string", "pattern": "^a"}, "a")


@pytest.mark.parametrize(
    "name, args, message",
    [
        ("search", {}, 'search error: missing "query". Example: {"query": "heatwave[title] \\"school closure\\"", "k": 5}'),
        ("search", {"query": "x", "k": 51}, 'search error: "k" must be at most 50, got 51. Example: {"query": "heatwave[title] \\"school closure\\"", "k": 5}'),
        ("search", {"query": "x", "k": "5"}, 'search error: "k" must be an integer, got "5". Example: {"query": "heatwave[title] \\"school closure\\"", "k": 5}'),
        ("search", '{"query": "x"', "search error: the arguments are not valid JSON (Expecting ',' delimiter: line 1 column 14 (char 13))."
         ' Example: {"query": "heatwave[title] \\"school closure\\"", "k": 5}'),
        ("search", {"query": "titel[titel]"}, "search error: unknown field 'titel' at 6 (did you mean title? valid fields: title (ti), section (sec, heading),"
         " body (text, ab), author (au), infobox (ib), tiab, all, date)\n  titel[titel]\n        ^"),
        ("fetch", {"doc": 1, "section": "x"}, 'fetch error: unknown argument "doc" (allowed: sections). Example: {"sections": [{"doc": 1, "section": "Usage"}]}'),
        ("fetch", {"sections": [{"doc": 1, "section": "x"}] * 9}, 'fetch error: "sections" may list at most 8 items, got 9. Example: {"sections": [{"doc": 1, "section": "Usage"}]}'),
        ("fetch", {"sections": [{"doc": 1.5, "section": "x"}]}, 'fetch error: "sections[0].doc" must be an integer or a string, got 1.5. Example: {"sections": [{"doc": 1, "section": "Usage"}]}'),
        ("fetch", {"sections": [{"doc": 1, "section": "Causes"}]}, "fetch error: there is no earlier search, so rank 1 means nothing; search first, or give a document id (a string)"),
        ("visit", {"doc": "nope"}, 'visit error: no document with id "nope"'),
        ("visit", {"doc": "cold", "part": 2}, "visit error: cold has 1 part, so there is no part 2"),
        ("serach", {}, 'error: there is no tool named "serach"; the tools are search, ranked_search, fetch, visit'),
    ],
)
def test_bad_calls_explain_themselves(tools: Toolset, name: str, args: Any, message: str) -> None:
    r = tools.call(name, args)
    assert not r.ok
    assert r.text == message
    assert r.tokens == len(message.split())


def test_ranks_refer_to_the_last_listing(tools: Toolset) -> None:
    assert text(tools, "search", {"query": "schools", "k": 1}).splitlines()[1].startswith("[1] cold — ")
    assert text(tools, "fetch", {"sections": [{"doc": 2, "section": "x"}]}) == "fetch error: rank 2 is not in the last search (it listed ranks 1-1)"
    assert text(tools, "fetch", {"sections": [{"doc": 1, "section": "intro"}]}) == "[cold] Cold snap in Zürich § (intro)\nSnow fell on Zürich. Schools stayed open."
    assert text(tools, "visit", {"doc": "1"}) == 'visit error: no document with id "1"; to read rank 1 of the last search, pass 1 as a number'
    assert text(tools, "visit", {"doc": "7"}).startswith("[7] Seven · whole document")  # a numeric id, as a string, is an id
    tools.call("search", {"query": "(broken"})  # a failed search keeps the listing the agent last saw
    assert tools.call("visit", {"doc": 1}).ok
    assert tools.call("search", {"query": "nothing[title]"}).text == (
        "0 exact matches for nothing[title]; no document has nothing[title]. Ranked by the query's terms instead (bm25):\n"
        "No document contains any of the query's words."
    )
    assert text(tools, "visit", {"doc": 1}) == "visit error: the last search listed no documents, so there is no rank 1"


def test_session_records_what_was_surfaced_and_opened(tools: Toolset) -> None:
    tools.call("search", {"query": "schools"})
    tools.call("fetch", {"sections": [{"doc": 2, "section": "health"}, {"doc": 2, "section": "nope"}]})
    tools.call("search", {"query": "mill OR snow"})
    assert tools.surfaced == ["cold", "heat-2022", "river"]
    assert tools.opened == ["heat-2022"]
    assert tools.tokens > 0


def test_fetch_several_and_report_errors_in_place(tools: Toolset) -> None:
    tools.call("search", {"query": "heatwave", "k": 1})
    r = tools.call("fetch", '{"sections": [{"doc": 1, "section": "energy"}, {"doc": 1, "section": "Sports"}, {"doc": "river", "section": "early"}]}')
    assert not r.ok  # one item failed; the others are still read
    assert r.text == (
        "[heat-2022] Heatwave of 2022 in France § Energy\nNuclear plants cut output because river water was too warm.\n\n"
        'fetch error: no section "Sports" in heat-2022. Sections: (intro) · Causes · School closures · Health · Agriculture · Energy · Transport'
        " · Wildfires · Water · Tourism · Politics · Science · Reactions · See also. Also: intro, facts, infobox, contents.\n\n"
        "[river] River notes § Early history\nA mill stood by the river."
    )


def test_one_call_never_passes_the_cap(gold: sieve.Index) -> None:
    ts = Toolset(gold, ("search", "fetch", "visit"), ToolConfig(read=ReadConfig(cap=200)))
    r = ts.call("fetch", {"sections": [{"doc": "river", "section": "flood log", "part": 3}, {"doc": "cold", "section": "intro"}, {"doc": "river", "section": "flood log"}]})
    assert r.tokens <= 200
    assert r.text.splitlines()[-1] == "[not shown, over the 200-word cap of one read: river § Flood log (part 1 of 14). Fetch it in another call.]"
    assert "[cold] Cold snap in Zürich § (intro)" in r.text  # a small section still fits after a big one
    many = [{"doc": "river", "section": "flood log", "part": p} for p in range(1, 9)]
    r = ts.call("fetch", {"sections": many})
    assert r.tokens <= 200 and r.text.count("[river] River notes § Flood log") == 1
    assert r.text.endswith("[not shown, over the 200-word cap of one read: 7 more items. Fetch them in another call.]")
    for p in range(1, 15):
        assert ts.call("visit", {"doc": "river", "part": p}).tokens <= 200


def test_ranked_search_has_no_query_language(tools: Toolset) -> None:
    assert free_text_query('school AND "closure" NOT-x [title] Zürich zurich') == '("school" OR "AND" OR "closure" OR "NOT" OR "x" OR "title" OR "Zürich")[tiab]'
    assert free_text_query("(( ]]") is None
    assert str(parse(free_text_query("a-b") or "")) == '"a"[title,body] OR "b"[title,body]'
    out = text(tools, "ranked_search", {"query": "school closures NOT paris"})
    assert out.splitlines()[0] == "1 document contains words of the query; top 1 by bm25:"
    assert out.splitlines()[1].startswith("[1] heat-2022 — ")
    assert "§[" in out  # fetch is available, so the cards show headings
    plain = Toolset.for_condition(tools.index, "search-visit")
    assert list(plain.tools) == list(CONDITIONS["search-visit"].tools)
    assert plain.call("ranked_search", {"query": "mill stood"}).text == (
        "1 document contains words of the query; top 1 by bm25:\n"
        "[1] river — River notes\n"
        "    » A mill stood by the river."
    )
    assert plain.call("ranked_search", {"query": "?!"}).text == "ranked_search error: the query has no word to search for (letters or digits)"
    assert plain.call("ranked_search", {"query": "qqq"}).text == "No document contains any word of the query."


def test_results_unpack_for_the_agent_loop(tools: Toolset) -> None:
    text_, tokens = tools.call("search", {"query": "heatwave"})
    assert text_.startswith("1 document matches heatwave") and tokens == len(text_.split())


def test_describe_lists_every_tool(tools: Toolset) -> None:
    lines = tools.describe().splitlines()
    assert [ln.split("`")[1] for ln in lines] == ["search", "ranked_search", "fetch", "visit"]
    assert "`k` (integer, optional, 1..50): how many results (default 5, at most 50)" in lines[0]


def test_show_lists_facts_and_every_heading_with_its_size(gold: sieve.Index) -> None:
    ts = Toolset(gold, ("search", "show"))
    doc = gold.document("heat-2022")
    out = text(ts, "show", {"doc": "heat-2022"})
    lines = out.splitlines()
    assert lines[0] == "heat-2022" and lines[1] == f"title: {doc.title}" and f"{len(doc.sections)} sections:" in lines
    listed = [ln.strip() for ln in lines[lines.index(f"{len(doc.sections)} sections:") + 1 :]]
    assert listed == [f"#{j + 1} {s.heading} ({len(s.text.split()):,} word{'s' if len(s.text.split()) != 1 else ''})" for j, s in enumerate(doc.sections)]
    assert text(ts, "show", {"doc": 1}).startswith("show error: there is no earlier search")
    assert text(ts, "show", {"doc": "nope"}) == 'show error: no document with id "nope"'


def test_the_papers_ceiling_bounds_each_document_of_a_fetch(tmp_path: Any) -> None:
    """In eval (`cap_scope="document"`, the paper's) the read ceiling caps each document's text of
    one fetch, not the whole call: two documents of 120 words each both come back under a cap of
    200; a second long section of the same document still waits for another call."""
    words = " ".join(f"w{i}" for i in range(120))
    docs = [{"id": d, "title": d.upper(), "sections": [{"heading": "Long", "text": words}, {"heading": "More", "text": words}]} for d in ("a", "b")]
    index = sieve.build_index(docs, tmp_path / "idx")
    asked = {"sections": [{"doc": "a", "section": "Long"}, {"doc": "b", "section": "Long"}, {"doc": "a", "section": "More"}]}
    per_call = Toolset(index, ("search", "fetch"), ToolConfig(read=ReadConfig(cap=200, parts=False))).call("fetch", asked)
    assert per_call.tokens <= 200 and "[B] B § Long" not in per_call.text
    paper = Toolset(index, ("search", "fetch"), ToolConfig(read=ReadConfig(cap=200, parts=False), cap_scope="document")).call("fetch", asked)
    assert "[a] A § Long" in paper.text and "[b] B § Long" in paper.text and paper.tokens > 240
    assert paper.text.splitlines()[-1] == "[not shown, over the 200-word cap of one read of a document: a § More. Fetch it in another call.]"
    described = Toolset(index, ("search", "fetch"), ToolConfig(cap_scope="document")).tools["fetch"].description
    assert described == "Read named sections of documents (up to 8 per call, 12,000 words per document)."
    with pytest.raises(sieve.SieveError, match="cap_scope must be one of call, document, not 'episode'"):
        ToolConfig(cap_scope="episode")
