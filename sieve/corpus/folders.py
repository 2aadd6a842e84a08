"""A folder of Markdown, HTML and plain-text files as a corpus: one document per file.

`sieve index DIR OUT` reads every `.md`/`.markdown`, `.html`/`.htm` and `.txt` file under DIR
(recursively, in path order; hidden files and folders, and folders holding a sieve index, are
skipped). A document's id is its path relative to DIR (`guide/install.md`).

- Markdown (parsed by markdown-it-py, CommonMark with tables): YAML front matter gives `title`,
  `date` and `author` (a string or a list); its other keys are kept as metadata. Every heading
  starts a section; text before the first heading is the intro. Without a front-matter title, a
  first-level heading that opens the file is the title (its text is the intro), else the file name.
- HTML (the standard library's parser): `<title>` (else the first `<h1>`) is the title; `<meta
  name="author">`, `<meta name="date">` (or `dc.date`, `article:published_time`) give author and
  date, `<meta name="description">` is kept as metadata; every `<h1>`-`<h6>` starts a section;
  scripts, styles and templates are not text.
- Text: the file name is the title and the whole text the intro.

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
import re
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path
from typing import Any, Callable

from sieve.common import files
from sieve.corpus.documents import checked_date
from sieve.errors import CorpusError, InvalidArgumentError
from sieve.corpus.frontmatter import front_matter

KINDS = {".md": "markdown", ".markdown": "markdown", ".html": "html", ".htm": "html", ".txt": "text"}
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
            raise InvalidArgumentError(f"max_file_mb must be a number of megabytes above 0 (at most {1 << 20:,}), got {mb!r}")

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
    return p.is_dir() and not any(os.path.lexists(p / n) for n in ("corpus.jsonl", "corpus.jsonl.gz"))


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


UNREAD = ("links", "special", "oversized", "unreadable")  # the counts a report keeps of files passed over


def _file(path: Path, real: Path, st: os.stat_result, cap: int) -> Entry:
    if not stat.S_ISREG(st.st_mode):
        return Entry(path, real, None, "special", f"is {files.kind(st.st_mode)}, never opened")
    if st.st_size > cap:
        return Entry(path, real, None, "oversized", f"is {st.st_size:,} bytes, over the {cap:,}-byte cap (--max-file-mb)")
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
        return None if files.inside(real, root) else Entry(path, path, None, "links", f"is a symbolic link to {to}, a folder outside the folder")
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
            found = _link(path, base, cap) if stat.S_ISLNK(st.st_mode) else _file(path, path, st, cap) if path.suffix.lower() in KINDS else None
            if found is not None:
                out.append(found)
    return sorted(out, key=lambda e: e.path.relative_to(root).as_posix())


def document_files(root: Path, cap: int = MAX_FILE_MB << 20) -> list[Path]:
    """The files of a folder corpus that are read, in relative-path order."""
    return [e.path for e in walk(root, cap) if e.skip is None]


def _passed_over(e: OSError) -> str:
    """Which count a file that failed to open goes to (it changed since the walk, or cannot be read)."""
    if isinstance(e, files.FileTooLargeError):
        return "oversized"
    if isinstance(e, files.NotRegularFileError):
        return "special"
    return "links" if e.errno == errno.ELOOP else "unreadable"  # OutsideError too


def records(folder: Folder | str | os.PathLike, note: Callable[[str, str], None] | None = None) -> Iterator[tuple[str, int, dict[str, Any] | CorpusError]]:
    """(file, line, record or CorpusError) for each document file of `folder` (a path reads as
    `Folder(path)`). A file passed over is given to `note(count, "file: why")` (see UNREAD), or
    with `folder.strict` is a CorpusError."""
    folder = folder if isinstance(folder, Folder) else Folder(folder)
    root, cap = Path(folder.path), folder.max_file_bytes
    base = os.path.realpath(root)
    entries = walk(root, cap)
    found = [e for e in entries if e.skip is None]
    if not found:  # a wrong folder, almost always: say what was looked for
        passed = [e for e in entries if e.skip is not None]
        more = f" it can read ({len(passed)} passed over; first: {passed[0].path}: {passed[0].why})" if passed else ""
        raise CorpusError(f"a folder corpus needs a corpus.jsonl (BEIR layout) or {', '.join(sorted(KINDS))} files; this one has none{more}", str(root))
    for entry in entries:
        name = str(entry.path)
        skip, why = entry.skip, entry.why
        raw = b""
        if skip is None:
            try:
                # Not followed again: `real` is where the walk found the file, and it must still be that file.
                raw = files.read_regular(entry.real, cap, follow_links=False, same_as=entry.st, within=base)
            except OSError as e:
                skip, why = _passed_over(e), files.reason(e)
        if skip is not None:
            if folder.strict:
                yield name, 1, CorpusError(f"{why}; not read (--strict)", name)
            elif note is not None:
                note(skip, f"{name}: {why}")
            continue
        try:
            text = raw.decode("utf-8-sig")
        except UnicodeDecodeError as e:
            line = raw[: e.start].count(b"\n") + 1
            yield name, line, CorpusError(f"not UTF-8 text ({e.reason} at byte {e.start + 1})", name, line)
            continue
        rel = entry.path.relative_to(root).as_posix()
        try:
            rec = _PARSERS[KINDS[entry.path.suffix.lower()]](text, entry.path.stem)
        except CorpusError as e:
            yield name, e.line or 1, CorpusError(e.message, name, e.line or 1)
            continue
        yield name, 1, {"id": rel, **rec}


def _date(value: Any, line: int) -> str | None:
    if value is None or value == "":
        return None
    try:
        return checked_date(value)
    except CorpusError as e:
        raise CorpusError(f"front matter date: {e.message}", None, line) from None


def _scalar(value: Any) -> bool:
    return isinstance(value, (str, int, float)) and not isinstance(value, bool)


def _title(value: Any, line: int) -> str | None:
    if value is None or value == "":
        return None
    if not _scalar(value):
        raise CorpusError(f"front matter title must be text, got {_what(value)}", None, line)
    return str(value)


def _author(value: Any, line: int) -> str | list[str] | None:
    if isinstance(value, list) and all(_scalar(v) for v in value):
        return [str(v) for v in value]
    if value is None or _scalar(value):
        return None if value is None else str(value)
    raise CorpusError(f"front matter author must be text or a list of names, got {_what(value)}", None, line)


def _what(value: Any) -> str:
    return {dict: "a mapping", list: "a list", bool: "true/false"}.get(type(value), type(value).__name__)


def _sections(parts: list[tuple[str | None, list[str]]]) -> list[dict[str, str]]:
    return [{"heading": h or "", "text": "\n\n".join(t for t in texts if t)} for h, texts in parts if h or any(texts)]


# --------------------------------------------------------------------------------------------
# Markdown


def _inline_text(token: Any) -> str:
    out = []
    for child in token.children or []:
        if child.type in ("text", "code_inline"):
            out.append(child.content)
        elif child.type in ("softbreak", "hardbreak"):
            out.append("\n")
        elif child.type == "image":
            out.append(child.content)  # its alt text
    return "".join(out)


def _markdown(text: str, stem: str) -> dict[str, Any]:
    try:
        from markdown_it import MarkdownIt
        from mdit_py_plugins.front_matter import front_matter_plugin
    except ImportError:  # pragma: no cover - core dependencies
        raise InvalidArgumentError("Markdown files need markdown-it-py and mdit-py-plugins: pip install markdown-it-py mdit-py-plugins") from None
    tokens = MarkdownIt("commonmark").use(front_matter_plugin).enable("table").parse(text)
    meta: dict[str, Any] = {}
    lines: dict[str, int] = {}
    parts: list[tuple[str | None, list[str]]] = [(None, [])]
    title: str | None = None
    seen_text = False
    i = 0
    while i < len(tokens):
        t = tokens[i]
        if t.type == "front_matter":
            # The YAML starts on the line after the opening `---` (t.map[0], 0-based).
            meta, lines = front_matter(t.content, (t.map[0] if t.map else 0) + 2)
        elif t.type == "heading_open":
            heading = _inline_text(tokens[i + 1]).strip()
            if t.tag == "h1" and title is None and not seen_text and len(parts) == 1 and "title" not in meta:
                title = heading  # a first-level heading that opens the file names it; its text is the intro
            else:
                parts.append((heading, []))
            i += 3
            continue
        elif t.type == "inline":
            parts[-1][1].append(_inline_text(t).strip())
            seen_text = True
        elif t.type in ("fence", "code_block"):
            parts[-1][1].append(t.content.rstrip("\n"))
            seen_text = True
        elif t.type == "html_block":
            try:
                parts[-1][1].append(_html_text(t.content))
            except CorpusError as e:  # its line within the block, as the file's
                raise CorpusError(e.message, None, (t.map[0] if t.map else 0) + (e.line or 1)) from None
            seen_text = True
        i += 1
    rec: dict[str, Any] = {"title": _title(meta.pop("title", None), lines.get("title", 1)) or title or stem, "sections": _sections(parts)}
    date = _date(meta.pop("date", None), lines.get("date", 1))
    if date:
        rec["date"] = date
    key = "author" if "author" in meta else "authors"
    author = _author(meta.pop("author", meta.pop("authors", None)), lines.get(key, 1))
    if author:
        rec["author"] = author
    rec.update({k: v for k, v in meta.items() if k not in ("id", "_id", "sections", "text", "infobox")})
    return rec


# --------------------------------------------------------------------------------------------
# HTML

_SKIP = {"script", "style", "template", "noscript", "svg"}
_BLOCKS = {"p", "div", "li", "br", "tr", "pre", "section", "article", "table", "ul", "ol", "dl", "dt", "dd", "blockquote",
           "header", "footer", "main", "aside", "nav", "figure", "figcaption", "hr", "td", "th"}
_HEADINGS = {"h1", "h2", "h3", "h4", "h5", "h6"}
_DATE_META = ("date", "dc.date", "dcterms.date", "article:published_time", "citation_date", "citation_publication_date")


# Markup that never closes (`<a b='` without its `>`) is read again from each later `<` to the end
# of the page by Python's HTMLParser before 3.13.5 (CVE-2025-6069: 48 KB took 8 s, 400 KB of
# `<!--` two minutes). The characters such failed reads scan are counted, and past this many per
# character of the page (and a floor) the page is a CorpusError instead of a hang.
RESCAN_PER_CHAR = 4
RESCAN_FLOOR = 1 << 20


class _Page(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self._rescanned = 0  # characters scanned by reads of markup that did not close
        self._unclosed = 0  # the line of the first markup that did not close
        self.title: str | None = None
        self.meta: dict[str, str] = {}
        self.parts: list[tuple[str | None, list[str]]] = [(None, [])]
        self._skip = 0
        self._in_title = False
        self._heading: list[str] | None = None
        self._pre = 0
        self._buf: list[str] = []
        self._title_buf: list[str] = []

    def _flush(self) -> None:
        text = "".join(self._buf)
        self._buf = []
        if not self._pre:
            text = " ".join(text.split())
        if text.strip():
            self.parts[-1][1].append(text.strip("\n"))

    def _bounded(self, parse: Callable[[int], int], i: int) -> int:
        try:
            k = parse(i)
        except AssertionError:  # `<![x`: Python's parser asserts on a marked section it does not know; read as text
            k = -1
        if k < 0:  # not closed: the parser reads it again later, or as text at the end
            self._unclosed = self._unclosed or self.getpos()[0]
            self._rescanned += len(self.rawdata) - i
            if self._rescanned > RESCAN_PER_CHAR * len(self.rawdata) + RESCAN_FLOOR:
                raise CorpusError("HTML markup that never closes (a '<' without its '>', an unclosed comment or section), again and "
                                  "again from this line on: reading it would take time without bound; not read", None, self._unclosed)
        return k

    def parse_starttag(self, i: int) -> int:
        return self._bounded(super().parse_starttag, i)

    def parse_endtag(self, i: int) -> int:
        return self._bounded(super().parse_endtag, i)

    def parse_comment(self, i: int, report: int = 1) -> int:
        return self._bounded(lambda at: super(_Page, self).parse_comment(at, report), i)

    def parse_pi(self, i: int) -> int:
        return self._bounded(super().parse_pi, i)

    def parse_html_declaration(self, i: int) -> int:
        return self._bounded(super().parse_html_declaration, i)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "meta":
            a = {k.lower(): (v or "") for k, v in attrs}
            key = (a.get("name") or a.get("property") or "").lower()
            if key and a.get("content"):
                self.meta.setdefault(key, a["content"])
            return
        if tag == "title" and self.title is None:
            self._in_title = True
            return
        if tag in _SKIP:
            self._skip += 1
            return
        if tag in _HEADINGS:
            self._flush()
            self._heading = []
        elif tag in _BLOCKS:
            self._flush()
        if tag == "pre":
            self._pre += 1

    def handle_endtag(self, tag: str) -> None:
        if tag == "title" and self._in_title:
            self._in_title = False
            self.title = " ".join("".join(self._title_buf).split())
            return
        if tag in _SKIP:
            self._skip = max(0, self._skip - 1)
            return
        if tag in _HEADINGS and self._heading is not None:
            heading = " ".join("".join(self._heading).split())
            self._heading = None
            if self.title is None and tag == "h1":
                self.title = heading
            elif heading and not (tag == "h1" and heading == self.title and len(self.parts) == 1):  # the title again, as a page heading
                self.parts.append((heading, []))
        elif tag in _BLOCKS:
            self._flush()
        if tag == "pre":
            self._pre = max(0, self._pre - 1)

    def handle_data(self, data: str) -> None:
        if self._in_title:
            self._title_buf.append(data)
        elif self._skip:
            return
        elif self._heading is not None:
            self._heading.append(data)
        else:
            self._buf.append(data)

    def close(self) -> None:
        super().close()
        self._flush()


def _html_text(html: str) -> str:
    page = _Page()
    page.feed(html)
    page.close()
    return "\n\n".join(t for _, texts in page.parts for t in texts)


def _html(text: str, stem: str) -> dict[str, Any]:
    page = _Page()
    page.feed(text)
    page.close()
    rec: dict[str, Any] = {"title": page.title or stem, "sections": _sections(page.parts)}
    date = next((page.meta[k] for k in _DATE_META if k in page.meta), None)
    if date:
        m = re.match(r"\d{4}(-\d{2}(-\d{2})?)?", date.strip())
        checked = _date(m.group(0) if m else date, 1)
        if checked:
            rec["date"] = checked
    if page.meta.get("author"):
        rec["author"] = page.meta["author"]
    if page.meta.get("description"):
        rec["description"] = page.meta["description"]
    return rec


def _text(text: str, stem: str) -> dict[str, Any]:
    return {"title": stem, "text": text.strip()}


_PARSERS = {"markdown": _markdown, "html": _html, "text": _text}
