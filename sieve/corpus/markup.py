"""A file's text as a corpus record: Markdown, HTML and plain text (sieve.corpus.folders reads the
files; see its docstring for what each kind gives).

A document's title is its front matter's `title` (Markdown), or `<title>` (HTML); else a
first-level heading that opens the file (its text is the lead), else the first heading of any
level, else the file name made readable (`getting-started.md`: `getting started`). Sections
start at headings; text before the first heading is the lead section, and empty sections before
the first one with text are dropped.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from html.parser import HTMLParser
from typing import Any

from sieve.corpus import mdblocks
from sieve.corpus.documents import checked_date
from sieve.corpus.frontmatter import front_matter
from sieve.corpus.mdblocks import Event
from sieve.errors import CorpusError, InvalidArgumentError


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
    raise CorpusError(
        f"front matter author must be text or a list of names, got {_what(value)}", None, line
    )


def _what(value: Any) -> str:
    return {dict: "a mapping", list: "a list", bool: "true/false"}.get(
        type(value), type(value).__name__
    )


def readable(stem: str) -> str:
    """A file name as a title: `getting_started` and `getting-started` read `getting started`
    (a date's hyphens stay: `2024-03-05 notes`)."""
    return " ".join(_SEPARATORS.sub(" ", stem).split()) or stem


_SEPARATORS = re.compile(r"(?<!\d)[-_]+|[-_]+(?!\d)")


def _sections(parts: list[tuple[str | None, list[str]]]) -> list[dict[str, str]]:
    """The sections of (heading, texts) parts, those with neither left out. The ones before the
    first with text are dropped too: an empty lead, or a heading followed at once by another (the
    page's name again above its first real section), is no section a reader would open."""
    out = [
        {"heading": h or "", "text": "\n\n".join(t for t in texts if t)}
        for h, texts in parts
        if h or any(texts)
    ]
    return out[next((i for i, s in enumerate(out) if s["text"]), 0) :]


# --------------------------------------------------------------------------------------------
# Markdown

# What CommonMark's inline rules (HTML on) can act on: inline text without any of it is its lines
# as they are, and is not parsed (see _inline_text). Conservative: a match may still be text.
_INLINE_MARKUP = re.compile(
    r"[`*]"  # code spans, emphasis
    r"|_(?:(?<!\w_)|(?!\w))"  # underscores, but those inside a word (snake_case)
    r"|&#?\w+;"  # entities
    r"|<(?!\s)"  # HTML, autolinks
    r"|\]\("  # inline links and images
)
_PLAIN_LINE = re.compile(r"[^`*_&<\]\\\[]*")  # one line without markup (nor a link's `[`)
_REFERENCE = re.compile(r"\[")  # a link to a reference, where the file defines some
_LINE_BREAK = re.compile(r" *\n[ \t]*")
# Backslash escapes and line breaks, in text with no other markup: a backslash before a line
# break is a break (the next line's indent dropped), before ASCII punctuation it is dropped, and
# before anything else it stays, with the character (a space after it is no break's space).
_ESCAPE_OR_BREAK = re.compile(r"\\(\n[ \t]*|.)| *\n[ \t]*", re.S)
_ESCAPABLE = frozenset("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")


def _unescaped(m: re.Match[str]) -> str:
    c = m.group(1)
    if c is None or c[0] == "\n":
        return "\n"
    return c if c in _ESCAPABLE else "\\" + c


@functools.lru_cache(maxsize=1)
def _parser() -> Any:
    """The Markdown parser, made once per process (making one took a twentieth of a file's time)."""
    try:
        from markdown_it import MarkdownIt
        from mdit_py_plugins.front_matter import front_matter_plugin
    except ImportError:  # pragma: no cover - core dependencies
        raise InvalidArgumentError(
            "Markdown files need markdown-it-py and mdit-py-plugins: "
            "pip install markdown-it-py mdit-py-plugins"
        ) from None
    md = MarkdownIt("commonmark").use(front_matter_plugin).enable("table")
    # Inline markup is parsed by _inline_text, and only where there is some: parsing every
    # paragraph's inline markup was half of a folder build's time, and most paragraphs have none.
    md.core.ruler.disable("inline")
    # A link's target is never text; normalising it (percent-encoding, punycode) cost a fifth of
    # the inline parsing of link-heavy files. Which targets are allowed does not change.
    md.normalizeLink = lambda url: url  # type: ignore[method-assign]  # markdown-it's hook, replaced on purpose
    return md


def _inline_text(content: str, env: dict[str, Any]) -> str:
    """The text of an inline token's `content`: its text, code, line breaks and images' alt text,
    as markdown-it's inline parse gives them (text without markup: the lines, their breaks'
    spaces dropped, as the parse drops them)."""
    referenced = "references" in env and _REFERENCE.search(content)
    if not referenced:
        # Substring tests first: a regex run over every character of every paragraph was a
        # tenth of a folder build.
        c = content
        if "`" in c or "*" in c or "_" in c or "&" in c or "<" in c or "]" in c or "\\" in c:
            if _INLINE_MARKUP.search(c):
                return parsed_inline(content, env)
            if "\\" in c:
                return _ESCAPE_OR_BREAK.sub(_unescaped, c)
        if "\n" in c and (" \n" in c or "\n " in c or "\n\t" in c):
            return _LINE_BREAK.sub("\n", c)
        return c
    return parsed_inline(content, env)


def parsed_inline(content: str, env: dict[str, Any]) -> str:
    """`_inline_text` as markdown-it's inline parse gives it, whatever the markup."""
    md = _parser()
    children: list[Any] = []
    md.inline.parse(content, md, env, children)
    out = []
    for child in children:
        if child.type in ("text", "text_special", "code_inline"):
            out.append(child.content)
        elif child.type in ("softbreak", "hardbreak"):
            out.append("\n")
        elif child.type == "image":
            out.append(child.content)  # its alt text
    return "".join(out)


def markdown_it_blocks(text: str) -> tuple[tuple[str, int] | None, list[Event], dict[str, Any]]:
    """(front matter, events, env) of markdown-it-py's block parse of `text`, as
    sieve.corpus.mdblocks gives them (its reference), and the link references it found."""
    md = _parser()
    env: dict[str, Any] = {}  # link references, which inline parses read
    tokens = md.parse(text, env)
    front: tuple[str, int] | None = None
    events: list[Event] = []
    i = 0
    while i < len(tokens):
        t = tokens[i]
        line = t.map[0] if t.map else 0
        if t.type == "front_matter":
            front = (t.content, line)
        elif t.type == "heading_open":
            events.append(("h", int(t.tag[1:]), tokens[i + 1].content))
            i += 1  # its inline text
        elif t.type == "inline":
            events.append(("i", t.content))
        elif t.type in ("fence", "code_block"):
            events.append(("c", t.content))
        elif t.type == "html_block":
            events.append(("x", t.content, line))
        i += 1
    return front, events, env


def _markdown(text: str, stem: str) -> dict[str, Any]:
    # Most files are read by sieve's own block scanner, at a fraction of markdown-it-py's time;
    # those it is not sure of by markdown-it-py (see sieve.corpus.mdblocks).
    fast = mdblocks.blocks(text)
    if fast is None:
        front, events, env = markdown_it_blocks(text)
    else:
        (front, events), env = fast, {}
    return _record(front, events, env, stem)


def _record(
    front: tuple[str, int] | None, events: list[Event], env: dict[str, Any], stem: str
) -> dict[str, Any]:
    """The record of a Markdown file's block events (sieve.corpus.mdblocks)."""
    meta: dict[str, Any] = {}
    lines: dict[str, int] = {}
    if front is not None:
        # The YAML starts on the line after the opening `---` (0-based).
        meta, lines = front_matter(front[0], front[1] + 2)
    parts: list[tuple[str | None, list[str]]] = [(None, [])]
    opening: str | None = None  # a first-level heading that opens the file
    first: str | None = None  # the first heading
    seen_text = False
    for event in events:
        kind = event[0]
        if kind == "h":
            heading = _inline_text(event[2], env).strip()
            first = first if first is not None else heading or None
            opens = not seen_text and len(parts) == 1 and opening is None
            if event[1] == 1 and opens and "title" not in meta:
                opening = heading  # it names the file; its text is the lead
            else:
                parts.append((heading, []))
            continue
        if kind == "i":
            text = event[1]
            if "\n" in text or not _PLAIN_LINE.fullmatch(text):  # else it is its own text
                text = _inline_text(text, env)
            parts[-1][1].append(text.strip())
        elif kind == "c":
            parts[-1][1].append(event[1].rstrip("\n"))
        else:
            try:
                parts[-1][1].append(_html_text(event[1]))
            except CorpusError as e:  # its line within the block, as the file's
                raise CorpusError(e.message, None, event[2] + (e.line or 1)) from None
        # Each block adds one text: whether it has any is all that changed (testing the whole
        # section again made a file of empty blocks quadratic: 40,000 empty fences took 1.4 s).
        seen_text = seen_text or bool(parts[-1][1][-1])  # empty HTML (a badge): no text
    named = _title(meta.pop("title", None), lines.get("title", 1))
    title = named or opening or first or readable(stem)
    rec: dict[str, Any] = {"title": title, "sections": _sections(parts)}
    date = _date(meta.pop("date", None), lines.get("date", 1))
    if date:
        rec["date"] = date
    key = "author" if "author" in meta else "authors"
    author = _author(meta.pop("author", meta.pop("authors", None)), lines.get(key, 1))
    if author:
        rec["author"] = author
    rec.update(
        {k: v for k, v in meta.items() if k not in ("id", "_id", "sections", "text", "infobox")}
    )
    return rec


# --------------------------------------------------------------------------------------------
# HTML

_SKIP = {"script", "style", "template", "noscript", "svg"}
_BLOCKS = {
    "p",
    "div",
    "li",
    "br",
    "tr",
    "pre",
    "section",
    "article",
    "table",
    "ul",
    "ol",
    "dl",
    "dt",
    "dd",
    "blockquote",
    "header",
    "footer",
    "main",
    "aside",
    "nav",
    "figure",
    "figcaption",
    "hr",
    "td",
    "th",
}
_HEADINGS = {"h1", "h2", "h3", "h4", "h5", "h6"}
_DATE_META = (
    "date",
    "dc.date",
    "dcterms.date",
    "article:published_time",
    "citation_date",
    "citation_publication_date",
)


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
        self.first_heading: str | None = None
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
        # `<![x`: Python's parser asserts on a marked section it does not know; read as text
        except AssertionError:
            k = -1
        if k < 0:  # not closed: the parser reads it again later, or as text at the end
            self._unclosed = self._unclosed or self.getpos()[0]
            self._rescanned += len(self.rawdata) - i
            if self._rescanned > RESCAN_PER_CHAR * len(self.rawdata) + RESCAN_FLOOR:
                raise CorpusError(
                    "HTML markup that never closes (a '<' without its '>', an "
                    "unclosed comment or section), again and again from this "
                    "line on: reading it would take time without bound; not read",
                    None,
                    self._unclosed,
                )
        return k

    def parse_starttag(self, i: int) -> int:
        return self._bounded(super().parse_starttag, i)

    def parse_endtag(self, i: int) -> int:
        return self._bounded(super().parse_endtag, i)

    def parse_comment(self, i: int, report: bool = True) -> int:
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
            self.first_heading = self.first_heading or heading or None
            if self.title is None and tag == "h1":
                self.title = heading
            # the title again, as a page heading
            elif heading and not (tag == "h1" and heading == self.title and len(self.parts) == 1):
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
    title = page.title or page.first_heading or readable(stem)
    rec: dict[str, Any] = {"title": title, "sections": _sections(page.parts)}
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
    return {"title": readable(stem), "text": text.strip()}


_PARSERS = {"markdown": _markdown, "html": _html, "text": _text}


def parse(kind: str, text: str, stem: str) -> dict[str, Any]:
    """The record (without its id) of a file of `kind` (markdown, html, text) whose name without
    its extension is `stem`; a CorpusError at a line of the file when it cannot be read."""
    return _PARSERS[kind](text, stem)
