"""Ranked search with BM25: scores equal the formula by hand, ranking never leaves the admitted set,
and zero-hit recovery fires exactly when the filter admits nothing."""

from __future__ import annotations

import math
import sys
import tempfile
from pathlib import Path
from typing import Any, Iterator

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import sieve
from sieve.engine.analysis.analyzers import analyze
from sieve.errors import InvalidArgumentError

DOCS = [
    {"id": "a", "title": "Heatwave in Paris", "sections": [{"heading": "School closure", "text": "schools closed in the heatwave heatwave"}], "author": "heatwave Heatwave"},
    {"id": "b", "title": "Cold snap", "sections": [{"heading": "(intro)", "text": "snow and a short heatwave"}]},
    {"id": "c", "title": "Heatwave", "text": "heat"},
    {"id": "d", "title": "Rain", "text": "rain rain rain", "infobox": {"note": "heatwave"}},
    {"id": "e", "title": "Empty", "text": ""},
]


def text_tokens(rec: dict) -> list[str]:
    """Title + headings + section texts, as the ranking decision defines the BM25 text."""
    doc = next(sieve.read_documents([rec]))
    toks = analyze(doc.title)
    for s in doc.sections:
        if s.heading != "(intro)":
            toks += analyze(s.heading)
        toks += analyze(s.text)
    return toks


def bm25_by_hand(terms: list[str], docs: list[dict], k1: float = 0.9, b: float = 0.4) -> dict[str, float]:
    toks = {d["id"]: text_tokens(d) for d in docs}
    n = len(docs)
    avgdl = sum(len(t) for t in toks.values()) / n
    out = {}
    for did, t in toks.items():
        s = 0.0
        for term in dict.fromkeys(terms):
            df = sum(1 for x in toks.values() if term in x)
            tf = t.count(term)
            if tf:
                idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
                s += idf * tf / (tf + k1 * (1 - b + b * len(t) / avgdl))
        out[did] = s
    return out


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> sieve.Index:
    return sieve.build_index(DOCS, tmp_path_factory.mktemp("bm25") / "idx")


def test_scores_equal_the_formula(index: sieve.Index) -> None:
    expected = bm25_by_hand(["heatwave", "school"], DOCS)
    r = index.search("heatwave OR school", k=10)
    got = {h.doc_id: h.score for h in r.hits}
    # d has "heatwave" only in its infobox: admitted, but BM25 (title + headings + body) gives it 0.
    assert set(got) == {"a", "b", "c", "d"}
    for did, score in got.items():
        assert score == pytest.approx(expected[did], rel=1e-12)
    assert [h.doc_id for h in r.hits] == ["a", "c", "b", "d"]
    assert [h.rank for h in r.hits] == [1, 2, 3, 4]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 10**6), st.floats(0.05, 50.0)), max_size=60), st.floats(0.01, 20.0))
def test_term_scores_are_the_formula_to_the_bit(pairs: list[tuple[int, float]], idf: float) -> None:
    """Every posting's contribution is idf * tf / (tf + norm) exactly: the pruned and the full
    ranking add the same numbers, so their sums agree to the bit."""
    from sieve.engine.rank.bm25 import term_scores

    tf = np.array([p[0] for p in pairs], dtype=np.int64)
    norm = np.array([p[1] for p in pairs], dtype=np.float64)
    got = term_scores(tf, norm, idf)
    assert got.dtype == np.float64 and [float(x) for x in got] == [idf * int(t) / (int(t) + float(n)) for t, n in pairs]
    assert tf.dtype == np.int64 and list(tf) == [p[0] for p in pairs]  # the input is not written to


def test_author_and_infobox_occurrences_do_not_count(index: sieve.Index) -> None:
    # a's author field says heatwave twice; its BM25 tf stays the 3 of title + body.
    hand = bm25_by_hand(["heatwave"], DOCS)
    assert index.search("heatwave", k=5).hits[0].score == pytest.approx(hand["a"])


def test_custom_parameters(tmp_path: Path) -> None:
    sieve.build_index(DOCS, tmp_path / "idx")
    from sieve.engine.rank.bm25 import BM25Params

    ix = sieve.Index(tmp_path / "idx", bm25=BM25Params(k1=1.2, b=0.75))
    hand = bm25_by_hand(["heatwave"], DOCS, k1=1.2, b=0.75)
    assert {h.doc_id: h.score for h in ix.search("heatwave", k=5).hits if h.score} == pytest.approx({k: v for k, v in hand.items() if v})


def test_ties_are_broken_by_document_order(tmp_path: Path) -> None:
    docs = [{"id": f"d{i}", "title": "same words here"} for i in range(12)]
    ix = sieve.build_index(docs, tmp_path / "idx")
    assert [h.doc_id for h in ix.search("same", k=5).hits] == ["d0", "d1", "d2", "d3", "d4"]


def test_no_positive_term_ranks_in_index_order(index: sieve.Index) -> None:
    r = index.search("NOT heatwave", k=3)
    assert [h.doc_id for h in r.hits] == ["e"] and r.count == 1
    assert r.hits[0].score == 0.0


def test_matched_fields_follow_the_query_scopes(index: sieve.Index) -> None:
    r = index.search("heatwave[title] school", k=5)
    assert [h.doc_id for h in r.hits] == ["a"]
    hit = r.hits[0]
    assert hit.fields == ("title", "section")  # heatwave only in title (its scope); school in the heading ("schools" in the body is another word)
    assert hit.sections == ("School closure",)
    r = index.search("heatwave[author]", k=5)
    assert r.hits[0].fields == ("author",) and r.hits[0].sections == ()


def test_fallback_fires_exactly_on_empty_sets(index: sieve.Index) -> None:
    r = index.search("heatwave[title] snow[title]", k=3)
    assert r.count == 0 and r.fallback
    assert r.missing == ["snow[title]"]
    assert r.query == "heatwave[title] AND snow[title]"
    # The whole collection ranked by the positive terms, with the same scorer.
    hand = bm25_by_hand(["heatwave", "snow"], DOCS)
    assert [h.doc_id for h in r.hits] == sorted((d for d in hand if hand[d] > 0), key=lambda d: -hand[d])[:3]
    strict = index.search("heatwave[title] snow[title]", k=3, fallback=False)
    assert strict.hits == [] and not strict.fallback and strict.missing == ["snow[title]"]


def test_fallback_never_broadens_a_non_empty_set(index: sieve.Index) -> None:
    r = index.search("rain[title]", k=5)
    assert not r.fallback and [h.doc_id for h in r.hits] == ["d"]


def test_missing_lists_every_clause_with_no_document(index: sieve.Index) -> None:
    r = index.search('nosuchword AND "cold heatwave" AND heatwave', k=3)
    assert r.missing == ["nosuchword", '"cold heatwave"']
    r = index.search("date[2020]", k=3)
    assert r.hits == [] and not r.fallback and r.missing == ["date[2020-01-01..2020-12-31]"]


def test_bad_arguments(index: sieve.Index) -> None:
    with pytest.raises(InvalidArgumentError, match="k must be a positive integer, got 0"):
        index.search("x", k=0)
    with pytest.raises(InvalidArgumentError, match="unknown ranker 'bm26'; choose one of bm25, dense, hybrid"):
        index.search("x", ranker="bm26")
    with pytest.raises(sieve.BQLSyntaxError):
        index.search("x AND")


def test_large_term_frequencies_are_exact(tmp_path: Path) -> None:
    docs = [{"id": "big", "title": "t", "text": "w " * 300 + "x"}, {"id": "small", "title": "t", "text": "w x"}]
    ix = sieve.build_index(docs, tmp_path / "idx")
    hand = bm25_by_hand(["w"], docs)
    got = {h.doc_id: h.score for h in ix.search("w", k=2).hits}
    assert got == pytest.approx(hand)
    assert ix.match('"w w w"').ids == ["big"]


WORDS = ["alpha", "beta", "gamma", "delta", "eps"]
doc_st = st.fixed_dictionaries({"title": st.lists(st.sampled_from(WORDS), max_size=3).map(" ".join), "text": st.lists(st.sampled_from(WORDS), max_size=12).map(" ".join)})
query_st = st.lists(st.sampled_from(WORDS + [w + "[title]" for w in WORDS] + ["NOT " + w for w in WORDS]), min_size=1, max_size=3).map(" ".join)


@settings(max_examples=40, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(doc_st, min_size=1, max_size=15), st.lists(query_st, min_size=5, max_size=5), st.integers(1, 6))
def test_ranking_never_leaves_the_admitted_set(docs: list[dict], queries: list[str], k: int) -> None:
    recs = [dict(d, id=f"d{i}") for i, d in enumerate(docs)]
    with tempfile.TemporaryDirectory() as tmp:
        ix = sieve.build_index(recs, Path(tmp) / "idx")
        for q in queries:
            admitted = ix.match(q).ids
            r = ix.search(q, k=k)
            ids = [h.doc_id for h in r.hits]
            if admitted:
                assert not r.fallback and set(ids) <= set(admitted) and len(ids) == min(k, len(admitted))
                scores = [h.score for h in r.hits]
                assert scores == sorted(scores, reverse=True)
            else:
                assert r.fallback or not r.hits


def test_vectorised_explanation_equals_the_per_document_one(tmp_path: Path) -> None:
    from sieve.corpus.demo import stdlib_documents
    from sieve.engine.query.explain import Explainer

    ix = sieve.build_index(stdlib_documents(limit=120), tmp_path / "idx")
    for q in ["json OR file", '"regular expression" OR parse[title]', "NEAR/3(read, file) OR open*", "a[section] OR the[body] OR os", "data NOT file[title]"]:
        docs = [h.doc for h in ix.search(q, k=20).hits]
        ex = Explainer(ix.segments[0].reader, ix.plan(q).first)
        assert ex.matched_many(docs) == [ex.matched(d) for d in docs]


# ------------------------------------------------- MaxScore pruning changes nothing but the work

ZIPF = [f"w{i}" for i in range(60)]


@pytest.fixture(scope="module")
def zipf_index(tmp_path_factory: pytest.TempPathFactory) -> sieve.Index:
    """Word i drawn with weight 1/(i+1): a few words in most documents, most words in few, as in text."""
    import random

    rng = random.Random(5)
    weights = [1 / (i + 1) for i in range(len(ZIPF))]
    recs = [{"id": f"z{i}", "title": " ".join(rng.choices(ZIPF, weights, k=rng.randint(1, 4))),
             "text": " ".join(rng.choices(ZIPF, weights, k=rng.randint(3, 60)))} for i in range(600)]
    return sieve.build_index(recs, tmp_path_factory.mktemp("zipf") / "idx")


zipf_query = st.lists(st.sampled_from(ZIPF[:5] + ZIPF[5:: 3] + ["NOT w1", "w0[title]", "w2*"]), min_size=2, max_size=5)


@settings(max_examples=300, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(zipf_query, st.sampled_from([" OR ", " "]), st.integers(1, 12))
def test_pruned_top_k_equals_the_full_ranking(zipf_index: sieve.Index, words: list[str], joiner: str, k: int) -> None:
    from sieve.engine.format import bitset
    from sieve.engine.rank.topk import top_k

    plan = zipf_index.plan(joiner.join(words)).first
    bits = zipf_index.searcher.parts[0].evaluator.run(plan)
    docs = bitset.to_ids(bits, len(zipf_index))
    scorer = zipf_index.searcher.parts[0].bm25
    terms = plan.term_ids
    for where, b in ((docs, bits), (None, None)):  # the admitted set, and the zero-hit fallback's whole collection
        want_d, want_s = top_k(*scorer.scores(terms, where), k)
        got_d, got_s = scorer.top(terms, where, b, k)
        assert got_d.tolist() == want_d.tolist() and got_s.tolist() == want_s.tolist()  # bit for bit, ties in order
    if len(docs):  # the admitted set given as its bitset only, as searches give it
        want_d, want_s = top_k(*scorer.scores(terms, docs), k)
        for holders in {False, plan.admits_holders}:  # an OR of bare words: scored documents not tested against it
            got_d, got_s = scorer.top(terms, None, bits, k, admitted=len(docs), holders=holders)
            assert got_d.tolist() == want_d.tolist() and got_s.tolist() == want_s.tolist()


HOLDER_WORDS = ["ash", "birch", "cedar", "dogwood"]


@pytest.fixture(scope="module")
def fielded_index(tmp_path_factory: pytest.TempPathFactory) -> sieve.Index:
    """Words in titles, sections, authors and infobox values: a word may be in a document only
    where BM25 does not count it."""
    import random

    rng = random.Random(9)
    words = lambda n: " ".join(rng.choices(HOLDER_WORDS, k=rng.randint(0, n)))  # noqa: E731
    recs = [{"id": f"f{i}", "title": words(2), "sections": [{"heading": words(2), "text": words(8)}],
             "authors": [words(1)] if rng.random() < 0.5 else [], "infobox": {"tree": words(2)} if rng.random() < 0.5 else {}}
            for i in range(120)]
    return sieve.build_index(recs, tmp_path_factory.mktemp("fielded") / "idx")


holder_query = st.lists(st.sampled_from(HOLDER_WORDS + [w + "[title]" for w in HOLDER_WORDS] + ['"ash birch"', "NOT cedar", "ced*", "oak"]),
                        min_size=1, max_size=4)


@settings(max_examples=200, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(holder_query, st.sampled_from([" OR ", " "]))
def test_admits_holders_only_when_every_holder_is_admitted(fielded_index: sieve.Index, words: list[str], joiner: str) -> None:
    from sieve.engine.format import bitset

    query = joiner.join(words)
    plan = fielded_index.plan(query).first
    r = fielded_index.searcher.parts[0].reader
    admitted = set(bitset.to_ids(fielded_index.searcher.parts[0].evaluator.run(plan), len(fielded_index)).tolist())
    holders = {d for t in plan.term_ids if t >= 0 for d in r.post_doc[int(r.post_ptr[t]) : int(r.post_ptr[t + 1])].tolist()}
    if plan.admits_holders:
        assert holders <= admitted
    # Expected: the operands of one OR (or the one operand) include a bare word for each word BM25 scores.
    bare = {w for w in words if w in HOLDER_WORDS or w == "oak"}
    scored = {t for w in words if not w.startswith("NOT") and not w.endswith("*") for t in w.split("[")[0].strip('"').split()}
    assert plan.admits_holders == (bool(bare) and scored <= bare and (joiner == " OR " or len(words) == 1))
    if admitted:  # the search ranks exactly the admitted set, zero scores (a word only in an author) included
        from sieve.engine.rank.topk import top_k

        docs = np.asarray(sorted(admitted), dtype=np.int64)
        want_d, want_s = top_k(*fielded_index.searcher.parts[0].bm25.scores(plan.term_ids, docs), 5)
        got = fielded_index.search(query, k=5, explain=False)
        assert [h.doc for h in got.hits] == want_d.tolist() and [h.score for h in got.hits] == want_s.tolist()
        assert got.count == len(admitted)


@settings(max_examples=150, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(zipf_query, st.sampled_from([" OR ", " "]), st.integers(1, 12), st.sampled_from([1, 7, 64]),
       st.sampled_from([1, 10**9]))
def test_scans_in_chunks_rank_as_one_pass(zipf_index: sieve.Index, words: list[str], joiner: str, k: int, chunk: int,
                                          unpack: int) -> None:
    """Long lists are scored CHUNK postings at a time (8,192: never split in this index): cut into
    chunks of 1, 7 and 64, every path (one term's best k per chunk, the accumulator, MaxScore)
    gives the oracle's documents and scores, bit for bit; so does one term's scan whether it tests
    the admitted set by its bits or by a byte a document (UNPACK_SHARE), scoring only the
    admitted postings or all of them."""
    from sieve.engine.format import bitset
    from sieve.engine.rank import scorer as search
    from sieve.engine.rank.topk import top_k

    plan = zipf_index.plan(joiner.join(words)).first
    bits = zipf_index.searcher.parts[0].evaluator.run(plan)
    docs = bitset.to_ids(bits, len(zipf_index))
    scorer = zipf_index.searcher.parts[0].bm25
    want_d, want_s = top_k(*scorer.scores(plan.term_ids, docs), k)  # one pass over unsplit lists
    old, old_unpack = search.CHUNK, search.UNPACK_SHARE
    search.CHUNK, search.UNPACK_SHARE = chunk, unpack
    try:
        got_d, got_s = scorer.top(plan.term_ids, None, bits, k, admitted=len(docs)) if len(docs) else (want_d, want_s)
        all_d, all_s = scorer.scores(plan.term_ids, None)  # the zero-hit fallback's whole collection
    finally:
        search.CHUNK, search.UNPACK_SHARE = old, old_unpack
    assert got_d.tolist() == want_d.tolist() and got_s.tolist() == want_s.tolist()
    ref_d, ref_s = scorer.scores(plan.term_ids, None)
    assert all_d.tolist() == ref_d.tolist() and all_s.tolist() == ref_s.tolist()


@pytest.fixture
def windowed(zipf_index: sieve.Index, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """Window-by-window scans for every query of the small index (narrow windows, no minimum size):
    sets them up and gives the scorer, its kept windows emptied before and after (they were
    measured at another width)."""
    from sieve.engine.rank import scorer as search, windows

    scorer = zipf_index.searcher.parts[0].bm25

    def setup(bits: int, first: int, share: int) -> Any:
        monkeypatch.setattr(windows, "WINDOW_BITS", bits)
        monkeypatch.setattr(search, "_WINDOWED_MIN", 0)
        monkeypatch.setattr(search, "_FIRST_ROUND", first)
        monkeypatch.setattr(search, "_FIRST_SHARE", 62)
        monkeypatch.setattr(search, "_WINDOWED_SHARE", share)
        monkeypatch.setattr(search, "_WINDOWS_PER_RANK", 0)
        scorer.windows.clear()
        return scorer

    yield setup
    scorer.windows.clear()


@settings(max_examples=200, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(zipf_query, st.sampled_from([" OR ", " "]), st.integers(1, 12), st.sampled_from([0, 2, 4, 7]), st.sampled_from([1, 40, 4096]),
       st.sampled_from([0, 2]))
def test_windowed_scans_rank_as_full_scans(zipf_index: sieve.Index, windowed: Any, words: list[str], joiner: str, k: int,
                                           bits_: int, first: int, share: int) -> None:
    """Scoring only the windows whose bound reaches the k-th best score gives the full scan's top k,
    bit for bit and ties in order, whatever the windows' width, the first round's size and whether
    it gives way to a scan (share 0: never); it declines only when fewer than k documents score."""
    from sieve.engine.format import bitset
    from sieve.engine.rank.topk import top_k

    scorer = windowed(bits_, first, share)
    plan = zipf_index.plan(joiner.join(words)).first
    bits = zipf_index.searcher.parts[0].evaluator.run(plan)
    postings = scorer._postings(plan.term_ids)
    for b in (bits, None):  # the admitted set, and the zero-hit fallback's whole collection
        want_d, want_s = top_k(*scorer._scores(postings, None, b), k)
        got = scorer._windowed(postings, b, k)
        if got is None:
            assert share or len(want_d) < k or not postings
            continue
        assert got[0].tolist() == want_d.tolist() and got[1].tolist() == want_s.tolist()
    docs = bitset.to_ids(bits, len(zipf_index))
    if len(docs):  # through `top`, as searches call it
        want_d, want_s = top_k(*scorer.scores(plan.term_ids, docs), k)
        got_d, got_s = scorer.top(plan.term_ids, None, bits, k, admitted=len(docs))
        assert got_d.tolist() == want_d.tolist() and got_s.tolist() == want_s.tolist()


def test_windowed_scans_skip_windows_that_cannot_reach_the_top(zipf_index: sieve.Index, windowed: Any,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """Guards the test above: frequent words, narrow windows, a small k: most postings are never scored."""
    from sieve.engine.rank import scorer as search

    scorer = windowed(2, 40, 0)
    scored, real = [], search.BM25Scorer._score_windows

    def counting(self: Any, postings: Any, spans: Any, chosen: Any, *rest: Any) -> None:
        scored.append(sum(int((tw.starts[chosen + 1] - tw.starts[chosen]).sum()) for tw in spans))
        return real(self, postings, spans, chosen, *rest)

    monkeypatch.setattr(search.BM25Scorer, "_score_windows", counting)
    plan = zipf_index.plan("w0 OR w1").first
    total = sum(p.hi - p.lo for p in scorer._postings(plan.term_ids))
    hits = zipf_index.search("w0 OR w1", k=3, explain=False).hits
    assert len(hits) == 3 and scored and sum(scored) * 2 < total
    assert len(scorer.windows) == 2  # both words' windows kept for the next search
    # A k that is large next to the windows (150 of them here) is left to the plain scan.
    monkeypatch.setattr(search, "_WINDOWS_PER_RANK", 4)
    postings = scorer._postings(plan.term_ids)
    assert scorer._windowed(postings, None, 37) is not None and scorer._windowed(postings, None, 38) is None


def test_searches_in_threads_rank_as_one_at_a_time(zipf_index: sieve.Index) -> None:
    """Scans running at once each take an accumulator of their own: eight threads searching the
    same index give every query the ranking it has alone, and the accumulators kept afterwards
    number at most the scans that ran at once, each cleared."""
    from concurrent.futures import ThreadPoolExecutor

    queries = ["w0 OR w1", "w0 OR w1 OR w2", "w1 OR w3 OR w55", "w2 OR w4", "w0", "w5 OR w6 OR w7"] * 8
    alone = {q: [(h.doc_id, h.score) for h in zipf_index.search(q, k=10, explain=False).hits] for q in set(queries)}
    with ThreadPoolExecutor(8) as pool:
        together = list(pool.map(lambda q: [(h.doc_id, h.score) for h in zipf_index.search(q, k=10, explain=False).hits], queries))
    assert together == [alone[q] for q in queries]
    spare = zipf_index.searcher.parts[0].bm25._spare
    assert 1 <= len(spare) <= 8 and not any(acc.any() for acc in spare)


@pytest.mark.parametrize("scan", ["_scores", "_score_windows"])
def test_an_interrupted_scan_leaves_no_score_behind(zipf_index: sieve.Index, windowed: Any, monkeypatch: pytest.MonkeyPatch,
                                                    scan: str) -> None:
    """Scans add into accumulators kept between searches: a search stopped half-way (its
    deadline passed) must not leave its partial sums for the next search to add to, whether
    it scanned every posting or window by window."""
    from sieve.engine import deadline
    from sieve.errors import DeadlineExceededError

    if scan == "_score_windows":
        windowed(2, 40, 0)
    q = "w0 OR w1 OR w2"  # frequent words: every posting is scanned
    want = [(h.doc_id, h.score) for h in zipf_index.search(q, k=10, explain=False).hits]
    calls = {"n": 0}
    real = deadline.check

    def stop_at_the_second_term() -> None:
        if sys._getframe(1).f_code.co_name == scan:  # the scan's check before each term
            calls["n"] += 1
            if calls["n"] == 2:  # the first term's scores are in the buffer
                raise DeadlineExceededError(0.001)
        real()

    with monkeypatch.context() as m:
        m.setattr(deadline, "check", stop_at_the_second_term)
        with pytest.raises(DeadlineExceededError):
            for _ in range(5):
                zipf_index.search(q, k=10, explain=False)
    assert calls["n"] == 2
    scorer = zipf_index.searcher.parts[0].bm25
    assert scorer._spare and not any(acc.any() for acc in scorer._spare)
    assert [(h.doc_id, h.score) for h in zipf_index.search(q, k=10, explain=False).hits] == want


def test_pruning_happens_on_rare_and_frequent_words(zipf_index: sieve.Index) -> None:
    """Guards the test above: it must exercise the pruned path, not only the fallback to a full scan."""
    scorer = zipf_index.searcher.parts[0].bm25
    full = []
    original = scorer._scores
    scorer._scores = lambda postings, docs: full.append(1) or original(postings, docs)  # type: ignore[method-assign]
    try:
        r = zipf_index.search("w0 OR w1 OR w55", k=3)
    finally:
        del scorer._scores
    assert not full and len(r.hits) == 3 and r.hits[0].score > r.hits[2].score


def test_the_admitted_set_is_listed_only_to_fill_ranks_with_zero_scores(zipf_index: sieve.Index, monkeypatch: pytest.MonkeyPatch) -> None:
    """The admitted set is a bitset; listing it (bitset.to_ids, tens of microseconds at 100k
    documents) is needed only when fewer than k admitted documents score above 0, so that
    documents admitted without a scored term fill the ranks: not for MaxScore, nor for a scan."""
    from sieve.engine.format import bitset
    from sieve.engine.rank import scorer as search

    listed, real = [], bitset.to_ids
    monkeypatch.setattr(search.bitset, "to_ids", lambda *a: listed.append(1) or real(*a))
    pruned = zipf_index.search("w0 OR w1 OR w55", k=3, explain=False)
    assert not listed and len(pruned.hits) == 3
    scanned = zipf_index.search("w0 OR w1", k=3, explain=False)  # two frequent words: every posting is scored
    assert not listed and len(scanned.hits) == 3
    rare = zipf_index.search("w2* OR w59", k=150, explain=False)  # a prefix admits, only w59 scores
    holding = zipf_index.match("w59").count
    assert listed and 0 < holding < 150 and len(rare.hits) == 150
    assert all(h.score > 0 for h in rare.hits[:holding]) and all(h.score == 0 for h in rare.hits[holding:])


def test_a_plain_or_is_ranked_without_its_admitted_set(zipf_index: sieve.Index, monkeypatch: pytest.MonkeyPatch) -> None:
    """An OR of bare words admits every document of its words' postings: BM25 ranks it without
    evaluating the admitted set, which is evaluated only to fill ranks with zero scores or when the
    count is read, and then once."""
    import pickle

    from sieve.engine.query.evaluate import Evaluator

    runs, real = [], Evaluator.run
    monkeypatch.setattr(Evaluator, "run", lambda *a, **kw: runs.append(1) or real(*a, **kw))
    for q in ["w0 OR w1 OR w55", "w0 OR w1", "w44", "w3 OR w2* OR w9"]:
        runs.clear()
        r = zipf_index.search(q, k=3, explain=False)
        assert not runs and len(r.hits) == 3, q
        assert r.count == zipf_index.match(q).count and len(runs) == 2, q  # the count's run, and match's
        assert r.count == zipf_index.match(q).count and len(runs) == 3, q  # counted once
    runs.clear()
    rare = zipf_index.search("w2* OR w59", k=150, explain=False)  # fewer than k score: the set fills the ranks
    assert len(runs) == 1 and len(rare.hits) == 150 and rare.count == zipf_index.match("w2* OR w59").count and len(runs) == 2
    for q in ["w0 w1", "w0[title] OR w1", "NOT w1"]:  # the set is needed to rank, or to know it is not empty
        runs.clear()
        zipf_index.search(q, k=3, explain=False)
        assert len(runs) == 1, q
    unread = zipf_index.search("w0 OR w7", k=3)
    assert pickle.loads(pickle.dumps(unread)) == zipf_index.search("w0 OR w7", k=3)  # the count computed to pickle


@settings(max_examples=60, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.sampled_from(ZIPF[:4] + ZIPF[8::4] + ["w2*", "w5[title]"]), min_size=1, max_size=4), st.integers(1, 12))
def test_plain_ors_over_segments_with_deletions_rank_as_a_fresh_build(segmented_zipf: tuple[sieve.Index, sieve.Index],
                                                                      words: list[str], k: int) -> None:
    """Segments with and without deletions, words absent from some: the same hits and count as a
    fresh build of the live documents."""
    index, fresh = segmented_zipf
    q = " OR ".join(words)
    a, b = index.search(q, k=k, explain=False), fresh.search(q, k=k, explain=False)
    assert [h.doc_id for h in a.hits] == [h.doc_id for h in b.hits], q
    assert [h.score for h in a.hits] == pytest.approx([h.score for h in b.hits], rel=1e-9, abs=1e-12), q
    assert (a.count, a.fallback) == (b.count, b.fallback) and a.count == index.match(q).count, q


@pytest.fixture(scope="module")
def segmented_zipf(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[sieve.Index, sieve.Index]]:
    """The zipf corpus in four segments (later ones with words the first lacks), two with deletions;
    and a fresh build of its live documents in index order."""
    import random

    from sieve.index.merges import MergePolicy

    rng = random.Random(11)
    weights = [1 / (i + 1) for i in range(len(ZIPF))]
    recs = [{"id": f"s{i}", "title": " ".join(rng.choices(ZIPF[: 20 + 10 * (i // 100)], weights[: 20 + 10 * (i // 100)], k=3)),
             "text": " ".join(rng.choices(ZIPF[: 20 + 10 * (i // 100)], weights[: 20 + 10 * (i // 100)], k=rng.randint(3, 40)))}
            for i in range(400)]
    tmp = tmp_path_factory.mktemp("segmented")
    index = sieve.build_index(recs[:100], tmp / "ix")
    never = MergePolicy(factor=1000, floor=1, max_documents=1, max_deleted=1.0)
    for j in (1, 2, 3):
        with index.writer(policy=never) as w:
            for rec in recs[100 * j : 100 * j + 100]:
                w.add(rec)
    gone = {f"s{i}" for i in range(0, 400, 7) if i < 100 or 200 <= i < 300}
    with index.writer(policy=never) as w:
        for d in sorted(gone):
            w.delete(d)
    index = index.reopen()
    assert len(index.segments) == 4 and [s.deleted is not None for s in index.segments] == [True, False, True, False]
    fresh = sieve.build_index([r for r in recs if r["id"] not in gone], tmp / "fresh")
    yield index, fresh
    fresh.close()


def test_search_without_explanation_gives_the_same_ranking(zipf_index: sieve.Index) -> None:
    for q in ["w0 OR w1 OR w55", "w3 w7", "w2*[title] NOT w1", "w59 OR w58"]:
        full, bare = zipf_index.search(q, k=7), zipf_index.search(q, k=7, explain=False)
        assert [(h.doc_id, h.rank, h.score) for h in bare.hits] == [(h.doc_id, h.rank, h.score) for h in full.hits]
        assert (bare.count, bare.query, bare.fallback, bare.missing) == (full.count, full.query, full.fallback, full.missing)
        assert all(h.fields == () and h.sections == () for h in bare.hits)
        assert any(h.fields for h in full.hits)


def test_rrf_by_hand() -> None:
    """Reciprocal rank fusion is pure numpy: worked by hand, no dense extra needed."""
    from sieve.engine.rank.fusion import RRF_K, rrf

    a = np.array([7, 3, 5])  # ranks 1, 2, 3
    b = np.array([5, 9])
    docs, scores = rrf([a, b], k=3)
    expected = {7: 1 / 61, 3: 1 / 62, 5: 1 / 63 + 1 / 61, 9: 1 / 62}
    assert RRF_K == 60
    assert docs.tolist() == [5, 7, 3]  # 3 and 9 tie at 1/62: the lower document number first
    assert scores.tolist() == pytest.approx([expected[5], expected[7], expected[3]])
    assert rrf([np.array([], dtype=np.int64)], k=5)[0].tolist() == []
    assert rrf([a], k=2, c=0)[1].tolist() == pytest.approx([1.0, 0.5])


@settings(max_examples=400, deadline=None)
@given(st.lists(st.one_of(st.integers(0, 4).map(float), st.floats(0, 30, allow_nan=False), st.just(-math.inf)), max_size=400),
       st.integers(1, 50), st.randoms(use_true_random=False))
def test_top_k_equals_a_full_sort(scores: list[float], k: int, rnd) -> None:
    """top_k's floor (the least of k block maxima) never drops a document a full sort keeps:
    the same documents, scores and order, ties by document, with repeated and -inf scores."""
    from sieve.engine.rank.topk import top_k

    docs = np.sort(np.asarray(rnd.sample(range(10**6), len(scores)), dtype=np.int64))
    s = np.asarray(scores, dtype=np.float64)
    got_d, got_s = top_k(docs, s, k)
    order = np.lexsort((docs, -s))[:k]
    assert got_d.tolist() == docs[order].tolist() and got_s.tolist() == s[order].tolist()


one_term_query = st.tuples(st.sampled_from(ZIPF[:6] + ZIPF[6::7]),
                           st.sampled_from(["{w}", "{w}[title]", "{w} AND NOT w1", "{w} AND NOT w0[title]",
                                            "{w}[title] AND NOT w2", "{w} AND NOT (w3 OR w4)"]))


@settings(max_examples=150, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(one_term_query, st.integers(1, 12), st.sampled_from([1, 5, 8192]), st.sampled_from([1, 10**9]))
def test_one_term_scans_score_the_admitted_postings_as_the_oracle(zipf_index: sieve.Index, case: tuple[str, str], k: int,
                                                                   chunk: int, unpack: int) -> None:
    """One term's best k under a filter: its admitted postings found by the set's bits or by a byte a
    document, scored alone (few admitted) or all of them then dropped (most admitted), chunk by chunk:
    the oracle's documents and scores, bit for bit."""
    from sieve.engine.format import bitset
    from sieve.engine.rank import scorer as search
    from sieve.engine.rank.topk import top_k

    word, form = case
    plan = zipf_index.plan(form.format(w=word)).first
    bits = zipf_index.searcher.parts[0].evaluator.run(plan)
    docs = bitset.to_ids(bits, len(zipf_index))
    scorer = zipf_index.searcher.parts[0].bm25
    assume_some = len(docs) > 0
    want_d, want_s = top_k(*scorer.scores(plan.term_ids, docs), k) if assume_some else (docs, docs)
    p = scorer._postings(plan.term_ids, None)[0]
    old, old_unpack = search.CHUNK, search.UNPACK_SHARE
    search.CHUNK, search.UNPACK_SHARE = chunk, unpack
    try:
        got = scorer._one(p, bits, k)
    finally:
        search.CHUNK, search.UNPACK_SHARE = old, old_unpack
    if got is None:  # fewer than k admitted postings score above 0: the caller ranks the set instead
        assert int(np.count_nonzero(scorer.scores(plan.term_ids, docs)[1] > 0)) < k
        return
    assert got[0].tolist() == want_d.tolist() and got[1].tolist() == want_s.tolist()
