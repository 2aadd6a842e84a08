"""Section names an agent may type, and how they resolve: forgiving, but never a silent guess.

Resolution order: the exact heading; `#N` (the N-th section, for duplicate headings); the heading
compared without case and extra spaces; the view names `intro`, `facts`, `infobox`, `contents`;
the start of exactly one heading; whole words inside exactly one heading (`dumps` for
`def dumps`). Each step either finds one section, finds several (an error naming them), or
passes to the next; nothing left is an error that lists the document's sections.
"""

from __future__ import annotations

import re
from typing import Literal

from sieve.corpus.documents import INTRO, Document
from sieve.errors import InvalidArgumentError

View = Literal["facts", "infobox", "contents"]
Target = int | View  # a section number, or a view of the document

_NUMBER = re.compile(r"#(\d+)")


class SectionNameError(InvalidArgumentError):
    """A section name that matches no section, or several."""


def norm(name: str) -> str:
    """A name as compared leniently: case-folded, runs of spaces made one."""
    return " ".join(name.casefold().split())


def heading_labels(doc: Document) -> list[str]:
    """Each section as the agent should name it: its heading, with `#N` added to duplicates."""
    headings = doc.headings
    counts: dict[str, int] = {}
    for h in headings:
        counts[h] = counts.get(h, 0) + 1
    return [h if counts[h] == 1 else f"{h} (#{j + 1})" for j, h in enumerate(headings)]


def label(doc: Document, j: int) -> str:
    """The name that selects exactly section j again (`#N` when its heading is not unique)."""
    h = doc.headings[j]
    return h if doc.headings.count(h) == 1 else f"#{j + 1}"


def views(doc: Document) -> list[str]:
    """The view names this document has, besides its sections."""
    out = ["intro"] if INTRO in doc.headings else []
    out.append("facts")
    if doc.infobox:
        out.append("infobox")
    out.append("contents")
    return out


MAX_LISTED = 300  # headings an error lists; `contents` lists every one


def available(doc: Document) -> str:
    """`Sections: A · B · C. Also: facts, contents.`: what an error message offers instead."""
    labels = heading_labels(doc)
    sections = " · ".join(labels[:MAX_LISTED]) or "(none)"
    if len(labels) > MAX_LISTED:
        sections += f" · … +{len(labels) - MAX_LISTED} more (contents lists them all)"
    return f"Sections: {sections}. Also: {', '.join(views(doc))}."


def _fail(doc: Document, message: str) -> SectionNameError:
    return SectionNameError(f"{message}. {available(doc)}")


_ADVICE = {
    "case": ("ignoring case", "write the heading exactly"),
    "prefix": ("by prefix", "give more of the name"),
    "inside": ("as words inside the heading", "give more of the name"),
}


def _listed(items: list[str], sep: str = ", ") -> str:
    """At most MAX_LISTED items, then how many more: an error stays a few kilobytes."""
    out = sep.join(items[:MAX_LISTED])
    return out + (f"{sep}… +{len(items) - MAX_LISTED} more" if len(items) > MAX_LISTED else "")


def _one(doc: Document, headings: list[str], name: str, hits: list[int], how: str) -> int:
    if len(hits) == 1:
        return hits[0]
    if len({headings[j] for j in hits}) == 1:
        numbers = _listed([f"#{j + 1}" for j in hits])
        raise _fail(
            doc,
            f'"{name}" names {len(hits)} sections of {doc.id}: '
            f'{numbers}; pick one by number, e.g. "#{hits[0] + 1}"',
        )
    where, advice = _ADVICE[how]
    names = _listed([headings[j] for j in hits], " · ")
    raise _fail(
        doc, f'"{name}" matches {len(hits)} sections of {doc.id} {where}: {names}; {advice}'
    )


def resolve(doc: Document, name: str) -> Target:
    """The section (number) or view a name selects in `doc`; raises SectionNameError."""
    headings = doc.headings
    wanted = name.strip()
    if not wanted:
        raise _fail(doc, f"empty section name for {doc.id}")
    exact = [j for j, h in enumerate(headings) if h == wanted]
    if exact:
        return _one(doc, headings, wanted, exact, "exact")
    m = _NUMBER.fullmatch(wanted)
    if m:
        j = int(m.group(1))
        if not 1 <= j <= len(headings):
            raise _fail(
                doc, f"{doc.id} has {len(headings)} sections, so there is no section {wanted}"
            )
        return j - 1
    key = norm(wanted)
    loose = [j for j, h in enumerate(headings) if norm(h) == key]
    if loose:
        return _one(doc, headings, wanted, loose, "case")
    if key in ("intro", norm(INTRO)):
        if INTRO not in headings:
            raise _fail(doc, f"{doc.id} has no intro (no text before its first heading)")
        return headings.index(INTRO)
    if key in ("facts", "contents"):
        return key  # type: ignore[return-value]  # "facts" or "contents": a View
    if key == "infobox":
        if not doc.infobox:
            raise _fail(doc, f"{doc.id} has no infobox")
        return "infobox"
    prefixed = [j for j, h in enumerate(headings) if norm(h).startswith(key)]
    if prefixed:
        return _one(doc, headings, wanted, prefixed, "prefix")
    words = re.compile(r"(?<!\w)" + re.escape(key) + r"(?!\w)")
    inside = [j for j, h in enumerate(headings) if words.search(norm(h))]
    if inside:
        return _one(doc, headings, wanted, inside, "inside")
    raise _fail(doc, f'no section "{wanted}" in {doc.id}')
