"""Document text made safe to show: nothing from a document can start a line the reader would
attribute to the tool, or reach a terminal as an escape sequence.

Fields shown on one line (ids, titles, headings, authors, dates, infobox keys and values, snippet
words) have every control character and line or paragraph separator replaced by a space, so a title
written `x\\n[2] evil — Forged card` stays inside its own card. Section texts keep their line breaks
and tabs (a CRLF or a lone CR becomes a line break); every other control character (ESC, which
starts terminal escapes, NUL, the C1 controls, ...) becomes a space. The stored documents are
unchanged: this is only how they are shown.
"""

from __future__ import annotations

import re
from dataclasses import replace

from sieve.corpus.documents import Document, Section

_CONTROLS = [chr(c) for c in range(0x20)] + [chr(c) for c in range(0x7F, 0xA0)]
_ONE_LINE = str.maketrans(dict.fromkeys([*_CONTROLS, "\u2028", "\u2029"], " "))
_BLOCK = str.maketrans(
    {**{c: " " for c in _CONTROLS if c not in "\n\t"}, "\u2028": "\n", "\u2029": "\n"}
)
_CR = re.compile(r"\r\n?")


def inline(text: str) -> str:
    """`text` on one line: control characters and line separators become spaces."""
    # isprintable: a fast test, in C
    return text if text.isprintable() else text.translate(_ONE_LINE)


def block(text: str) -> str:
    """A multi-line text: line breaks and tabs kept (CR and CRLF become line breaks), other control
    characters spaces."""
    if "\r" in text:
        text = _CR.sub("\n", text)
    return text.translate(_BLOCK)


def shown(doc: Document, texts: bool = True) -> Document:
    """`doc` as the tools show it: one-line fields through `inline`, section texts through `block`
    (`texts=False` leaves the texts for the caller: a fetch shows one section, not all of them).
    The id is kept as it is (it names the document); renderers pass it through `inline`."""
    return replace(
        doc,
        title=inline(doc.title),
        author=None if doc.author is None else inline(doc.author),
        date=None if doc.date is None else inline(doc.date),
        infobox={inline(k): inline(v) for k, v in doc.infobox.items()},
        sections=tuple(
            Section(inline(s.heading), block(s.text) if texts else s.text) for s in doc.sections
        ),
    )
