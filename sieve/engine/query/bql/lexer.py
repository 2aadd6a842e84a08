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


class BQLLexer(Lexer):
    # sly's metaclass reads each bare name here as its string; the strings are the same set.
    tokens = {  # noqa: RUF012 -- sly's API: a class attribute it reads, never mutated
        "WORD",
        "PREFIX",
        "PHRASE",
        "TAG",
        "DATE",
        "NEAR",
        "NEARCALL",
        "AND",
        "OR",
        "NOT",
        "MINUS",
        "LPAREN",
        "RPAREN",
    }
    ignore = " \t\r\n\f\v"

    # Order matters: sly tries these in turn at each position, so the specific forms come first.
    # date[...] and a declared field's filter: name[2000..2010], name[>=3], name[=ACL], name[="a b"]
    DATE = r'[^\W\d]\w*\s*\[\s*(?:=\s*"[^"]*"\s*|[0-9<>=.+\-][^\[\]"]*)\]'
    NEARCALL = r'(?i:near)/\d+\s*\(\s*[^\s(),\[\]"]+\s*,\s*[^\s(),\[\]"]+\s*\)'
    NEAR = r'(?i:near)/\d+(?![^\s()\[\]"])'
    PHRASE = r'"[^"]*"'
    TAG = r'\[[^\[\]"]*\]'
    LPAREN = r"\("
    RPAREN = r"\)"
    MINUS = r"-(?=[^\s\-)\]])"
    WORD = r'[^\s()\[\]"\-]' + _WORDCHARS + "*"

    def error(self, t):
        ch = t.value[0]
        pos = self.index
        if ch == '"':
            raise BQLSyntaxError("unterminated quote", pos, 'close the phrase with a second "')
        if ch == "[":
            raise BQLSyntaxError(
                "unterminated '['", pos, "close the tag with ']', as in word[title]"
            )
        if ch == "]":
            raise BQLSyntaxError("unexpected ']'", pos, "a tag is written word[field]")
        if ch == "-":
            raise BQLSyntaxError(
                "'-' must be followed directly by a term", pos, "write -word or NOT word"
            )
        raise BQLSyntaxError(f"unexpected character {ch!r}", pos, "quote it inside a phrase")


def _word_type(word: str) -> str | None:
    """The type of a WORD token: an operator, PREFIX for `word*`, else WORD; None for a malformed
    NEAR (`near/3x`, `NEAR/2(a b)`)."""
    if word[:5].lower() == "near/":
        return None
    upper = word.upper() if len(word) <= 3 else ""  # operators are two or three letters
    if upper in OPERATORS:
        return upper
    return "PREFIX" if word[-1] == "*" else "WORD"


def tokenize(text: str):
    """sly tokens of `text` with `Tok` values; operator words and `word*` get their own types."""
    for t in BQLLexer().tokenize(text):
        if t.type == "WORD":
            kind = _word_type(t.value)
            if kind is None:
                raise BQLSyntaxError(
                    f"malformed {t.value.split('(')[0]!r}",
                    t.index,
                    "write a NEAR/3 b or NEAR/3(a, b) with single words",
                )
            t.type = kind
        t.value = Tok(t.value, t.index)
        yield t


# The lexer's own patterns, in its order (sly tries them in turn; an alternation takes the first
# that matches, which is the same token), after a run of the characters it ignores.
_SCAN = re.compile(
    "["
    + re.escape(BQLLexer.ignore)
    + "]*(?:"
    + "|".join(
        f"(?P<{name}>{pattern})"
        for name, pattern in vars(BQLLexer).items()
        if name in BQLLexer.tokens
    )
    + ")"
)
_TRAILING = re.compile("[" + re.escape(BQLLexer.ignore) + "]*")


def scan(text: str) -> list[tuple[str, Tok]] | None:
    """`tokenize` without sly's per-token objects: (type, Tok) pairs, or None wherever `tokenize`
    would raise (the caller then runs the lexer for its message)."""
    out: list[tuple[str, Tok]] = []
    at = 0
    for m in _SCAN.finditer(text):
        if m.start() != at:  # characters no token takes: the lexer's error
            return None
        at = m.end()
        kind = m.lastgroup
        pos = m.start(kind)  # type: ignore[arg-type]  # a match names its group
        value = m.group(kind)  # type: ignore[arg-type]  # a match names its group
        if kind == "WORD":
            kind = _word_type(value)
            if kind is None:
                return None
        out.append((kind, Tok(value, pos)))  # type: ignore[arg-type]  # kind: a str here
    return out if _TRAILING.match(text, at).end() == len(text) else None  # type: ignore[union-attr]  # matches the empty string
