"""Loaders on small fixture files in each public format, and the flat/structured twins."""

from __future__ import annotations

from pathlib import Path

import sieve
from sieve.eval.collections import QAItem, flat_twin, load_beir, load_hotpotqa, load_musique

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
    assert flat[0] == {"id": "d1", "title": "Fort Santiago", "text": "A citadel in Manila.\n\nBuilt in 1571 by Miguel López de Legazpi."}
    s = sieve.build_index(c.corpus, tmp_path / "s")
    f = sieve.build_index(flat, tmp_path / "f")
    # Same text in both; only the structured twin has headings and metadata to search.
    assert s.match('"1571 by miguel"').ids == f.match('"1571 by miguel"').ids == ["d1"]
    assert s.match("history[section]").ids == ["d1"] and f.match("history[section]").ids == []
    assert f.match("intramuros[infobox]").ids == []


def test_hotpotqa() -> None:
    c = load_hotpotqa(FIX / "hotpot.json")
    assert [q.id for q in c.questions] == ["5a8b57f25542995d1e6f1371", "5a8c7595554299585d9e36b6"]
    assert c.questions[0].answers == ("yes",) and c.questions[0].gold_docs == ("Scott Derrickson", "Ed Wood")
    assert [d["id"] for d in c.corpus] == ["Ed Wood (film)", "Scott Derrickson", "Ed Wood", "Kiss and Tell (1945 film)", "Shirley Temple"]
    assert c.corpus[0]["text"] == "Ed Wood is a 1994 American biographical period comedy-drama film. It was directed by Tim Burton."


def test_musique_keeps_aliases_and_distinct_paragraphs() -> None:
    c = load_musique(FIX / "musique.jsonl")
    assert c.questions[0].answers == ("Miquette Giraudy", "Miquette")
    assert c.questions[0].gold_docs == ("Green (Steve Hillage album)", "Steve Hillage")
    assert c.questions[1].gold_docs == ("Green",)
    assert [d["id"] for d in c.corpus] == ["Green (Steve Hillage album)", "Steve Hillage", "Green", "Green (2)"]
