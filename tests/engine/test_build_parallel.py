"""The parallel build (worker processes) gives the same index, and the same errors, as the local one."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import sieve
import sieve.index.build
from sieve.corpus.formats import CorpusReport
from sieve.engine.format import commits
from sieve.errors import CorpusError


@pytest.fixture(autouse=True)
def small_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("sieve.index.batches.PARALLEL_MIN_BYTES", 0)
    monkeypatch.setattr("sieve.index.batches.BATCH_DOCS", 7)  # many chunks, so duplicates straddle them


def corpus(path: Path, extra: list[str] = ()) -> Path:  # type: ignore[assignment]
    lines = [
        json.dumps({"id": f"d{i}", "title": f"Doc {i} Zürich", "sections": [{"heading": "H", "text": f"word{i % 5} common text {i}"}], "date": f"{2000 + i % 20}"})
        for i in range(60)
    ]
    lines[10:10] = list(extra)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def files(index: sieve.Index) -> dict[str, bytes]:
    return {name: path.read_bytes() for path, name, _ in index.snapshot.files()}


def test_parallel_and_local_builds_are_byte_identical(tmp_path: Path) -> None:
    src = corpus(tmp_path / "c.jsonl")
    a = sieve.build_index(src, tmp_path / "a", jobs=2)
    b = sieve.build_index(src, tmp_path / "b", jobs=1)
    records = [json.loads(line) for line in src.read_text(encoding="utf-8").splitlines()]
    c = sieve.build_index(records, tmp_path / "c")  # record by record (read_documents), not in pieces of lines
    assert files(a) == files(b) == files(c)
    assert a.match("common AND date[2005..2010]").ids == b.match("common AND date[2005..2010]").ids


def test_parallel_errors_name_the_first_bad_line(tmp_path: Path) -> None:
    src = corpus(tmp_path / "c.jsonl", ['{"id": "d3"}', "{broken"])
    with pytest.raises(CorpusError) as info:
        sieve.build_index(src, tmp_path / "idx", jobs=2)
    assert str(info.value) == f"{src}:11: duplicate id 'd3' (first seen at line 4)"
    assert not (tmp_path / "idx").exists()


def test_a_kept_error_keeps_no_worker_alive(tmp_path: Path) -> None:
    """A caller that keeps a build's error keeps its traceback, and so the build's frames: the
    workers' pool must be closed by then, not left to multiprocessing's terminate at exit (which
    can deadlock on the task queue's lock: a test run hung there)."""
    import multiprocessing

    src = corpus(tmp_path / "c.jsonl", ['{"id": "d3"}'])
    with pytest.raises(CorpusError) as info:
        sieve.build_index(src, tmp_path / "idx", jobs=2)
    assert info.value.line == 11 and info.traceback  # the frames are still held
    assert multiprocessing.active_children() == []

    def stop(documents: int, size: int) -> None:  # the consumer fails, not the corpus
        raise RuntimeError("stop")

    with pytest.raises(RuntimeError) as stopped:
        sieve.build_index(corpus(tmp_path / "d.jsonl"), tmp_path / "idx", jobs=2, progress=stop)
    assert stopped.traceback and multiprocessing.active_children() == []


def test_parallel_skip_matches_local_skip(tmp_path: Path) -> None:
    src = corpus(tmp_path / "c.jsonl", ['{"id": "d3"}', "{broken", '{"id": "x", "date": "soon"}', '{"id": "d50"}'])
    reports = []
    for jobs, name in ((2, "p"), (1, "l")):
        report = CorpusReport()
        sieve.build_index(src, tmp_path / name, jobs=jobs, on_error="skip", report=report)
        reports.append(report)
    assert reports[0].errors == reports[1].errors
    assert reports[0].skipped == reports[1].skipped == 4  # d3 again, bad JSON, bad date, and d50 seen later at its own line
    assert files(sieve.open_index(tmp_path / "p")) == files(sieve.open_index(tmp_path / "l"))
    assert commits.read_manifest(sieve.open_index(tmp_path / "p").commit_dir)["skipped"] == 4


def test_workers_reading_their_own_pieces_see_what_the_local_build_sees(tmp_path: Path) -> None:
    """A byte-order mark, blank lines, a line that is not UTF-8, a raw \\r inside a record and no
    final newline: the same skips, errors and files with workers as without."""
    src = corpus(tmp_path / "c.jsonl")
    lines = src.read_bytes().split(b"\n")
    lines[3:3] = [b"", b"   ", b'{"id": "bad\xff"}', b'{"id": "cr", "title": "a\rb"}']
    src.write_bytes(b"\xef\xbb\xbf" + b"\n".join(lines).rstrip(b"\n"))
    reports = []
    for jobs, name in ((2, "p"), (1, "l")):
        report = CorpusReport()
        sieve.build_index(src, tmp_path / name, jobs=jobs, on_error="skip", report=report)
        reports.append(report)
    assert reports[0].errors == reports[1].errors and reports[0].skipped == 1
    assert "c.jsonl:6: not UTF-8 text" in reports[0].errors[0]
    assert files(sieve.open_index(tmp_path / "p")) == files(sieve.open_index(tmp_path / "l"))
    assert sieve.open_index(tmp_path / "p").match('"a b"[title]').ids == ["cr"]
