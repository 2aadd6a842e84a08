"""Declared fields: metadata keys kept as filter columns (number, date, keyword), `name[...]` in BQL.
The oracle over random corpora and queries (one segment, several, after adds and merges), what a
filter never does (rank), bad values with their line, the declaration's life, errors, the CLI.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import oracle
from sieve import open_index
from sieve.corpus.documents import document_from_record
from sieve.engine.format import commits
from sieve.engine.query.bql import parse
from sieve.engine.query.bql.parser import declared_text_fields
from sieve.engine.segment.snapshot import manifest_crc
from sieve.errors import BQLSyntaxError, CorpusError, IndexDamagedError, InvalidArgumentError
from sieve.index.index import build_index
from sieve.tools import Toolset

DECLARED = {"year": "number", "venue": "keyword", "published": "date", "abstract": "text"}
WORDS = ["neural", "search", "index", "graph", "model"]
ABSTRACT_WORDS = WORDS + ["models", "searching", "the", "of", "Graphs"]
VENUES = ["ACL", "acl", "EMNLP", "Findings of  ACL", "Zürich Talks", "ZURICH talks", 2024]
DATES = ["2019", "2019-06", "2019-06-15", "2020-02-29", "2021-12", "1999"]


def _record(r: random.Random, i: int) -> dict[str, Any]:
    rec: dict[str, Any] = {"id": f"d{i}", "title": " ".join(r.choice(WORDS) for _ in range(2)), "text": " ".join(r.choice(WORDS) for _ in range(5))}
    year = r.choice([None, 1999, 2005, 2005.5, 2010, -3, "2012", " 2001 "])
    if year is not None:
        rec["year"] = year
    venue = r.choice([None, *VENUES, VENUES[:2], [VENUES[2], VENUES[5]], []])
    if venue is not None:
        rec["venue"] = venue
    published = r.choice([None, *DATES])
    if published is not None:
        rec["published"] = published
    shape = r.random()
    if shape < 0.6:
        rec["abstract"] = " ".join(r.choice(ABSTRACT_WORDS) for _ in range(r.randint(1, 8)))
    elif shape < 0.8:
        rec["abstract"] = [" ".join(r.choice(ABSTRACT_WORDS) for _ in range(r.randint(1, 4))) for _ in range(r.randint(0, 3))]
    return rec


def _text(r: random.Random) -> str:
    w = lambda: r.choice(ABSTRACT_WORDS[:5] + ["models", "searching", "graphs"])  # noqa: E731
    tag = r.choice(["[abstract]", "[abstract]", "[title]", ""])
    return r.choice([w() + tag, f'"{w()} {w()}"' + tag, f'"{w()} of {w()}"' + tag, w()[:3] + "*" + tag, f"{w()} NEAR/2 {w()}" + tag])


def _filter(r: random.Random) -> str:
    kind = r.choice(["year", "venue", "published", "abstract", "abstract"])
    if kind == "abstract":
        return _text(r)
    if kind == "year":
        n = r.choice(["1999", "2005", "2005.5", "-3", "2012", "0"])
        return "year[" + r.choice([n, f"={n}", f">={n}", f">{n}", f"<={n}", f"<{n}", f"{n}..", f"..{n}", f"-10..{n}"]) + "]"
    if kind == "venue":
        v = r.choice(["acl", "ACL", "emnlp", '"findings of acl"', '"Findings   of ACL"', '"zurich talks"', "2024", "nips"])
        return f"venue[={v}]"
    d = r.choice(DATES)
    return "published[" + r.choice([d, f"{d}..", f"..{d}", f"2019..{d}" if d >= "2019" else f"{d}..2020"]) + "]"


def _query(r: random.Random, depth: int = 0) -> str:
    if depth > 1 or r.random() < 0.4:
        return _filter(r) if r.random() < 0.7 else r.choice(WORDS)
    op = r.choice([" AND ", " OR ", " AND NOT "])
    return "(" + _query(r, depth + 1) + op + _query(r, depth + 1) + ")"


def _check(ix: Any, docs: list[oracle.OracleDoc], queries: list[str]) -> None:
    bad = []
    for q in queries:
        with declared_text_fields(ix.schema.text_fields):
            tree = parse(q)
        want = oracle.evaluate(tree, docs)
        got = ix.match(q)
        if got.ids != want:
            bad.append(f"{q}: oracle {want}, engine {got.ids}")
    assert not bad, f"{len(bad)} disagreements:\n" + "\n".join(bad[:5])


@pytest.mark.parametrize("seed, analyzer, stop", [(0, "plain", None), (1, "english", "english"), (2, "plain", "english")])
def test_filters_match_the_oracle(seed: int, analyzer: str, stop: str | None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("sieve.index.batches.BATCH_DOCS", 10)  # a segment ends only between batches
    r = random.Random(seed)
    recs = [_record(r, i) for i in range(60)]
    docs = oracle.prepare((document_from_record(x) for x in recs), analyzer, oracle_stop(stop), declared=DECLARED)
    queries = [_query(r) for _ in range(150)]
    one = build_index(recs, tmp_path / "one", fields=DECLARED, analyzer=analyzer, stopwords=stop)
    _check(one, docs, queries)
    # Several segments (a tiny segment budget), then adds, a replacement and a merge.
    many = build_index(recs[:40], tmp_path / "many", fields=DECLARED, segment_bytes=2_000, analyzer=analyzer, stopwords=stop)
    assert len(many.segments) > 1
    with many.writer() as w:
        for rec in recs[40:]:
            w.add(rec)
        w.add(recs[3])  # the same document again: replaced, moved to the end
    many = many.reopen()
    order = [d for d in docs if d.id != "d3"] + [d for d in docs if d.id == "d3"]
    _check(many, order, queries)
    many.merge()
    _check(open_index(tmp_path / "many"), order, queries)


def oracle_stop(name: str | None) -> list[str]:
    from sieve.engine.analysis.analyzers import STOP_LISTS

    return sorted(STOP_LISTS[name]) if name else []


@given(st.integers(0, 10_000))
@settings(max_examples=20, deadline=None, derandomize=True, database=None)
def test_filters_match_the_oracle_property(seed: int) -> None:
    r = random.Random(seed)
    recs = [_record(r, i) for i in range(r.randint(1, 25))]
    docs = oracle.prepare((document_from_record(x) for x in recs), declared=DECLARED)
    ix = build_index(recs, fields=DECLARED)
    try:
        _check(ix, docs, [_query(r) for _ in range(10)])
    finally:
        ix.close()


RECS = [
    {"id": "a", "title": "Neural search", "text": "neural neural search", "year": 2005, "venue": "ACL", "abstract": "We rank graphs of documents."},
    {"id": "b", "title": "Graph search", "text": "search", "year": 2011, "venue": ["EMNLP", "Findings of ACL"], "published": "2011-05",
     "abstract": ["Dense retrieval", "sparse retrieval of passages"]},
    {"id": "c", "title": "Index", "text": "neural index", "venue": "acl"},
]


def test_text_fields_are_searched_when_named(ix: Any) -> None:
    assert ix.match("retrieval[abstract]").ids == ["b"] and ix.match("retrieval").ids == []  # no tag: the built-in fields only
    assert ix.match('"sparse retrieval"[abstract]').ids == ["b"]
    assert ix.match('"dense sparse"[abstract]').ids == []  # two values of a list are two units: no phrase across them
    assert ix.match("(graph* OR passage*)[abstract] AND year[<2010]").ids == ["a"]
    assert ix.match("search[abstract]").ids == [] and ix.match("search").ids == ["a", "b"]
    hits = ix.search("search AND retrieval[abstract]", k=3).hits
    assert [h.doc_id for h in hits] == ["b"] and hits[0].score == pytest.approx({h.doc_id: h.score for h in ix.search("search", k=3).hits}["b"])
    assert ix.explain("graphs[abstract]", "a").places[0].field == "abstract"
    assert ix.explain("ranks[abstract]", "a").reason == "no document in the index has 'ranks' in abstract"
    with pytest.raises(BQLSyntaxError, match="cannot share a tag"):
        ix.match("retrieval[abstract, title]")
    with pytest.raises(BQLSyntaxError, match="did you mean abstract\\? .*this index's text fields: abstract"):
        ix.match("retrieval[abstrct]")
    with pytest.raises(BQLSyntaxError, match="unknown field 'abstract'"):
        build_index(RECS).match("retrieval[abstract]")  # valid only where declared


@pytest.fixture(scope="module")
def ix() -> Any:
    index = build_index(RECS, fields=DECLARED)
    yield index
    index.close()


def test_a_filter_never_changes_a_score(ix: Any) -> None:
    plain = {h.doc_id: h.score for h in ix.search("neural OR search", k=5).hits}
    filtered = ix.search("(neural OR search) AND year[>=2000]", k=5).hits
    assert [h.doc_id for h in filtered] == ["a", "b"] and all(h.score == pytest.approx(plain[h.doc_id], abs=1e-12) for h in filtered)
    only = ix.search("venue[=acl]", k=5)
    assert [h.doc_id for h in only.hits] == ["a", "c"] and {h.score for h in only.hits} == {0.0}


def test_canonical_form_and_errors_with_their_place(ix: Any) -> None:
    assert ix.match('venue[ = "Findings  of ACL" ] year[ 2000 .. ]').query == 'venue[="Findings  of ACL"] AND year[2000..]'
    assert ix.match('venue[= "Findings  of ACL"]').ids == ["b"]
    assert ix.match("(search year[2000..])[title]").query == "search[title] AND year[2000..]"  # a group's tag leaves filters alone
    assert ix.match("(search year[2000..])[title]").ids == ["a", "b"]
    for query, pos, what in [
        ("neural AND genre[=x]", 11, "unknown filter field 'genre'"),
        ("year[1x..]", 5, "bad number filter on year"),
        ("year[5..1]", 5, "bad number filter on year"),
        ("venue[>3]", 6, "bad keyword filter on venue"),
        ("published[2021-13]", 10, "bad date filter on published"),
        ('venue[=""]', 6, "bad keyword filter on venue"),
    ]:
        with pytest.raises(BQLSyntaxError) as e:
            ix.match(query)
        assert e.value.pos == pos and what in e.value.message, (query, e.value)
    with pytest.raises(BQLSyntaxError, match="this index's filter fields: date, year \\(number\\), venue \\(keyword\\), published \\(date\\)"):
        ix.match("genre[=x]")
    with pytest.raises(BQLSyntaxError, match="declares no filter fields"):
        build_index(RECS).match("year[2005]")


def test_the_agent_is_told_and_shown(ix: Any) -> None:
    tools = Toolset(ix)
    assert "`year` (number), `venue` (keyword), `published` (date) and `abstract` (text)" in tools.manual()
    assert "Filter fields" not in Toolset(build_index(RECS)).manual()
    out = tools.call("search", {"query": "search year[2000..2010]"})
    assert out.ok and "[1] a — Neural search · year 2005 · venue ACL\n" in out.text and "[2]" not in out.text
    both = tools.call("search", {"query": "year[2011]"}).text
    assert "[1] b — Graph search · year 2011 · venue EMNLP/Findings of ACL · published 2011-05\n" in both  # the text field is not repeated
    why = ix.explain("search AND year[>2010]", "a")
    assert not why.admits and why.children[1].kind == "column" and why.children[1].reason == "its year 2005 is outside the filter"
    assert ix.explain("year[>2010]", "c").reason == "the document has no year"
    assert ix.explain("venue[=acl]", "c").admits


@pytest.mark.parametrize("value, message", [
    ('"year": "soon"', "field 'year' is declared a number, got 'soon'"),
    ('"year": true', "field 'year' is declared a number, got bool"),
    ('"year": "nan"', "not finite"),
    ('"venue": {"a": 1}', "field 'venue' is declared a keyword"),
    ('"published": "May 2020"', "field 'published' is declared a date"),
])
def test_a_value_that_does_not_fit_is_an_error_at_its_line(value: str, message: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    corpus = tmp_path / "c.jsonl"
    good = '{"id": "g%d", "title": "t", "text": "x"}\n'
    corpus.write_text(good % 1 + '{"id": "bad", "title": "t", "text": "x", ' + value + "}\n" + good % 2)
    with pytest.raises(CorpusError) as e:
        build_index(corpus, tmp_path / "ix", fields=DECLARED)
    assert e.value.line == 2 and message in str(e.value)
    skipped = build_index(corpus, tmp_path / "ix", fields=DECLARED, on_error="skip")
    assert skipped.match("t[title]").ids == ["g1", "g2"]
    monkeypatch.setattr("sieve.index.batches.PARALLEL_MIN_BYTES", 0)  # the worker processes check the same way
    with pytest.raises(CorpusError) as e:
        build_index(corpus, tmp_path / "par", fields=DECLARED, jobs=2)
    assert e.value.line == 2 and message in str(e.value)
    with pytest.raises(CorpusError, match=message.split(",")[0]):
        with skipped.writer() as w:
            w.add(json.loads('{"id": "late", "text": "x", ' + value + "}"))


@pytest.mark.parametrize("fields, message", [
    ({"Year": "number"}, "lower-case letters"),
    ({"title": "keyword"}, "is taken"),
    ({"ti": "keyword"}, "is taken"),
    ({"year": "integer"}, "unknown type 'integer'; known: keyword, number, date"),
    (["year"], "NAME:TYPE"),
])
def test_bad_declarations_are_refused_before_anything_is_written(fields: Any, message: str, tmp_path: Path) -> None:
    with pytest.raises(InvalidArgumentError, match=message):
        build_index(RECS, tmp_path / "ix", fields=fields)
    assert not (tmp_path / "ix").exists()


def test_the_declaration_is_recorded_kept_and_checked(tmp_path: Path) -> None:
    build_index(RECS, tmp_path / "ix", fields=["year:number", "venue:keyword"]).close()
    ix = open_index(tmp_path / "ix")
    assert ix.schema.fields == (("year", "number"), ("venue", "keyword"))
    assert ix.manifest["fields"] == [["year", "number"], ["venue", "keyword"]]
    with ix.writer() as w:
        for d in ("a", "b", "c"):
            w.delete(d)
    ix = ix.reopen()
    assert len(ix) == 0 and ix.schema.fields == (("year", "number"), ("venue", "keyword"))  # an emptied index keeps its fields
    with ix.writer() as w:
        w.add({"id": "n", "text": "x", "year": 3})
    assert ix.reopen().match("year[3]").ids == ["n"]
    ix.reopen().check()
    # A segment whose declaration differs from the index's is damage.
    root = tmp_path / "ix"
    gen = root / (root / "CURRENT").read_text().strip()
    commit = commits.read_manifest(gen)
    seg = root / commit["segments"][0]["name"]
    commits.write_manifest(seg, {**commits.read_manifest(seg), "fields": [["year", "keyword"], ["venue", "keyword"]]})
    commit["segments"][0]["manifest_crc32"] = manifest_crc(seg)
    commits.write_manifest(gen, commit)
    with pytest.raises(IndexDamagedError):
        open_index(root, verify=True).match("year[=3]")


def test_cli_declares_filters_and_adds_keep_them(tmp_path: Path) -> None:
    corpus = tmp_path / "c.jsonl"
    corpus.write_text("".join(json.dumps(d) + "\n" for d in RECS))
    run = lambda *a: subprocess.run([sys.executable, "-m", "sieve", *a], capture_output=True, text=True)  # noqa: E731
    p = run("index", str(corpus), str(tmp_path / "ix"), "--field", "year:number", "--field", "venue:keyword")
    assert p.returncode == 0, p.stderr
    assert "filter fields: year (number), venue (keyword)" in p.stdout
    p = run("match", str(tmp_path / "ix"), "venue[=acl] OR year[>2010]", "--json")
    assert json.loads(p.stdout)["ids"] == ["a", "b", "c"]
    p = run("add", str(tmp_path / "ix"), str(corpus), "--field", "year:keyword")
    assert p.returncode != 0 and "declares year (number), venue (keyword), not year:keyword" in p.stderr and "rebuilding" in p.stderr
    p = run("add", str(tmp_path / "ix"), str(corpus))
    assert p.returncode == 0, p.stderr
    p = run("index", str(corpus), str(tmp_path / "bad"), "--field", "year")
    assert p.returncode != 0 and "NAME:TYPE" in p.stderr and "Traceback" not in p.stderr


def test_a_skipped_record_never_shifts_the_values_of_the_next(tmp_path: Path) -> None:
    """A duplicate id is found after the fields were checked: its values must go with it."""
    recs = [{"id": "a", "text": "x", "year": 1, "abstract": "one"}, {"id": "a", "text": "y", "year": 2, "abstract": "two"},
            {"id": "b", "text": "z", "year": 3, "abstract": "three"}, {"id": "c", "text": "w", "year": "bad"}, {"id": "d", "text": "v", "year": 4}]
    ix = build_index(recs, fields={"year": "number", "abstract": "text"}, on_error="skip")
    assert [ix.match(f"year[{y}]").ids for y in (1, 2, 3, 4)] == [["a"], [], ["b"], ["d"]]
    assert ix.match("three[abstract]").ids == ["b"] and ix.match("two[abstract]").ids == []


def test_a_long_value_is_cut_on_the_card() -> None:
    long = "Proceedings of the " + "Very " * 20 + "Long Conference"
    ix = build_index([{"id": "x", "title": "T", "text": "body", "venue": long + "\n[1] fake card"}], fields={"venue": "keyword"})
    head = Toolset(ix).call("search", {"query": "body"}).text.splitlines()[1]
    value = head.split(" · venue ", 1)[1]
    assert len(value) == 40 and value.endswith("…") and "\n" not in value
    assert ix.match('venue[="' + long + ' [1] fake card"]').ids == ["x"]  # the whole value, spaces folded
