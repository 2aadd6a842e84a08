"""A per-call time budget the engine checks at its loop points, so an abandoned call really stops.

The caller sets it for the code it runs (`with within(seconds): ...`, a context variable, so each
thread and task has its own); `check()` raises `DeadlineExceededError` once it has passed. Checks
sit where work is repeated (each plan node, each ranked hit's explanation, each card), a few
hundred nanoseconds each; no deadline set means no check ever fails.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from sieve.errors import DeadlineExceededError

_deadline: ContextVar[tuple[float, float] | None] = ContextVar("sieve_deadline", default=None)


@contextmanager
def within(seconds: float | None) -> Iterator[None]:
    """Run the body under a budget of `seconds` (nested budgets: the earlier end wins; None adds
    none, and an outer budget still holds)."""
    if seconds is None:
        yield
        return
    end = time.monotonic() + seconds
    outer = _deadline.get()
    token = _deadline.set((end, seconds) if outer is None or end < outer[0] else outer)
    try:
        yield
    finally:
        _deadline.reset(token)


def check() -> None:
    """Raise DeadlineExceededError if the current budget has run out."""
    d = _deadline.get()
    if d is not None and time.monotonic() > d[0]:
        raise DeadlineExceededError(d[1])
