"""BQL tokens. Token values are `Tok(text, pos)` so every node knows where it came from."""

from __future__ import annotations

import re
from typing import NamedTuple

from sly import Lexer

from sieve.errors import BQLSyntaxError


class Tok(NamedTuple):
    text: str
    pos: int


_WORDCHARS = r'[^\s()\[\]"]'
# Characters a query may not contain: C0/C1 controls (whitespace aside) and lone surrogates.
BAD_CHAR = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff]")
OPERATORS = {"AND", "OR", "NOT"}
_NEARISH = re.compile(r"(?i)near/")


class BQLLexer(Lexer):
    tokens = {WORD, PREFIX, PHRASE, TAG, DATE, NEAR, NEARCALL, AND, OR, NOT, MINUS, LPAREN, RPAREN}  # noqa: F821
    ignore = " \t\r\n\f\v"

    # Order matters: sly tries these in turn at each position, so the specific forms come first.
    DATE = r'(?i:date)\s*\[\s*[0-9<>=.][^\[\]"]*\]'
    NEARCALL = r'(?i:near)/\d+\s*\(\s*[^\s(),\[\]"]+\s*,\s*[^\s(),\[\]"]+\s*\)'
    NEAR = r'(?i:near)/\d+(?![^\s()\[\]"])'
    PHRASE = r'"[^"]*"'
    TAG = r'\[[^\[\]"]*\]'
    LPAREN = r"\("
    RPAREN = r"\)"
    MINUS = r"-(?=[^\s\-)\]])"
    WORD = r'[^\s()\[\]"\-]' + _WORDCHARS + "*"

    def error(self, t):  # type: ignore[no-untyped-def]
        ch = t.value[0]
        pos = self.index
        if ch == '"':
            raise BQLSyntaxError("unterminated quote", pos, 'close the phrase with a second "')
        if ch == "[":
            raise BQLSyntaxError("unterminated '['", pos, "close the tag with ']', as in word[title]")
        if ch == "]":
            raise BQLSyntaxError("unexpected ']'", pos, "a tag is written word[field]")
        if ch == "-":
            raise BQLSyntaxError("'-' must be followed directly by a term", pos, "write -word or NOT word")
        raise BQLSyntaxError(f"unexpected character {ch!r}", pos, "quote it inside a phrase")


def tokenize(text: str):  # type: ignore[no-untyped-def]
    """sly tokens of `text` with `Tok` values; operator words and `word*` get their own types."""
    for t in BQLLexer().tokenize(text):
        if t.type == "WORD":
            if _NEARISH.match(t.value):
                raise BQLSyntaxError(
                    f"malformed {t.value.split('(')[0]!r}", t.index, "write a NEAR/3 b or NEAR/3(a, b) with single words"
                )
            upper = t.value.upper()
            if upper in OPERATORS:
                t.type = upper
            elif t.value.endswith("*"):
                t.type = "PREFIX"
        t.value = Tok(t.value, t.index)
        yield t
