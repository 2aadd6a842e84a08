"""Dense rows (`post.bits*`): a (term, field) pair frequent in a segment is also stored as a bitset,
and the term's postings in its other fields are kept apart (`post.rest*`); a frequent term's
documents in any field are one more bitset (`post.any*`) unless a single field row holds them.

The rows are an acceleration only: every term leaf must admit exactly what its postings say,
for every field mask, with the rows read, with them ignored (a segment written before they
existed), and in a segment with deletions."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import sieve
from sieve.engine.format import bitset
from sieve.engine.query.evaluate import Evaluator
from sieve.engine.analysis.fields import ALL_MASK
from sieve.engine.segment.rows import ANY_FRACTION, DENSE_FRACTION, DENSE_MIN


def _from_postings(r: sieve.engine.segment.reader.SegmentReader, tid: int, fmask: int) -> np.ndarray:
    docs, masks, _ = r.postings(tid)
    return bitset.from_bool(np.isin(np.arange(r.n_docs), docs[(masks & fmask) != 0]), r.n_docs)


@pytest.fixture(scope="module")
def stdlib_rows(tmp_path_factory: pytest.TempPathFactory, stdlib: sieve.Index) -> sieve.Index:
    """The stdlib fixture's documents built again with any-field rows, which a segment this small
    would not get (rows.ANY_MIN_DOCS)."""

    docs = [stdlib.document(stdlib.reader.doc_id(d)).to_record() for d in stdlib.doc_numbers().tolist()]
    with pytest.MonkeyPatch.context() as m:
        m.setattr("sieve.engine.segment.rows.ANY_MIN_DOCS", 0)
        return sieve.build_index(docs, tmp_path_factory.mktemp("rows") / "idx")


@pytest.fixture(scope="module")
def stdlib_reader(stdlib_rows: sieve.Index) -> sieve.engine.segment.reader.SegmentReader:
    return stdlib_rows.segments[0].reader


def test_small_segments_have_no_any_field_rows(stdlib: sieve.Index) -> None:
    r = stdlib.segments[0].reader
    assert r.n_docs < sieve.engine.segment.rows.ANY_MIN_DOCS and r.any is not None and len(r.any_terms) == 0


def test_rows_hold_exactly_the_frequent_pairs(stdlib_reader) -> None:
    r = stdlib_reader
    need = max(-(-r.n_docs // DENSE_FRACTION), DENSE_MIN)
    ptr = np.asarray(r.post_ptr, dtype=np.int64)
    expected = []
    for t in range(len(r.terms)):
        masks = r.attrs.masks(int(ptr[t]), int(ptr[t + 1]))
        expected += [(t, f) for f in range(5) if np.count_nonzero(masks & (1 << f)) >= need]
    stored = [(t, int(r.dense_field[i])) for t in range(len(r.terms)) for i in range(int(r.dense_ptr[t]), int(r.dense_ptr[t + 1]))]
    assert stored == expected and len(stored) > 50  # the fixture is big enough to have many
    for i, (t, f) in enumerate(stored):
        assert np.array_equal(r.dense[i], _from_postings(r, t, 1 << f))


def test_rest_postings_are_the_postings_in_the_fields_without_rows(stdlib_reader) -> None:
    """For each term with rows: every posting whose mask reaches a field without a row, in document
    order, with the mask cut to those fields; nothing for a term without rows."""
    r = stdlib_reader
    ends = np.asarray(r.rest_ptr, dtype=np.int64)
    assert len(ends) == len(r.dense_field) + 1 and ends[-1] == len(r.rest_doc)
    some = 0
    for t in range(len(r.terms)):
        a, b = int(r.dense_ptr[t]), int(r.dense_ptr[t + 1])
        if a == b:
            continue
        covered = sum(1 << int(f) for f in r.dense_field[a:b])
        docs, masks, _ = r.postings(t)
        other = masks & np.uint8(ALL_MASK & ~covered)
        keep = other != 0
        lo, hi = int(ends[a]), int(ends[b])
        assert np.array_equal(r.rest_doc[lo:hi], docs[keep]) and np.array_equal(r.rest_mask[lo:hi], other[keep]), r.terms[t]
        assert hi - lo < len(docs)  # smaller than the postings: what the rows save a leaf
        some += hi - lo
    assert some > 0


def test_any_rows_hold_the_frequent_terms_no_single_row_holds(stdlib_reader) -> None:
    """A term found in at least 1/ANY_FRACTION of the documents has a row of all its documents,
    unless it has exactly one field row and no rest postings (that row is then the same set)."""
    r = stdlib_reader
    need_any = max(-(-r.n_docs // ANY_FRACTION), DENSE_MIN)
    ptr = np.asarray(r.post_ptr, dtype=np.int64)
    rest = np.asarray(r.rest_ptr, dtype=np.int64)
    expected = []
    for t in np.flatnonzero(np.diff(ptr) >= need_any).tolist():
        a, b = int(r.dense_ptr[t]), int(r.dense_ptr[t + 1])
        if b - a != 1 or rest[b] > rest[a]:
            expected.append(t)
    assert r.any_terms.tolist() == expected and len(expected) > 20
    assert any(r.dense_ptr[t] == r.dense_ptr[t + 1] for t in expected)  # some too rare for a field row
    singles = [t for t in np.flatnonzero(np.diff(ptr) >= need_any).tolist() if t not in set(expected)]
    assert singles  # the fixture has terms whose one field row is the whole answer
    for t in expected + singles[:20]:
        truth = _from_postings(r, t, 0xFF)
        row = r.any_row(t)
        if row is None:
            assert np.array_equal(r.dense[int(r.dense_ptr[t])], truth)
        else:
            assert np.array_equal(row, truth), r.terms[t]


@pytest.mark.parametrize("fmask", [ALL_MASK, 0b00111, 0b00001, 0b00100, 0b10000, 0b01010, 0b11011])
def test_term_leaf_equals_its_postings_with_and_without_rows(stdlib_reader, fmask: int) -> None:
    r = stdlib_reader
    with_rows = Evaluator(r)
    dense = {t for t in range(len(r.terms)) if r.dense_ptr[t + 1] > r.dense_ptr[t]}
    sample = sorted(dense)[:: max(1, len(dense) // 60)] + list(range(0, len(r.terms), max(1, len(r.terms) // 60)))
    for t in sample:
        truth = _from_postings(r, t, fmask)
        assert np.array_equal(with_rows.term(t, fmask), truth), (r.terms[t], fmask)
    # A segment written before the any-field rows reads the field rows and rest postings; one written
    # before rest postings (format 5) reads the rows and then all the postings; one written before
    # rows (format 3) reads the postings alone.
    saved = r.dense_ptr, r.rest_ptr, r._any_row
    try:
        r._any_row = {}
        for t in sample:
            assert np.array_equal(with_rows.term(t, fmask), _from_postings(r, t, fmask))
        r.rest_ptr = None
        for t in sample:
            assert np.array_equal(with_rows.term(t, fmask), _from_postings(r, t, fmask))
        r.dense_ptr = None
        without = Evaluator(r)
        for t in sample:
            assert np.array_equal(without.term(t, fmask), _from_postings(r, t, fmask))
    finally:
        r.dense_ptr, r.rest_ptr, r._any_row = saved


def test_rows_never_admit_a_deleted_document(tmp_path, stdlib: sieve.Index, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("sieve.engine.segment.rows.ANY_MIN_DOCS", 0)
    r = stdlib.segments[0].reader
    t = max(range(len(r.terms)), key=lambda t: int(r.dense_ptr[t + 1] - r.dense_ptr[t]))
    word = r.terms[t].decode()
    docs = [stdlib.document(stdlib.reader.doc_id(d)).to_record() for d in stdlib.doc_numbers().tolist()]
    index = sieve.build_index(docs, tmp_path / "idx")
    before = index.match(word)
    gone = before.ids[: len(before.ids) // 2]
    with index.writer() as w:
        for doc_id in gone:
            w.delete(doc_id)
    after = sieve.open_index(tmp_path / "idx")
    assert after.match(word).ids == before.ids[len(gone):]
    assert after.match(f"NOT {word}").count == len(after) - (before.count - len(gone))


@pytest.mark.parametrize("template", ['{r} AND "{a} {b}"', "{r} AND NEAR/3({a}, {b})", "{r} AND NEAR/2({a}, {a})", '{r}[body] AND "{a} {b}"[section,body]'])
def test_positional_leaves_filtered_to_candidates_answer_as_unfiltered(stdlib: sieve.Index, monkeypatch: pytest.MonkeyPatch, template: str) -> None:
    """An AND hands its positional operand the documents its cheaper operands admitted; filtering
    the positions to those (a ragged gather) must not change the answer."""
    from sieve.engine.query import evaluate

    r = stdlib.segments[0].reader
    df = np.diff(np.asarray(r.post_ptr, dtype=np.int64))
    words = [r.terms[t].decode() for t in np.argsort(-df)[:40].tolist() if r.terms[t].decode().isalpha()]
    rare = [r.terms[t].decode() for t in np.flatnonzero((df > 2) & (df < 12)).tolist()[:200:20] if r.terms[t].decode().isalpha()]
    queries = [template.format(r=x, a=a, b=b) for x in rare for a, b in zip(words[:6], words[1:7])]

    def answers() -> list[list[str]]:
        index = sieve.open_index(stdlib.path)  # fresh: no cached plans or results
        return [index.match(q).ids for q in queries]

    monkeypatch.setattr(evaluate, "_FILTER_MIN_POSITIONS", 10**12)
    unfiltered = answers()
    monkeypatch.setattr(evaluate, "_FILTER_MIN_POSITIONS", 1)
    monkeypatch.setattr(evaluate, "_FILTER_SHARE", 0)
    assert answers() == unfiltered and sum(map(len, unfiltered)) > 0


def test_an_admitted_set_is_the_callers_own(stdlib_reader) -> None:
    """A leaf may hand back a dense row as it is; what `run` returns is a fresh array all the same
    (never the map, never the universe), so a caller that writes into it changes no later answer."""
    from sieve.engine.query.bql import parse
    from sieve.engine.query.plan import Plan

    r = stdlib_reader
    t = next(t for t in range(len(r.terms)) if r.dense_ptr[t + 1] > r.dense_ptr[t] and r.terms[t].decode().isalpha())
    f = int(r.dense_field[int(r.dense_ptr[t])])
    word, tag = r.terms[t].decode(), ["title", "section", "body", "author", "infobox"][f]
    common = next(r.terms[int(t)].decode() for t in r.any_terms if r.terms[int(t)].decode().isalpha())  # a leaf read from post.any
    ev = Evaluator(r)
    for query in (f"{word}[{tag}]", word, f"NOT {word}", f"{word} OR zzzznotaword", common, f"{common} OR zzzznotaword"):
        plan = Plan.of(parse(query), r)
        first = ev.run(plan)
        assert first.flags.writeable and not np.shares_memory(first, ev.universe)
        assert not np.shares_memory(first, r.dense.a) and not np.shares_memory(first, r.any.a)
        expected = first.copy()
        first[:] = 0
        assert np.array_equal(ev.run(plan), expected), query


@pytest.mark.parametrize("template", ["{r} AND {a}", "{r} AND {a}[body] AND NOT {b}", "({r} OR {x}) AND {a}[title,body] AND {b}", "{a} AND {r}[body]"])
def test_term_leaves_looked_up_by_candidates_answer_as_scattered(stdlib_rows: sieve.Index, monkeypatch: pytest.MonkeyPatch, template: str) -> None:
    """Inside an AND, a frequent term's leaf may look the few surviving documents up in its
    postings instead of scattering them all; the answer must not change (nor the operands'
    order, rarest first, which decides what survives to be looked up)."""
    from sieve.engine.query import evaluate

    r = stdlib_rows.segments[0].reader
    df = np.diff(np.asarray(r.post_ptr, dtype=np.int64))
    words = [r.terms[t].decode() for t in np.argsort(-df)[:400:10].tolist() if r.terms[t].decode().isalpha()]
    rare = [r.terms[t].decode() for t in np.flatnonzero((df > 2) & (df < 40)).tolist()[:400:20] if r.terms[t].decode().isalpha()]
    queries = [template.format(r=x, x=y, a=a, b=b) for x, y in zip(rare, rare[1:]) for a, b in zip(words[:8], words[1:9])]

    def answers() -> list[list[str]]:
        index = sieve.open_index(stdlib_rows.path)  # fresh: no cached plans
        return [index.match(q).ids for q in queries]

    monkeypatch.setattr(evaluate, "_FEW_SHARE", 0)  # always look up
    looked_up = answers()
    monkeypatch.setattr(evaluate, "_FEW_SHARE", 10**12)  # never
    assert answers() == looked_up and sum(map(len, looked_up)) > 0


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 700).flatmap(lambda n: st.tuples(st.just(n), st.sets(st.integers(0, n - 1)), st.sets(st.integers(0, n - 1)))))
def test_ranks_are_places_in_the_sorted_members(case: tuple[int, set[int], set[int]]) -> None:
    n, members, ids = case
    listed, asked = np.array(sorted(members), dtype=np.int64), np.array(sorted(ids), dtype=np.int64)
    where, rank = bitset.ranks(bitset.from_ids(listed, n), asked)
    held = [i for i, d in enumerate(asked.tolist()) if d in members]
    assert where.tolist() == held
    assert rank.tolist() == [int(np.searchsorted(listed, d)) for d in asked[held].tolist()]


def test_a_terms_holders_are_its_postings_and_rank_them(stdlib_reader, monkeypatch: pytest.MonkeyPatch) -> None:
    """`Evaluator.holders` (rows, rest postings, postings) is the set of a term's postings, and
    BM25 looks candidates up by their ranks in it as by binary search in the postings."""
    from sieve.engine.rank import scorer as search

    r = stdlib_reader
    ev = Evaluator(r)
    scorer = search.BM25Scorer(r, holders=ev.holders)
    dense = {t for t in range(len(r.terms)) if r.dense_ptr[t + 1] > r.dense_ptr[t]}
    rng = np.random.default_rng(3)
    for t in sorted(dense)[:: max(1, len(dense) // 40)] + list(range(0, len(r.terms), max(1, len(r.terms) // 40))):
        assert np.array_equal(ev.holders(t), _from_postings(r, t, ALL_MASK)), r.terms[t]
        p = scorer._postings((t,))[0]
        cands = np.sort(rng.choice(r.n_docs, size=int(rng.integers(1, r.n_docs)), replace=False))
        got = []
        for share in (r.n_docs + 1, 1):  # every lookup by rank; every one by binary search (fewer than all)
            monkeypatch.setattr(search, "_RANKED_SHARE", share)
            where, s = scorer._at(p, cands)
            got.append((where.tolist(), s.tolist()))
        assert got[0] == got[1] and len(got[0][0]) == len(set(cands.tolist()) & set(r.postings(t)[0].tolist())), r.terms[t]
