"""Sharded indexes (`build_index(..., shards=N)`, `sieve index --shards N`) answer exactly as one
index over the same corpus: admitted ids in the same order, the same hits in the same order
(ties included), the same BM25 scores, the same zero-hit fallback and missing clauses."""

from __future__ import annotations

import json
import random
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sieve import CorpusError, CorpusReport, InvalidArgumentError, build_index, open_index
from sieve.cli.main import main
from sieve.corpus.demo import stdlib_documents
from sieve.engine.format import storage
from sieve.index.shards import ShardSelector, routing_id, shard_of
from test_match_oracle import HYPOTHESIS, _Draws, gen_corpus, gen_tree, printed_query


def write_jsonl(path: Path, records: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def answers(index: Any, query: str, k: int = 10) -> tuple:
    """Everything a caller sees of a query: the admitted ids in order, and the ranked hits."""
    m = index.match(query)
    r = index.search(query, k=k)
    return (m.count, m.ids, r.count, r.fallback, r.missing, [(h.doc_id, h.fields, h.sections) for h in r.hits], [h.score for h in r.hits])


def assert_same(one: Any, sharded: Any, queries: list[str], k: int = 10) -> None:
    for q in queries:
        a, b = answers(one, q, k), answers(sharded, q, k)
        assert a[:-1] == b[:-1], q
        assert b[-1] == pytest.approx(a[-1], rel=1e-9, abs=1e-12), q


def test_partition_is_stable_and_spreads() -> None:
    # Fixed values: a change of hash would silently move documents between shards of old indexes.
    assert [shard_of(i, 4) for i in ("a", "b", "doc-1", "Zürich")] == [shard_of(i, 4) for i in ("a", "b", "doc-1", "Zürich")]
    counts = [0] * 8
    for i in range(8000):
        counts[shard_of(f"doc-{i}", 8)] += 1
    assert min(counts) > 800 and max(counts) < 1200
    assert routing_id({"id": 7}) == "7" and routing_id({"_id": "x"}) == "x" and routing_id({"id": True}) is None and routing_id([1]) is None


@pytest.fixture(scope="module")
def stdlib_records() -> list[dict[str, Any]]:
    """The standard library's documentation: real text, several hundred documents."""
    return list(stdlib_documents(limit=400))


@pytest.fixture(scope="module")
def stdlib_pair(tmp_path_factory: pytest.TempPathFactory, stdlib_records: list[dict[str, Any]]) -> tuple[Any, Any]:
    root = tmp_path_factory.mktemp("shards")
    corpus = write_jsonl(root / "corpus.jsonl", stdlib_records)
    return build_index(corpus, root / "one"), build_index(corpus, root / "four", shards=4, jobs=2)


def stdlib_queries(index: Any, n: int, seed: int) -> list[str]:
    """Real queries over the corpus's own words: single words, pairs, phrases, fields, NOT, OR,
    and words no document has (the fallback)."""
    rng = random.Random(seed)
    words = [w for d in index.doc_numbers()[:200].tolist() for w in index.reader.meta(d).get("title", "").lower().split() if w.isalpha()]
    words = sorted(set(words) - {"and", "or", "not", "near"}) or ["file"]  # operators in any case
    shapes = ["{a}", "{a} {b}", "{a} OR {b}", '"{a} {b}"', "{a}[title]", "{a} NOT {b}", "NEAR/5({a}, {b})", "{a}* OR zzqx",
              "zzqx AND {a}", "({a} OR {b})[section,body]", "NOT {a}", "{a} OR {b} OR file OR the"]
    return [rng.choice(shapes).format(a=rng.choice(words), b=rng.choice(words)) for _ in range(n)]


def test_stdlib_queries_equal_one_index(stdlib_pair: tuple[Any, Any]) -> None:
    one, four = stdlib_pair
    assert four.snapshot.shards == 4 and len(four) == len(one)
    queries = stdlib_queries(one, 300, seed=7) + ["the", "file OR the OR a", "zzqx", "zzqx yyqx"]
    assert_same(one, four, queries, k=10)
    assert_same(one, four, queries[:60], k=1000)  # deep rankings: every tie among hundreds


def test_ranked_search_documents_and_sections_equal(stdlib_pair: tuple[Any, Any]) -> None:
    one, four = stdlib_pair
    for text in ["how do I read a file", "parse json text", "socket server", "the"]:
        a, b = one.ranked_search(text, k=8), four.ranked_search(text, k=8)
        assert [(h.doc_id, h.score) for h in a.hits] == [(h.doc_id, pytest.approx(h2.score, rel=1e-9)) for h, h2 in zip(b.hits, a.hits)]
    ids = one.match("NOT zzqx").ids
    assert four.match("NOT zzqx").ids == ids  # the whole collection, in corpus order
    for doc_id in ids[::37]:
        assert four.document(doc_id) == one.document(doc_id)
        assert four.section(doc_id, 0) == one.section(doc_id, 0)
    assert four.explain("file OR os", ids[3]) == one.explain("file OR os", ids[3])


def test_sharded_check_and_cli(tmp_path: Path, stdlib_records: list[dict[str, Any]], capsys: pytest.CaptureFixture[str]) -> None:
    corpus = write_jsonl(tmp_path / "c.jsonl", stdlib_records[:120])
    assert main(["index", str(corpus), str(tmp_path / "ix"), "--shards", "3", "--quiet", "--json"]) == 0
    built = json.loads(capsys.readouterr().out)
    assert built["shards"] == 3 and built["documents"] == 120
    index = open_index(tmp_path / "ix")
    # Sharded commits are version 8 or later: an older sieve refuses them instead of reading them out of order.
    assert index.manifest["version"] == storage.FORMAT_VERSION == 9 and index.manifest["partition"] == "blake2b-64(id) mod shards"
    assert build_index(stdlib_records[:5], tmp_path / "plain").manifest["version"] == 9
    checked = index.check()  # every shard's files and every order-key file verified
    assert sum(name.endswith(".order.sva") for name in checked) == 3
    assert main(["check", str(tmp_path / "ix")]) == 0
    capsys.readouterr()
    # Built whole: changing one in place would break the partition, so it is refused, clearly.
    assert main(["add", str(tmp_path / "ix"), str(corpus)]) == 1
    assert "sharded index (3 shards)" in capsys.readouterr().err
    with pytest.raises(InvalidArgumentError, match="--shards 3 --force"):
        index.merge()
    # --force replaces it (here with an unsharded index) atomically, as any build.
    assert main(["index", str(corpus), str(tmp_path / "ix"), "--force", "--quiet"]) == 0
    assert open_index(tmp_path / "ix").snapshot.shards == 0


@pytest.mark.parametrize("jobs", [1, 2])
def test_a_sharded_build_reports_its_progress(tmp_path: Path, stdlib_records: list[dict[str, Any]], jobs: int) -> None:
    seen: list[int] = []
    corpus = write_jsonl(tmp_path / "c.jsonl", stdlib_records)
    index = build_index(corpus, tmp_path / "ix", shards=3, jobs=jobs, progress=lambda n, _b: seen.append(n))
    assert seen and seen == sorted(seen) and seen[-1] == len(index)  # the shards' counts, summed, to the end


def test_bad_records_named_as_an_unsharded_build_names_them(tmp_path: Path) -> None:
    recs = [{"id": f"d{i}", "title": f"word{i % 5}"} for i in range(40)]
    recs[17] = {"title": "no id here"}
    recs[29] = {"id": "d3", "title": "a duplicate"}
    corpus = write_jsonl(tmp_path / "c.jsonl", recs)
    with pytest.raises(CorpusError) as one:
        build_index(corpus, tmp_path / "one")
    with pytest.raises(CorpusError) as sharded:
        build_index(corpus, tmp_path / "four", shards=4)
    assert str(sharded.value) == str(one.value) and sharded.value.line == 18
    assert not (tmp_path / "four").exists()  # nothing half-built left behind
    a = build_index(corpus, tmp_path / "one", on_error="skip")
    b = build_index(corpus, tmp_path / "four", on_error="skip", shards=4)
    assert b.manifest["skipped"] == a.manifest["skipped"] == 2
    assert b.match("NOT zzqx").ids == a.match("NOT zzqx").ids
    # The report quotes the same first bad records, in corpus order, as an unsharded build's.
    recs = [{"id": f"e{i}", "title": "x"} if i % 3 else {"id": f"e{i}", "title": ["not text"]} for i in range(90)]
    corpus = write_jsonl(tmp_path / "bad.jsonl", recs)
    one_report, sharded_report = CorpusReport(), CorpusReport()
    build_index(corpus, tmp_path / "bad-one", on_error="skip", report=one_report)
    build_index(corpus, tmp_path / "bad-four", on_error="skip", report=sharded_report, shards=4)
    assert sharded_report.errors == one_report.errors and len(one_report.errors) == 20 and sharded_report.skipped == one_report.skipped == 30


def test_more_shards_than_documents_and_a_generator_refused(tmp_path: Path) -> None:
    recs = [{"id": "x", "title": "alpha beta"}, {"id": "y", "title": "beta"}]
    index = build_index(recs, tmp_path / "ix", shards=6)
    assert len(index) == 2 and index.match("beta").ids == ["x", "y"] and index.snapshot.shards == 6
    with pytest.raises(InvalidArgumentError, match="once per shard"):
        build_index(iter(recs), tmp_path / "gen", shards=2)
    with pytest.raises(InvalidArgumentError, match="shards must be"):
        build_index(recs, tmp_path / "zero", shards=0)


@given(st.composite(lambda draw: gen_corpus(_Draws(draw)))(),
       st.lists(st.composite(lambda draw: gen_tree(_Draws(draw)))(), min_size=12, max_size=12),
       st.integers(min_value=1, max_value=5))
@pytest.mark.slow
@HYPOTHESIS
def test_random_corpora_sharded_equal_one_index(recs: list[dict[str, Any]], trees: list[Any], shards: int) -> None:
    # Tiny vocabulary: ties everywhere, so the tie order across shards is exercised on every query.
    with tempfile.TemporaryDirectory() as d:
        one = build_index(recs, Path(d) / "one")
        sharded = build_index(recs, Path(d) / "sharded", shards=shards, jobs=1)
        assert_same(one, sharded, [printed_query(t) for t in trees] + ["alpha OR beta OR gamma", "NOT omega"], k=30)


@given(st.text(min_size=0, max_size=8), st.booleans(), st.booleans(), st.integers(2, 6))
def test_a_line_passed_over_unparsed_is_always_another_shards(doc_id: str, nested: bool, duplicate: bool, shards: int) -> None:
    """`ShardSelector.unread` skips parsing only lines whose real id (JSON's reading) routes elsewhere."""
    rec: dict[str, Any] = {"id": doc_id, "title": 'a "quoted" id'}
    if nested:
        rec["metadata"] = {"id": "other"}
    line = json.dumps(rec, ensure_ascii=False)
    if duplicate:  # JSON's last duplicate key wins: a reader of the first would route wrongly
        line = line[:-1] + ', "id": "last"}'
    real = routing_id(json.loads(line))
    for j in range(shards):
        skipped = ShardSelector(j, shards).unread(line)
        assert not skipped or (real is not None and shard_of(real, shards) != j)
    if not nested and not duplicate and doc_id and '"' not in doc_id and "\\" not in doc_id and doc_id.isprintable():
        assert sum(ShardSelector(j, shards).unread(line) for j in range(shards)) == shards - 1  # the fast path is taken
