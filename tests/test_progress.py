"""Progress: a bar on a terminal, plain lines in a log, nothing when quiet."""

from __future__ import annotations

import io

import pytest

from sieve import progress


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
