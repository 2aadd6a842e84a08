"""Reading a document: one section or view (`fetch`), or the whole document (`visit`), under a cap.

A read is at most `cap` tokens, headers included. Longer texts are cut into numbered parts (see
`parts.py`); a part that is not the last ends with the exact call that reads the next one.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache

from sieve.corpus.documents import INTRO, Document
from sieve.errors import InvalidArgumentError
from sieve.tools.fetch.parts import split_parts
from sieve.tools.fetch.sections import Target, heading_labels, label, resolve
from sieve.tools.fetch.tokens import TokenCounter, WhitespaceCounter
from sieve.tools.shell.safe import block, inline, shown

DEFAULT_CAP = 12_000
MIN_CAP = 100  # below this the headers and notes of a read would not fit
_SLACK = 8  # tokens kept free for separators a subword counter may count where words do not

# How to read part `part` of `section` (None: the whole document) of document `doc_id`.
NextHint = Callable[[str, "str | None", int], str]


def tool_hint(doc_id: str, section: str | None, part: int) -> str:
    """The continuation as the agent's tool call."""
    import json

    if section is None:
        return "visit " + json.dumps({"doc": doc_id, "part": part}, ensure_ascii=False)
    return "fetch " + json.dumps(
        {"sections": [{"doc": doc_id, "section": section, "part": part}]}, ensure_ascii=False
    )


@dataclass(frozen=True)
class ReadConfig:
    """The per-read cap and the counter that measures it."""

    cap: int = DEFAULT_CAP
    counter: TokenCounter = field(default_factory=WhitespaceCounter)
    hint: NextHint = tool_hint
    # tokens every part leaves free, for the note a fetch of several sections may add
    reserve: int = 48
    # Longer texts come in numbered parts; False: a read stops at the cap (the paper's ceiling),
    # saying how much was left out, and only part 1 exists.
    parts: bool = True

    def __post_init__(self) -> None:
        if isinstance(self.cap, bool) or not isinstance(self.cap, int) or self.cap < MIN_CAP:
            raise InvalidArgumentError(
                f"the read cap must be an integer of at least {MIN_CAP} tokens, got {self.cap!r}"
            )


@dataclass(frozen=True)
class Read:
    """One rendered read: `text` is what the reader gets; `body` the part of the content it
    shows."""

    doc_id: str
    name: str  # the section label, a view name, or "" for the whole document
    part: int
    parts: int
    body: str
    text: str


@lru_cache(maxsize=64)
def _spans(text: str, budget: int, counter: TokenCounter) -> tuple[tuple[int, int], ...]:
    # Reading parts 1..n of a long text would otherwise cut it n times.
    return tuple(split_parts(text, budget, counter))


def facts_text(doc: Document) -> str:
    lines = [f"title: {doc.title}"]
    if doc.author:
        lines.append(f"author: {doc.author}")
    if doc.date:
        lines.append(f"date: {doc.date}")
    if doc.infobox:
        lines.append("infobox:")
        lines.extend(f"  {k}: {v}" for k, v in doc.infobox.items())
    return "\n".join(lines)


def infobox_text(doc: Document) -> str:
    return "\n".join(f"{k}: {v}" for k, v in doc.infobox.items())


def contents_text(doc: Document, counter: TokenCounter) -> str:
    unit = "word" if counter.name == "words" else "token"

    def size(text: str) -> str:
        n = counter.count(text)
        return f"{n:,} {unit}{'s' if n != 1 else ''}"

    return "\n".join(
        f"#{j + 1} {h} ({size(s.text)})" for j, (h, s) in enumerate(zip(doc.headings, doc.sections))
    )


def outline_text(doc: Document, counter: TokenCounter, cap: int | None = None) -> str:
    """What `show` prints: the document's facts, then its sections with their lengths; with `cap`,
    as many section lines as fit in `cap` tokens, then how many more there are."""
    # nothing in a document can forge a line or reach a terminal as an escape
    doc = shown(doc, texts=False)
    n = len(doc.sections)
    head = f"{inline(doc.id)}\n{facts_text(doc)}\n{n} section{'s' if n != 1 else ''}:\n"
    lines = ["  " + line for line in contents_text(doc, counter).splitlines()]
    text = head + "\n".join(lines)
    if cap is None or counter.count(text) <= cap:
        return text

    def cut(m: int) -> str:
        return head + "\n".join(
            lines[:m]
            + [f'  … {len(lines) - m} more (fetch section "contents" lists them all, part by part)']
        )

    lo, hi = 0, len(lines)  # the most lines that fit: a binary search, log(n) token counts
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if counter.count(cut(mid)) <= cap:
            lo = mid
        else:
            hi = mid - 1
    return cut(lo)


def sections_text(doc: Document) -> str:
    """Every section under its heading, a section without one (`(intro)`) as plain text: the
    words of the headings and texts, which BM25 ranks, and nothing else. The flat twin of a
    collection stores exactly this as its one text."""
    return "\n\n".join(
        s.text if s.heading == INTRO else f"## {s.heading}\n{s.text}" for s in doc.sections
    )


def body_text(doc: Document) -> str:
    """What a visit shows below its header line: the facts other than the title (which the header
    names), then `sections_text`. The same in both twins of a collection."""
    parts = facts_text(doc).split("\n", 1)[1:]  # all but the title line
    if doc.sections:
        parts.append(sections_text(doc))
    return "\n\n".join(parts)


def _target_text(doc: Document, target: Target, counter: TokenCounter) -> tuple[str, str, str]:
    """(name shown, name that selects it again, text) of a resolved target."""
    if isinstance(target, int):
        return heading_labels(doc)[target], label(doc, target), block(doc.sections[target].text)
    if target == "facts":
        return "facts", "facts", facts_text(doc)
    if target == "infobox":
        return "infobox", "infobox", infobox_text(doc)
    return "contents", "contents", contents_text(doc, counter)


def _render(
    doc: Document, what: str, section: str | None, text: str, part: int, config: ReadConfig
) -> Read:
    counter = config.counter

    def header(p: int, n: int) -> str:
        base = f"[{inline(doc.id)}] {doc.title} {what}"
        return base + (f" · part {p} of {n}" if n > 1 else "")

    def footer(p: int, n: int) -> str:
        if not config.parts:
            return (
                f"[truncated at the {config.cap:,}-token ceiling of one read: {n - 1:,} more "
                f"read{'s' if n > 2 else ''}' worth not shown]"
            )
        return f"[continued in part {p + 1} of {n}: {config.hint(doc.id, section, p + 1)}]"

    # Budget the content for the longest header and footer any part can have.
    overhead = (
        counter.count(header(9999, 9999))
        + counter.count(footer(9998, 9999))
        + _SLACK
        + config.reserve
    )
    budget = max(config.cap - overhead, 1)
    spans = _spans(text, budget, counter)  # type: ignore[arg-type]  # a counter is hashable
    n = len(spans)
    if not config.parts and part != 1:
        raise InvalidArgumentError(
            f"reads here stop at the {config.cap:,}-token "
            f"ceiling: there is only part 1, not part {part}"
        )
    if isinstance(part, bool) or not isinstance(part, int) or not 1 <= part <= n:
        which = (
            f"section {section!r} of {inline(doc.id)}" if section is not None else inline(doc.id)
        )
        raise InvalidArgumentError(
            f"{which} has {n} part{'s' if n > 1 else ''}, so there is no part {part}"
        )
    a, b = spans[part - 1]
    body = text[a:b] if n == 1 else text[a:b].lstrip("\n").rstrip()
    out = (
        (header(part, n) if config.parts else header(1, 1))
        + "\n"
        + (body if body.strip() else "(empty)")
    )
    if part < n:
        out += "\n" + footer(part, n)
    return Read(doc.id, section or "", part, n, body, out)


def read_section(
    doc: Document, name: str, part: int = 1, config: ReadConfig = ReadConfig()
) -> Read:
    """`fetch` of one section or view; raises SectionNameError or InvalidArgumentError."""
    doc = shown(doc, texts=False)  # the one section read is cleaned in _target_text
    target = resolve(doc, name)
    what, section, text = _target_text(doc, target, config.counter)
    return _render(doc, f"§ {what}", section, text, part, config)


def read_document(doc: Document, part: int = 1, config: ReadConfig = ReadConfig()) -> Read:
    """`visit`: the whole document, every section with its heading."""
    doc = shown(doc)  # nothing in a document can forge a line or reach a terminal as an escape
    return _render(doc, "· whole document", None, body_text(doc), part, config)
