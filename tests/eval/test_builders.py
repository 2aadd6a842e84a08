"""`sieve eval convert`: the paper's collections from small files written here in their public
formats (HotpotQA JSON, MuSiQue JSON Lines, the BrowseComp-Plus corpus and decrypted queries),
as BEIR folders that `load_collection` and `eval build` read."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import sieve
from sieve.cli.main import main
from sieve.errors import CorpusError, InvalidArgumentError
from sieve.eval.builders import bcps_record, convert
from sieve.eval.collections import QAItem, flat_twin, load_collection, load_hotpotqa
from sieve.eval.run import build_twins

HOTPOT: list[dict[str, Any]] = [
    {"_id": "h1", "question": "Were Scott Derrickson and Ed Wood of the same nationality?", "answer": "yes",
     "supporting_facts": [["Scott Derrickson", 0], ["Ed Wood", 0]],
     "context": [["Ed Wood", ["Edward Davis Wood Jr. was an American filmmaker.", " He made Glen or Glenda."]],
                 ["Scott Derrickson", ["Scott Derrickson is an American director."]]]},
    {"_id": "h2", "question": "Who directed Ed Wood?", "answer": "Tim Burton", "supporting_facts": [["Ed Wood (film)", 0]],
     # The same title again, once with the paragraph already seen and once with another one.
     "context": [["Ed Wood", ["Edward Davis Wood Jr. was an American filmmaker.", " He made Glen or Glenda."]],
                 ["Ed Wood", ["Wood was born in Poughkeepsie."]],
                 ["Ed Wood (film)", ["Ed Wood is a 1994 film directed by Tim Burton."]]]},
]

MUSIQUE: list[dict[str, Any]] = [
    {"id": "2hop__1", "question": "Who is the spouse of the Green performer?", "answer": "Miquette Giraudy", "answer_aliases": ["Miquette"],
     "paragraphs": [{"idx": 0, "title": "Green (Steve Hillage album)", "paragraph_text": "Green is the fourth album by Steve Hillage.", "is_supporting": True},
                    {"idx": 1, "title": "Steve Hillage", "paragraph_text": "Steve Hillage's partner is Miquette Giraudy.", "is_supporting": True},
                    {"idx": 2, "title": "Green", "paragraph_text": "Green is a colour.", "is_supporting": False}]},
    {"id": "2hop__2", "question": "What colour is grass?", "answer": "green",
     "paragraphs": [{"idx": 0, "title": "Green", "paragraph_text": "Green is a colour.", "is_supporting": True},
                    {"idx": 1, "title": "Green", "paragraph_text": "Green is also a surname.", "is_supporting": True}]},
]

BCP_CORPUS: list[dict[str, Any]] = [
    {"docid": "101", "url": "https://example.org/fort",
     "text": "---\ntitle: Fort Santiago: a citadel\nauthor: \"Ana Cruz\"\ndate: 2019-03-05T10:00:00Z\nsite: Example News\n---\n"
             "Fort Santiago stands in Manila.\n\n## History\nBuilt in 1571.\n\n```\n# not a heading\n```\n\n### Restoration ###\nRestored in 1992.\n"},
    {"docid": "102", "url": "https://example.org/walls", "text": "# Intramuros\n\nThe walled city of Manila.\n\n## Gates\nEight gates."},
    {"docid": "103", "url": "https://example.org/undated", "text": "---\ndate: sometime in spring\nauthor: B. Reyes\n---\nNo headings here."},
]

BCP_QUERIES: list[dict[str, Any]] = [
    {"query_id": "7", "query": "Which fort was built in 1571?", "answer": "Fort Santiago",
     "evidence_docs": [{"docid": "101", "text": "...", "url": "..."}, {"docid": "102", "text": "...", "url": "..."}],
     "gold_docs": [{"docid": "101", "text": "...", "url": "..."}], "negative_docs": [{"docid": "103"}]},
    {"query_id": "8", "query": "How many gates has Intramuros?", "answer": "Eight", "evidence_docs": [{"docid": "102"}], "gold_docs": []},
]


def _jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _qrels(folder: Path) -> list[list[str]]:
    return [line.split("\t") for line in (folder / "qrels" / "test.tsv").read_text(encoding="utf-8").splitlines()]


def test_hotpotqa_groups_paragraphs_by_title(tmp_path: Path) -> None:
    src = tmp_path / "hotpot_dev_distractor_v1.json"
    src.write_text(json.dumps(HOTPOT), encoding="utf-8")
    c = load_hotpotqa(src)
    assert c.corpus == [
        {"id": "Ed Wood", "title": "Ed Wood", "sections": [
            {"heading": "(intro)", "text": "Edward Davis Wood Jr. was an American filmmaker. He made Glen or Glenda."},
            {"heading": "(intro)", "text": "Wood was born in Poughkeepsie."}]},
        {"id": "Scott Derrickson", "title": "Scott Derrickson", "sections": [{"heading": "(intro)", "text": "Scott Derrickson is an American director."}]},
        {"id": "Ed Wood (film)", "title": "Ed Wood (film)", "sections": [{"heading": "(intro)", "text": "Ed Wood is a 1994 film directed by Tim Burton."}]},
    ]
    built = convert("hotpotqa", src, tmp_path / "hotpotqa")
    assert (built.documents, built.questions, built.without_gold) == (3, 2, 0)
    assert _qrels(tmp_path / "hotpotqa") == [["query-id", "corpus-id", "score"], ["h1", "Scott Derrickson", "1"], ["h1", "Ed Wood", "1"],
                                             ["h2", "Ed Wood (film)", "1"]]
    beir = load_collection(tmp_path / "hotpotqa")
    assert beir.questions == c.questions
    assert beir.questions[1] == QAItem("h2", "Who directed Ed Wood?", ("Tim Burton",), ("Ed Wood (film)",))
    # The twins now differ: two paragraphs are two sections in one, one text in the other.
    twins = build_twins(tmp_path / "hotpotqa", tmp_path / "ix")
    assert [len(twins[t]) for t in ("structured", "flat")] == [3, 3]
    assert len(twins["structured"].document("Ed Wood").sections) == 2 and len(twins["flat"].document("Ed Wood").sections) == 1
    assert twins["structured"].match('"glenda wood"').ids == [] and twins["flat"].match('"glenda wood"').ids == ["Ed Wood"]


def test_musique_groups_paragraphs_by_title(tmp_path: Path) -> None:
    src = _jsonl(tmp_path / "musique_ans_v1.0_dev.jsonl", MUSIQUE)
    built = convert("musique", src, tmp_path / "musique")
    assert (built.documents, built.questions) == (3, 2)
    c = load_collection(tmp_path / "musique")
    assert [q.gold_docs for q in c.questions] == [("Green (Steve Hillage album)", "Steve Hillage"), ("Green",)]
    assert c.questions[0].answers == ("Miquette Giraudy", "Miquette")
    green = sieve.build_index(c.corpus).document("Green")
    assert [s.text for s in green.sections] == ["Green is a colour.", "Green is also a surname."]
    assert load_collection(src, "musique").corpus == [json.loads(line) for line in (tmp_path / "musique" / "corpus.jsonl").read_text().splitlines()]


def test_browsecomp_plus_becomes_structured(tmp_path: Path) -> None:
    corpus = _jsonl(tmp_path / "corpus.jsonl", BCP_CORPUS)
    queries = _jsonl(tmp_path / "browsecomp_plus_decrypted.jsonl", BCP_QUERIES)
    built = convert("browsecomp-plus", corpus, tmp_path / "bcps", queries=queries)
    assert (built.documents, built.questions, built.unparsed_dates, built.without_gold) == (3, 2, 1, 0)
    from sieve.eval.judge import needs_judge

    assert needs_judge(tmp_path / "bcps")  # the paper grades BCP-S with a judge: the grid will ask for one
    docs = [json.loads(line) for line in (tmp_path / "bcps" / "corpus.jsonl").read_text(encoding="utf-8").splitlines()]
    assert docs[0] == {"id": "101", "title": "Fort Santiago: a citadel", "author": "Ana Cruz", "date": "2019-03-05", "infobox": {"site": "Example News"},
                       "url": "https://example.org/fort", "sections": [
                           {"heading": "(intro)", "text": "Fort Santiago stands in Manila."},
                           {"heading": "History", "text": "Built in 1571.\n\n```\n# not a heading\n```"},
                           {"heading": "Restoration", "text": "Restored in 1992."}]}
    assert docs[1]["title"] == "Intramuros" and [s["heading"] for s in docs[1]["sections"]] == ["(intro)", "Gates"]
    assert docs[2]["title"] == "https://example.org/undated" and docs[2]["date_text"] == "sometime in spring" and "date" not in docs[2]
    assert _qrels(tmp_path / "bcps")[1:] == [["7", "101", "2"], ["7", "102", "1"], ["8", "102", "1"]]
    c = load_collection(tmp_path / "bcps")
    assert c.questions[0] == QAItem("7", "Which fort was built in 1571?", ("Fort Santiago",), ("101", "102"))
    s = sieve.build_index(c.corpus, tmp_path / "s")
    assert s.match("cruz[author]").ids == ["101"] and s.match("date[2019]").ids == ["101"] and s.match("gates[section]").ids == ["102"]
    assert s.match("example[infobox]").ids == ["101"] and s.document("103").metadata["date_text"] == "sometime in spring"
    f = sieve.build_index(flat_twin(c.corpus), tmp_path / "f")
    assert f.match("gates[section]").ids == [] and f.match("gates").ids == s.match("gates").ids == ["102"]


def test_bcp_records_and_queries_that_cannot_be_read(tmp_path: Path) -> None:
    with pytest.raises(CorpusError, match="needs docid and text"):
        bcps_record({"docid": "1"}, "corpus.jsonl:1")
    corpus = _jsonl(tmp_path / "corpus.jsonl", BCP_CORPUS)
    obfuscated = _jsonl(tmp_path / "q.jsonl", [{"query_id": "1", "query": 42, "answer": "x"}])
    with pytest.raises(CorpusError, match=r"q.jsonl:1: a query needs query_id and query \(decrypt the release first"):
        convert("browsecomp-plus", corpus, tmp_path / "out", queries=obfuscated)
    with pytest.raises(InvalidArgumentError, match="browsecomp-plus needs its queries file"):
        convert("browsecomp-plus", corpus, tmp_path / "out2")
    with pytest.raises(InvalidArgumentError, match="unknown source 'nq'"):
        convert("nq", corpus, tmp_path / "out3")


def test_eval_convert_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    corpus = _jsonl(tmp_path / "corpus.jsonl", BCP_CORPUS)
    queries = _jsonl(tmp_path / "queries.jsonl", BCP_QUERIES)
    out = tmp_path / "bcps"
    assert main(["eval", "convert", "browsecomp-plus", str(corpus), str(out), "--queries", str(queries)]) == 0
    printed = capsys.readouterr().out
    assert printed.startswith(f"3 documents, 2 questions in {out} (BEIR layout: eval build {out} OUT)\n")
    assert "kept 1 unparseable date as metadata 'date_text'" in printed
    assert main(["eval", "build", str(out), str(tmp_path / "ix")]) == 0
    assert "structured: 3 documents" in capsys.readouterr().out
    # A folder that holds a collection is not overwritten: a user error, exit 1.
    assert main(["eval", "convert", "browsecomp-plus", str(corpus), str(out), "--queries", str(queries)]) == 1
    assert "already holds a collection" in capsys.readouterr().err
    with pytest.raises(SystemExit) as usage:
        main(["eval", "convert", "squad", str(corpus), str(out)])
    assert usage.value.code == 2
