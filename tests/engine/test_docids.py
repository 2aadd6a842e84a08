"""Document ids in two bytes (`sieve.engine.format.docids`): every slice decodes to the ids written,
whether written at once or in pieces, read plain or through a checked memory map; damaged run
tables are told apart from sound ones; and an index whose ids span many runs answers exactly."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import sieve
from sieve.engine.format import commits, docids, storage
from sieve.errors import IndexDamagedError


def _postings(draw_terms: list[list[int]]) -> np.ndarray:
    """Term-major ids, each term's ascending (as postings are)."""
    return np.asarray([d for term in draw_terms for d in sorted(set(term))], dtype=np.int64)


terms = st.lists(st.lists(st.integers(0, 2**20), max_size=40), max_size=30)


@settings(max_examples=200, deadline=None)
@given(terms, st.lists(st.tuples(st.integers(0, 700), st.integers(0, 700)), max_size=20), st.integers(1, 50))
def test_every_slice_decodes_to_the_ids_written(tmp_path_factory: pytest.TempPathFactory, ts: list[list[int]],
                                                slices: list[tuple[int, int]], piece: int) -> None:
    ids = _postings(ts)
    whole = docids.SplitIds(*docids.split(ids))
    d = tmp_path_factory.mktemp("ids")
    w = docids.SplitIdsWriter(d, "x")
    for i in range(0, len(ids), piece):  # pieces cut runs anywhere
        w.append(ids[i : i + piece])
    on_disk = docids.open_ids(d, "x", w.close())
    assert docids.consistent(*on_disk.tables(), len(ids), int(ids.max(initial=0)) + 1)
    assert all(np.array_equal(x, y) for x, y in zip(on_disk.tables(), whole.tables()))
    for got in (whole, on_disk):
        assert len(got) == len(ids) and np.array_equal(np.asarray(got), ids)
        for a, b in slices + [(0, len(ids)), (len(ids), len(ids))]:
            assert np.array_equal(got[a:b], ids[a:b]), (a, b)
            # Any ascending pick of postings, from a stretch of one run or of many, gathers what slices give.
            at = np.arange(min(a, b), min(max(a, b), len(ids)), 1 + (a + b) % 5, dtype=np.int64)
            assert np.array_equal(got.take(at), ids[at]), (a, b)


def test_runs_are_few_and_continue_across_pieces(tmp_path: Path) -> None:
    # Three terms: one within the first 65,536 documents, two spanning three stretches each.
    ids = np.concatenate([np.arange(0, 50_000, 7), np.arange(10, 200_000, 13), np.arange(60_000, 140_000, 3)])
    low, starts, highs = docids.split(ids)
    assert low.dtype == np.uint16 and highs.tolist() == [0, 1, 2, 3, 0, 1, 2]
    assert np.array_equal(ids[starts] >> 16, highs) and starts[0] == 0
    w = docids.SplitIdsWriter(tmp_path, "p")
    for part in np.array_split(ids, 17):
        w.append(part)
    back = docids.open_ids(tmp_path, "p", w.close())
    assert back.tables()[0].tolist() == starts.tolist() and np.array_equal(back[0 : len(ids)], ids)


@pytest.mark.parametrize("damage, ok", [
    (lambda s, h: (s, h), True),
    (lambda s, h: (s[1:], h[1:]), False),  # the first run no longer starts at posting 0
    (lambda s, h: (s[::-1].copy(), h), False),  # runs out of order
    (lambda s, h: (np.concatenate([s[:1], s[2:3], s[1:2], s[3:]]), h), False),  # two runs swapped, the first still at 0
    (lambda s, h: (s, h[:-1]), False),  # one high value short
    (lambda s, h: (s, h + 9), False),  # ids past the last document
])
def test_a_damaged_run_table_is_found(damage, ok: bool) -> None:
    ids = np.concatenate([np.arange(0, 140_000, 5), np.arange(3, 70_000, 11)])
    low, starts, highs = docids.split(ids)
    starts, highs = damage(starts, highs)
    for table in (starts, starts.astype(np.uint32)):  # as written: u32 (no wrap-around hides a descent)
        assert docids.consistent(table, highs, len(low), 140_000) == ok


def test_a_damaged_run_table_fails_the_first_read_naming_it() -> None:
    """A run table that passes its checksums but not the check (runs out of order) is refused
    with the file's name when a slice first needs it: never a wrong id, never a traceback."""
    ids = np.concatenate([np.arange(0, 140_000, 5), np.arange(3, 70_000, 11)])
    low, starts, highs = docids.split(ids)
    bad = docids.SplitIds(low, starts[::-1].copy(), highs, n_docs=140_000, label="seg-000001/post.doc.runs.sva")
    assert bad.tables_agree()  # lengths agree: opening the segment finds nothing
    with pytest.raises(IndexDamagedError) as info:
        bad[10:20]
    assert info.value.file == "seg-000001/post.doc.runs.sva" and "runs" in str(info.value)
    good = docids.SplitIds(low, starts, highs, n_docs=140_000)
    assert np.array_equal(good[10:20], ids[10:20])


def test_ids_are_read_through_their_checked_map_then_plainly(tmp_path: Path) -> None:
    ids = np.arange(0, 3 * storage.VERIFY_ON_OPEN_BYTES, 5, dtype=np.int64)  # big enough not to be verified when opened
    back = docids.open_ids(tmp_path, "p", docids.write(tmp_path, "p", ids))
    assert isinstance(back.low, storage.ArrayFile) and np.array_equal(back[1000:9000], ids[1000:9000])
    assert np.array_equal(back.whole(), ids)  # verifies every block: the plain array is read from then on
    assert isinstance(back.low, np.ndarray) and np.array_equal(back[5:7], ids[5:7])
    small = docids.open_ids(tmp_path, "q", docids.write(tmp_path, "q", ids[:100]))
    assert isinstance(small.low, np.ndarray)  # verified when opened


def test_many_runs_answer_as_one(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """With three low bits, a few hundred documents make hundreds of runs (and every term spans
    many): matches, BM25 ids and scores, and a merged index agree with the two-byte split."""
    r = random.Random(3)
    words = ["heat", "wave", "school", "closure", "paris", "kernel", "file", "socket"]
    recs = [{"id": f"d{i}", "title": " ".join(r.choices(words, k=3)), "text": " ".join(r.choices(words, k=30))} for i in range(300)]
    queries = ["heat", "heat[title]", "wave AND school", "paris OR kernel", "NOT file", '"heat wave"', "so*", "NEAR/2(school, closure)"]

    def answers(ix: sieve.Index) -> list[object]:
        out: list[object] = []
        for q in queries:
            out.append(ix.match(q).ids)
            hits = ix.search(q, k=50).hits
            out.append([(h.doc_id, round(h.score, 9), h.fields, h.sections) for h in hits])
        return out

    want = answers(sieve.build_index(recs, tmp_path / "plain"))
    with monkeypatch.context() as m:
        m.setattr(docids, "LOW_BITS", 3)
        m.setattr(docids, "LOW_MASK", 7)
        ix = sieve.build_index(recs[:200], tmp_path / "narrow")
        with ix.writer() as w:
            for rec in recs[200:]:
                w.add(rec)
        ix = ix.reopen()
        assert len(ix.segments) == 2 and len(ix.segments[0].reader.post_doc.tables()[0]) >= 100
        assert answers(ix) == want
        ix.merge()
        merged = ix.reopen()
        assert len(merged.segments) == 1 and merged.check()
        assert answers(merged) == want


def test_a_run_table_that_passes_its_checksums_but_not_its_check(tmp_path: Path) -> None:
    """Written with valid checksums (as a buggy writer would), runs out of order open (lengths
    agree), then `check()`, and `match` and `search` where they read postings, raise IndexDamagedError naming
    the file."""
    import json

    from sieve.engine.segment.snapshot import manifest_crc

    root = tmp_path / "ix"
    index = sieve.build_index([{"id": str(i), "title": f"word{i % 7} shared"} for i in range(300)], root)
    seg = index.segments[0].reader
    body = json.loads((seg.dir / storage.MANIFEST).read_text())
    body.pop("checksum")
    for name, values in (("post.doc.runs.sva", np.array([0, 0], np.uint32)), ("post.doc.high.sva", np.array([0, 0], np.int32))):
        body["files"][name] = storage.write_array(seg.dir / name, values, values.dtype)
    commits.write_manifest(seg.dir, body)
    commit = json.loads((index.commit_dir / storage.MANIFEST).read_text())
    commit.pop("checksum")
    commit["segments"][0]["manifest_crc32"] = manifest_crc(seg.dir)
    commits.write_manifest(index.commit_dir, commit)
    for act in (lambda ix: ix.check(), lambda ix: ix.match("wor*"), lambda ix: ix.search("word3 OR word4")):
        with pytest.raises(IndexDamagedError) as info:
            act(sieve.open_index(root))
        assert info.value.file.endswith("post.doc.runs.sva"), info.value
