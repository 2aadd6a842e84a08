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

A file that is not UTF-8, or whose front matter is not valid YAML or gives a bad date, is a
CorpusError naming the file and the line, as a bad JSONL record is.
"""

from __future__ import annotations

import datetime as dt
import os
import re
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

from sieve.documents import checked_date
from sieve.errors import CorpusError, InvalidArgumentError

KINDS = {".md": "markdown", ".markdown": "markdown", ".html": "html", ".htm": "html", ".txt": "text"}


def is_document_folder(path: str | os.PathLike) -> bool:
    """A folder that is not a BEIR collection (which holds a corpus.jsonl)."""
    p = Path(path)
    return p.is_dir() and not any((p / n).is_file() for n in ("corpus.jsonl", "corpus.jsonl.gz"))


def document_files(root: Path) -> list[Path]:
    """The files of a folder corpus, in relative-path order."""
    out = []
    for here, dirs, names in os.walk(root):
        # Hidden folders (.git) and sieve indexes (an index built inside the folder it indexes) are not documents.
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and not (Path(here) / d / "CURRENT").is_file())
        out += [Path(here) / n for n in names if not n.startswith(".") and Path(n).suffix.lower() in KINDS]
    return sorted(out, key=lambda p: p.relative_to(root).as_posix())


def records(root: Path) -> Iterator[tuple[str, int, dict[str, Any] | CorpusError]]:
    """(file, line, record or CorpusError) for each document file under `root`."""
    found = document_files(root)
    if not found:  # a wrong folder, almost always: say what was looked for
        raise CorpusError(f"a folder corpus needs a corpus.jsonl (BEIR layout) or {', '.join(sorted(KINDS))} files; this one has none", str(root))
    for path in found:
        name = str(path)
        raw = path.read_bytes()
        try:
            text = raw.decode("utf-8-sig")
        except UnicodeDecodeError as e:
            line = raw[: e.start].count(b"\n") + 1
            yield name, line, CorpusError(f"not UTF-8 text ({e.reason} at byte {e.start + 1})", name, line)
            continue
        rel = path.relative_to(root).as_posix()
        try:
            rec = _PARSERS[KINDS[path.suffix.lower()]](text, path.stem)
        except CorpusError as e:
            yield name, e.line or 1, CorpusError(e.message, name, e.line or 1)
            continue
        yield name, 1, {"id": rel, **rec}


def _date(value: Any, line: int) -> str | None:
    if value is None or value == "":
        return None
    if isinstance(value, dt.datetime):
        value = value.date().isoformat()
    elif isinstance(value, dt.date):
        value = value.isoformat()
    try:
        return checked_date(str(value))
    except CorpusError as e:
        raise CorpusError(f"front matter date: {e.message}", None, line) from None


def _author(value: Any) -> str | list[str] | None:
    if isinstance(value, list):
        return [str(v) for v in value]
    return None if value is None else str(value)


def _sections(parts: list[tuple[str | None, list[str]]]) -> list[dict[str, str]]:
    return [{"heading": h or "", "text": "\n\n".join(t for t in texts if t)} for h, texts in parts if h or any(texts)]


# --------------------------------------------------------------------------------------------
# Markdown


def _front_matter(content: str, first_line: int) -> dict[str, Any]:
    import yaml

    try:
        data = yaml.safe_load(content)
    except yaml.YAMLError as e:
        # Where the broken construct began (an unclosed bracket's line) says more than where the parser gave up.
        mark = getattr(e, "context_mark", None) or getattr(e, "problem_mark", None)
        line = first_line + 2 + (mark.line if mark is not None else 0)  # the YAML starts on the line after `---`
        raise CorpusError(f"front matter is not valid YAML: {getattr(e, 'problem', None) or e}", None, line) from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise CorpusError(f"front matter must be a mapping of keys to values, got {type(data).__name__}", None, first_line + 2)
    return {str(k): v for k, v in data.items()}


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
    front_line = 0
    parts: list[tuple[str | None, list[str]]] = [(None, [])]
    title: str | None = None
    seen_text = False
    i = 0
    while i < len(tokens):
        t = tokens[i]
        if t.type == "front_matter":
            front_line = t.map[0] if t.map else 0
            meta = _front_matter(t.content, front_line)
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
            parts[-1][1].append(_html_text(t.content))
            seen_text = True
        i += 1
    rec: dict[str, Any] = {"title": str(meta.pop("title", None) or title or stem), "sections": _sections(parts)}
    date = _date(meta.pop("date", None), front_line + 1)
    if date:
        rec["date"] = date
    author = _author(meta.pop("author", meta.pop("authors", None)))
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


class _Page(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
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
