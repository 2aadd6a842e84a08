"""The paper's collections from their public files, written in the BEIR layout that
`load_collection` reads (`sieve eval convert`): corpus.jsonl, queries.jsonl (with `answers`) and
qrels/test.tsv (the gold documents).

- HotpotQA (JSON) and MuSiQue (JSON Lines): the structured Wikipedia collections, one document per
  title, its paragraphs the sections (`sieve.eval.collections.ByTitle`).
- BrowseComp-Plus: its corpus (JSON Lines of `docid`, `text`, `url`) made structured (BCP-S): title,
  sections from the Markdown headings, author and date from a front-matter block, its other keys
  the infobox; its decrypted queries (`query_id`, `query`, `answer`, `evidence_docs`, `gold_docs`).

The user downloads the files; nothing is fetched.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sieve.corpus.documents import INTRO, checked_date
from sieve.errors import CorpusError, InvalidArgumentError
from sieve.eval.collections import (
    KEPT_DATE_KEY,
    Collection,
    QAItem,
    _answers,
    _jsonl,
    load_hotpotqa,
    load_musique,
)

SOURCES = ("hotpotqa", "musique", "browsecomp-plus")
# qrels scores: a document holding the answer (BrowseComp-Plus "gold") ranks above evidence.
EVIDENCE, GOLD = 1, 2


@dataclass(frozen=True)
class Built:
    """What a conversion wrote."""

    out: Path
    documents: int
    questions: int
    unparsed_dates: int = 0  # BCP-S dates kept as metadata `date_text`
    without_gold: int = 0  # questions with no gold document: not in the test split's qrels


def convert(
    source: str, path: str | Path, out: str | Path, queries: str | Path | None = None
) -> Built:
    """Write the collection of `source` (one of SOURCES) read from `path` as a BEIR folder `out`;
    BrowseComp-Plus needs its `queries` file too."""
    if source not in SOURCES:
        raise InvalidArgumentError(f"unknown source {source!r}; choose from {', '.join(SOURCES)}")
    out = Path(out)
    if (out / "corpus.jsonl").exists():
        raise InvalidArgumentError(
            f"{out} already holds a collection (corpus.jsonl); remove it or choose another folder"
        )
    if source == "browsecomp-plus":
        if queries is None:
            raise InvalidArgumentError(
                "browsecomp-plus needs its queries file (--queries): JSON Lines with query_id, "
                "query, answer, evidence_docs"
            )
        questions, grades = bcp_questions(queries)
        dates = {"unparsed": 0}
        n = _write(out, bcps_records(path, dates), questions, grades)
        # The paper grades BCP-S with an LLM judge: the grid then refuses to run it without one.
        from sieve.eval.judge import collection_note

        collection_note(out).write_text(json.dumps({"accuracy": "judge"}) + "\n", encoding="utf-8")
        return Built(
            out,
            n,
            len(questions),
            dates["unparsed"],
            sum(1 for q in questions if q.id not in grades),
        )
    if queries is not None:
        raise InvalidArgumentError(
            f"{source} keeps its questions in the same file: --queries is for browsecomp-plus"
        )
    c: Collection = load_hotpotqa(path) if source == "hotpotqa" else load_musique(path)
    grades = {q.id: dict.fromkeys(q.gold_docs, EVIDENCE) for q in c.questions if q.gold_docs}
    assert isinstance(c.corpus, list)
    n = _write(out, c.corpus, c.questions, grades)
    return Built(out, n, len(c.questions), 0, sum(1 for q in c.questions if not q.gold_docs))


def _write(
    out: Path,
    docs: Iterable[dict[str, Any]],
    questions: list[QAItem],
    grades: dict[str, dict[str, int]],
) -> int:
    (out / "qrels").mkdir(parents=True, exist_ok=True)
    n = 0
    with open(out / "corpus.jsonl", "w", encoding="utf-8") as fh:
        for rec in docs:
            fh.write(json.dumps(rec, ensure_ascii=False) + "\n")
            n += 1
    with open(out / "queries.jsonl", "w", encoding="utf-8") as fh:
        for q in questions:
            fh.write(
                json.dumps(
                    {"_id": q.id, "text": q.question, "answers": list(q.answers)},
                    ensure_ascii=False,
                )
                + "\n"
            )
    with open(out / "qrels" / "test.tsv", "w", encoding="utf-8") as fh:
        fh.write("query-id\tcorpus-id\tscore\n")
        for q in questions:
            for doc_id, grade in grades.get(q.id, {}).items():
                fh.write(f"{q.id}\t{doc_id}\t{grade}\n")
    return n


# --------------------------------------------------------------------------------------------
# BrowseComp-Plus


def _doc_ids(value: Any, where: str) -> list[str]:
    """Document ids of a list of documents (`{"docid": ...}`) or of ids."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise CorpusError(f"documents must be a list, got {type(value).__name__}", where)
    out = []
    for d in value:
        doc_id = d.get("docid", d.get("id")) if isinstance(d, dict) else d
        if doc_id is None or isinstance(doc_id, (dict, list)):
            raise CorpusError("a document in the list has no docid", where)
        out.append(str(doc_id))
    return out


def bcp_questions(path: str | Path) -> tuple[list[QAItem], dict[str, dict[str, int]]]:
    """BrowseComp-Plus decrypted queries (JSON Lines): the questions, and per question its
    graded documents (evidence EVIDENCE, documents holding the answer GOLD)."""
    path = Path(path)
    questions: list[QAItem] = []
    grades: dict[str, dict[str, int]] = {}
    for n, rec in _jsonl(path):
        where = f"{path}:{n}"
        qid = rec.get("query_id", rec.get("id"))
        text = rec.get("query", rec.get("question"))
        if qid in (None, "") or not isinstance(text, str):
            raise CorpusError(
                "a query needs query_id and query (decrypt "
                "the release first: its fields are obfuscated)",
                where,
            )
        graded = dict.fromkeys(_doc_ids(rec.get("evidence_docs"), where), EVIDENCE)
        graded.update(dict.fromkeys(_doc_ids(rec.get("gold_docs"), where), GOLD))
        questions.append(QAItem(str(qid), text, _answers(rec, where), tuple(graded)))
        if graded:
            grades[str(qid)] = graded
    return questions, grades


_HEADING = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$")
_FENCE = re.compile(r"^ {0,3}(```|~~~)")
_FRONT_KEY = re.compile(r"^([A-Za-z][\w .-]{0,40}?)\s*:\s*(.*)$")
_AUTHOR_KEYS = ("author", "authors", "byline", "creator")
_DATE_KEYS = (
    "date",
    "published",
    "published_date",
    "publish_date",
    "date_published",
    "datepublished",
)


def _front_matter(text: str) -> tuple[dict[str, str], str]:
    """A leading `---` block of `key: value` lines, and the text after it. Read line by line, not
    as YAML: scraped pages write titles with colons and quotes that YAML refuses."""
    if not text.startswith("---"):
        return {}, text
    lines = text.split("\n")
    if lines[0].strip() != "---":
        return {}, text
    for end in range(1, len(lines)):
        if lines[end].strip() in ("---", "..."):
            break
    else:
        return {}, text
    meta: dict[str, str] = {}
    for line in lines[1:end]:
        m = _FRONT_KEY.match(line.strip())
        if m and m.group(2).strip():
            value = m.group(2).strip()
            if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
                value = value[1:-1]
            meta.setdefault(m.group(1).strip().lower(), value)
    return meta, "\n".join(lines[end + 1 :])


def _sections(body: str) -> tuple[str | None, list[dict[str, str]]]:
    """(a first-level heading that opens the text, else None; the sections under the Markdown
    headings, the text before the first one the intro). Headings inside code fences are text."""
    parts: list[tuple[str, list[str]]] = [(INTRO, [])]
    title = None
    fenced = False
    for line in body.split("\n"):
        if _FENCE.match(line):
            fenced = not fenced
        m = None if fenced else _HEADING.match(line)
        if m is None:
            parts[-1][1].append(line)
            continue
        heading = m.group(2).strip()
        if (
            m.group(1) == "#"
            and title is None
            and len(parts) == 1
            and not "".join(parts[0][1]).strip()
        ):
            title = heading  # opens the page: its name, not a section
        else:
            parts.append((heading or INTRO, []))
    out = []
    for heading, lines in parts:
        text = "\n".join(lines).strip("\n")
        if heading != INTRO or text.strip():
            out.append({"heading": heading, "text": text})
    return title, out


def bcps_record(
    rec: dict[str, Any], where: str, dates: dict[str, int] | None = None
) -> dict[str, Any]:
    """One BrowseComp-Plus corpus record (`docid`, `text`, `url`) as a structured BCP-S document.
    Title: the front matter's, else a first-level heading that opens the text, else the record's
    `title`, else the URL, else the id. A date that cannot be read is kept as metadata `date_text`
    (counted in `dates["unparsed"]`)."""
    doc_id = rec.get("docid", rec.get("id", rec.get("_id")))
    text = rec.get("text", rec.get("contents"))
    if doc_id in (None, "") or not isinstance(text, str):
        raise CorpusError("a BrowseComp-Plus document needs docid and text", where)
    meta, body = _front_matter(text)
    heading, sections = _sections(body)
    url = rec.get("url") or meta.pop("url", None)
    title = meta.pop("title", None) or heading or rec.get("title") or url or str(doc_id)
    out: dict[str, Any] = {"id": str(doc_id), "title": title, "sections": sections}
    author = next((meta.pop(k) for k in _AUTHOR_KEYS if k in meta), None)
    if author:
        out["author"] = author
    date = next((meta.pop(k) for k in _DATE_KEYS if k in meta), None)
    if date:
        try:
            out["date"] = checked_date(date)
        except CorpusError:
            out[KEPT_DATE_KEY] = date
            if dates is not None:
                dates["unparsed"] = dates.get("unparsed", 0) + 1
    for k in _AUTHOR_KEYS + _DATE_KEYS:  # a second author or date key is not a fact of its own
        meta.pop(k, None)
    if meta:
        out["infobox"] = meta
    if url:
        out["url"] = url
    return out


def bcps_records(path: str | Path, dates: dict[str, int] | None = None) -> Iterator[dict[str, Any]]:
    """The BCP-S documents of a BrowseComp-Plus corpus file (JSON Lines), in file order."""
    path = Path(path)
    for n, rec in _jsonl(path):
        if not isinstance(rec, dict):
            raise CorpusError(
                f"a record must be a JSON object, got {type(rec).__name__}", str(path), n
            )
        yield bcps_record(rec, f"{path}:{n}", dates)
