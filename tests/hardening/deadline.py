"""A block of a test that must end in time: a FIFO opened for reading waits for a writer forever,
so a test of one would hang instead of failing. SIGALRM interrupts the blocked call (the main
thread only), and the block fails with `Hung`."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


class Hung(Exception):
    """The block did not end within its seconds (not an AssertionError: code under test may catch those)."""


@contextmanager
def within(seconds: int, what: str = "the call") -> Iterator[None]:
    """Run the block, or raise Hung if it takes longer than `seconds` (whole seconds, at least 1)."""

    def _alarm(*_: Any) -> None:
        raise Hung(f"{what} did not end within {seconds} s (a hang)")

    previous = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
