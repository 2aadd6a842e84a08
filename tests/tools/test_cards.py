"""Result cards and snippets: golden texts on the hand-written corpus, properties on real text."""

from __future__ import annotations

import re


import sieve
from sieve.tools import Toolset
from sieve.tools.cards import CardConfig, listing, search_header, shortened
from sieve.tools.fetch.snippets import Matcher, best_snippet
from sieve.tools.style import Style
from sieve.engine.analysis.analyzers import analyze


def search(index: sieve.Index, query: str, **kw: object) -> str:
    r = Toolset(index).call("search", {"query": query, **kw})
    assert r.ok, r.text
    return r.text


def test_card_golden(gold: sieve.Index) -> None:
    assert search(gold, 'heatwave "school closure"') == (
        '1 document matches heatwave AND "school closure"; top 1 by bm25:\n'
        "[1] heat-2022 — Heatwave of 2022 in France · 2022-07 · by A. Writer; B. Reporter; C. Editor +1 more\n"
        "    §[*(intro)*·Causes·*School closures*·Health·Agriculture·Energy·Transport·Wildfires·Water·Tourism·…·*Reactions*·*See also*] +2 more"
        " ib[country·deaths·start] matched: title, body\n"
        "    » School closures: Many schools closed early. The school closure in Paris lasted two days, and exams moved online."
    )


def test_matched_fields_follow_the_query_scopes(gold: sieve.Index) -> None:
    # "zurich" is in cold's title and body, but the query asks for the title only.
    assert search(gold, "zurich[title] OR mill") == (
        "2 documents match zurich[title] OR mill; top 2 by bm25:\n"
        "[1] river — River notes\n"
        "    §[*Early history*·Notes·Notes·*Flood log*] matched: body\n"
        "    » Flood log: …1 metres near the old mill at dawn. Line 2: the river rises 2 metres near the old mill at dawn. Line 3: the river…\n"
        "[2] cold — Cold snap in Zürich · 2021\n"
        "    §[(intro)] matched: title\n"
        "    » (intro): Snow fell on Zürich. Schools stayed open."
    )


def test_fallback_header_names_the_empty_clauses(gold: sieve.Index) -> None:
    text = search(gold, "nothing[title] snow")
    assert text.splitlines()[:3] == ["0 exact matches for nothing[title] AND snow; no document has nothing[title].",
                                     "One change would admit documents: 1 without nothing[title].",
                                     "Ranked by the query's terms instead (bm25):"]
    assert text.splitlines()[3].startswith("[1] cold — ")
    text = search(gold, "snow heatwave")  # each word exists, never together
    assert text.splitlines()[:2] == [
        "0 exact matches for snow AND heatwave (each part matches some document, but no document matches them all).",
        "One change would admit documents: 1 without snow; 1 without heatwave.",  # heatwave: heat-2022; snow: cold
    ]
    r = gold.search("nothing[title] snow", fallback=False)
    assert search_header(r) == "0 documents match nothing[title] AND snow; no document has nothing[title].\nOne change would admit documents: 1 without nothing[title]."
    r = gold.search("nothing[title] snow", fallback=False, diagnose=False)
    assert search_header(r) == "0 documents match nothing[title] AND snow; no document has nothing[title]."


def test_syntax_error_is_text_with_a_caret(gold: sieve.Index) -> None:
    r = Toolset(gold).call("search", {"query": "(heat OR cold"})
    assert not r.ok
    assert r.text == "search error: expected a closing ')' at 13 (the '(' at 0 is never closed)\n  (heat OR cold\n               ^"


def test_shortened_keeps_matched_items_and_counts_the_rest() -> None:
    items = [f"h{i}" for i in range(20)]
    assert shortened(items[:3], {1}, 5) == "[h0·*h1*·h2]"
    assert shortened(items, {15}, 5) == "[h0·h1·h2·h3·…·*h15*·…] +15 more"
    assert shortened(items, {0, 19}, 4) == "[*h0*·h1·h2·…·*h19*] +16 more"
    assert shortened(items, set(range(10)), 3) == "[*h0*·*h1*·*h2*·…] +17 more (7 of them matched)"
    assert shortened(items, {2}, 3, Style(colour=True)) == "[h0·h1·\x1b[1;33m*h2*\x1b[0m·…] +17 more"


def test_long_heading_lists_configurable(gold: sieve.Index) -> None:
    r = gold.search("heatwave")
    text = listing(gold, r, "", Matcher.of(r), CardConfig(max_headings=3, snippet_words=5))
    assert "§[*(intro)*·Causes·…·*See also*] +11 more" in text
    assert "» (intro): The 2022 heatwave struck France…" in text


def test_snippet_prefers_the_window_with_most_terms(gold: sieve.Index) -> None:
    m = Matcher.of(gold.search("alpha beta gam*"))
    text = "alpha " + "x " * 40 + "alpha beta gamma y z " + "x " * 40
    snip = best_snippet([(3, text)], m, width=7)
    assert snip is not None and snip.section == 3
    assert snip.text == "…x x alpha beta gamma y z…"
    assert snip.hits == {"alpha", "beta", "gam"}
    assert best_snippet([(0, "no match here at all")], m, width=3).text == "no match here…"  # type: ignore[union-attr]
    assert best_snippet([(0, "   "), (1, "")], m) is None


def test_snippet_ignores_negated_words_and_folds_like_the_index(gold: sieve.Index) -> None:
    m = Matcher.of(gold.search("zurich NOT snow"))
    assert m.terms == {"zurich"}
    snip = best_snippet([(0, "snow snow snow. Later, in Zürich, sun.")], m, width=3)
    assert snip is not None and snip.text == "…in Zürich, sun."


def test_snippets_contain_the_query_terms_when_the_document_has_them(stdlib: sieve.Index) -> None:
    queries = ["event loop", "socket server", '"command line"', "thread* lock", "NEAR/3(parse, arguments)", "future[title] result", "date* time zone"]
    seen = 0
    for q in queries:
        m = Matcher.of(stdlib.search(q))
        for line in search(stdlib, q, k=10).splitlines():
            if line.startswith("    » "):
                words = set(analyze(line))
                assert any(t in words for t in m.terms) or any(w.startswith(s) for w in words for s in m.stems), (q, line)
                seen += 1
    assert seen >= 20


def test_every_card_has_its_parts(stdlib: sieve.Index) -> None:
    text = search(stdlib, "asyncio[title]", k=8)
    cards = re.split(r"\n(?=\[\d+\] )", text)[1:]
    assert len(cards) == 8
    for i, card in enumerate(cards, 1):
        lines = card.splitlines()
        assert lines[0].startswith(f"[{i}] ")
        assert lines[1].startswith("    §[") and " ib[" in lines[1] and "matched: title" in lines[1]
        assert lines[2].startswith("    » ")


def test_vectorised_hits_equal_word_by_word_analysis() -> None:
    import random

    from sieve.tools.fetch.snippets import word_hits

    rng = random.Random(5)
    vocab = ["com", "command", "co", "Json", "JSONify", "x_y", "a.b", "e-mail", "mail", "(co)", "CO2", "\x1ccom", "x\x1fmail", "o_rdonly", "rd",
             "Zürich", "•", "İcom", "straße", "ﬁle", "naïve", "co\u00a0mail", "\u3000json"]
    for _ in range(400):
        text = "".join(rng.choice(vocab) + rng.choice([" ", "\n", "\t", "  ", "", "\x1e", "\u2003"]) for _ in range(rng.randrange(1, 30)))
        m = Matcher(frozenset(rng.sample(["com", "json", "mail", "co2", "rd", "y", "zurich", "strasse", "file", "naive"], 3)), tuple(rng.sample(["co", "js", "ma", "o", "zu", "fi"], rng.randrange(3))))
        hits, starts, ends = word_hits(text, m)
        words = text.split()
        assert [text[a:b] for a, b in zip(starts.tolist(), ends.tolist())] == words
        expected = [(i, m.hits(w)) for i, w in enumerate(words) if m.hits(w)]
        assert hits == expected, text


def test_the_space_table_is_pythons() -> None:
    import sys

    from sieve.tools.fetch.snippets import SPACES

    assert sorted(SPACES.tolist()) == [c for c in range(sys.maxunicode + 1) if chr(c).isspace()]


def test_a_query_with_nothing_to_rank_says_so(gold: sieve.Index) -> None:
    assert search(gold, "date[2021..2022]", k=1).splitlines()[0] == "2 documents match date[2021-01-01..2022-12-31]; the first 1 in index order (no word to rank by):"
    assert search(gold, "heat*").splitlines()[0] == "1 document matches heat*; the first 1 in index order (no word to rank by):"


def test_only_the_matched_one_of_two_equal_headings_is_starred(gold: sieve.Index) -> None:
    hit = gold.search("second").hits[0]
    assert hit.doc_id == "river" and hit.sections == ("Notes",) and hit.section_numbers == (2,)
    card = search(gold, "second")
    assert "§[Early history·Notes·*Notes*·Flood log]" in card and "» Notes: Second note." in card


def test_no_field_exposure_leaves_the_matched_fields_off(gold: sieve.Index) -> None:
    """The paper's "no field exposure" ablation: the same card without `matched: ...`."""
    from sieve.tools import ToolConfig

    bare = Toolset(gold, config=ToolConfig(cards=CardConfig(fields=False))).call("search", {"query": 'heatwave "school closure"'}).text
    assert bare == search(gold, 'heatwave "school closure"').replace(" matched: title, body", "")
    assert "matched:" not in bare and "ib[country·deaths·start]\n" in bare
