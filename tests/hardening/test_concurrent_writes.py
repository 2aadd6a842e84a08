"""Writers and readers at once: opens during `--force` rebuilds see the old or the new index, old
readers keep verifying, a second writer is told the index is locked, and embeddings are sealed
atomically (docs/index-format.md, "Commit protocol" and "Embeddings")."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import numpy as np
import pytest

import sieve
from sieve.index.build import build
from sieve.cli.main import main
from sieve.engine.format import commits, storage
from sieve.engine.segment.files import WRITTEN
from sieve.errors import IndexDamagedError, IndexLockedError

from .synth import HashEncoder, records

SMALL = records(40, seed=5)
LARGE = records(90, seed=6)


def test_a_second_writer_is_told_the_index_is_locked(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "idx"
    sieve.build_index(SMALL, target)
    holder = commits.Commit(target, force=True)  # a build in progress
    try:
        with pytest.raises(IndexLockedError) as info:
            sieve.build_index(LARGE, target, force=True)
        assert str(info.value) == f"{target} is locked: another build, embed or writer is writing it (process {os.getpid()}); wait for it to finish"
        corpus = tmp_path / "c.jsonl"
        corpus.write_text("".join(json.dumps(r) + "\n" for r in LARGE))
        assert main(["index", str(corpus), str(target), "--force"]) == 1
        err = capsys.readouterr().err
        assert "is locked: another build, embed or writer is writing it" in err and "Traceback" not in err
        # The holder's stage is untouched by the refused writer, and its commit still lands.
        build(LARGE, holder.commit_dir)
        holder.commit()
    except BaseException:
        holder.abort()
        raise
    assert len(sieve.open_index(target)) == len(LARGE)
    sieve.build_index(SMALL, target, force=True)  # released: the next writer gets in
    assert len(sieve.open_index(target)) == len(SMALL)


def test_a_fresh_target_is_locked_too(tmp_path: Path) -> None:
    target = tmp_path / "new"
    holder = commits.Commit(target)
    try:
        with pytest.raises(IndexLockedError):
            sieve.build_index(SMALL, target)
    finally:
        holder.abort()
    assert not target.exists()
    sieve.build_index(SMALL, target)  # abort released the lock
    assert len(sieve.open_index(target)) == len(SMALL)


def test_opens_during_rebuilds_see_the_old_or_the_new_index(tmp_path: Path) -> None:
    """One thread rebuilds with --force (alternating two corpora) while another opens, matches and
    checks the index as fast as it can: every open succeeds with one of the two sizes."""
    target = tmp_path / "idx"
    want = {len(LARGE): sieve.build_index(LARGE, tmp_path / "large").match("heatwave OR open").count}
    want[len(SMALL)] = sieve.build_index(SMALL, target).match("heatwave OR open").count
    stop = threading.Event()
    failures: list[str] = []
    sizes: set[int] = set()

    def writer() -> None:
        try:
            for i in range(16):
                sieve.build_index(LARGE if i % 2 == 0 else SMALL, target, force=True, jobs=1)
        finally:
            stop.set()

    opens = 0
    thread = threading.Thread(target=writer)
    thread.start()
    try:
        while not stop.is_set() or opens == 0:
            try:
                index = sieve.open_index(target)
                n = len(index)
                sizes.add(n)
                if n not in want or index.match("heatwave OR open").count != want[n]:
                    failures.append(f"saw {n} documents")
                opens += 1
            except Exception as e:  # noqa: BLE001 - every failure is recorded, none is allowed
                failures.append(f"{type(e).__name__}: {e}")
    finally:
        thread.join()
    assert failures == [], failures[:5]
    assert opens > 16 and sizes == {len(SMALL), len(LARGE)}, (opens, sizes)


def test_an_index_opened_before_a_rebuild_keeps_answering_and_verifying(tmp_path: Path) -> None:
    target = tmp_path / "idx"
    old = sieve.build_index(SMALL, target)
    want = [h.doc_id for h in old.search("heatwave", k=10).hits]
    assert not old.retired
    sieve.build_index(LARGE, target, force=True)
    sieve.build_index(LARGE, target, force=True)  # the old commit point's directory is gone
    assert old.retired and not old.commit_dir.exists()
    assert old.check() == list(WRITTEN)
    assert [h.doc_id for h in old.search("heatwave", k=10).hits] == want
    assert len(sieve.open_index(target)) == len(LARGE)


# ------------------------------------------------------------------ embeddings




class Killed(BaseException):
    """Stands for SIGKILL: nothing after it runs, no cleanup code catches it."""


def _dense_ok(target: Path) -> list[str]:
    index = sieve.open_index(target)
    index.use_dense(model="hash-32", encoder=HashEncoder(32))
    index.check()
    return [h.doc_id for h in index.search("heatwave", k=5, ranker="dense").hits]


@pytest.mark.parametrize("when", ["vectors", "graph", "meta"])
def test_embed_killed_while_sealing_is_repaired_by_the_next_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, when: str) -> None:
    pytest.importorskip("hnswlib", reason="embeddings need the dense extra")
    from sieve.dense import embedding, store

    target = tmp_path / "idx"
    index = sieve.build_index(SMALL, target)
    store.embed(index, model="hash-32", encoder=HashEncoder(32))
    want = _dense_ok(target)
    real_write, real_graph, real_json = storage.write_array, embedding._build_hnsw, embedding.write_json

    def half_array(path: Path, data: object, dtype: object = None) -> dict[str, int]:
        entry = real_write(path, data, dtype)
        with open(path, "r+b") as fh:
            fh.truncate(entry["size"] // 2)
        raise Killed

    def half_graph(vectors: np.ndarray, path: Path) -> None:
        real_graph(vectors, path)
        with open(path, "r+b") as fh:
            fh.truncate(path.stat().st_size // 2)
        raise Killed

    def no_meta(path: Path, obj: dict) -> None:
        if path.name == "meta.json":
            raise Killed
        real_json(path, obj)

    with monkeypatch.context() as m:
        if when == "vectors":
            m.setattr(storage, "write_array", half_array)
        elif when == "graph":
            m.setattr("sieve.dense.embedding._build_hnsw", half_graph)
        else:
            m.setattr("sieve.dense.embedding.write_json", no_meta)
        with pytest.raises(Killed):
            store.embed(sieve.open_index(target), model="hash-32", encoder=HashEncoder(32), force=True)
    # Never "ready" while incomplete: ranking says so instead of reading damaged vectors ...
    with pytest.raises(sieve.SieveError):
        _dense_ok(target)
    # ... and a plain run (no --force) finishes the job.
    store.embed(sieve.open_index(target), model="hash-32", encoder=HashEncoder(32))
    assert _dense_ok(target) == want


def test_embed_recomputes_damaged_finished_embeddings(tmp_path: Path) -> None:
    pytest.importorskip("hnswlib", reason="embeddings need the dense extra")
    from sieve.dense import store

    target = tmp_path / "idx"
    out = store.embed(sieve.build_index(SMALL, target), model="hash-32", encoder=HashEncoder(32))
    want = _dense_ok(target)
    vectors = out / "vectors.sva"
    data = bytearray(vectors.read_bytes())
    data[storage.HEADER_SIZE + 7] ^= 0x10
    vectors.write_bytes(bytes(data))
    with pytest.raises(IndexDamagedError):
        sieve.open_index(target).check()
    store.embed(sieve.open_index(target), model="hash-32", encoder=HashEncoder(32))
    assert _dense_ok(target) == want


def test_embed_holds_the_write_lock(tmp_path: Path) -> None:
    pytest.importorskip("hnswlib", reason="embeddings need the dense extra")
    from sieve.dense import store

    target = tmp_path / "idx"
    index = sieve.build_index(SMALL, target)
    with commits.WriteLock(target):
        with pytest.raises(IndexLockedError):
            store.embed(index, model="hash-32", encoder=HashEncoder(32))
    store.embed(index, model="hash-32", encoder=HashEncoder(32))
