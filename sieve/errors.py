"""The one error hierarchy of sieve: everything raised for bad input is a `SieveError`."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any


class SieveError(Exception):
    """Root of every error sieve raises for bad input, bad data or a damaged index."""

    def __reduce__(self) -> tuple[Any, ...]:
        # Subclasses take their own constructor arguments, which pickle's default (the class called
        # with `args`) would not match: rebuild from the attributes instead, so an error raised in a
        # worker process or a Ray actor arrives as itself.
        return (_rebuilt, (type(self), self.args, self.__dict__))


def _rebuilt(cls: type[SieveError], args: tuple[Any, ...], state: dict[str, Any]) -> SieveError:
    error = Exception.__new__(cls)
    error.args = args
    error.__dict__.update(state)
    return error


class BQLError(SieveError):
    """A query could not be run; see the two subclasses."""


class BQLSyntaxError(BQLError):
    """A BQL query is malformed. `pos` is the 0-based character offset, `hint` how to fix it."""

    def __init__(self, message: str, pos: int, hint: str = "") -> None:
        self.message = message
        self.pos = pos
        self.hint = hint
        text = f"{message} at {pos}"
        if hint:
            text += f" ({hint})"
        super().__init__(text)

    def pointer(self, query: str) -> str:
        """The query on one line and a caret under the offending character (for people; tools keep
        `pos`).

        Tabs and newlines in the query print as spaces so the caret stays under its character."""
        flat = query.replace("\t", " ").replace("\n", " ").replace("\r", " ")
        at = min(max(self.pos, 0), len(flat))
        return f"  {flat}\n  {' ' * at}^"


class IndriSyntaxError(BQLSyntaxError):
    """An Indri query (`sieve.engine.query.indriql`) is malformed: `pos` and `hint` as
    BQLSyntaxError's. A subclass of it, so every caller that shows a query's syntax error with its
    position shows this one the same way."""


class BQLLimitError(BQLError):
    """A query exceeds a documented limit: `limit` names it, `value` is what was asked, `maximum`
    the cap."""

    def __init__(
        self, limit: str, value: int, maximum: int, detail: str = "", pos: int | None = None
    ) -> None:
        self.limit = limit
        self.value = value
        self.maximum = maximum
        self.pos = pos
        text = f"{limit} limit exceeded: {value} > {maximum}"
        if detail:
            text += f" ({detail})"
        super().__init__(text)


class CorpusError(SieveError, ValueError):
    """A corpus record is invalid. `file` and `line` (1-based) say where."""

    def __init__(self, message: str, file: str | None = None, line: int | None = None) -> None:
        self.message = message
        self.file = file
        self.line = line
        where = ""
        if file is not None:
            where = f"{file}:{line}: " if line is not None else f"{file}: "
        elif line is not None:
            where = f"record {line}: "
        super().__init__(where + message)


class IndexDirectoryError(SieveError):
    """Base for problems with an index directory: missing, damaged, of another format, in the
    way."""


class IndexDamagedError(IndexDirectoryError):
    """An index file is missing, truncated or fails its checksum. `file` names it."""

    def __init__(self, file: str, reason: str) -> None:
        self.file = file
        self.reason = reason
        super().__init__(f"index damaged: {file}: {reason}")


class IndexFormatError(IndexDirectoryError):
    """An index was written in a format version this sieve cannot read."""

    def __init__(self, path: str, found: int, supported: tuple[int, ...]) -> None:
        self.path = path
        self.found = found
        self.supported = supported
        newer = found > max(supported)
        advice = "upgrade sieve" if newer else "rebuild the index with `sieve index --force`"
        super().__init__(
            f"index format version {found} at {path} is {'newer' if newer else 'older'} "
            f"than this sieve supports ({', '.join(map(str, supported))}): {advice}"
        )


class UnknownAnalyzerError(IndexDirectoryError):
    """An index was built with analysis rules this sieve does not have."""

    def __init__(self, path: str, analyzer_id: object, known: list[str]) -> None:
        self.path = path
        self.analyzer_id = analyzer_id
        super().__init__(
            f"index at {path} was built with analyzer {analyzer_id!r}, "
            f"which this sieve does not know (known: {', '.join(known)}): "
            "upgrade sieve, or rebuild the index with `sieve index --force`"
        )


class IndexNotFoundError(IndexDirectoryError):
    """No index exists at the given path."""

    def __init__(self, path: str, reason: str = "no index here") -> None:
        self.path = path
        super().__init__(f"{path}: {reason}")


class IndexExistsError(IndexDirectoryError, FileExistsError):
    """A build's target already exists and may not be replaced (without `force`, or not an
    index)."""

    def __init__(self, path: str, reason: str) -> None:
        self.path = path
        super().__init__(f"{path} {reason}")

    def __str__(self) -> str:  # FileExistsError would print its errno form
        return str(self.args[0])


class IndexPathError(IndexDirectoryError, OSError):
    """An index cannot be written at this path: a part of it is not a folder, the system refuses
    to create files there (/proc, a read-only folder), or writing failed (a full disk). An OSError
    too, with the system's `errno` (ENOSPC for a full disk), for callers that handle those."""

    def __init__(self, path: str, reason: str, code: int | None = None) -> None:
        self.path = path
        self.reason = reason
        super().__init__(f"{path}: cannot write an index here: {reason}")
        self.errno = code

    def __str__(self) -> str:  # OSError would print its errno form
        return str(self.args[0])


class IndexLockedError(IndexDirectoryError):
    """Another process is writing this index (a build or an embed holds its lock)."""

    def __init__(self, path: str, holder: str) -> None:
        self.path = path
        super().__init__(
            f"{path} is locked: another build, embed or writer "
            f"is writing it ({holder}); wait for it to finish"
        )


class DeadlineExceededError(SieveError):
    """A call ran past the time its caller allowed it (`sieve.engine.deadline.within`)."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        super().__init__(
            f"stopped after {seconds:g} s (the time allowed for this call); narrow the query "
            "(fewer frequent words, fewer NEAR or prefix terms) or ask for fewer results"
        )


class SandboxError(SieveError):
    """No operating-system sandbox for the agent's shell works here; the message names what to
    install."""


class InvalidArgumentError(SieveError, ValueError):
    """An API or tool argument has the wrong type or value; the message says which and why."""


class UnknownDocumentError(SieveError, KeyError):
    """A document id is not in the index."""

    def __init__(self, doc_id: str) -> None:
        self.doc_id = doc_id
        super().__init__(doc_id)

    def __str__(self) -> str:
        return f"no document with id {self.doc_id!r}"


class DuplicateIdError(InvalidArgumentError):
    """Adding a document whose id the index already has, to a writer that does not replace."""


class ClusterError(SieveError):
    """A Ray cluster could not be reached, or a part of it (a shard's actor, a worker) failed
    past its retries: the answer would be incomplete, so none is given."""


def extra_hint(extra: str) -> str:
    """The command that installs the optional `extra` (`web`, `dense`, ...) for the sieve that runs:
    from its source checkout where it is one (an editable install), else by the installed package's
    name, which pip resolves to the installed copy (sieve-search is not on the public index)."""
    root = Path(__file__).resolve().parent.parent
    try:
        checkout = 'name = "sieve-search"' in (root / "pyproject.toml").read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        checkout = False
    if checkout:
        return f"pip install -e {shlex.quote(f'{root}[{extra}]')}"
    return (
        f"pip install {shlex.quote(f'sieve-search[{extra}]')} "
        f"(or, from a clone of the repository: pip install -e {shlex.quote(f'.[{extra}]')})"
    )
