"""The manifest and the commit protocol: each commit point (a `gen-N` directory) holds a checksummed
`manifest.json`; `CURRENT` names the commit point readers open; `Commit` writes a new one beside
the old and switches `CURRENT` atomically; `WriteLock` keeps writers apart. See
docs/index-format.md.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import re
import shutil
import stat
import tempfile
from pathlib import Path
from typing import Any

from sieve.common import files
from sieve.engine.format.storage import (
    CURRENT,
    CURRENT_MAX_BYTES,
    FORMAT_NAME,
    MANIFEST,
    SUPPORTED_VERSIONS,
    crc32,
    file_problem,
    fsync_dir,
    read_index_file,
)
from sieve.errors import (
    IndexDamagedError,
    IndexExistsError,
    IndexFormatError,
    IndexLockedError,
    IndexNotFoundError,
    IndexPathError,
    SieveError,
)

try:
    import fcntl
except ImportError:  # not POSIX: builds are not locked against each other
    fcntl = None  # type: ignore[assignment]  # None: no locking here

_CURRENT_RE = re.compile(rb"(gen-[0-9]{6,})\n")


def _manifest_crc(body: dict[str, Any]) -> int:
    return crc32(json.dumps(body, sort_keys=True, separators=(",", ":")).encode())


def _manifest_bytes(doc: dict[str, Any]) -> bytes:
    return json.dumps(doc, indent=1, sort_keys=True).encode()


def write_manifest(directory: Path, body: dict[str, Any]) -> None:
    doc = dict(body, checksum=_manifest_crc(body))
    path = directory / MANIFEST
    with open(path, "wb") as fh:
        fh.write(_manifest_bytes(doc))
        fh.flush()
        os.fsync(fh.fileno())


def read_manifest(directory: Path) -> dict[str, Any]:
    raw = read_index_file(directory / MANIFEST, MANIFEST)
    try:
        doc = json.loads(raw)
        if not isinstance(doc, dict):
            raise ValueError
    except (ValueError, UnicodeDecodeError, RecursionError):
        raise IndexDamagedError(MANIFEST, "not valid JSON (damaged or truncated)") from None
    checksum = doc.pop("checksum", None)
    if doc.get("format") != FORMAT_NAME:
        raise IndexDamagedError(MANIFEST, f"format is {doc.get('format')!r}, not {FORMAT_NAME!r}")
    # The checksum comes before the version: every format version computes it the same way, so a
    # damaged version number reads as damage, not as a version mismatch.
    if checksum != _manifest_crc(doc):
        raise IndexDamagedError(MANIFEST, "checksum mismatch (the contents are damaged)")
    version = doc.get("version")
    if not isinstance(version, int):
        raise IndexDamagedError(MANIFEST, f"version {version!r} is not a number")
    if version not in SUPPORTED_VERSIONS:
        raise IndexFormatError(str(directory), version, SUPPORTED_VERSIONS)
    # Byte for byte what write_manifest writes: no change the checksum cannot see (a \u00fc
    # escape written \u00FC, say) goes unnoticed either.
    if _manifest_bytes(dict(doc, checksum=checksum)) != raw:
        raise IndexDamagedError(MANIFEST, "not in the form sieve writes (damaged)")
    return doc


# ---------------------------------------------------------------- commit points


def current_commit(root: Path) -> Path:
    """The commit point's directory (`gen-N`) CURRENT points at."""
    # os.path's tests, which answer False where pathlib's raise (a folder that cannot be searched).
    if not os.path.lexists(root):
        raise IndexNotFoundError(str(root), "no such index directory")
    if not os.path.isdir(root):
        raise IndexNotFoundError(str(root), "not a directory")
    try:
        raw = files.read_regular(root / CURRENT, CURRENT_MAX_BYTES)
    except FileNotFoundError:
        raise IndexNotFoundError(str(root), "not a sieve index (no CURRENT file)") from None
    except OSError as e:
        raise file_problem(CURRENT, e) from None
    # Exactly what _write_current writes, so no damaged byte is let through (not even a newline).
    m = _CURRENT_RE.fullmatch(raw)
    if m is None:
        raise IndexDamagedError(
            CURRENT, f"holds {raw[:40]!r}, not a commit point's name such as 'gen-000001'"
        )
    name = m.group(1).decode("ascii")
    if not os.path.isdir(root / name):
        raise IndexDamagedError(
            CURRENT, f"points at {name!r}, which is not a commit point's directory"
        )
    return root / name


def _commit_number(name: str) -> int:
    try:
        return int(name[4:]) if name.startswith("gen-") else -1
    except ValueError:
        return -1


def _segment_number(name: str) -> int:
    try:
        return int(name[4:]) if name.startswith("seg-") else -1
    except ValueError:
        return -1


class WriteLock:
    """An exclusive lock on an index path, held while a build or an embed writes it.

    `flock` on a hidden file beside the index (`.NAME.lock`), so it covers a fresh build (the target
    does not exist yet) as well as a `--force` one, and the kernel releases it when the holder dies:
    a killed build never leaves the index locked (only, at worst, the stale file, which the next
    writer takes over). The holder removes the file before it lets go; a process that locked the
    file just as it was removed sees that the path no longer names its file and tries again.
    """

    def __init__(self, root: Path) -> None:
        self.root = root
        self.path = root.parent / f".{root.name}.lock"
        self._fd: int | None = None

    def __enter__(self) -> WriteLock:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()

    def acquire(self) -> None:
        if fcntl is None:
            return
        if not self.root.parent.is_dir():
            self.root.parent.mkdir(parents=True, exist_ok=True)
        while True:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = os.pread(fd, 64, 0).decode("ascii", "replace").strip()
                os.close(fd)
                raise IndexLockedError(
                    str(self.root),
                    f"process {holder}" if holder.isdigit() else f"lock file {self.path}",
                ) from None
            try:
                same = os.stat(self.path).st_ino == os.fstat(fd).st_ino
            except FileNotFoundError:
                same = False
            if same:
                break
            os.close(fd)  # locked a file its holder had just removed: take the new one
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        self._fd = fd

    def release(self) -> None:
        if self._fd is not None:
            fd, self._fd = self._fd, None
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.path)
            os.close(fd)  # closing drops the flock


def unwritable(root: Path, e: OSError) -> IndexPathError:
    """The error of an index path the system would not let a build write, saying why in words
    (with the system's errno)."""
    return IndexPathError(str(root), _unwritable_reason(root, e), e.errno)


def _unwritable_reason(root: Path, e: OSError) -> str:
    for part in (root, *root.parents):  # the deepest part of the path that exists
        if os.path.lexists(part):
            break
    try:
        mode = os.stat(part).st_mode
    except OSError:
        mode = 0
    if part != root and mode and not stat.S_ISDIR(mode):
        return f"{part} is {files.kind(mode)}, not a folder"
    if e.errno in (errno.ENOSPC, errno.EDQUOT):  # the system's words kept: people search for them
        return (
            f"{'the disk is full' if e.errno == errno.ENOSPC else 'the disk quota is used up'} "
            f"({e.strerror or os.strerror(e.errno)})"
        )
    if e.errno == errno.EROFS:
        return "the file system is read-only"
    where = Path(e.filename).parent if e.filename else part
    if e.errno in (errno.EACCES, errno.EPERM):
        return f"permission denied in {where}"
    # /proc, /sys: folders that refuse new files
    if e.errno == errno.ENOENT and os.path.isdir(where):
        return f"the system does not let files be created in {where}"
    return f"{(e.strerror or str(e)).lower()}" + (f" ({e.filename})" if e.filename else "")


class Commit:
    """Writes a new commit point (a `gen-N` directory) beside any existing one and switches CURRENT
    to it atomically; new segments are written with it.

    A fresh index is built in a hidden sibling directory renamed into place at the end, so the
    target either does not exist or is complete. Over an existing index, new segments and the new
    `gen-N` directory are written under temporary names, renamed, and CURRENT is replaced with
    `os.replace`: readers see the old complete commit or the new one, never neither (Lucene's
    segments_N idea). Commit points and segments the new commit does not reference are removed after
    the switch (a reader that has them open keeps its memory maps).
    """

    def __init__(
        self, root: str | os.PathLike, force: bool = False, lock: WriteLock | None = None
    ) -> None:
        """`lock`: the index's write lock, already held by the caller (a writer session), who
        releases it; otherwise the commit takes it and lets it go when it commits or aborts.
        `force`: an existing index may be written (replaced by a build, or changed by a writer)."""
        self.root = Path(root)
        self._owns_lock = lock is None
        self.lock = lock if lock is not None else WriteLock(self.root)
        self._segments: list[tuple[Path, str]] = []  # (where it is written, its final name)
        if self._owns_lock:
            try:
                # before looking: a concurrent build would delete this one's stage
                self.lock.acquire()
            except SieveError:
                raise
            except OSError as e:  # /proc/x, a path through a file, a read-only folder
                raise unwritable(self.root, e) from None
        try:
            self._prepare(force)
        except SieveError:  # IndexExistsError and its kin say it better (they are OSErrors too)
            self._release()
            raise
        except OSError as e:
            self._release()
            raise unwritable(self.root, e) from None
        except BaseException:
            self._release()
            raise

    def _release(self) -> None:
        if self._owns_lock:
            self.lock.release()

    def _prepare(self, force: bool) -> None:
        self.fresh = not self.root.exists()
        if not self.fresh:
            if not self.root.is_dir():
                raise IndexNotFoundError(str(self.root), "exists and is not a directory")
            is_index = (self.root / CURRENT).exists()
            if not force:
                what = "an index" if is_index else "a directory"
                raise IndexExistsError(
                    str(self.root),
                    f"already exists ({what}); use --force (force=True) to replace it",
                )
            if not is_index and any(self.root.iterdir()):
                raise IndexExistsError(
                    str(self.root),
                    "exists, is not empty and is not a sieve index; refusing to replace it",
                )
        parent = self.root.parent
        parent.mkdir(parents=True, exist_ok=True)
        if self.fresh:
            self.stage = Path(tempfile.mkdtemp(prefix=f".{self.root.name}.building-", dir=parent))
            self.number = 1
            self._next_segment = 1
            self.commit_dir = self.stage / f"gen-{self.number:06d}"
        else:
            names = [p.name for p in self.root.iterdir()]
            self.number = max([0] + [_commit_number(n) for n in names]) + 1
            # Staged (hidden) and orphaned segments count too: a new one never takes their name.
            self._next_segment = (
                max([0] + [_segment_number(n.lstrip(".").split(".")[0]) for n in names]) + 1
            )
            self.stage = Path(
                tempfile.mkdtemp(prefix=f".gen-{self.number:06d}.building-", dir=self.root)
            )
            self.commit_dir = self.stage
        try:
            self.commit_dir.mkdir(exist_ok=True)
        except BaseException:  # build_index only aborts a Commit it has: do not leak the stage
            self.abort()
            raise

    def new_segment(self) -> tuple[Path, str]:
        """(a directory to write one new segment into, the name the commit will give it)."""
        name = f"seg-{self._next_segment:06d}"
        self._next_segment += 1
        if self.fresh:
            where = self.stage / name
            where.mkdir()
        else:
            where = Path(tempfile.mkdtemp(prefix=f".{name}.building-", dir=self.root))
        self._segments.append((where, name))
        return where, name

    def abort(self) -> None:
        shutil.rmtree(self.stage, ignore_errors=True)
        if not self.fresh:
            for where, _ in self._segments:
                shutil.rmtree(where, ignore_errors=True)
        self._release()

    def commit(self, keep: set[str] | None = None) -> Path:
        """Publish the commit; `keep`: the existing directories (segments) it references, which
        survive the clean-up of everything the new commit does not need."""
        try:
            return self._commit(keep or set())
        except BaseException:
            self.abort()
            raise
        finally:
            self._release()

    def _commit(self, keep: set[str]) -> Path:
        name = f"gen-{self.number:06d}"
        for where, _ in self._segments:
            fsync_dir(where)
        fsync_dir(self.commit_dir)
        if self.fresh:
            _write_current(self.stage, name)
            os.rename(self.stage, self.root)
            fsync_dir(self.root.parent)
            return self.root / name
        new = {seg for _, seg in self._segments}
        for where, seg in self._segments:
            os.rename(where, self.root / seg)
        # in place now: an abort must not remove them (they are unreferenced until CURRENT moves)
        self._segments = []
        fsync_dir(self.root)
        os.rename(self.commit_dir, self.root / name)
        _write_current(self.root, name)
        clean(self.root, keep | new | {name})
        return self.root / name


def clean(root: Path, referenced: set[str]) -> None:
    """Remove what no commit needs: older commit points, segments `referenced` does not name, and
    temporaries of killed writes. Only a writer holding the lock may call this."""
    for p in root.iterdir():
        name = p.name
        ours = _commit_number(name) >= 0 or _segment_number(name) >= 0
        stale = name.startswith((".gen-", ".seg-")) and ".building-" in name
        if p.is_dir() and (stale or (ours and name not in referenced)):
            shutil.rmtree(p, ignore_errors=True)


def _write_current(root: Path, name: str) -> None:
    tmp = root / (CURRENT + ".tmp")
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write(name + "\n")
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, root / CURRENT)
    fsync_dir(root)
