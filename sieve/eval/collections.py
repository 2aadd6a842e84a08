"""QA collections in their public formats: BEIR layout (the paper's structured releases,
BrowseComp-Plus), HotpotQA JSON, MuSiQue JSON Lines. The user downloads the files; nothing is
fetched.

Every loader gives a `Collection`: questions with all gold answer aliases and gold document ids,
and the corpus records (for HotpotQA and MuSiQue, built from the questions' paragraphs, one
document per Wikipedia title as the paper builds them). `sieve.eval.builders` writes these, and
BrowseComp-Plus as BCP-S, in the BEIR layout.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sieve.corpus.documents import INTRO, checked_date
from sieve.corpus.formats import corpus_file, read_documents, records
from sieve.errors import CorpusError, InvalidArgumentError
from sieve.tools.fetch.reading import sections_text
from sieve.tools.shell.safe import shown

FORMATS = ("beir", "hotpotqa", "musique")
DATE_POLICIES = ("strict", "keep")
KEPT_DATE_KEY = "date_text"  # where an unparseable date goes under the "keep" policy


@dataclass(frozen=True)
class QAItem:
    id: str
    question: str
    answers: tuple[str, ...]
    gold_docs: tuple[str, ...] = ()


@dataclass
class Collection:
    name: str
    questions: list[QAItem]
    corpus: Path | list[dict[str, Any]]  # a JSONL/BEIR path, or records built from the questions
    meta: dict[str, Any] = field(default_factory=dict)


def _answers(rec: dict[str, Any], where: str) -> tuple[str, ...]:
    out: list[str] = []
    for key in ("answer", "answers", "answer_aliases"):
        v = rec.get(key)
        if isinstance(v, str):
            out.append(v)
        elif isinstance(v, list):
            out.extend(str(x) for x in v)
    if not out:
        raise CorpusError("question has no answer (give 'answer' or 'answers')", where)
    return tuple(dict.fromkeys(out))


def _jsonl(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    with open(path, encoding="utf-8") as fh:
        for n, line in enumerate(fh, 1):
            if line.strip():
                try:
                    yield n, json.loads(line)
                except ValueError as e:
                    raise CorpusError(f"invalid JSON: {e}", str(path), n) from None


def load_beir(folder: str | Path, split: str = "test") -> Collection:
    """`corpus.jsonl`, `queries.jsonl` (with `answer`/`answers`) and `qrels/<split>.tsv`."""
    root = Path(folder)
    qrels: dict[str, list[str]] = {}
    qpath = root / "qrels" / f"{split}.tsv"
    if qpath.exists():
        with open(qpath, encoding="utf-8") as fh:
            for row in csv.reader(fh, delimiter="\t"):
                if (
                    len(row) >= 2
                    and row[0] != "query-id"
                    and (len(row) < 3 or row[2] not in ("0", "0.0"))
                ):
                    qrels.setdefault(row[0], []).append(row[1])
    questions = []
    for n, rec in _jsonl(root / "queries.jsonl"):
        qid = str(rec.get("_id", rec.get("id", "")))
        if not qid:
            raise CorpusError("question has no id", str(root / "queries.jsonl"), n)
        if qrels and qid not in qrels:
            continue  # not in this split
        questions.append(
            QAItem(
                qid,
                str(rec.get("text", rec.get("question", ""))),
                _answers(rec, f"{root / 'queries.jsonl'}:{n}"),
                tuple(qrels.get(qid, ())),
            )
        )
    return Collection(root.name, questions, corpus_file(root), {"format": "beir", "split": split})


class ByTitle:
    """Wikipedia paragraphs grouped as the paper builds its collections: one document per title
    (its id), each distinct paragraph of that title one section in the order first seen. The
    files give no headings, so no section has one (`(intro)`): no invented words to rank."""

    def __init__(self) -> None:
        self.paragraphs: dict[str, list[str]] = {}

    def add(self, title: str, text: str) -> str:
        """Add one paragraph; returns its document's id."""
        held = self.paragraphs.setdefault(title, [])
        if text not in held:
            held.append(text)
        return title

    def records(self) -> list[dict[str, Any]]:
        return [
            {"id": t, "title": t, "sections": [{"heading": INTRO, "text": x} for x in texts]}
            for t, texts in self.paragraphs.items()
        ]


def _field(rec: dict[str, Any], key: str, where: str) -> Any:
    if key not in rec:
        raise CorpusError(f"missing {key!r}", where)
    return rec[key]


def load_hotpotqa(path: str | Path) -> Collection:
    """HotpotQA distractor/fullwiki JSON (`context: [[title, [sentences]]]`, `supporting_facts:
    [[title, sentence]]`): one document per title (`ByTitle`), gold documents the supporting
    titles."""
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except ValueError as e:
        raise CorpusError(f"invalid JSON: {e}", str(path)) from None
    if not isinstance(data, list):
        raise CorpusError(
            f"a HotpotQA file is a JSON list of questions, got {type(data).__name__}", str(path)
        )
    docs = ByTitle()
    questions = []
    for n, ex in enumerate(data, 1):
        where = f"{path}: question {n}"
        for title, sentences in ex.get("context", []):
            docs.add(title, "".join(sentences))
        gold = tuple(dict.fromkeys(t for t, _ in ex.get("supporting_facts", [])))
        questions.append(
            QAItem(
                str(_field(ex, "_id", where)),
                _field(ex, "question", where),
                _answers(ex, where),
                gold,
            )
        )
    return Collection(path.stem, questions, docs.records(), {"format": "hotpotqa"})


def load_musique(path: str | Path) -> Collection:
    """MuSiQue JSON Lines (`paragraphs: [{idx, title, paragraph_text, is_supporting}]`): one
    document per title (`ByTitle`), gold documents the titles of the supporting paragraphs."""
    path = Path(path)
    docs = ByTitle()
    questions = []
    for n, ex in _jsonl(path):
        where = f"{path}:{n}"
        gold = []
        for p in ex.get("paragraphs", []):
            doc_id = docs.add(_field(p, "title", where), _field(p, "paragraph_text", where))
            if p.get("is_supporting"):
                gold.append(doc_id)
        questions.append(
            QAItem(
                str(_field(ex, "id", where)),
                _field(ex, "question", where),
                _answers(ex, where),
                tuple(dict.fromkeys(gold)),
            )
        )
    return Collection(path.stem, questions, docs.records(), {"format": "musique"})


def load_collection(
    path: str | Path, fmt: str = "beir", dates: str = "strict", split: str = "test"
) -> Collection:
    """A collection in one of `FORMATS`. `dates="keep"` keeps a date the index cannot read as plain
    metadata (`date_text`) instead of stopping the build; `Collection.meta["unparsed_dates"]` counts
    them."""
    if fmt not in FORMATS:
        raise InvalidArgumentError(
            f"unknown collection format {fmt!r}; choose from {', '.join(FORMATS)}"
        )
    if dates not in DATE_POLICIES:
        raise InvalidArgumentError(
            f"unknown date policy {dates!r}; choose from {', '.join(DATE_POLICIES)}"
        )
    c = (
        load_beir(path, split)
        if fmt == "beir"
        else load_hotpotqa(path)
        if fmt == "hotpotqa"
        else load_musique(path)
    )
    c.meta.update(dates=dates, unparsed_dates=0)
    return c


def corpus_records(c: Collection) -> Any:
    """What the structured twin is built from: the corpus as it is, or (dates "keep") its records
    with unreadable dates moved to metadata, counted in `c.meta["unparsed_dates"]` as they pass."""
    if c.meta.get("dates", "strict") == "strict":
        return c.corpus
    return _kept_dates(c)


def _kept_dates(c: Collection) -> Iterator[Any]:
    c.meta["unparsed_dates"] = 0
    for _, _, rec in records(c.corpus):
        if isinstance(rec, CorpusError):
            raise rec
        if isinstance(rec, dict) and rec.get("date") not in (None, ""):
            try:
                checked_date(rec["date"])
            except CorpusError:
                rec = {k: v for k, v in rec.items() if k != "date"} | {KEPT_DATE_KEY: rec["date"]}
                c.meta["unparsed_dates"] += 1
        yield rec


def flat_twin(records: Any) -> Iterator[dict[str, Any]]:
    """The flat twin of a structured corpus: each document's sections as one text without
    sections (`sections_text`: headings inline, as a visit shows them), and the rest as it is
    (id, title, author, date, infobox). The twins differ only in structure: BM25 reads the same
    words in both (title, headings, section texts; author and infobox values are matched, never
    ranked, in both), so a query without field tags admits the same documents in the same order
    with the same scores, and a visit reads the same. What the flat twin lacks is the sections:
    none to search by heading (`x[section]`), fetch by name or list on a card; and a phrase may
    run across what were two sections."""
    for doc in read_documents(records):
        rec: dict[str, Any] = {"id": doc.id, "title": doc.title, **doc.optional_fields()}
        # Shown text: a heading written inline must not bring its line breaks into the text.
        rec["sections"] = (
            [{"heading": INTRO, "text": sections_text(shown(doc))}] if doc.sections else []
        )
        yield rec
