"""What reaches a terminal or a log: text shown as it is, except what a terminal would act on.

Document text (ids, titles, headings, sections, infoboxes), queries, model answers and file names
are data; a terminal must not obey any of it. `visible` shows as an escape (`\\x1b`, `\\u202e`) each
character a terminal or a text renderer acts on instead of printing:

- the C0 controls other than line feed and tab: ESC starts the sequences that clear the screen,
  set the window title or move the cursor; CR and backspace overwrite what was printed;
- DEL and the C1 controls (U+009B is CSI, U+009D OSC, to terminals that read 8-bit controls);
- the bidirectional controls (U+061C, U+200E-U+200F, U+202A-U+202E, U+2066-U+2069), which reorder
  what follows, so that a line reads otherwise than it is written;
- the line and paragraph separators (U+2028, U+2029), line breaks to some renderers;
- the tag characters (U+E0000-U+E007F), invisible text;
- lone surrogates, which no UTF-8 stream can carry (printing one would fail).

The command line writes its stdout and stderr through `EscapingStream` (`escaping_streams`), so
this holds for every line it prints, whichever code printed it: cards, reads, explanations, test
reports, errors quoting a query or an id, an agent's steps and answer, progress lines, a server's
log. The only escape sequences that pass are the colours `sieve.tools.style` writes itself
(`STYLE_CODES`). JSON is written by `json_text`, whose strings escape the same characters as
`\\uXXXX` (json escapes C0 itself), so that JSON stays JSON and means the same.
"""

from __future__ import annotations

import io
import json
import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, TextIO

# The select graphic rendition codes sieve.tools.style
# writes (bold, match, dim, section) and the reset.
STYLE_CODES = ("0", "1", "1;33", "2", "36")

# Character classes (for a regular expression): the C0 controls but line feed and tab, which json
# escapes itself, and the rest, which it writes as they are.
_C0 = "\x00-\x08\x0b-\x1f"
_NOT_JSON = (
    "\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069\ud800-\udfff\U000e0000-\U000e007f"
)
_BLOCK = re.compile(f"[{_C0}{_NOT_JSON}]")  # line feed and tab kept: a text's lines and columns
_LINE = re.compile(f"[{_C0}{_NOT_JSON}\n\t]")  # everything on one line
_STREAM = re.compile(
    f"(\x1b\\[(?:{'|'.join(re.escape(c) for c in STYLE_CODES)})m)|[{_C0}{_NOT_JSON}]"
)
_JSON = re.compile(f"[{_NOT_JSON}]")


def escape(c: str) -> str:
    """One character as Python writes it in a string literal: `\\x1b`, `\\u202e`, `\\U000e0041`."""
    o = ord(c)
    if o < 0x100:
        return f"\\x{o:02x}"
    return f"\\u{o:04x}" if o < 0x10000 else f"\\U{o:08x}"


def _escaped(m: re.Match[str]) -> str:
    return escape(m.group())


def visible(text: str, one_line: bool = False) -> str:
    """`text` with each character a terminal would act on shown as an escape (see the module's
    docstring); line feeds and tabs are kept, or with `one_line` escaped too."""
    return (_LINE if one_line else _BLOCK).sub(_escaped, text)


def _colour_kept(m: re.Match[str]) -> str:
    return m.group(1) or escape(m.group())


def json_text(obj: Any, indent: int | None = None) -> str:
    """`json.dumps(obj, ensure_ascii=False)`, with the characters `visible` escapes written as
    `\\uXXXX` inside its strings (the only place they can be): the same value, safe to print."""
    text = json.dumps(obj, ensure_ascii=False, indent=indent)
    return _JSON.sub(lambda m: "".join(f"\\u{u:04x}" for u in _utf16(m.group())), text)


def _utf16(c: str) -> tuple[int, ...]:
    o = ord(c)
    if o < 0x10000:
        return (o,)
    o -= 0x10000
    # JSON writes a character past the BMP as a surrogate pair
    return (0xD800 + (o >> 10), 0xDC00 + (o & 0x3FF))


class EscapingStream(io.TextIOBase):
    """A text stream that writes everything through `visible` (line feeds and tabs kept) to
    `unescaped`, but for sieve's own colours. What is not writing (isatty, fileno, the binary
    `buffer` an MCP stdio transport uses) is the wrapped stream's."""

    def __init__(self, stream: TextIO) -> None:
        super().__init__()
        # for what writes its own controls: a progress bar's carriage returns
        self.unescaped = stream
        # Colours are written to a terminal only
        # (sieve.tools.style.terminal_style): elsewhere every ESC is data.
        isatty = getattr(stream, "isatty", None)
        tty = isatty is not None and isatty()
        self._pattern, self._replace = (_STREAM, _colour_kept) if tty else (_BLOCK, _escaped)

    def write(self, text: str) -> int:
        self.unescaped.write(self._pattern.sub(self._replace, text))
        return len(text)

    def flush(self) -> None:
        self.unescaped.flush()

    def isatty(self) -> bool:
        return self.unescaped.isatty()

    def fileno(self) -> int:
        return self.unescaped.fileno()

    def writable(self) -> bool:
        return True

    @property
    def encoding(self) -> str:  # type: ignore[override]  # an attribute in TextIOBase
        return self.unescaped.encoding

    @property
    def errors(self) -> str | None:  # type: ignore[override]  # an attribute in TextIOBase
        return self.unescaped.errors

    def __getattr__(self, name: str) -> Any:  # buffer, reconfigure, line_buffering, ...
        return getattr(self.unescaped, name)


@contextmanager
def escaping_streams() -> Iterator[None]:
    """sys.stdout and sys.stderr escaped (`EscapingStream`) for the body, then restored."""
    saved = sys.stdout, sys.stderr
    out, err = (
        s if s is None or isinstance(s, EscapingStream) else EscapingStream(s) for s in saved
    )
    sys.stdout, sys.stderr = out, err
    try:
        yield
    # a stream the body replaced stays replaced (`sieve ... | head` leaves stdout on /dev/null)
    finally:
        if sys.stdout is out:
            sys.stdout = saved[0]
        if sys.stderr is err:
            sys.stderr = saved[1]
