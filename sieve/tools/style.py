"""Terminal colour for people; plain text for agents (colour codes would only cost tokens).

The codes are those `sieve.common.terminal.STYLE_CODES` lets through the command line's escaping: a
new one goes there too."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from typing import TextIO


@dataclass(frozen=True)
class Style:
    colour: bool = False

    def _sgr(self, code: str, text: str) -> str:
        return f"\x1b[{code}m{text}\x1b[0m" if self.colour and text else text

    def id(self, text: str) -> str:
        return self._sgr("1", text)  # bold

    def match(self, text: str) -> str:
        return self._sgr("1;33", text)  # bold yellow: a heading or word the query matched

    def dim(self, text: str) -> str:
        return self._sgr("2", text)

    def section(self, text: str) -> str:
        return self._sgr("36", text)  # cyan


PLAIN = Style()


def terminal_style(stream: TextIO = sys.stdout) -> Style:
    """Colour only on a terminal, and never when NO_COLOR is set (https://no-color.org)."""
    isatty = getattr(stream, "isatty", None)
    return Style(colour=bool(isatty and isatty()) and "NO_COLOR" not in os.environ)
