"""Analyzers chosen per index: the oracle under every analyzer, what stemming means for each kind
of leaf, the analyzer's life in the manifest (reopen, add, merge, parallel builds), snippets, errors.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import oracle
import test_match_oracle as tmo
from sieve import open_index
from sieve.corpus.documents import document_from_record
from sieve.engine.format import commits
from sieve.engine.segment.snapshot import manifest_crc
from sieve.engine.analysis.analyzers import PLAIN, analyze, analyzer_names, get_analyzer
from sieve.errors import InvalidArgumentError, UnknownAnalyzerError
from sieve.index.index import build_index
from sieve.tools import cards
from sieve.tools.fetch.snippets import Matcher, word_hits

# Inflected words in several languages, so that stemmers merge some and leave others apart.
INFLECTED = [
    "running", "runs", "run", "runner", "happy", "happiness", "happily", "compressed", "compressing", "compress",
    "dying", "die", "skies", "sky", "cats", "cat", "generously", "Zürich", "O_RDONLY",
    "maisons", "maison", "Häuser", "Haus", "niños", "niño", "говорит", "говорить", "2024",
]
QUERY_WORDS = INFLECTED + ["RUNNING", "Happiness", "CATS", "zurich", "o_rdonly", "maisonS", "omega"]
PREFIXES = ["r", "ru", "run", "runn", "running", "h", "happ", "happy", "compress", "compressi", "d", "dy", "sk", "sky",
            "c", "cat", "mais", "hä", "ni", "gener", "гов", "20"]


@contextmanager
def _inflected_vocabulary() -> Iterator[None]:
    """The oracle test's generators, drawing from the inflected vocabulary."""
    names = ("DOC_WORDS", "QUERY_WORDS", "SINGLE_WORDS", "STEMS")
    saved = [getattr(tmo, n) for n in names]
    for n, v in zip(names, (INFLECTED, QUERY_WORDS, [w for w in QUERY_WORDS if len(analyze(w)) == 1], PREFIXES)):
        setattr(tmo, n, v)
    try:
        yield
    finally:
        for n, v in zip(names, saved):
            setattr(tmo, n, v)


@pytest.fixture
def inflected() -> Iterator[None]:
    with _inflected_vocabulary():
        yield


def _drawn(gen: Any) -> Any:
    def draw_with(draw: Any) -> Any:
        with _inflected_vocabulary():
            return gen(tmo._Draws(draw))
    return st.composite(draw_with)()


def _disagreements(recs: list[dict[str, Any]], texts: list[str], analyzer: str, tmp: Path) -> list[str]:
    docs = oracle.prepare((document_from_record(r) for r in recs), analyzer)
    ix = build_index(recs, tmp / f"ix-{analyzer}", force=True, analyzer=analyzer)
    bad = []
    for text in texts:
        want = oracle.evaluate(tmo.parse_query(text), docs)
        got = ix.match(text)
        if got.ids != want or got.count != len(want):
            bad.append(f"{text!r}: oracle {want}, engine {got.ids}")
    ix.close()
    return bad


@pytest.mark.parametrize("analyzer", analyzer_names())
def test_every_analyzer_matches_the_oracle(analyzer: str, inflected: None, tmp_path: Path) -> None:
    for k in range(3):
        r = random.Random(f"{analyzer}-{k}")
        recs = tmo.gen_corpus(r)
        texts = [tmo.printed_query(tmo.gen_tree(r)) for _ in range(20)] + [tmo.raw_query(r) for _ in range(10)]
        bad = _disagreements(recs, texts, analyzer, tmp_path)
        assert not bad, f"{analyzer}, corpus {k}: {len(bad)} disagreements\n" + "\n".join(bad[:5]) + f"\ncorpus: {recs!r}"


@given(_drawn(tmo.gen_corpus), st.lists(_drawn(tmo.gen_tree), min_size=10, max_size=10))
@settings(max_examples=15, deadline=None, derandomize=True, database=None)
def test_english_matches_the_oracle_property(recs: list[dict[str, Any]], trees: list[Any]) -> None:
    docs = oracle.prepare((document_from_record(r) for r in recs), "english")
    ix = build_index(recs, analyzer="english")
    try:
        for t in trees:
            text = tmo.printed_query(t)
            assert ix.match(text).ids == oracle.evaluate(tmo.parse_query(text), docs), text
    finally:
        ix.close()


# --------------------------------------------------------------------------------------------
# What stemming means for each kind of leaf

DOCS = [
    {"id": "a", "title": "Compressing files", "sections": [{"heading": "Usage", "text": "gzip compresses files quickly. The happy path."}]},
    {"id": "b", "title": "Running jobs", "sections": [{"heading": "Runners", "text": "A runner runs jobs; it was running happily."}]},
    {"id": "c", "title": "Compression ratio", "sections": [{"heading": "Notes", "text": "the compressed file is smaller. Happiness is rare."}]},
    {"id": "d", "title": "Skies", "sections": [{"heading": "Weather", "text": "clear sky over the run; cats are dying to go out"}]},
]


@pytest.fixture(scope="module")
def english() -> Any:
    ix = build_index(DOCS, analyzer="english")
    yield ix
    ix.close()


@pytest.fixture(scope="module")
def plain() -> Any:
    ix = build_index(DOCS)
    yield ix
    ix.close()


@pytest.mark.parametrize("query, want_plain, want_english", [
    # Stems (by hand, Snowball English): compressing, compresses, compressed, compression -> compress;
    # happy, happiness -> happi, but happily -> happili; running, runs, run -> run, runner stays.
    ("compressing", ["a"], ["a", "c"]),
    ("compressed", ["c"], ["a", "c"]),
    ("compression", ["c"], ["a", "c"]),
    ('"compressed files"', [], ["a", "c"]),  # a phrase is its words' terms in order: compress file
    ("happiness", ["c"], ["a", "c"]),
    ("happily", ["b"], ["b"]),
    ("sky", ["d"], ["d"]),
    ("skies[title]", ["d"], ["d"]),
    ("cat NEAR/3 die", [], ["d"]),  # cats (cat, position 5) and dying (die, 7)
    ("runs AND NOT running[title]", [], ["d"]),  # plain: b has runs, but running in its title
])
def test_terms_phrases_and_near_match_stems(plain: Any, english: Any, query: str, want_plain: list[str], want_english: list[str]) -> None:
    assert plain.match(query).ids == want_plain
    assert english.match(query).ids == want_english


def test_a_prefix_is_stemmed_so_it_admits_what_its_word_admits(english: Any) -> None:
    # running* is run*: run, runner, runs, running (b), run (d)
    assert english.match("running*").ids == ["b", "d"]
    assert english.match("happy*").ids == ["a", "b", "c"]  # happi*: happy, happily, happiness
    assert english.match("compress*").ids == ["a", "c"]  # compress and compression both start with it
    for word in ["running", "happy", "compressed", "skies", "cats", "dying"]:
        assert set(english.match(word).ids) <= set(english.match(word + "*").ids), word


@given(st.sampled_from(QUERY_WORDS), st.sampled_from(["plain", "english", "french", "german", "russian"]))
@settings(max_examples=40, deadline=None, derandomize=True, database=None)
def test_prefix_of_a_word_contains_the_word(word: str, analyzer: str) -> None:
    if len(analyze(word)) != 1:
        return
    docs = [{"id": f"d{i}", "title": w} for i, w in enumerate(INFLECTED)]
    ix = build_index(docs, analyzer=analyzer)
    try:
        assert set(ix.match(word).ids) <= set(ix.match(word + "*").ids)
    finally:
        ix.close()


def test_ranking_scores_stems(english: Any, plain: Any) -> None:
    r = english.search("happiness", k=5)
    assert r.terms == ("happi",)
    assert {h.doc_id for h in r.hits} == {"a", "c"}
    assert [h.doc_id for h in plain.search("happiness", k=5).hits] == ["c"]


def test_snippets_and_cards_mark_the_inflected_words(english: Any) -> None:
    r = english.search("compressed", k=3)
    m = Matcher.of(r)
    assert m.analyzer == get_analyzer("english")
    hits, starts, ends = word_hits("Compressing, then compresses; compression (compressor apart)", m)
    assert [w for w, _ in hits] == [0, 2, 3]
    text = cards.listing(english, r, "", m)
    assert "compresses files" in text and "compressed file" in text


def test_plain_snippets_unchanged_by_stemming_support(plain: Any) -> None:
    m = Matcher.of(plain.search("compressed", k=1))
    assert m.analyzer is PLAIN
    assert [w for w, _ in word_hits("compressed compressing", m)[0]] == [0]


# --------------------------------------------------------------------------------------------
# The analyzer's life: manifest, reopen, add, merge, parallel build, CLI


def test_the_analyzer_is_recorded_and_used_after_reopen(tmp_path: Path) -> None:
    build_index(DOCS, tmp_path / "ix", analyzer="english").close()
    ix = open_index(tmp_path / "ix")
    assert ix.analyzer.name == "english"
    assert ix.match("compressed").ids == ["a", "c"]
    seg = ix.segments[0].reader
    assert seg.manifest["analyzer"] == "sieve-fold-1+snowball-english"
    assert ix.manifest["analyzer"] == "sieve-fold-1+snowball-english"


def test_added_and_merged_documents_use_the_index_analyzer(tmp_path: Path) -> None:
    ix = build_index(DOCS[:2], tmp_path / "ix", analyzer="english")
    with ix.writer() as w:
        w.add(DOCS[2])
        w.add(DOCS[3])
    ix = ix.reopen()
    assert len(ix.segments) >= 2
    assert ix.match("compressed").ids == ["a", "c"]
    ix.merge()
    ix = ix.reopen()
    assert len(ix.segments) == 1 and ix.analyzer.name == "english"
    assert ix.match("compressed").ids == ["a", "c"]
    assert ix.match("happy*").ids == ["a", "b", "c"]


def test_an_index_emptied_by_deletes_keeps_its_analyzer(tmp_path: Path) -> None:
    ix = build_index(DOCS, tmp_path / "ix", analyzer="english")
    with ix.writer() as w:
        for d in DOCS:
            w.delete(d["id"])
    ix = ix.reopen()
    assert len(ix) == 0 and ix.analyzer.name == "english"
    with ix.writer() as w:
        w.add(DOCS[0])
    assert ix.reopen().match("compressed").ids == ["a"]


def test_parallel_build_equals_local_build(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    corpus = tmp_path / "c.jsonl"
    r = random.Random(7)
    with corpus.open("w") as fh:
        for i in range(3000):
            fh.write(json.dumps({"id": f"d{i}", "title": " ".join(r.choice(INFLECTED) for _ in range(3)),
                                 "text": " ".join(r.choice(INFLECTED) for _ in range(12))}) + "\n")
    monkeypatch.setattr("sieve.index.batches.PARALLEL_MIN_BYTES", 0)
    monkeypatch.setattr("sieve.index.batches.BATCH_DOCS", 250)  # several chunks per worker, vocabularies that differ
    par = build_index(corpus, tmp_path / "par", jobs=2, analyzer="english")
    loc = build_index(corpus, tmp_path / "loc", jobs=1, analyzer="english")
    for q in ["running", "happy*", '"compressed cats"', "skies NEAR/2 dying", "niños OR maisons", "говорит"]:
        assert par.match(q) == loc.match(q), q
        assert [(h.doc_id, h.score) for h in par.search(q, k=10).hits] == [(h.doc_id, h.score) for h in loc.search(q, k=10).hits]
    assert par.stats["terms"] == loc.stats["terms"]


def test_unknown_analyzer_lists_the_known_ones(tmp_path: Path) -> None:
    with pytest.raises(InvalidArgumentError, match="unknown analyzer 'klingon'; known: plain, .*english"):
        build_index(DOCS, tmp_path / "ix", analyzer="klingon")
    assert not (tmp_path / "ix").exists()
    with pytest.raises(InvalidArgumentError, match="known: plain"):
        build_index(DOCS, analyzer=3)  # type: ignore[arg-type]


def test_an_index_with_an_analyzer_this_sieve_lacks_is_refused_clearly(tmp_path: Path) -> None:
    """As if written by a newer sieve: valid checksums, an analyzer id this one does not know."""
    build_index(DOCS, tmp_path / "ix", analyzer="english").close()
    root = tmp_path / "ix"
    gen = root / (root / "CURRENT").read_text().strip()
    commit = commits.read_manifest(gen)
    for entry in commit["segments"]:
        seg = root / entry["name"]
        commits.write_manifest(seg, {**commits.read_manifest(seg), "analyzer": "sieve-fold-1+snowball-klingon"})
        entry["manifest_crc32"] = manifest_crc(seg)
    commits.write_manifest(gen, {**commit, "analyzer": "sieve-fold-1+snowball-klingon"})
    with pytest.raises(UnknownAnalyzerError, match="analyzer 'sieve-fold-1\\+snowball-klingon'.*known: plain, .*english.*rebuild"):
        open_index(root)


def test_cli_index_and_add_with_analyzers(tmp_path: Path) -> None:
    corpus = tmp_path / "c.jsonl"
    corpus.write_text("".join(json.dumps(d) + "\n" for d in DOCS))
    run = lambda *a: subprocess.run([sys.executable, "-m", "sieve", *a], capture_output=True, text=True)  # noqa: E731
    p = run("index", str(corpus), str(tmp_path / "ix"), "--analyzer", "english", "--json")
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["analyzer"] == "english"
    p = run("match", str(tmp_path / "ix"), "compressed", "--json")
    assert json.loads(p.stdout)["ids"] == ["a", "c"]
    p = run("add", str(tmp_path / "ix"), str(corpus), "--analyzer", "plain")
    assert p.returncode != 0 and "changing an index's analyzer means rebuilding it" in p.stderr and "Traceback" not in p.stderr
    p = run("add", str(tmp_path / "ix"), str(corpus), "--analyzer", "english")
    assert p.returncode == 0, p.stderr
    p = run("index", str(corpus), str(tmp_path / "ix2"), "--analyzer", "klingon")
    assert p.returncode != 0 and "known: plain" in p.stderr and "indexing" not in p.stderr


@pytest.mark.parametrize("analyzer", ["english", "german", "russian"])
def test_bm25_scores_stems_as_the_formula_says(analyzer: str) -> None:
    """BM25 by hand over the stemmed text (title, headings, section texts), against the engine."""
    r = random.Random(analyzer)
    recs = [{"id": f"d{i}", "title": " ".join(r.choice(INFLECTED) for _ in range(r.randint(0, 3))),
             "sections": [{"heading": r.choice(["", "Häuser", "runs"]), "text": " ".join(r.choice(INFLECTED) for _ in range(r.randint(0, 30)))}]}
            for i in range(40)]
    toks = {rec["id"]: oracle.ranked_terms(document_from_record(rec), analyzer) for rec in recs}
    n = len(recs)
    ix = build_index(recs, analyzer=analyzer)
    for _ in range(15):
        words = [r.choice(QUERY_WORDS) for _ in range(r.randint(1, 3))]
        terms = list(dict.fromkeys(t for w in words for t in oracle.terms_of(w, analyzer)))
        want = oracle.bm25_by_hand(toks, terms)  # type: ignore[arg-type]
        got = ix.ranked_search(" ".join(words), k=n)
        for h in got.hits:
            assert h.score == pytest.approx(want[h.doc_id], rel=1e-9, abs=1e-12), (words, h.doc_id)
    ix.close()
