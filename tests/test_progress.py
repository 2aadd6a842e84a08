"""Progress: a bar on a terminal, plain lines in a log, nothing when quiet."""

from __future__ import annotations

import gzip
import io
import itertools
from pathlib import Path

import pytest

from sieve.common import progress
from sieve.corpus.formats import count_records


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_log_gets_plain_lines(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(progress, "PLAIN_EVERY", 0.0)
    log = io.StringIO()
    p = progress.Progress("indexing", "docs", total=3, stream=log)
    p.note("accuracy 0.5")
    p.update(2)
    p.close()
    lines = log.getvalue().splitlines()
    assert lines[0].startswith("indexing: 2 of 3 docs (") and lines[0].endswith(", accuracy 0.5)")
    assert "\r" not in log.getvalue()


def test_a_short_run_in_a_log_prints_nothing() -> None:
    log = io.StringIO()
    p = progress.Progress("indexing", "docs", stream=log)
    p.update(5)
    p.close()
    assert log.getvalue() == ""  # PLAIN_EVERY (30 s) never passed: the command's summary says it all


def test_quiet_and_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(progress, "PLAIN_EVERY", 0.0)
    quiet = Terminal()
    p = progress.Progress("x", "docs", quiet=True, stream=quiet)
    p.update(3)
    p.close()
    assert quiet.getvalue() == ""
    tty = Terminal()
    p = progress.Progress("embedding", "docs", total=10, stream=tty)
    p.set_total(20)
    p.update(4)
    p.close()
    assert "embedding" in tty.getvalue() and "/20" in tty.getvalue() and "\r" in tty.getvalue()


def test_a_total_gives_an_eta_and_a_short_count_ends_the_bar(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(progress, "PLAIN_EVERY", 0.0)
    clock = itertools.chain([0.0], itertools.repeat(10.0))
    monkeypatch.setattr(progress.time, "monotonic", lambda: next(clock))
    log = io.StringIO()
    p = progress.Progress("indexing", "docs", total=3_000, stream=log)
    p.update(1_000)  # 1,000 in 10 s: 2,000 more take 20 s
    assert log.getvalue().splitlines()[0] == "indexing: 1,000 of 3,000 docs (100/s, about 20 s left)"
    assert progress._duration(5_399) == "90 min" and progress._duration(5_401 * 2) == "3.0 h"
    tty = Terminal()
    p = progress.Progress("indexing", "docs", total=10, stream=tty)
    p.update(7)  # the estimate was high (blank lines, skipped records): the bar ends at what was done
    p.close()
    assert "7/7" in tty.getvalue().splitlines()[-1].split("\r")[-1]


def test_records_are_counted_cheaply_for_a_total(tmp_path: Path) -> None:
    jsonl = tmp_path / "c.jsonl"
    jsonl.write_text('{"id": "a", "text": "x"}\n{"id": "b", "text": "y"}\n{"id": "c", "text": "z"}')  # no final newline
    assert count_records(jsonl) == 3
    jsonl.write_text('{"id": "a", "text": "x"}\n')
    assert count_records(jsonl) == 1
    beir = tmp_path / "beir"
    beir.mkdir()
    (beir / "corpus.jsonl").write_text('{"_id": "a", "text": "x"}\n' * 4)
    assert count_records(beir) == 4
    gz = tmp_path / "c.jsonl.gz"
    with gzip.open(gz, "wt") as fh:
        fh.write('{"id": "a", "text": "x"}\n')
    assert count_records(gz) is None and count_records([{"id": "a"}]) is None and count_records(tmp_path / "missing.jsonl") is None
    docs = tmp_path / "docs"
    (docs / "sub").mkdir(parents=True)
    (docs / "a.md").write_text("# A\n\ntext\n")
    (docs / "sub" / "b.txt").write_text("text\n")
    assert count_records(docs) == 2
