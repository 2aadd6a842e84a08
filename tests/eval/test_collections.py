"""Loaders on small fixture files in each public format, and the flat/structured twins."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

import sieve
from sieve.corpus.demo import stdlib_documents
from sieve.errors import CorpusError, InvalidArgumentError
from sieve.eval.collections import QAItem, corpus_records, flat_twin, load_beir, load_collection, load_hotpotqa, load_musique
from sieve.tools.fetch.reading import ReadConfig, read_document

FIX = Path(__file__).parent / "fixtures"


def test_beir_structured_collection(tmp_path: Path) -> None:
    c = load_beir(FIX / "beir")
    assert c.questions == [
        QAItem("q1", "Who built Fort Santiago?", ("Miguel López de Legazpi",), ("d1",)),
        QAItem("q2", "Which city has Intramuros?", ("Manila", "City of Manila"), ("d2",)),
    ]
    index = sieve.build_index(c.corpus, tmp_path / "s")
    assert index.match("History[section] AND legazpi").ids == ["d1"]
    assert index.document("d1").infobox == {"location": "Intramuros, Manila"}


def test_flat_twin_has_the_same_ids_and_text(tmp_path: Path) -> None:
    c = load_beir(FIX / "beir")
    flat = list(flat_twin(c.corpus))
    assert [f["id"] for f in flat] == ["d1", "d2"]
    # The sections become one text; the facts stay facts, not words for BM25 to rank.
    assert flat[0] == {"id": "d1", "title": "Fort Santiago", "author": "Wiki", "date": "2019-03", "infobox": {"location": "Intramuros, Manila"},
                       "sections": [{"heading": "(intro)", "text": "A citadel in Manila.\n\n## History\nBuilt in 1571 by Miguel López de Legazpi."}]}
    s = sieve.build_index(c.corpus, tmp_path / "s")
    f = sieve.build_index(flat, tmp_path / "f")
    assert s.match('"1571 by miguel"').ids == f.match('"1571 by miguel"').ids == ["d1"]
    # Only the structured twin has sections to search.
    assert s.match("history[section]").ids == ["d1"] and f.match("history[section]").ids == []
    assert f.document("d1").headings == ["(intro)"]
    # Field-free words admit and rank alike: the facts' labels and infobox keys are no words of the flat twin.
    for q in ("intramuros", "location", "author", "date OR infobox", "2019", "manila", "wiki"):
        assert [(h.doc_id, h.score) for h in s.search(q, k=5, fallback=False).hits] == [(h.doc_id, h.score) for h in f.search(q, k=5, fallback=False).hits], q
    assert f.match("location").ids == f.match("2019").ids == []


def _visits(index: sieve.Index, config: ReadConfig) -> dict[str, list[str]]:
    out = {}
    for doc_id in [index.reader.doc_id(d) for d in range(len(index))]:
        doc = index.document(doc_id)
        first = read_document(doc, 1, config)
        out[doc_id] = [first.text] + [read_document(doc, p, config).text for p in range(2, (first.parts if config.parts else 1) + 1)]
    return out


@pytest.mark.parametrize("parts", [True, False])
def test_every_visit_reads_the_same_in_both_twins(tmp_path: Path, gold_records: list[dict[str, Any]], parts: bool) -> None:
    """The paper's twins emit identical text: every part of every visit, on hand-written documents
    (sections, infobox, several authors, a duplicate heading, control characters) and real ones."""
    records: list[Any] = gold_records + list(stdlib_documents(limit=40)) + [
        {"id": "odd", "title": "Odd\x1b[31m title", "author": "X\nY", "sections": [{"heading": "Intro?", "text": "a\r\nb\x00c"}, {"heading": "(intro)", "text": "late"}]},
        {"id": "empty", "title": "Empty", "text": ""},
    ]
    s = sieve.build_index(records, tmp_path / "s")
    f = sieve.build_index(flat_twin(records), tmp_path / "f")
    assert len(s) == len(f) == len(records)
    for config in (ReadConfig(parts=parts), ReadConfig(cap=150, parts=parts)):
        assert _visits(s, config) == _visits(f, config)
    assert all(s.document(i).title == f.document(i).title for i in (r["id"] for r in records))
def test_hotpotqa() -> None:
    c = load_hotpotqa(FIX / "hotpot.json")
    assert [q.id for q in c.questions] == ["5a8b57f25542995d1e6f1371", "5a8c7595554299585d9e36b6"]
    assert c.questions[0].answers == ("yes",) and c.questions[0].gold_docs == ("Scott Derrickson", "Ed Wood")
    assert [d["id"] for d in c.corpus] == ["Ed Wood (film)", "Scott Derrickson", "Ed Wood", "Kiss and Tell (1945 film)", "Shirley Temple"]
    assert c.corpus[0]["sections"] == [{"heading": "(intro)", "text": "Ed Wood is a 1994 American biographical period comedy-drama film. It was directed by Tim Burton."}]


def test_musique_keeps_aliases_and_distinct_paragraphs() -> None:
    c = load_musique(FIX / "musique.jsonl")
    assert c.questions[0].answers == ("Miquette Giraudy", "Miquette")
    assert c.questions[0].gold_docs == ("Green (Steve Hillage album)", "Steve Hillage")
    assert c.questions[1].gold_docs == ("Green",)
    # One document per title, as the paper builds it: both paragraphs of "Green" are its sections.
    assert [d["id"] for d in c.corpus] == ["Green (Steve Hillage album)", "Steve Hillage", "Green"]
    assert [s["text"] for s in c.corpus[2]["sections"]] == ["Green is a colour.", "Green is also a surname."]


def test_load_collection_by_format_and_unknown_names() -> None:
    assert load_collection(FIX / "beir").questions == load_beir(FIX / "beir").questions
    assert load_collection(FIX / "hotpot.json", "hotpotqa").meta["format"] == "hotpotqa"
    with pytest.raises(InvalidArgumentError, match="unknown collection format 'squad'; choose from beir, hotpotqa, musique"):
        load_collection(FIX / "beir", "squad")
    with pytest.raises(InvalidArgumentError, match="unknown date policy"):
        load_collection(FIX / "beir", dates="loose")


def test_unparseable_dates_stop_a_build_or_are_kept_as_metadata(tmp_path: Path) -> None:
    shutil.copytree(FIX / "beir", tmp_path / "c")
    lines = (tmp_path / "c" / "corpus.jsonl").read_text(encoding="utf-8").splitlines()
    rec = json.loads(lines[1]) | {"date": "circa 1571"}
    (tmp_path / "c" / "corpus.jsonl").write_text("\n".join([lines[0], json.dumps(rec)]) + "\n", encoding="utf-8")
    strict = load_collection(tmp_path / "c")
    with pytest.raises(CorpusError, match=r"corpus.jsonl:2: unparseable date 'circa 1571'"):
        sieve.build_index(corpus_records(strict), tmp_path / "strict")
    kept = load_collection(tmp_path / "c", dates="keep")
    index = sieve.build_index(corpus_records(kept), tmp_path / "kept")
    assert kept.meta["unparsed_dates"] == 1
    assert index.document("d2").date is None and index.document("d2").metadata["date_text"] == "circa 1571"
    assert index.document("d1").date == "2019-03"  # readable dates are untouched
    flat = sieve.build_index(flat_twin(corpus_records(kept)), tmp_path / "flat")
    assert len(flat) == 2
