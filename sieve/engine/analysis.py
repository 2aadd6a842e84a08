"""The one analyzer, shared by indexing and querying.

NFKC, full Unicode case folding (`str.casefold`, so `ß` = `ss`), combining marks removed (so
`zurich` matches `Zürich`), then split on every character that is not a letter or digit
(`O_RDONLY` -> `o`, `rdonly`). No stemming, no stop words, numbers kept.

Every step runs in CPython's C code (`unicodedata`, `str.translate`, `re.findall`): on this
project's machines that measured faster than the `tokenizers` Rust normalizers and pre-tokenizers
called from Python (20 MB of text: 1.2 s for `re.findall` against 11.6 s for
`pre_tokenize_str`), and pure-ASCII text, the common case, skips the Unicode steps entirely.
"""

from __future__ import annotations

import re
import unicodedata

# Version of the analysis rules; stored in the manifest so an index built with other rules is refused.
ANALYZER_ID = "sieve-fold-1"

_ASCII_WORD = re.compile(r"[a-z0-9]+")
_WORD = re.compile(r"[^\W_]+")


class _MarkTable(dict):  # type: ignore[type-arg]
    """A `str.translate` table that deletes combining marks, filled in as characters are first seen:
    building it for every code point up front cost a 0.3-1 s pause on the first non-ASCII text.
    A character that is not a mark maps to itself, so it is looked up in C from then on."""

    def __missing__(self, cp: int) -> int | None:
        value = None if unicodedata.category(chr(cp)).startswith("M") else cp
        self[cp] = value
        return value


_MARKS = _MarkTable()
_NON_ASCII = re.compile(r"[^\x00-\x7f]+")


def _strip_marks(m: re.Match[str]) -> str:
    return m.group().translate(_MARKS)


def fold(text: str) -> str:
    """Normalise `text` as the analyzer sees it (before splitting)."""
    if text.isascii():
        return text.lower()
    folded = unicodedata.normalize("NFKC", text).casefold()
    # Marks are never ASCII: translate only the non-ASCII runs (4x faster on mostly-ASCII text).
    stripped = _NON_ASCII.sub(_strip_marks, unicodedata.normalize("NFD", folded))
    # Recompose what is left (Hangul syllables, for instance) so terms print as people write them.
    return unicodedata.normalize("NFC", stripped)


def analyze(text: str) -> list[str]:
    """The list of terms of `text`, in order; a term's index in the list is its position."""
    if text.isascii():
        return _ASCII_WORD.findall(text.lower())
    return _WORD.findall(fold(text))



SEPARATOR = "\x00"  # never part of a term, so it can mark where one text ends in a joined batch
_WORD_OR_SEP = re.compile(r"[^\W_]+|\x00")


def _no_nul(text: str) -> str:
    return text.replace(SEPARATOR, " ") if SEPARATOR in text else text


def analyze_joined(texts: list[str]) -> list[str]:
    """The terms of many texts in one pass, each text's terms followed by SEPARATOR.

    Equal to concatenating `analyze(t) + [SEPARATOR]` for each text, but one regex call per batch
    instead of one per text: indexing spends most of its time here.
    """
    # A NUL inside a text would read as the end of a unit: it separates words, like a space.
    joined = SEPARATOR.join(_no_nul(t.lower() if t.isascii() else fold(t)) for t in texts) + SEPARATOR
    return _WORD_OR_SEP.findall(joined)
