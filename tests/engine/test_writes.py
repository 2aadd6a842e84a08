"""Changing an index (sieve.index.writes): after any sequence of adds, replacements and deletes, the index
answers exactly as a fresh build of its live documents in the defined order (upserts at the end:
the property test over random writes and merges is in test_segments.py); one writer at a time; a
failed commit leaves the last state; readers keep their snapshot."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

import sieve
from sieve.cli.main import main
from sieve.engine.format import storage
from sieve.errors import DuplicateIdError, IndexLockedError, InvalidArgumentError


@pytest.fixture()
def index(tmp_path: Path) -> sieve.Index:
    return sieve.build_index([{"id": str(i), "title": f"doc {i}", "text": f"word{i} common"} for i in range(5)], tmp_path / "ix")


def test_summary_and_snapshots(index: sieve.Index) -> None:
    with index.writer() as w:
        w.add({"id": "new", "title": "new", "text": "common fresh"})
        w.add({"id": "1", "title": "one again", "text": "common"})
        w.add({"id": "new", "title": "newer", "text": "common fresher"})  # twice in one session: the last wins
        w.delete("2")
        w.delete("nope")
    assert w.summary.to_dict() == {"added": 1, "replaced": 1, "deleted": 1, "not_found": ["nope"], "skipped": 0, "kept": 0, "documents": 5,
                                   "generation": "gen-000002", "segments": 2}
    assert index.match("common").count == 5 and index.retired  # the old snapshot still answers
    now = index.reopen()
    assert now.match("common").ids == ["0", "3", "4", "1", "new"] and now.document("new").title == "newer"
    assert now.reopen() is now
    with now.writer() as w:
        pass  # nothing changed: no new commit point
    assert w.summary.generation == "gen-000002" and not now.retired


def test_one_writer_at_a_time_and_no_reuse(index: sieve.Index) -> None:
    w = index.writer()
    with pytest.raises(IndexLockedError, match="another build, embed or writer"):
        index.writer()
    w.rollback()
    assert len(index.reopen()) == 5
    strict = index.writer(replace=False)
    with pytest.raises(DuplicateIdError, match="'3' is already in the index"):
        strict.add({"id": "3", "title": "x"})
    strict.commit()
    with pytest.raises(InvalidArgumentError, match="has committed or rolled back"):
        strict.add({"id": "9", "title": "x"})


def test_a_failed_commit_leaves_the_last_state(index: sieve.Index, monkeypatch: pytest.MonkeyPatch) -> None:
    before = sorted(p.name for p in index.path.iterdir())
    w = index.writer()
    w.add({"id": "x", "title": "x", "text": "common"})
    calls = {"n": 0}
    real = storage.write_array

    def failing(*args: Any, **kwargs: Any) -> Any:  # the disk goes while the new segment is written
        calls["n"] += 1
        if calls["n"] == 3:
            raise OSError("disk gone")
        return real(*args, **kwargs)

    monkeypatch.setattr(storage, "write_array", failing)
    with pytest.raises(OSError, match="disk gone"):
        w.commit()
    monkeypatch.undo()
    assert sorted(p.name for p in index.path.iterdir()) == before  # no stage, no new commit point
    again = sieve.open_index(index.path)
    assert again.match("common").count == 5 and not again.retired
    with again.writer() as w2:  # the lock was released
        w2.delete("0")
    assert len(again.reopen()) == 4


def test_an_exception_in_the_block_rolls_back(index: sieve.Index) -> None:
    with pytest.raises(RuntimeError):
        with index.writer() as w:
            w.delete("0")
            raise RuntimeError("changed my mind")
    assert not index.retired and len(index.reopen()) == 5


def test_a_killed_writer_leaves_no_lock(index: sieve.Index) -> None:
    code = f"import sieve, time; w = sieve.open_index({str(index.path)!r}).writer(); print('locked', flush=True); time.sleep(60)"
    p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    assert p.stdout is not None and p.stdout.readline().strip() == "locked"
    with pytest.raises(IndexLockedError, match=f"process {p.pid}"):
        index.writer()
    os.kill(p.pid, signal.SIGKILL)
    p.wait()
    deadline = time.time() + 5
    while True:
        try:
            w = index.writer()
            break
        except IndexLockedError:
            assert time.time() < deadline
            time.sleep(0.05)
    w.delete("4")
    assert w.commit().documents == 4


def test_cli_add_and_delete(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    corpus = tmp_path / "a.jsonl"
    corpus.write_text("\n".join(json.dumps({"id": f"a{i}", "title": f"alpha {i}"}) for i in range(3)) + "\n")
    ix = str(tmp_path / "ix")
    assert main(["add", ix, str(corpus)]) == 0  # into nothing: a build
    assert capsys.readouterr().out == f"added 3 and replaced 0 documents; {ix} now holds 3\n"
    more = tmp_path / "b.jsonl"
    more.write_text(json.dumps({"id": "a1", "title": "alpha one"}) + "\n" + json.dumps({"id": "b1", "title": "beta"}) + "\n{bad\n")
    assert main(["add", ix, str(more), "--skip-bad", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) | {"generation": ""} == {"added": 1, "replaced": 1, "deleted": 0, "not_found": [], "skipped": 1,
                                                                         "kept": 0, "documents": 4, "generation": "", "segments": 2,
                                                                         # a folder's files passed over (none: this is a JSONL file)
                                                                         "unread": {"links": 0, "oversized": 0, "special": 0, "unreadable": 0}, "unread_files": []}
    assert main(["add", ix, str(more), "--no-replace"]) == 1
    assert "sieve: " in capsys.readouterr().err
    ids = tmp_path / "ids.txt"
    ids.write_text("a0\nzzz\n")
    assert main(["delete", ix, "a2", "--ids-file", str(ids)]) == 0
    assert capsys.readouterr().out == f"deleted 2 documents; {ix} now holds 2\n  1 id was not in the index: 'zzz'\n"
    after = sieve.open_index(ix)
    assert [after.reader.doc_id(d) for d in after.doc_numbers().tolist()] == ["a1", "b1"]
    assert main(["delete", ix]) == 1
