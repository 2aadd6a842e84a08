"""Segments (sieve.engine.segment.snapshot, sieve.index.writes, sieve.index.merges): an index of several segments with
deletions answers every question exactly as a fresh build of its live documents in index order:
ids, admitted sets, BM25 and Indri scores (to 1e-9, ties in the same order), zero-hit fallback and
diagnosis, explanations, documents, cards; commits write only what changed; merges keep the order;
crashes and damage leave the last committed state."""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from test_match_oracle import HYPOTHESIS, gen_record, gen_tree

import sieve
from sieve.cli.main import main
from sieve.engine.format import commits, storage
from sieve.errors import IndexDamagedError, InvalidArgumentError
from sieve.index.merges import MergePolicy, plan_merges
from sieve.tools import Toolset

EAGER = MergePolicy(factor=2, floor=1, max_documents=10_000)  # merges at almost every commit
NEVER = MergePolicy(factor=1000, floor=1, max_documents=1, max_deleted=1.0)  # one new segment per commit


def ids_in_order(index: sieve.Index) -> list[str]:
    return [index.reader.doc_id(d) for d in index.doc_numbers().tolist()]


def same_answers(index: sieve.Index, live: list[dict[str, Any]], r: random.Random, queries: int = 8) -> None:
    """`index` answers as a fresh build of `live` (in this order) does."""
    assert ids_in_order(index) == [rec["id"] for rec in live]
    assert len(index) == len(live)
    fresh = sieve.build_index(live)
    try:
        for _ in range(queries):
            q = str(gen_tree(r, 2))
            assert index.match(q).ids == fresh.match(q).ids, q
            for ranker in ("bm25", "indri"):
                a = index.search(q, k=len(live), ranker=ranker, diagnose=True)
                b = fresh.search(q, k=len(live), ranker=ranker, diagnose=True)
                assert (a.count, a.fallback, a.missing) == (b.count, b.fallback, b.missing), q
                assert [h.doc_id for h in a.hits] == [h.doc_id for h in b.hits], (q, ranker)
                assert [h.score for h in a.hits] == pytest.approx([h.score for h in b.hits], rel=1e-9, abs=1e-12), (q, ranker)
                assert [(h.fields, h.sections) for h in a.hits] == [(h.fields, h.sections) for h in b.hits], q
                assert a.diagnosis == b.diagnosis, q
            some = r.choice(live)["id"]
            assert index.explain(q, some).to_dict() == fresh.explain(q, some).to_dict(), (q, some)
        for rec in live:
            assert index.document(rec["id"]) == fresh.document(rec["id"])
        assert index.stats["documents"] == fresh.stats["documents"] and index.stats["dated"] == fresh.stats["dated"]
    finally:
        fresh.close()


@given(seed=st.integers(0, 2**32))
@HYPOTHESIS
def test_any_sequence_of_writes_and_merges_equals_a_fresh_build(seed: int, tmp_path_factory: pytest.TempPathFactory) -> None:
    r = random.Random(seed)
    tmp = tmp_path_factory.mktemp("segments")
    live = [gen_record(r, i) for i in range(r.randint(1, 10))]
    index = sieve.build_index(live, tmp / "ix")
    next_id = len(live)
    for _ in range(r.randint(2, 5)):  # commits, each with its own policy
        action = r.choice(["write", "write", "write", "merge"])
        if action == "merge":
            index.merge(max_segments=r.randint(1, 3))
        else:
            with index.writer(policy=r.choice([EAGER, NEVER, None])) as w:
                for _ in range(r.randint(1, 6)):
                    op = r.choice(["add", "add", "replace", "delete", "delete", "delete-unknown"])
                    if op == "add":
                        rec = gen_record(r, next_id)
                        next_id += 1
                        assert w.add(rec) is False
                        live.append(rec)
                    elif op == "delete-unknown":
                        assert w.delete("no-such-id") is False
                    elif op == "replace" and live:
                        old = r.choice(live)
                        rec = {**gen_record(r, next_id), "id": old["id"]}
                        next_id += 1
                        assert w.add(rec) is True
                        live = [x for x in live if x["id"] != old["id"]] + [rec]
                    elif op == "delete" and live:
                        gone = r.choice(live)
                        assert w.delete(gone["id"]) is True
                        live = [x for x in live if x["id"] != gone["id"]]
        index = index.reopen() if r.random() < 0.5 else sieve.open_index(tmp / "ix")
        index.check()
        if live:
            same_answers(index, live, r)
        else:
            assert len(index) == 0 and index.match("a OR NOT a").count == 0


def many_segments(path: Path, r: random.Random, commits: int = 6) -> tuple[sieve.Index, list[dict[str, Any]]]:
    """An index of `commits` + 1 segments, some documents deleted and replaced in each."""
    live = [gen_record(r, i) for i in range(12)]
    index = sieve.build_index(live, path)
    n = len(live)
    for _ in range(commits):
        with index.writer(policy=NEVER) as w:
            for _ in range(8):
                rec = gen_record(r, n)
                n += 1
                w.add(rec)
                live.append(rec)
            for _ in range(2):
                gone = r.choice(live[:-8])
                w.delete(gone["id"])
                live.remove(gone)
            old = r.choice(live[:-8])
            rec = {**gen_record(r, n), "id": old["id"]}
            n += 1
            w.add(rec)
            live = [x for x in live if x["id"] != old["id"]] + [rec]
        index = index.reopen()
    return index, live


def test_a_commit_adds_one_segment_and_rewrites_none(tmp_path: Path) -> None:
    r = random.Random(5)
    index, live = many_segments(tmp_path / "ix", r, commits=3)
    names = [s.name for s in index.segments]
    assert names == ["seg-000001", "seg-000002", "seg-000003", "seg-000004"]
    stamps = {s.name: (s.reader.dir / "post.mask.sva").stat().st_mtime_ns for s in index.segments}
    with index.writer(policy=NEVER) as w:
        w.delete(live[0]["id"])
    again = index.reopen()
    assert [s.name for s in again.segments] == names  # a delete writes a deletion bitset, no segment
    assert {s.name: (s.reader.dir / "post.mask.sva").stat().st_mtime_ns for s in again.segments} == stamps
    assert sorted(p.name for p in (tmp_path / "ix").iterdir()) == ["CURRENT", "gen-000005", *names]
    gen = sorted((tmp_path / "ix" / "gen-000005").iterdir())
    assert [p.name for p in gen] == ["manifest.json"] + sorted(f"{n}.del.sva" for n in names if n != "seg-000004")[: len(gen) - 1]
    assert again.stats["segments"] == 4 and again.stats["deleted"] > 0
    same_answers(again, live[1:], r)


def test_dense_and_hybrid_rank_live_documents_only(tmp_path: Path) -> None:
    pytest.importorskip("hnswlib", reason="dense ranking needs the dense extra")
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "hardening"))
    from synth import HashEncoder  # a deterministic encoder: no model download
    from sieve.dense import store

    r = random.Random(8)
    index, live = many_segments(tmp_path / "ix", r, commits=2)
    store.embed(index, model="hash-64", encoder=HashEncoder())
    index.use_dense(model="hash-64", encoder=HashEncoder())
    fresh = sieve.build_index(live, tmp_path / "fresh")
    store.embed(fresh, model="hash-64", encoder=HashEncoder())
    fresh.use_dense(model="hash-64", encoder=HashEncoder())
    for q in ["alpha", "beta OR gamma", "zzzz nothing", str(gen_tree(r, 2))]:
        for ranker in ("dense", "hybrid"):
            a = index.search(q, k=len(live), ranker=ranker)
            b = fresh.search(q, k=len(live), ranker=ranker)
            assert [h.doc_id for h in a.hits] == [h.doc_id for h in b.hits], (q, ranker)
            assert [h.score for h in a.hits] == pytest.approx([h.score for h in b.hits], rel=1e-6), (q, ranker)
            assert {h.doc_id for h in a.hits} <= {rec["id"] for rec in live}


def test_merge_keeps_order_and_answers(tmp_path: Path) -> None:
    r = random.Random(9)
    index, live = many_segments(tmp_path / "ix", r)
    assert len(index.segments) == 7
    out = index.merge(max_segments=3)
    assert out["before"] == 7 and out["after"] == 3 and out["documents"] == len(live)
    merged = index.reopen()
    assert len(merged.segments) == 3
    same_answers(merged, live, r)
    assert main(["merge", str(tmp_path / "ix"), "--json"]) == 0
    one = sieve.open_index(tmp_path / "ix")
    assert len(one.segments) == 1 and one.segments[0].deleted is None and one.stats["deleted"] == 0
    same_answers(one, live, r)
    # Nothing left of the old segments and commits.
    assert sorted(p.name for p in (tmp_path / "ix").iterdir()) == ["CURRENT", one.commit_dir.name, one.segments[0].name]


def test_the_policy_merges_runs_of_one_level(tmp_path: Path) -> None:
    policy = MergePolicy(factor=3, floor=10, max_documents=1000)
    index = sieve.build_index([{"id": "0", "title": "seed"}], tmp_path / "ix")
    for c in range(1, 9):
        with index.writer(policy=policy) as w:
            w.add({"id": str(c), "title": f"doc {c}"})
        index = index.reopen()
        assert len(index.segments) <= 3 + 2  # a run of three equals is merged as soon as it forms
    assert ids_in_order(index) == [str(i) for i in range(9)]
    with pytest.raises(InvalidArgumentError):
        MergePolicy(factor=1)


def test_plan_merges_picks_adjacent_equal_levels_and_heavy_deletions() -> None:
    from sieve.engine.segment.snapshot import CommitEntry

    def entry(n: int, deleted: int = 0) -> CommitEntry:
        bits = None
        if deleted:
            flags = np.zeros(((n + 63) // 64) * 64, dtype=bool)
            flags[:deleted] = True
            bits = np.packbits(flags, bitorder="little").view(np.uint64)
        return CommitEntry("s", Path("."), {"stats": {"documents": n}}, bits)

    p = MergePolicy(factor=3, floor=10, max_documents=10_000)
    assert plan_merges([entry(5000), entry(5), entry(8), entry(3)], p) == [(1, 4)]
    assert plan_merges([entry(5), entry(5), entry(500), entry(5)], p) == []
    assert plan_merges([entry(100, deleted=60), entry(5)], p) == [(0, 1)]
    assert plan_merges([entry(5000), entry(5000), entry(5000)], MergePolicy(factor=3, floor=10, max_documents=10_000)) == []  # too big
    assert plan_merges([entry(3000), entry(3000), entry(3000)], MergePolicy(factor=3, floor=10, max_documents=10_000)) == [(0, 3)]
    assert plan_merges([entry(3000), entry(3000), entry(3000)], MergePolicy(factor=3, floor=10, max_documents=10_000, memory_mb=1)) == []  # tables past half of 1 MB


def test_deleting_everything_leaves_an_empty_index_that_takes_new_documents(tmp_path: Path) -> None:
    index = sieve.build_index([{"id": "a", "title": "alpha"}, {"id": "b", "title": "beta"}], tmp_path / "ix")
    with index.writer() as w:
        w.delete("a")
        w.delete("b")
    empty = index.reopen()
    assert len(empty) == 0 and len(empty.segments) == 1 and empty.search("alpha").hits == []
    with empty.writer() as w:
        w.add({"id": "c", "title": "gamma alpha"})
    assert ids_in_order(empty.reopen()) == ["c"]


def test_cards_and_reads_come_from_the_right_segment(tmp_path: Path) -> None:
    r = random.Random(12)
    index, live = many_segments(tmp_path / "ix", r, commits=3)
    fresh = sieve.build_index(live)
    for q in ["alpha", "beta OR gamma", '"alpha beta"']:
        assert Toolset(index).call("search", {"query": q, "k": 5}).text == Toolset(fresh).call("search", {"query": q, "k": 5}).text
    last = live[-1]["id"]
    assert Toolset(index).call("visit", {"doc": last}).text == Toolset(fresh).call("visit", {"doc": last}).text


def test_ids_of_many_documents_at_once_are_each_ones_id(tmp_path: Path) -> None:
    index, live = many_segments(tmp_path / "ix", random.Random(13), commits=3)
    numbers = index.doc_numbers()
    assert len(index.segments) > 1
    assert index.reader.doc_ids(numbers) == [index.reader.doc_id(g) for g in numbers.tolist()] == ids_in_order(index)
    assert sorted(index.reader.doc_ids(numbers)) == sorted(d["id"] for d in live)
    one = sieve.build_index(live)
    picked = one.doc_numbers()[::-3]  # any order, as ranked hits come
    assert one.reader.doc_ids(picked) == [one.reader.doc_id(g) for g in picked.tolist()]
    assert one.reader.doc_ids(picked[:0]) == []


def test_a_replaced_document_is_found_in_its_new_segment(tmp_path: Path) -> None:
    index = sieve.build_index([{"id": "a", "title": "old title"}, {"id": "b", "title": "bee"}], tmp_path / "ix")
    with index.writer() as w:
        w.add({"id": "a", "title": "new title"})
    now = index.reopen()
    assert now.document("a").title == "new title" and now.match("old").ids == [] and now.match("new").ids == ["a"]
    assert ids_in_order(now) == ["b", "a"]


def test_a_format_2_index_is_read_and_written(tmp_path: Path) -> None:
    """A format 2 index (a gen-N directory holding its own arrays) opens as one segment; the first
    write keeps that directory as a segment of the new commit."""
    docs = [{"id": str(i), "title": f"doc {i} heat"} for i in range(5)]
    root = tmp_path / "old"
    sieve.build_index(docs, root)
    seg = root / "seg-000001"
    gen = root / "gen-000001"
    (gen / storage.MANIFEST).unlink()
    for p in seg.iterdir():
        p.rename(gen / p.name)
    seg.rmdir()
    body = json.loads((gen / storage.MANIFEST).read_text())
    body.pop("checksum")
    body["version"] = 2
    commits.write_manifest(gen, body)
    old = sieve.open_index(root)
    assert ids_in_order(old) == [d["id"] for d in docs] and old.check()
    with old.writer() as w:
        w.delete("2")
        w.add({"id": "9", "title": "nine heat"})
    now = old.reopen()
    assert [s.name for s in now.segments] == ["gen-000001", "seg-000001"]
    assert now.match("heat").ids == ["0", "1", "3", "4", "9"]
    now.check()


def test_damage_to_a_segment_or_its_deletions_is_named(tmp_path: Path) -> None:
    r = random.Random(3)
    index, _ = many_segments(tmp_path / "ix", r, commits=2)
    seg = index.segments[1]
    manifest = seg.reader.dir / storage.MANIFEST
    data = manifest.read_bytes()
    manifest.write_bytes(data.replace(b'"documents"', b'"documentz"', 1))
    with pytest.raises(IndexDamagedError) as info:
        sieve.open_index(tmp_path / "ix")
    assert info.value.file == f"{seg.name}/manifest.json"
    manifest.write_bytes(data)
    dels = index.commit_dir / f"{index.segments[0].name}.del.sva"
    raw = bytearray(dels.read_bytes())
    raw[storage.HEADER_SIZE] ^= 1
    dels.write_bytes(bytes(raw))
    with pytest.raises(IndexDamagedError) as info:
        sieve.open_index(tmp_path / "ix")
    assert info.value.file == dels.name
    assert main(["check", str(tmp_path / "ix")]) == 1


def test_orphans_of_a_killed_commit_are_never_read_and_are_cleaned(tmp_path: Path) -> None:
    index = sieve.build_index([{"id": "a", "title": "alpha"}], tmp_path / "ix")
    # What a writer killed after renaming its segment, before switching CURRENT, leaves behind:
    (tmp_path / "ix" / "seg-000007").mkdir()
    (tmp_path / "ix" / "seg-000007" / "junk").write_text("x")
    (tmp_path / "ix" / ".gen-000009.building-abc").mkdir()
    assert ids_in_order(sieve.open_index(tmp_path / "ix")) == ["a"]
    with index.writer() as w:
        w.add({"id": "b", "title": "beta"})
    names = sorted(p.name for p in (tmp_path / "ix").iterdir())
    assert names == ["CURRENT", "gen-000002", "seg-000001", "seg-000008"]  # never a name an orphan had


def _signature(index: sieve.Index) -> tuple[Any, ...]:
    """What one snapshot answers: its ids, a few admitted sets, BM25's best with their scores."""
    probes = ["alpha", "beta OR gamma", "NOT delta"]
    ranked = tuple((h.doc_id, round(h.score, 9)) for h in index.search("alpha beta gamma", k=5, explain=False).hits)
    return (tuple(ids_in_order(index)), *(tuple(index.match(q).ids) for q in probes), ranked)


def _writes(r: random.Random, live: list[dict[str, Any]], steps: int) -> list[tuple[str, Any, list[dict[str, Any]]]]:
    """A sequence of (operation, argument, live documents after it)."""
    out = []
    n = 1000
    for i in range(steps):
        if i % 4 == 3:
            out.append(("merge", 1 + i % 2, list(live)))
            continue
        adds = [gen_record(r, n + j) for j in range(3)]
        n += 3
        gone = [x["id"] for x in r.sample(live, 2)]
        live = [x for x in live if x["id"] not in gone] + adds
        out.append(("write", (adds, gone), list(live)))
    return out


def test_readers_see_only_committed_snapshots(tmp_path: Path) -> None:
    """A writer process adds, deletes and merges while this process opens and searches the index
    over and over: every answer is the answer of one committed state, never a mixture."""
    import multiprocessing

    r = random.Random(21)
    live = [gen_record(r, i) for i in range(30)]
    plan = _writes(r, live, 12)
    expected = {_signature(sieve.build_index(live))}
    for _, _, state in plan:
        with sieve.build_index(state) as fresh:
            expected.add(_signature(fresh))
    path = tmp_path / "ix"
    sieve.build_index(live, path)

    def writer() -> None:
        for op, arg, _ in plan:
            ix = sieve.open_index(path)
            if op == "merge":
                ix.merge(max_segments=arg)
            else:
                with ix.writer(policy=NEVER) as w:
                    for rec in arg[0]:
                        w.add(rec)
                    for i in arg[1]:
                        w.delete(i)

    child = multiprocessing.get_context("fork").Process(target=writer)
    child.start()
    seen = set()
    held = sieve.open_index(path)  # one reader kept open across every commit
    first = _signature(held)
    try:
        while child.is_alive() or not seen:
            got = _signature(sieve.open_index(path))
            assert got in expected
            seen.add(got)
            assert _signature(held) == first
    finally:
        child.join(60)
    assert child.exitcode == 0
    assert _signature(sieve.open_index(path)) == _signature(sieve.build_index(plan[-1][2]))
    assert len(seen) >= 2  # the reader did see the index change under it


@pytest.mark.parametrize("jobs", [1, 2])
def test_a_build_past_its_memory_budget_writes_several_segments_that_answer_as_one(tmp_path: Path, jobs: int) -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "hardening"))
    from synth import records

    docs = records(2600, seed=4)
    src = tmp_path / "c.jsonl"
    src.write_text("".join(json.dumps(d) + "\n" for d in docs) + "{bad\n")
    split = sieve.build_index(src, tmp_path / "split", segment_bytes=100_000, jobs=jobs, on_error="skip")
    whole = sieve.build_index(docs, tmp_path / "whole")
    assert [s.n for s in split.segments] == [1000, 1000, 600]  # flushed between batches, in corpus order
    assert split.manifest["skipped"] == 1
    assert ids_in_order(split) == [d["id"] for d in docs]
    same_answers(split, docs, random.Random(jobs), queries=12)
    assert whole.stats["documents"] == split.stats["documents"]


def test_a_writer_past_its_budget_stages_segments_and_still_upserts(tmp_path: Path) -> None:
    """A session that adds more than its buffer writes staged segments as it goes; replacing or
    deleting a document already staged, and rolling back, behave as with a buffer."""
    r = random.Random(31)
    live = [gen_record(r, i) for i in range(20)]
    index = sieve.build_index(live, tmp_path / "ix")
    w = index.writer(memory_mb=0, policy=NEVER)  # every add is written out at once
    w.buffer_limit = 1500  # a few documents per staged segment
    n = 100
    for _step in range(40):
        op = r.choice(["add", "add", "replace", "delete"])
        if op == "add" or not live:
            rec = gen_record(r, n)
            n += 1
            assert w.add(rec) is False
            live.append(rec)
        elif op == "replace":
            old = r.choice(live)
            rec = {**gen_record(r, n), "id": old["id"]}
            n += 1
            assert w.add(rec) is True
            live = [x for x in live if x["id"] != old["id"]] + [rec]
        else:
            gone = r.choice(live)
            assert w.delete(gone["id"]) is True
            live = [x for x in live if x["id"] != gone["id"]]
    assert len(w._flushed) >= 3
    staged = [p.name for p in (tmp_path / "ix").iterdir() if p.name.startswith(".seg-")]
    assert staged and sieve.open_index(tmp_path / "ix").stats["documents"] == 20  # staged segments are invisible
    summary = w.commit()
    assert summary.documents == len(live)
    now = index.reopen()
    assert len(now.segments) == 1 + len(w._flushed)
    same_answers(now, live, r)
    # A rolled-back session leaves nothing behind.
    w = now.writer(memory_mb=0)
    w.add(gen_record(r, 999))
    w.rollback()
    assert sorted(p.name for p in (tmp_path / "ix").iterdir()) == sorted(["CURRENT", now.commit_dir.name, *(s.name for s in now.segments)])
    assert ids_in_order(now.reopen()) == [x["id"] for x in live]


def test_live_document_frequencies_both_ways(tmp_path: Path) -> None:
    """df over live documents, by binary search of the few deleted ones in a long list and by a
    scan of a short one, equals a fresh build's."""
    docs = [{"id": str(i), "title": "common" if i % 3 else "rare common", "infobox": {"k": "common"} if i % 7 == 0 else {},
             "text": "word " * (i % 4)} for i in range(400)]
    index = sieve.build_index(docs, tmp_path / "ix")
    gone = {"0", "3", "7", "14", "21", "200", "399"}
    with index.writer() as w:
        for i in gone:
            w.delete(i)
    now = index.reopen()
    fresh = sieve.build_index([d for d in docs if d["id"] not in gone])
    seg = now.segments[0]
    for term in ("common", "rare", "word"):
        tid, ftid = seg.reader.term_id(term), fresh.segments[0].reader.term_id(term)
        assert seg.text_df(tid) == int(fresh.segments[0].reader.text_df[ftid]), term
    seg._df.clear()
    seg.__dict__["deleted_ids"] = np.arange(400)  # as if most were deleted: the scan, same answer for what is live
    assert seg.text_df(seg.reader.term_id("rare")) == int(fresh.segments[0].reader.text_df[fresh.segments[0].reader.term_id("rare")])


def test_segments_whose_numbers_leave_no_gap_still_share_statistics(tmp_path: Path) -> None:
    """Two segments, the first exactly 128 documents (so internal numbers run on without a gap) and
    nothing deleted: still two segments, whose statistics are the collection's."""
    r = random.Random(44)
    live = [gen_record(r, i) for i in range(128)]
    index = sieve.build_index(live, tmp_path / "ix")
    more = [gen_record(r, 200 + i) for i in range(40)]
    with index.writer(policy=NEVER) as w:
        for rec in more:
            w.add(rec)
    now = index.reopen()
    assert [s.n for s in now.segments] == [128, 40] and now.snapshot.capacity == len(now)
    same_answers(now, live + more, r, queries=16)


def _legacy_blocks(seg: Any) -> dict[str, np.ndarray]:
    """Format 5 to 8's position tables of a segment's positions: each full block's 127 differences
    in the narrowest of one, two, four or eight bytes that holds the largest, no exceptions."""
    from sieve.engine.format.positions import BLOCK, ROW_FILES, WIDTHS

    dtype = seg.pos.first.dtype
    first, directory, rows = [], [], [[] for _ in WIDTHS]
    for t in range(len(seg.terms)):
        values = seg.positions(t).astype(np.int64)
        for j in range(len(values) // BLOCK):
            block = values[j * BLOCK : (j + 1) * BLOCK]
            diffs = np.diff(block)
            k = next(i for i, w in enumerate(WIDTHS) if int(diffs.max()) <= np.iinfo(w).max)
            first.append(block[0])
            directory.append(len(rows[k]) << 2 | k)
            rows[k].append(diffs.astype(WIDTHS[k]))
    out = {"pos.first.sva": np.asarray(first, dtype=dtype), "pos.dir.sva": np.asarray(directory, dtype=np.uint32)}
    for name, w, part in zip(ROW_FILES, WIDTHS, rows):
        out[name] = np.asarray(part, dtype=w).reshape(-1, BLOCK - 1)
    return out


def _as_format(root: Path, version: int) -> None:
    """Rewrite the one segment of `root` as format `version` (3 to 7) wrote it: occurrence counts
    a byte each and positions' blocks in whole widths (all); document ids as raw int32 arrays (3 to
    6); no rest postings (3 to 5); positions as one raw array (3, 4); the document store
    uncompressed and no dense rows (3). The commit is rewritten to list the changed segment manifest."""
    from sieve.engine.format import attributes, docids
    from sieve.engine.format.positions import BLOCK_FILES, PACKED_FILES
    from sieve.engine.segment.files import DENSE_FILES, REST_FILES, STORE_FILES
    from sieve.engine.segment.snapshot import manifest_crc

    index = sieve.open_index(root)
    seg = index.segments[0].reader
    streams = {name: stream.read(0, stream.length) for name, stream in (("store.meta.sva", seg._meta), ("store.text.sva", seg._text))}
    positions = np.concatenate([seg.positions(t) for t in range(len(seg.terms))] or [np.zeros(0, np.uint32)])
    dtype = seg.pos.first.dtype
    body = json.loads((seg.dir / storage.MANIFEST).read_text())
    body.pop("checksum")
    n_postings = len(seg.post_doc)
    tf, ttf, masks = seg.tf(0, n_postings), seg.text_tf(0, n_postings), seg.attrs.masks(0, n_postings)
    legacy = _legacy_blocks(seg)
    legacy.update({name: np.array(seg.files[name].whole()) for name in ("pos.blocks.ptr.sva", "pos.tail.sva")})  # as format 9 writes them
    for name in PACKED_FILES + attributes.PACKED_FILES:
        (seg.dir / name).unlink()
        del body["files"][name]
    body["files"]["post.mask.sva"] = storage.write_array(seg.dir / "post.mask.sva", masks, np.uint8)
    for name, c in (("post.tf", tf), ("post.ttf", ttf)):
        big = np.flatnonzero(c >= 255)
        for suffix, arr, dtype in ((".sva", np.minimum(c, 255), np.uint8), (".big.idx.sva", big, np.int64), (".big.val.sva", c[big], np.uint32)):
            body["files"][name + suffix] = storage.write_array(seg.dir / (name + suffix), arr, dtype)
    for name in BLOCK_FILES:
        body["files"][name] = storage.write_array(seg.dir / name, legacy[name])
    for prefix, ids in (("post.doc", seg.post_doc), ("post.rest.doc", seg.rest_doc)) if version < 7 else ():
        raw = np.asarray(ids).astype(np.int32)
        for name in docids.files(prefix):
            (seg.dir / name).unlink()
            del body["files"][name]
        body["files"][prefix + ".sva"] = storage.write_array(seg.dir / (prefix + ".sva"), raw, np.int32)
    gone = (REST_FILES + ("post.rest.doc.sva",) if version < 6 else ()) + (BLOCK_FILES if version < 5 else ()) + (DENSE_FILES + STORE_FILES if version == 3 else ())
    for name in gone:
        (seg.dir / name).unlink()
        del body["files"][name]
    if version < 5:
        body["files"]["pos.data.sva"] = storage.write_array(seg.dir / "pos.data.sva", positions, dtype)
    if version == 3:
        for name, raw in streams.items():
            body["files"][name] = storage.write_array(seg.dir / name, np.frombuffer(raw, dtype=np.uint8))
        body.pop("store_blocks")
    body["version"] = version
    commits.write_manifest(seg.dir, body)
    commit = json.loads((index.commit_dir / storage.MANIFEST).read_text())
    commit.pop("checksum")
    commit["version"] = version
    commit["segments"][0]["manifest_crc32"] = manifest_crc(seg.dir)
    commits.write_manifest(index.commit_dir, commit)


@pytest.mark.parametrize("version", [3, 4, 5, 6, 7])
def test_an_older_segment_is_read_merged_and_written(tmp_path: Path, version: int) -> None:
    """A segment of format 3 (no dense rows, the store uncompressed, raw positions), 4 (raw
    positions), 5 (no rest postings), 6 (raw document ids) or 7 (counts a byte each, positions'
    blocks in whole widths) answers as a fresh build; after a write it sits beside a segment of
    this format, and a merge rewrites it in this format."""
    from sieve.engine.format.docids import SplitIds
    from sieve.engine.format.position_blocks import BlockPositions
    from sieve.engine.format.positions import RawPositions

    r = random.Random(5)
    # "heat" in 40 documents, 3 to 5 times each: more than a block of positions
    docs = [gen_record(r, i) for i in range(60)] + [{"id": f"h{i}", "title": "heat wave", "text": "heat " * (i % 3 + 2)} for i in range(40)]
    root = tmp_path / "old"
    sieve.build_index(docs, root)
    _as_format(root, version)
    old = sieve.open_index(root)
    reader = old.segments[0].reader
    assert isinstance(reader.pos, RawPositions if version < 5 else BlockPositions) and old.check()
    assert (reader.dense is None) == (version == 3) and ("store.text.blocks.sva" in reader.files) == (version > 3) and (reader.rest_ptr is None) == (version < 6)
    assert ("post.doc.sva" in reader.files) == (version < 7) and isinstance(reader.post_doc, SplitIds) == (version == 7)
    assert reader.attrs.packed is None and "post.tf.sva" in reader.files
    assert version < 5 or (reader.pos.exceptions is None and "pos.d1.sva" in reader.files)
    same_answers(old, docs, r, queries=20)
    assert old.match("heat").count == 40 and old.match('"heat wave"').count == 40 and old.match("NEAR/2(heat, wave)").count == 40
    with old.writer(policy=NEVER) as w:
        w.delete("h3")
        w.add({"id": "new", "title": "heat again"})
    now = old.reopen()
    assert len(now.segments) == 2 and now.segments[1].reader.rest_ptr is not None and isinstance(now.segments[1].reader.pos, BlockPositions)
    live = [d for d in docs if d["id"] != "h3"] + [{"id": "new", "title": "heat again"}]
    same_answers(now, live, r, queries=20)
    now.merge()
    merged = now.reopen()
    assert len(merged.segments) == 1 and "store.text.blocks.sva" in merged.segments[0].reader.files
    assert isinstance(merged.segments[0].reader.pos, BlockPositions) and len(merged.segments[0].reader.pos.first) > 0
    assert merged.segments[0].reader.rest_ptr is not None and merged.manifest["version"] == storage.FORMAT_VERSION
    assert isinstance(merged.segments[0].reader.post_doc, SplitIds) and isinstance(merged.segments[0].reader.rest_doc, SplitIds)
    same_answers(merged, live, r, queries=20)
    assert merged.check()
