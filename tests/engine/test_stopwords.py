"""Stop words: not indexed, their places kept. The oracle with stop lists (phrases spanning them,
NEAR counting them, leaves of only stop words refused), BM25 lengths without them, the list's life
in the manifest (reopen, add, merge, parallel build, damage), plain-language search, the CLI.
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
from sieve.engine.analysis.analyzers import STOP_LISTS, analyze, get_analyzer
from sieve.engine.segment.snapshot import manifest_crc
from sieve.errors import BQLSyntaxError, IndexDamagedError, InvalidArgumentError
from sieve.index.index import build_index
from sieve.tools import Toolset

ENGLISH = sorted(STOP_LISTS["english"])
# Content words (some inflected) with stop words among them, so that phrases and NEARs in the
# generated queries often hold, start or end with stop words.
WORDS = ["running", "runs", "run", "cats", "cat", "state", "art", "compressed", "compress", "Zürich", "O_RDONLY", "2024",
         "the", "of", "a", "is", "in", "The", "OF", "to", "with", "into"]
QUERY_WORDS = WORDS + ["RUNNING", "Cats", "omega", "THE"]
PREFIXES = ["r", "ru", "run", "c", "cat", "st", "th", "the", "a", "o", "of", "i", "2"]


@contextmanager
def _vocabulary() -> Iterator[None]:
    names = ("DOC_WORDS", "QUERY_WORDS", "SINGLE_WORDS", "STEMS")
    saved = [getattr(tmo, n) for n in names]
    for n, v in zip(names, (WORDS, QUERY_WORDS, [w for w in QUERY_WORDS if len(analyze(w)) == 1], PREFIXES)):
        setattr(tmo, n, v)
    try:
        yield
    finally:
        for n, v in zip(names, saved):
            setattr(tmo, n, v)


def _drawn(gen: Any) -> Any:
    def draw_with(draw: Any) -> Any:
        with _vocabulary():
            return gen(tmo._Draws(draw))
    return st.composite(draw_with)()


def _agree(ix: Any, docs: list[oracle.OracleDoc], text: str) -> str | None:
    """None when the engine and the oracle agree on `text` (the same ids, or both refuse it)."""
    try:
        want: list[str] | None = oracle.evaluate(tmo.parse_query(text), docs)
    except oracle.StopWordQuery:
        want = None
    try:
        got = ix.match(text)
    except BQLSyntaxError as e:
        return None if want is None and "stop word" in str(e) else f"{text!r}: oracle {want}, engine refused: {e}"
    if want is None:
        return f"{text!r}: the oracle refuses it (only stop words), the engine answered {got.ids}"
    return None if got.ids == want and got.count == len(want) else f"{text!r}: oracle {want}, engine {got.ids}"


@pytest.mark.parametrize("analyzer", ["plain", "english"])
def test_stop_words_match_the_oracle(analyzer: str, tmp_path: Path) -> None:
    refused = 0
    with _vocabulary():
        for k in range(4):
            r = random.Random(f"stop-{analyzer}-{k}")
            recs = tmo.gen_corpus(r)
            texts = [tmo.printed_query(tmo.gen_tree(r)) for _ in range(25)] + [tmo.raw_query(r) for _ in range(10)]
            docs = oracle.prepare((document_from_record(x) for x in recs), analyzer, ENGLISH)
            ix = build_index(recs, tmp_path / f"ix{k}", force=True, analyzer=analyzer, stopwords="english")
            bad = [msg for t in texts if (msg := _agree(ix, docs, t))]
            refused += sum(1 for t in texts if _refused(ix, t))
            ix.close()
            assert not bad, f"corpus {k}: {len(bad)} disagreements\n" + "\n".join(bad[:5]) + f"\ncorpus: {recs!r}"
    assert refused, "no generated query was only stop words: the refusal path went untested"


def _refused(ix: Any, text: str) -> bool:
    try:
        ix.match(text)
    except BQLSyntaxError:
        return True
    return False


@given(_drawn(tmo.gen_corpus), st.lists(_drawn(tmo.gen_tree), min_size=10, max_size=10))
@settings(max_examples=15, deadline=None, derandomize=True, database=None)
def test_english_with_stop_words_matches_the_oracle_property(recs: list[dict[str, Any]], trees: list[Any]) -> None:
    docs = oracle.prepare((document_from_record(r) for r in recs), "english", ENGLISH)
    ix = build_index(recs, analyzer="english", stopwords="english")
    try:
        bad = [msg for t in trees if (msg := _agree(ix, docs, tmo.printed_query(t)))]
        assert not bad, bad
    finally:
        ix.close()


# --------------------------------------------------------------------------------------------
# What a stop word means in each kind of leaf

DOCS = [
    {"id": "a", "title": "The state of the art", "sections": [{"heading": "Usage", "text": "This is the state of the art in search."}]},
    {"id": "b", "title": "State art", "sections": [{"heading": "Notes", "text": "state x y art; the cat and the dog"}]},
    {"id": "c", "title": "Ending in state", "sections": [{"heading": "art and more", "text": "a cat sat"}]},
    {"id": "d", "title": "Theatre", "sections": [{"heading": "Them", "text": "there then these"}]},
    {"id": "e", "title": "Review", "sections": [{"heading": "Body", "text": "The state of art is fine"}]},
]


@pytest.fixture(scope="module")
def stopped() -> Any:
    ix = build_index(DOCS, stopwords="english")
    yield ix
    ix.close()


@pytest.mark.parametrize("query, want", [
    ('"state of the art"', ["a", "b"]),  # `of the` stands for any two words: b's `state x y art` too
    ('"state art"', ["b"]),
    ('"the state"', ["a", "b", "c", "e"]),  # a stop word at an end is dropped: this is `state`
    ('"the cat and the dog"', ["b"]),
    ('"cat the dog"', []),  # `and the` is two words: one placeholder does not stretch
    ('"state of art"[title]', []),
    ("state NEAR/3 art", ["a", "b", "e"]),  # stop words count in the distance: a's `state of the art` is 3 apart
    ("state NEAR/2 art", ["b", "e"]),  # b by its title
    ("the*", ["d"]),  # a prefix is never a stop word: every indexed term starting with `the` (not `the` itself)
    ("them OR theatre", ["d"]),
])
def test_stop_words_in_phrases_near_and_prefixes(stopped: Any, query: str, want: list[str]) -> None:
    assert stopped.match(query).ids == want


def test_a_gap_never_joins_two_units(stopped: Any) -> None:
    """c's title ends with `state` and its heading starts with `art`: two positions apart across
    the unit gap, as `state of art` asks; still not a phrase (e's body is one)."""
    assert stopped.match('"state of art"').ids == ["e"]
    assert stopped.match('"ending in state of art"').ids == []
    hits = stopped.search('"state of art"', k=5).hits
    assert [h.doc_id for h in hits] == ["e"]
    assert hits[0].fields == ("body",) and hits[0].sections == ("Body",)


@pytest.mark.parametrize("query, at, what", [
    ("the", 0, "'the' is a stop word"),
    ("cat AND the[title]", 8, "'the' is a stop word"),
    ('cat OR "of the"', 7, "'of the' is only stop words"),
    ("cat AND the NEAR/2 dog", 8, "'the' is a stop word"),
])
def test_a_leaf_of_only_stop_words_is_an_error_with_its_place(stopped: Any, query: str, at: int, what: str) -> None:
    with pytest.raises(BQLSyntaxError) as e:
        stopped.match(query)
    assert e.value.pos == at and what in e.value.message and "english" not in e.value.message
    assert "33 stop words" in e.value.message and "any one word" in e.value.hint


def test_the_tool_shows_the_refusal_with_a_caret(stopped: Any) -> None:
    result = Toolset(stopped).call("search", {"query": "cat AND the"})
    assert not result.ok and "'the' is a stop word" in result.text and "        ^" in result.text
    assert "Stop words (`a`, `an`, `and`" in Toolset(stopped).manual()


def test_plain_language_search_leaves_stop_words_out(stopped: Any) -> None:
    r = stopped.ranked_search("What is the state of the art?", k=5)
    assert r.query == '"What"[title,body] OR "state"[title,body] OR "art"[title,body]'
    assert {h.doc_id for h in r.hits} == {"a", "b", "c", "e"}
    assert stopped.ranked_search("the of and", k=5).hits == []
    assert not Toolset(stopped, tools=("ranked_search",)).call("ranked_search", {"query": "of the"}).ok


def test_stop_words_do_not_count_in_lengths_or_stats() -> None:
    """BM25 by hand: a document's length is its words less its stop words (title, headings, texts)."""
    r = random.Random(3)
    recs = [{"id": f"d{i}", "title": " ".join(r.choice(WORDS) for _ in range(r.randint(0, 4))),
             "sections": [{"heading": r.choice(["", "the art", "runs"]), "text": " ".join(r.choice(WORDS) for _ in range(r.randint(0, 30)))}]}
            for i in range(40)]
    stop = frozenset(ENGLISH)
    toks = {rec["id"]: oracle.ranked_terms(document_from_record(rec), "english", stop) for rec in recs}
    n = len(recs)
    ix = build_index(recs, analyzer="english", stopwords="english")
    assert ix.stats["tokens"] == sum(
        len([x for x in oracle.terms_of(u, "english", stop) if x is not None])
        for rec in recs for u in [rec["title"], rec["sections"][0]["heading"], rec["sections"][0]["text"]])
    for _ in range(15):
        words = [r.choice(QUERY_WORDS) for _ in range(r.randint(1, 3))]
        terms = list(dict.fromkeys(x for w in words for x in oracle.terms_of(w, "english", stop) if x is not None))
        want = oracle.bm25_by_hand(toks, terms)  # type: ignore[arg-type]
        got = ix.ranked_search(" ".join(words), k=n)
        assert {h.doc_id for h in got.hits} <= {d for d, s in want.items() if s > 0}, words
        for h in got.hits:
            assert h.score == pytest.approx(want[h.doc_id], rel=1e-9, abs=1e-12), (words, h.doc_id)
    ix.close()


# --------------------------------------------------------------------------------------------
# The list's life: manifest, reopen, add, merge, parallel build, damage, custom lists, CLI


def test_the_list_is_recorded_and_kept_through_reopen_add_and_merge(tmp_path: Path) -> None:
    ix = build_index(DOCS[:2], tmp_path / "ix", analyzer="english", stopwords="english")
    seg = ix.segments[0].reader.manifest
    assert seg["stopwords"] == ENGLISH and seg["analyzer"].startswith("sieve-fold-1+snowball-english+stop-")
    assert ix.manifest["analyzer"] == seg["analyzer"] and ix.manifest["stopwords"] == ENGLISH
    with ix.writer() as w:
        w.add(DOCS[2])
        w.add(DOCS[3])
    ix = ix.reopen()
    assert len(ix.segments) >= 2 and ix.match('"state of the art"').ids == ["a", "b"]
    ix.merge()
    ix = open_index(tmp_path / "ix")
    assert len(ix.segments) == 1 and ix.analyzer == get_analyzer("english", "english")
    assert ix.match('"state of the art"').ids == ["a", "b"]
    with pytest.raises(BQLSyntaxError, match="stop word"):
        ix.match("the")
    ix.check()


def test_a_stop_list_that_does_not_match_its_id_is_damage(tmp_path: Path) -> None:
    build_index(DOCS, tmp_path / "ix", stopwords="english").close()
    root = tmp_path / "ix"
    gen = root / (root / "CURRENT").read_text().strip()
    commit = commits.read_manifest(gen)
    for entry in commit["segments"]:
        seg = root / entry["name"]
        commits.write_manifest(seg, {**commits.read_manifest(seg), "stopwords": ["cat"]})
        entry["manifest_crc32"] = manifest_crc(seg)
    commits.write_manifest(gen, commit)
    with pytest.raises(IndexDamagedError, match="stop words do not match"):
        open_index(root)


def test_parallel_build_equals_local_build(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    corpus = tmp_path / "c.jsonl"
    r = random.Random(11)
    with corpus.open("w") as fh:
        for i in range(3000):
            fh.write(json.dumps({"id": f"d{i}", "title": " ".join(r.choice(WORDS) for _ in range(3)),
                                 "text": " ".join(r.choice(WORDS) for _ in range(12))}) + "\n")
    monkeypatch.setattr("sieve.index.batches.PARALLEL_MIN_BYTES", 0)
    monkeypatch.setattr("sieve.index.batches.BATCH_DOCS", 250)
    par = build_index(corpus, tmp_path / "par", jobs=2, analyzer="english", stopwords="english")
    loc = build_index(corpus, tmp_path / "loc", jobs=1, analyzer="english", stopwords="english")
    spilled = build_index(corpus, tmp_path / "spill", jobs=1, analyzer="english", stopwords="english", memory_mb=1)
    for q in ["running", "run*", '"state of the art"', "cats NEAR/2 compressed", '"the cat"[title]']:
        want = loc.match(q).ids
        assert par.match(q).ids == want and spilled.match(q).ids == want, q
        ranked = [(h.doc_id, h.score) for h in loc.search(q, k=10).hits]
        assert [(h.doc_id, h.score) for h in par.search(q, k=10).hits] == ranked
        assert [(h.doc_id, h.score) for h in spilled.search(q, k=10).hits] == ranked
    assert par.stats["tokens"] == loc.stats["tokens"] == spilled.stats["tokens"]


def test_custom_lists_from_words_and_files(tmp_path: Path) -> None:
    ix = build_index(DOCS, stopwords=["Cat", "DOG", "Zürich"])
    assert ix.analyzer.stopwords == {"cat", "dog", "zurich"}
    assert ix.match('"the cat and the dog"').ids == ["b"]
    with pytest.raises(BQLSyntaxError, match="'cat' is a stop word"):
        ix.match("cat")
    listed = tmp_path / "stop.txt"
    listed.write_text("# my list\nstate\n\n  art  # trailing comment\n", encoding="utf-8")
    from_file = build_index(DOCS, stopwords=str(listed))
    assert from_file.analyzer.stopwords == {"state", "art"}
    with pytest.raises(InvalidArgumentError, match="unknown stop-word list 'klingon': name a built-in one \\(english\\)"):
        build_index(DOCS, tmp_path / "x", stopwords="klingon")
    with pytest.raises(InvalidArgumentError, match="not one word"):
        build_index(DOCS, tmp_path / "x", stopwords=["don't"])
    assert not (tmp_path / "x").exists()


def test_cli_index_add_and_search_with_stop_words(tmp_path: Path) -> None:
    corpus = tmp_path / "c.jsonl"
    corpus.write_text("".join(json.dumps(d) + "\n" for d in DOCS))
    run = lambda *a: subprocess.run([sys.executable, "-m", "sieve", *a], capture_output=True, text=True)  # noqa: E731
    p = run("index", str(corpus), str(tmp_path / "ix"), "--analyzer", "english", "--stopwords", "english")
    assert p.returncode == 0, p.stderr
    assert "(english analyzer, 33 stop words not indexed)" in p.stdout
    p = run("search", str(tmp_path / "ix"), "cat AND the")
    assert p.returncode != 0 and "'the' is a stop word" in p.stderr and "Traceback" not in p.stderr
    p = run("add", str(tmp_path / "ix"), str(corpus), "--stopwords", str(tmp_path / "missing.txt"))
    assert p.returncode != 0 and "unknown stop-word list" in p.stderr
    p = run("add", str(tmp_path / "ix"), str(corpus), "--analyzer", "english")
    assert p.returncode == 0, p.stderr
    p = run("add", str(tmp_path / "ix"), str(corpus), "--stopwords", "english")
    assert p.returncode == 0, p.stderr
    plain = tmp_path / "plain"
    assert run("index", str(corpus), str(plain), "--json").returncode == 0
    p = run("add", str(plain), str(corpus), "--stopwords", "english")
    assert p.returncode != 0 and "has no stop words" in p.stderr and "rebuilding" in p.stderr
