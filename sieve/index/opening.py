"""Opening an index folder: its path checked (`as_path`) and the commit point CURRENT names,
opened as a snapshot of its segments (`open_current`), what `Index` and merges both read."""

from __future__ import annotations

import os
from pathlib import Path

from sieve.engine.format import commits
from sieve.engine.segment.snapshot import Snapshot
from sieve.errors import IndexDamagedError, InvalidArgumentError


def as_path(value: object, what: str) -> Path:
    if not isinstance(value, (str, os.PathLike)):
        raise InvalidArgumentError(
            f"{what} must be a path (a string or os.PathLike), got {type(value).__name__}"
        )
    return Path(value)


def open_current(path: Path, verify: bool) -> tuple[Path, Snapshot]:
    """The commit point CURRENT names, opened. A `--force` build may switch CURRENT and remove the
    old commit point while this runs; then its files vanish under us, and the new one is opened.
    Damage that stays put (the same error twice, or files missing from the current commit point)
    is raised."""
    last: IndexDamagedError | None = None
    for _ in range(8):
        try:
            gen = commits.current_commit(path)
        except IndexDamagedError as e:
            if last is not None and str(e) == str(last):
                raise
            last = e
            continue
        try:
            return gen, Snapshot(path, gen, verify=verify)
        except IndexDamagedError as e:
            try:
                again = commits.current_commit(path)
            except IndexDamagedError:
                again = None
            if again == gen and gen.is_dir():
                raise
            last = e
    assert last is not None
    raise last
