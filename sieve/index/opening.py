"""Opening an index folder: its path checked (`as_path`) and the commit point CURRENT names,
opened as a snapshot of its segments (`open_current`), what `Index` and merges both read; every
byte of an opened index verified (`verify_open`); and the guards around the Index's calls: damage
found when a call fails is reported as damage (`damage_guard`), and work deferred past a call (a
hit's matched fields) runs under the index's guards through a weak reference (`later_of`)."""

from __future__ import annotations

import functools
import os
import weakref
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

from sieve.engine.format import commits, storage
from sieve.engine.segment.snapshot import Snapshot
from sieve.errors import IndexDamagedError, InvalidArgumentError, SieveError


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


def verify_open(
    index_path: Path, commit_dir: Path, manifest: dict[str, Any], snapshot: Snapshot, retired: bool
) -> list[str]:
    """`Index.check`: every byte of every file of an opened index and the values opening leaves to
    first use; the names checked, or IndexDamagedError. A retired index (its commit replaced and
    removed) verifies the files it still has open."""
    snap = snapshot
    if retired and not commit_dir.is_dir():
        names = []
        for seg in snap.segments:
            for name in seg.reader.files:
                seg.reader.files[name].verify(seg.reader.manifest["files"][name]["crc32"])
                names.append(name if len(snap.segments) == 1 else f"{seg.name}/{name}")
            seg.reader.check_values()
        return names
    commits.current_commit(index_path)
    if commits.read_manifest(commit_dir) != manifest:
        raise IndexDamagedError(storage.MANIFEST, "changed since the index was opened")
    for seg in snap.segments:
        if commits.read_manifest(seg.reader.dir) != seg.reader.manifest:
            raise IndexDamagedError(
                f"{seg.name}/{storage.MANIFEST}", "changed since the index was opened"
            )
    names = []
    for path, name, entry in snap.files():
        storage.verify_array(path, name, entry)
        names.append(name)
    for seg in snap.segments:
        seg.reader.check_values()
    from sieve.dense.layout import verify_embeddings

    return names + verify_embeddings(index_path)


class Guarded(Protocol):
    """The Index as these guards see it."""

    def check(self) -> list[str]: ...

    def _later(self, work: Callable[[], Any]) -> Any: ...


def damage_guard(method: Callable[..., Any]) -> Callable[..., Any]:
    """Open verifies only the small files, so reading a damaged large payload can trip numpy (an
    index out of range, an unreadable record) before any checksum does. Then verify the index:
    damage found is raised as IndexDamagedError naming the file; none found means a real bug, and
    the original exception propagates unchanged (docs/index-format.md, "Integrity")."""

    @functools.wraps(method)
    def guarded(self: Guarded, *args: Any, **kwargs: Any) -> Any:
        try:
            return method(self, *args, **kwargs)
        except SieveError:
            raise
        except Exception as exc:
            try:
                self.check()
            except IndexDamagedError as damaged:
                raise damaged from exc
            raise

    return guarded


def later_of(index: Guarded) -> Callable[[Callable[[], Any]], Any]:
    """`index._later` through a weak reference (the searcher it is given to is the index's own;
    sieve.engine.format.weak says why no cycle); once the index is gone, the work runs as it is."""
    ref = weakref.ref(index)

    def later(work: Callable[[], Any]) -> Any:
        ix = ref()
        return work() if ix is None else ix._later(work)

    return later
