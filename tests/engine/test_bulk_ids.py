"""`match(q).ids` in bulk (sieve.engine.segment.reader `id_table`): past `BULK_IDS` ids a segment
decodes all of its ids once and a match's ids are one gather; the list is the same, in the same
order, as looking each document up alone: one segment or several, sharded, non-ASCII ids."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

import sieve
from sieve.engine.segment.reader import BULK_IDS
from sieve.errors import IndexDamagedError
from sieve.index.merges import MergePolicy

NEVER = MergePolicy(factor=1000, floor=1, max_documents=1, max_deleted=1.0)  # one segment a commit


def records(n: int, start: int = 0) -> list[dict[str, Any]]:
    # Ids of several scripts and lengths, not in sorted order: the id table maps document to rank.
    names = ["zeta", "Ärger", "alpha", "日本", "b", "x" * 40]
    return [{"id": f"{names[i % len(names)]}-{i}", "title": f"doc {i}",
             "text": "common " + ("even" if i % 2 == 0 else "odd") + f" w{i % 7}"}
            for i in range(start, start + n)]


def one_by_one(index: sieve.Index, query: str) -> list[str]:
    snap = index.snapshot
    return [snap.doc_id(int(d)) for d in index.match(query).docs]


def test_many_ids_come_from_the_table_and_equal_lookups_one_by_one(tmp_path: Path) -> None:
    index = sieve.build_index(records(3 * BULK_IDS), tmp_path / "ix")
    reader = index.segments[0].reader
    few = index.match("w3 AND even").ids  # fewer than BULK_IDS: looked up one by one
    assert "id_table" not in reader.__dict__
    many = index.match("common").ids
    assert "id_table" in reader.__dict__ and len(many) == 3 * BULK_IDS
    assert many == one_by_one(index, "common") == [r["id"] for r in records(3 * BULK_IDS)]
    assert all(type(i) is str for i in many)
    assert index.match("w3 AND even").ids == few == one_by_one(index, "w3 AND even")
    assert index.match("nothing").ids == []


def test_ids_of_several_segments_with_replacements_are_in_index_order(tmp_path: Path) -> None:
    index = sieve.build_index(records(BULK_IDS), tmp_path / "ix")
    with index.writer(policy=NEVER) as w:
        for rec in records(BULK_IDS, start=BULK_IDS):
            w.add(rec)
        w.add({**records(1, start=5)[0], "text": "common replaced"})  # a copy in the newer segment
        w.delete(records(1, start=7)[0]["id"])
    index = index.reopen()
    assert len(index.segments) == 2
    for q in ("common", "odd", "replaced OR w2", "NOT even"):
        got = index.match(q).ids
        assert got == one_by_one(index, q), q
    ids = index.match("common").ids
    assert ids[-1] == records(1, start=5)[0]["id"] and records(1, start=7)[0]["id"] not in ids


def test_ids_of_a_sharded_index_follow_the_corpus_order(tmp_path: Path) -> None:
    corpus = records(2 * BULK_IDS)
    index = sieve.build_index(corpus, tmp_path / "four", shards=4)
    assert index.match("common").ids == [r["id"] for r in corpus]
    assert index.match("odd").ids == [r["id"] for r in corpus if "odd" in r["text"]]


def test_an_id_place_out_of_range_is_damage_not_a_wrong_id(tmp_path: Path) -> None:
    index = sieve.build_index(records(BULK_IDS), tmp_path / "ix")
    reader = index.segments[0].reader
    rank = np.array(reader.id_rank)
    rank[3] = -1  # numpy would otherwise read the last id for it
    reader.id_rank = rank
    with pytest.raises(IndexDamagedError):
        _ = index.match("common").ids
