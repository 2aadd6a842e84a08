"""Opening files that may not be what their names promise: only regular files are opened, an open
never blocks, and a read stops at a bound.

A name in a corpus folder, an index directory or on the command line may be a FIFO (an open for
reading waits for a writer forever), a device (`/dev/zero` never ends), a directory, or a symbolic
link to any of them. Each is refused by its `stat` before it is opened, and the open itself is
non-blocking and judged again by `fstat` of what was opened, so a file swapped in between the
two is refused too, never waited on.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path
from typing import BinaryIO

from sieve.errors import InvalidArgumentError

_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISLNK, "a symbolic link"),
)


def kind(mode: int) -> str:
    """What a file of this `st_mode` is, in words ("a regular file", "a FIFO (named pipe)", ...)."""
    return next(
        (name for test, name in _KINDS if test(mode)),
        "a regular file" if stat.S_ISREG(mode) else "not a regular file",
    )


class NotRegularFileError(OSError):
    """A path that names something other than a regular file; `what` says what (see `kind`)."""

    def __init__(self, path: str | os.PathLike, what: str) -> None:
        super().__init__(errno.EINVAL, f"is {what}, not a regular file", str(path))
        self.what = what


class FileTooLargeError(OSError):
    """A regular file larger than the bound its reader allows."""

    def __init__(self, path: str | os.PathLike, limit: int) -> None:
        super().__init__(errno.EFBIG, f"is larger than {limit:,} bytes", str(path))
        self.limit = limit


class OutsideError(OSError):
    """A file reached through a symbolic link out of the folder it must be in (a folder on its way
    was replaced by a link since it was looked at)."""

    def __init__(self, path: str | os.PathLike, folder: str) -> None:
        super().__init__(
            errno.ELOOP,
            (
                f"is reached through a symbolic link out of {folder} (a folder on its way was "
                "replaced)"
            ),
            str(path),
        )


def inside(path: str, folder: str) -> bool:
    """Whether `path` is `folder` or lies under it (both real paths)."""
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def _opened_path(fd: int) -> str | None:
    """Where an open file really is, as the kernel resolved it (Linux's /proc; None elsewhere)."""
    try:
        return os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return None


def reason(e: OSError) -> str:
    """Why a path could not be read, in words, without the path ("is a FIFO (named pipe), not a
    regular file", "does not exist", "permission denied")."""
    if isinstance(e, (NotRegularFileError, FileTooLargeError, OutsideError)):
        return str(e.strerror)
    if isinstance(e, (FileNotFoundError, NotADirectoryError)):
        return "does not exist"
    if isinstance(e, PermissionError):
        return "cannot be read (permission denied)"
    if e.errno == errno.ELOOP:
        return "is a symbolic link, not a regular file"
    return f"cannot be read ({e.strerror or e})"


def open_regular(
    path: str | os.PathLike,
    follow_links: bool = True,
    same_as: os.stat_result | None = None,
    within: str | None = None,
) -> int:
    """A file descriptor of `path` opened for reading, if it is a regular file (OSError otherwise:
    NotRegularFileError for anything else, which is never opened). `follow_links=False` refuses
    a symbolic link as the last part of the path. `same_as`: the file must still be the one this
    earlier `stat` saw (a walk's), not one put in its place since. `within`: the real path of a
    folder the opened file must be in (OutsideError otherwise), however the path was resolved."""
    st = os.stat(path, follow_symlinks=follow_links) if same_as is None else same_as
    if not stat.S_ISREG(st.st_mode):
        raise NotRegularFileError(path, kind(st.st_mode))
    flags = (
        os.O_RDONLY
        | os.O_NONBLOCK
        | getattr(os, "O_CLOEXEC", 0)
        | (0 if follow_links else getattr(os, "O_NOFOLLOW", 0))
    )
    fd = os.open(path, flags)
    try:
        now = os.fstat(fd)
        if not stat.S_ISREG(now.st_mode):
            raise NotRegularFileError(path, kind(now.st_mode))
        if (now.st_dev, now.st_ino) != (st.st_dev, st.st_ino):
            raise NotRegularFileError(
                path, "another file than the one looked at (it was replaced while being opened)"
            )
        if within is not None:
            real = _opened_path(fd)
            if real is not None and not inside(real, within):
                raise OutsideError(path, within)
    except BaseException:
        os.close(fd)
        raise
    return fd


def open_binary(path: str | os.PathLike, follow_links: bool = True) -> BinaryIO:
    """`open(path, "rb")` of a regular file only (see `open_regular`)."""
    return os.fdopen(open_regular(path, follow_links), "rb")


def read_regular(
    path: str | os.PathLike,
    limit: int,
    follow_links: bool = True,
    same_as: os.stat_result | None = None,
    within: str | None = None,
) -> bytes:
    """The bytes of a regular file of at most `limit` bytes (see `open_regular`); FileTooLargeError
    past it, whatever its size says (a file in /proc says 0, and a file may grow while read)."""
    # Read with the descriptor itself: a file object for each of a folder's small files was a
    # third of the time spent reading them.
    fd = open_regular(path, follow_links, same_as, within)
    try:
        size = os.fstat(fd).st_size
        if size > limit:
            raise FileTooLargeError(path, limit)
        chunks = []
        got = 0
        while got <= limit:  # to the end, which may lie past the size the file had
            chunk = os.read(fd, min(limit + 1 - got, max(size + 1 - got, 1 << 16)))
            if not chunk:
                break
            chunks.append(chunk)
            got += len(chunk)
    finally:
        os.close(fd)
    if got > limit:
        raise FileTooLargeError(path, limit)
    return b"".join(chunks)


def regular_file(path: Path) -> os.stat_result:
    """`path`'s stat (links followed) if it is a regular file; OSError otherwise."""
    st = path.stat()
    if not stat.S_ISREG(st.st_mode):
        raise NotRegularFileError(path, kind(st.st_mode))
    return st


MAX_LIST_BYTES = 256 << 20  # a list a user names (topics, ids): far more than a million lines


def read_lines(path: str | os.PathLike, limit: int, what: str) -> list[tuple[int, str]]:
    """(line number, text) of every line of a UTF-8 file a user names (a case file, a topics file,
    a list of ids), read as `read_regular` reads; InvalidArgumentError naming the file as `what`
    ("the case file is a FIFO (named pipe), not a regular file"), or naming the line that is not
    UTF-8. A byte-order mark is dropped; a line keeps a trailing \r."""
    try:
        raw = read_regular(path, limit)
    except OSError as e:
        raise InvalidArgumentError(f"{path}: {what} {reason(e)}") from None
    out = []
    for n, line in enumerate(raw.removeprefix(b"\xef\xbb\xbf").split(b"\n"), 1):
        try:
            out.append((n, line.decode("utf-8")))
        except UnicodeDecodeError as e:
            raise InvalidArgumentError(
                f"{path}:{n}: not UTF-8 text ({e.reason} at byte {e.start + 1} of the line)"
            ) from None
    return out
