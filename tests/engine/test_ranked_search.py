"""`Index.ranked_search` and `sieve search --ranked`: plain language, no BQL semantics."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import oracle
from sieve.corpus.documents import document_from_record
from sieve.engine.analysis.fields import Field
from sieve.errors import InvalidArgumentError
from sieve.index.index import build_index

DOCS = [
    {"id": "a", "title": "Compressing files", "text": "gzip compresses files quickly and NOT slowly"},
    {"id": "b", "title": "Running jobs", "text": "a runner runs jobs"},
    {"id": "c", "title": "Notes", "sections": [{"heading": "files", "text": "nothing here"}]},  # a heading is not title or body
    {"id": "d", "title": "AND gates", "text": "logic"},
]


def _any_word_in_title_or_body(recs: list[dict[str, Any]], text: str, analyzer: str) -> list[str]:
    words = set(oracle.terms_of(text, analyzer))
    docs = oracle.prepare((document_from_record(r) for r in recs), analyzer)
    return [d.id for d in docs if any(u.field in (Field.TITLE, Field.BODY) and words & set(u.terms) for u in d.units)]


@pytest.mark.parametrize("analyzer", ["plain", "english"])
@pytest.mark.parametrize("text", [
    "how do I compress files?",
    "compress AND NOT files",  # operators are words: AND and NOT are searched for
    'runs "jobs" [title] date[2020..] x*',
    "NEAR/3 (",
])
def test_ranks_every_document_with_any_word(analyzer: str, text: str) -> None:
    ix = build_index(DOCS, analyzer=analyzer)
    r = ix.ranked_search(text, k=10)
    want = _any_word_in_title_or_body(DOCS, text, analyzer)
    assert r.count == len(want)
    assert sorted(h.doc_id for h in r.hits) == sorted(want)
    assert not r.fallback and r.diagnosis is None
    scores = [h.score for h in r.hits]
    assert scores == sorted(scores, reverse=True)


def test_stemming_reaches_plain_language() -> None:
    assert [h.doc_id for h in build_index(DOCS, analyzer="english").ranked_search("compressed", k=5).hits] == ["a"]
    assert build_index(DOCS).ranked_search("compressed", k=5).hits == []


def test_no_word_no_hits_and_bad_arguments() -> None:
    ix = build_index(DOCS)
    r = ix.ranked_search("?! ()", k=5)
    assert r.hits == [] and r.count == 0 and r.query == ""
    with pytest.raises(InvalidArgumentError, match="takes text"):
        ix.ranked_search(["files"])  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError):
        ix.ranked_search("files", k=0)
    with pytest.raises(InvalidArgumentError):
        ix.ranked_search("files", ranker="nope")


def test_cli_ranked(tmp_path: Path) -> None:
    corpus = tmp_path / "c.jsonl"
    corpus.write_text("".join(json.dumps(d) + "\n" for d in DOCS))
    build_index(corpus, tmp_path / "ix").close()
    run = lambda *a: subprocess.run([sys.executable, "-m", "sieve", *a], capture_output=True, text=True)  # noqa: E731
    p = run("search", str(tmp_path / "ix"), "compress AND NOT files", "--ranked", "--json")
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert {h["id"] for h in out["hits"]} == {"a", "d"} and out["count"] == 2  # a has files and NOT, d has AND
    p = run("search", str(tmp_path / "ix"), "compress AND NOT files", "--json")  # as BQL: NOT files excludes a
    assert json.loads(p.stdout)["count"] == 0
    p = run("search", str(tmp_path / "ix"), "which gates do logic?", "--ranked")
    assert p.returncode == 0 and "contains words of the query" in p.stdout and "[1] d" in p.stdout
