"""Pathological but valid requests stay bounded in memory and output size: a NEAR explanation over a
word repeated thousands of times in one document, a document with tens of thousands of sections
read through ambiguous names and `show`. (Speed lives in benchmarks; these check the bounds that
were broken: an |a| x |b| matrix, quadratic section lookups, unbounded outputs.)"""

from __future__ import annotations

import resource
from pathlib import Path

import pytest

import sieve
from sieve.tools import Toolset
from sieve.tools import ReadConfig, ToolConfig, make_tools


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


# The language's own caps, for tests of what a query past the default `Limits` costs.
ROOMY = sieve.Limits(max_query_chars=10_000, max_phrase_words=1_000)


def test_near_explanation_is_not_quadratic(tmp_path: Path) -> None:
    """30,000 repeats of each word: the old explanation built 900M-cell matrices (a 6.7 GiB MemoryError)."""
    words = " ".join(["the to"] * 30_000)
    docs = [{"id": "big", "title": "repeats", "sections": [{"heading": "Body", "text": words}]},
            {"id": "small", "title": "the other", "sections": [{"heading": "Body", "text": "to be or not, the end"}]}]
    index = sieve.build_index(docs, tmp_path / "idx")
    before = _rss_mb()
    hits = index.search("NEAR/1(the, to)", k=5).hits
    assert [h.doc_id for h in hits] == ["big"] and hits[0].sections == ("Body",)
    hits = index.search("NEAR/3(the, end)", k=5).hits  # "the end": adjacent, in the small one only
    assert [h.doc_id for h in hits] == ["small"]
    assert _rss_mb() - before < 300


@pytest.fixture(scope="module")
def sprawling(tmp_path_factory: pytest.TempPathFactory) -> sieve.Index:
    sections = [{"heading": "Notes" if j % 2 else f"Part {j} notes", "text": f"entry {j} of the list"} for j in range(20_000)]
    docs = [{"id": "wide", "title": "A document with twenty thousand sections", "sections": sections}]
    return sieve.build_index(docs, tmp_path_factory.mktemp("wide") / "idx")


@pytest.mark.parametrize("name, says", [("Notes", 'names 10000 sections of wide'), ("notes", 'names 10000 sections of wide'),
                                        ("Part", "matches 10000 sections of wide by prefix"), ("nothing here", 'no section "nothing here"')])
def test_ambiguous_section_names_answer_with_bounded_errors(sprawling: sieve.Index, name: str, says: str) -> None:
    tools: Toolset = make_tools(sprawling, "sieve")
    result = tools.call("fetch", {"sections": [{"doc": "wide", "section": name}]})
    assert not result.ok and says in result.text, result.text[:300]
    assert len(result.text) < 40_000 and "more" in result.text


def test_show_is_capped_at_one_read(sprawling: sieve.Index) -> None:
    tools = Toolset(sprawling, ("search", "fetch", "show"), ToolConfig(read=ReadConfig(cap=3_000)))
    result = tools.call("show", {"doc": "wide"})
    assert result.ok and result.tokens <= 3_000
    assert "20000 sections:" in result.text and 'more (fetch section "contents" lists them all, part by part)' in result.text
    # and what it points to works: contents in parts, each within the cap
    part = tools.call("fetch", {"sections": [{"doc": "wide", "section": "contents", "part": 2}]})
    assert part.ok and part.tokens <= 3_000 and "Part 2" not in part.text[:50]


def test_repeated_atoms_are_explained_once(stdlib: sieve.Index, monkeypatch: pytest.MonkeyPatch) -> None:
    """`s*` written 1,024 times cost 40x a match in search: every copy was explained per hit."""
    from sieve.engine.query.explain import Explainer

    roomy = sieve.open_index(stdlib.path, limits=ROOMY)  # a query past the default caps on purpose

    def card(q: str) -> list[tuple[str, tuple[str, ...], tuple[str, ...]]]:
        return [(h.doc_id, h.fields, h.sections) for h in roomy.search(q, k=5).hits]

    explained: list[int] = []  # the atoms each explainer explains (per hit, through one operator each)
    real = Explainer.__init__

    def counted(self: Explainer, *args: object) -> None:
        real(self, *args)  # type: ignore[arg-type]
        explained.append(len(self.leaves))

    want = card("json* OR NEAR/3(file, read)")
    monkeypatch.setattr(Explainer, "__init__", counted)
    got = card(" OR ".join(["json*", "NEAR/3(file, read)"] * 200))
    assert got == want and len(got) == 5
    assert explained and set(explained) == {2}  # each distinct atom once, not 400 copies


def test_a_phrase_repeating_its_words_reads_each_word_once(stdlib: sieve.Index, monkeypatch: pytest.MonkeyPatch) -> None:
    from sieve.engine.query.explain import Explainer

    seen: list[int] = []
    real = Explainer._ragged

    def counted(self: Explainer, tid: int, docs: object) -> object:
        seen.append(tid)
        return real(self, tid, docs)

    monkeypatch.setattr(Explainer, "_ragged", counted)
    q = '"the" OR "' + " ".join(["of", "the"] * 300) + '"'
    sieve.open_index(stdlib.path, limits=ROOMY).search(q, k=5)  # a 600-word phrase: past the default caps on purpose
    assert len(seen) == len(set(seen)) <= 3


def test_a_card_reads_a_bounded_part_of_its_document(sprawling: sieve.Index, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A query matching all 20,000 sections of a hit, and a hit whose one section is 9 MB: the
    snippet reads at most `snippet_sections` sections and `snippet_chars` characters."""
    from sieve.tools.fetch import snippets
    from sieve.tools.cards import CardConfig

    read: list[int] = []
    real = snippets.word_hits

    def counted(text: str, matcher: object) -> object:
        read.append(len(text))
        return real(text, matcher)

    monkeypatch.setattr(snippets, "word_hits", counted)
    result = make_tools(sprawling, "sieve").call("search", {"query": "entry"})
    assert result.ok and "wide" in result.text
    assert 0 < len(read) <= CardConfig.snippet_sections
    body = " ".join(f"word{i % 5000} the river flows" for i in range(400_000))
    huge = sieve.build_index([{"id": "huge", "title": "one long body", "sections": [{"heading": "Body", "text": body}]}], tmp_path / "huge")
    read.clear()
    result = make_tools(huge, "sieve").call("search", {"query": "river"})
    assert result.ok and "river" in result.text
    assert sum(read) <= CardConfig.snippet_chars < len(body)
