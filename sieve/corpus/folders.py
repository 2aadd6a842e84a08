"""A folder of Markdown, HTML and plain-text files as a corpus: one document per file.

`sieve index DIR OUT` reads every `.md`/`.markdown`, `.html`/`.htm` and `.txt` file under DIR
(recursively, in path order; hidden files and folders, and folders holding a sieve index, are
skipped). A document's id is its path relative to DIR (`guide/install.md`).

- Markdown (parsed by markdown-it-py, CommonMark with tables): YAML front matter gives `title`,
  `date` and `author` (a string or a list); its other keys are kept as metadata. Every heading
  starts a section; text before the first heading is the lead section. Without a front-matter
  title, a first-level heading that opens the file is the title (its text is the lead), else the
  first heading, else the file name made readable (`getting-started.md`: `getting started`).
- HTML (the standard library's parser): `<title>` (else the first `<h1>`, else the first heading,
  else the file name) is the title; `<meta name="author">`, `<meta name="date">` (or `dc.date`,
  `article:published_time`) give author and date, `<meta name="description">` is kept as
  metadata; every `<h1>`-`<h6>` starts a section; scripts, styles and templates are not text.
- Text: the file name (made readable) is the title and the whole text the lead.

Sections before the first one with text are dropped (an empty lead, a heading right above
another). The parsing is sieve.corpus.markup's.

A file that is not UTF-8, whose front matter is not valid YAML or gives a bad value, or whose
HTML has markup that never closes again and again (which Python's HTML parser would read in time
without bound), is a CorpusError naming the file and the line, as a bad JSONL record is
(sieve.corpus.frontmatter).

Only regular files inside the folder are read, each of at most `Folder.max_file_bytes` (32 MiB
unless told). A symbolic link to a file inside the folder is read as that file (under its own
name); one that leads out of the folder, or nowhere, is not, and links to folders are never
followed (a folder's files are read where they are). FIFOs, sockets and devices are never opened.
Each file is judged again as it is opened: it must still be the regular file the walk saw, and
its real path must lie inside the folder (a folder swapped for a link during the build leads
nowhere).
Those passed over are counted in the report (`CorpusReport.unread`), or with `strict` each is a
CorpusError naming it.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sieve.common import files
from sieve.corpus import markup
from sieve.errors import CorpusError, InvalidArgumentError

KINDS = {
    ".md": "markdown",
    ".markdown": "markdown",
    ".html": "html",
    ".htm": "html",
    ".txt": "text",
}
MAX_FILE_MB = 32


@dataclass(frozen=True)
class Folder:
    """A folder of documents as a corpus, with the rules for its files: `build_index(Folder("docs",
    max_file_mb=8, strict=True), "ix")`. A plain path to a folder without a corpus.jsonl reads
    as `Folder(path)`. `strict`: a file passed over (a link out of the folder, a special file,
    one over the size cap, one that cannot be read) is a CorpusError instead of a count."""

    path: str
    max_file_mb: float = MAX_FILE_MB
    strict: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.path, (str, os.PathLike)):
            raise InvalidArgumentError(f"a folder is a path, got {type(self.path).__name__}")
        object.__setattr__(self, "path", os.fspath(self.path))
        mb = self.max_file_mb
        if isinstance(mb, bool) or not isinstance(mb, (int, float)) or not 0 < mb <= 1 << 20:
            raise InvalidArgumentError(
                "max_file_mb must be a number of megabytes "
                f"above 0 (at most {1 << 20:,}), got {mb!r}"
            )

    @property
    def max_file_bytes(self) -> int:
        return int(self.max_file_mb * (1 << 20))

    def __fspath__(self) -> str:
        return self.path

    def __str__(self) -> str:
        return self.path


def is_document_folder(path: str | os.PathLike) -> bool:
    """A folder that is not a BEIR collection (which holds a corpus.jsonl), or any `Folder`."""
    if isinstance(path, Folder):
        return True
    p = Path(path)
    return p.is_dir() and not any(
        os.path.lexists(p / n) for n in ("corpus.jsonl", "corpus.jsonl.gz")
    )


@dataclass(frozen=True)
class Entry:
    """One file of a folder corpus as the walk found it: `path` (under the root, its id's place),
    what to open (`real`: itself, or a link's target inside the folder) and its `stat`, or
    `skip` (why it is passed over: one of UNREAD) with the reason in words."""

    path: Path
    real: Path
    st: os.stat_result | None
    skip: str | None = None
    why: str = ""


# the counts a report keeps of files passed over
UNREAD = ("links", "special", "oversized", "unreadable")


def _file(path: Path, real: Path, st: os.stat_result, cap: int) -> Entry:
    if not stat.S_ISREG(st.st_mode):
        return Entry(path, real, None, "special", f"is {files.kind(st.st_mode)}, never opened")
    if st.st_size > cap:
        return Entry(
            path,
            real,
            None,
            "oversized",
            f"is {st.st_size:,} bytes, over the {cap:,}-byte cap (--max-file-mb)",
        )
    return Entry(path, real, st)


def _link(path: Path, root: str, cap: int) -> Entry | None:
    """The walk's verdict on a symbolic link (None: not a document, or a folder inside the root)."""
    real = os.path.realpath(path)
    nowhere = "which does not exist"
    try:
        target: os.stat_result | None = os.stat(real)
    except OSError as e:
        target = None
        nowhere = "a loop of links" if e.errno == errno.ELOOP else nowhere
    document = Path(path.name).suffix.lower() in KINDS
    try:
        to = repr(os.readlink(path))
    except OSError:
        to = "?"
    if target is not None and stat.S_ISDIR(target.st_mode):
        # Never followed: a folder inside is read where it is; one outside is not the corpus.
        return (
            None
            if files.inside(real, root)
            else Entry(
                path,
                path,
                None,
                "links",
                f"is a symbolic link to {to}, a folder outside the folder",
            )
        )
    if not document:
        return None
    if target is None:
        return Entry(path, path, None, "links", f"is a symbolic link to {to}, {nowhere}")
    if not files.inside(real, root):
        return Entry(path, path, None, "links", f"is a symbolic link to {to}, outside the folder")
    return _file(path, Path(real), target, cap)


def walk(root: Path, cap: int) -> list[Entry]:
    """Every document file under `root` and every one passed over, in relative-path order.
    Hidden files and folders (`.git`) and folders holding a sieve index (one built inside the
    folder it indexes) are not documents. Links are judged, never followed (`_link`)."""
    base = os.path.realpath(root)
    out: list[Entry] = []
    stack = [root]
    while stack:  # no recursion: a deep tree is no stack overflow
        here = stack.pop()
        try:
            with os.scandir(here) as it:
                items = list(it)
        except OSError as e:
            if here == root:
                raise CorpusError(f"the folder {files.reason(e)}", str(root)) from None
            out.append(Entry(here, here, None, "unreadable", f"is a folder that {files.reason(e)}"))
            continue
        for item in items:
            if item.name.startswith("."):
                continue
            path = Path(item.path)
            try:
                st = item.stat(follow_symlinks=False)
            except OSError:
                continue  # gone since it was listed
            if stat.S_ISDIR(st.st_mode):
                if not os.path.isfile(path / "CURRENT"):
                    stack.append(path)
                continue
            found = (
                _link(path, base, cap)
                if stat.S_ISLNK(st.st_mode)
                else _file(path, path, st, cap)
                if path.suffix.lower() in KINDS
                else None
            )
            if found is not None:
                out.append(found)
    return sorted(out, key=lambda e: e.path.relative_to(root).as_posix())


def document_files(root: Path, cap: int = MAX_FILE_MB << 20) -> list[Path]:
    """The files of a folder corpus that are read, in relative-path order."""
    return [e.path for e in walk(root, cap) if e.skip is None]


def _passed_over(e: OSError) -> str:
    """Which count a file that failed to open goes to (it changed since
    the walk, or cannot be read)."""
    if isinstance(e, files.FileTooLargeError):
        return "oversized"
    if isinstance(e, files.NotRegularFileError):
        return "special"
    return "links" if e.errno == errno.ELOOP else "unreadable"  # OutsideError too


@dataclass(frozen=True)
class PassedOver:
    """A file that is not read: the count it goes to (one of UNREAD) and `file: why`."""

    why: str
    note: str


Read = tuple[str, int, "dict[str, Any] | CorpusError | PassedOver"]  # (file, line, what it gave)


def walked(folder: Folder | str | os.PathLike) -> tuple[Folder, str, list[Entry]]:
    """`folder` as a Folder (a path reads as `Folder(path)`), its real path, and its walk: every
    file it holds, those passed over too; a CorpusError when none is a document."""
    folder = folder if isinstance(folder, Folder) else Folder(os.fspath(folder))
    root = Path(folder.path)
    entries = walk(root, folder.max_file_bytes)
    # a wrong folder, almost always: say what was sought
    if not any(e.skip is None for e in entries):
        passed = [e for e in entries if e.skip is not None]
        first = f"{passed[0].path}: {passed[0].why}" if passed else ""
        more = f" it can read ({len(passed)} passed over; first: {first})" if passed else ""
        kinds = ", ".join(sorted(KINDS))
        raise CorpusError(
            "a folder corpus needs a corpus.jsonl (BEIR "
            f"layout) or {kinds} files; this one has none{more}",
            str(root),
        )
    return folder, os.path.realpath(root), entries


def read(entry: Entry, folder: Folder, base: str) -> Read:
    """(file, line, record, CorpusError or PassedOver) of one entry of `walked(folder)` (`base`:
    the folder's real path). A file passed over is a CorpusError with `folder.strict`."""
    name = str(entry.path)
    skip, why = entry.skip, entry.why
    raw = b""
    if skip is None:
        try:
            # Not followed again: `real` is where the walk found the file, and it must still be it.
            raw = files.read_regular(
                entry.real, folder.max_file_bytes, follow_links=False, same_as=entry.st, within=base
            )
        except OSError as e:
            skip, why = _passed_over(e), files.reason(e)
    if skip is not None:
        if folder.strict:
            return name, 1, CorpusError(f"{why}; not read (--strict)", name)
        return name, 1, PassedOver(skip, f"{name}: {why}")
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        line = raw[: e.start].count(b"\n") + 1
        return (
            name,
            line,
            CorpusError(f"not UTF-8 text ({e.reason} at byte {e.start + 1})", name, line),
        )
    try:
        rec = markup.parse(KINDS[entry.path.suffix.lower()], text, entry.path.stem)
    except CorpusError as e:
        return name, e.line or 1, CorpusError(e.message, name, e.line or 1)
    return name, 1, {"id": entry.path.relative_to(folder.path).as_posix(), **rec}


def records(
    folder: Folder | str | os.PathLike, note: Callable[[str, str], None] | None = None
) -> Iterator[tuple[str, int, dict[str, Any] | CorpusError]]:
    """(file, line, record or CorpusError) for each document file of `folder` (a path reads as
    `Folder(path)`), each read when its turn comes. A file passed over is given to
    `note(count, "file: why")` (see UNREAD), or with `folder.strict` is a CorpusError."""
    folder, base, entries = walked(folder)
    for entry in entries:
        name, line, got = read(entry, folder, base)
        if isinstance(got, PassedOver):
            if note is not None:
                note(got.why, got.note)
            continue
        yield name, line, got
