"""Analyzers: how text becomes terms, the same for indexing and querying.

Every analyzer first folds and splits text (`words`): NFKC, full Unicode case folding (`str.casefold`, so `ß` = `ss`), combining marks removed (so
`zurich` matches `Zürich`), then split on every character that is not a letter or digit
(`O_RDONLY` -> `o`, `rdonly`), numbers kept. The `plain` analyzer (the default) stops there; the
others then stem each word with a Snowball stemmer (PyStemmer): `english` maps `compressing`,
`compressed` and `compresses` to `compress`. An index records its analyzer in its manifest and
every query is analysed with it (`Analyzer.of_manifest`).

Every step runs in CPython's C code (`unicodedata`, `str.translate`, `re.findall`): on this
project's machines that measured faster than the `tokenizers` Rust normalizers and pre-tokenizers
called from Python (20 MB of text: 1.2 s for `re.findall` against 11.6 s for
`pre_tokenize_str`), and pure-ASCII text, the common case, skips the Unicode steps entirely.
"""

from __future__ import annotations

import re
import threading
import unicodedata
from typing import Any

from sieve.errors import InvalidArgumentError, UnknownAnalyzerError

# Version of the folding and splitting rules; stored in the manifest so an index built with other
# rules is refused. A stemmed analyzer's id appends the algorithm: "sieve-fold-1+snowball-english".
ANALYZER_ID = "sieve-fold-1"
_SNOWBALL = "+snowball-"

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


def _stemmer_module() -> Any:
    try:
        import Stemmer  # PyStemmer: Snowball's C stemmers
    except ImportError:  # pragma: no cover - a core dependency
        raise InvalidArgumentError("stemming analyzers need PyStemmer: pip install PyStemmer") from None
    return Stemmer


def analyzer_names() -> list[str]:
    """Every analyzer name `build_index(analyzer=...)` and `sieve index --analyzer` accept."""
    return ["plain", *sorted(_stemmer_module().algorithms())]


class Analyzer:
    """Fold and split (`words`), then stem each word unless the analyzer is `plain`.

    Safe to share between threads: a Snowball stemmer object is not, so each thread gets its own.
    Stemming maps one word to one term, so a text has as many terms as words and positions are
    the same under every analyzer.
    """

    def __init__(self, name: str) -> None:
        if name != "plain" and name not in _stemmer_module().algorithms():
            raise InvalidArgumentError(f"unknown analyzer {name!r}; known: {', '.join(analyzer_names())}")
        self.name = name
        self.id = ANALYZER_ID if name == "plain" else ANALYZER_ID + _SNOWBALL + name
        self.stems = name != "plain"
        self._local = threading.local()

    def __repr__(self) -> str:
        return f"Analyzer({self.name!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Analyzer) and other.name == self.name

    def __hash__(self) -> int:
        return hash(self.name)

    def __reduce__(self) -> tuple[Any, ...]:  # worker processes get the name, and make their own stemmer
        return (get_analyzer, (self.name,))

    @staticmethod
    def words(text: str) -> list[str]:
        """The folded words of `text`, in order, before stemming."""
        return analyze(text)

    def stem(self, words: list[str]) -> list[str]:
        """`words` (already folded) stemmed, one term each. A stem is never empty: a word the
        stemmer would erase stays as it is."""
        if not self.stems or not words:
            return words
        stemmer = getattr(self._local, "stemmer", None)
        if stemmer is None:
            # Its cache keeps the frequent words' stems: most calls are dictionary hits.
            stemmer = self._local.stemmer = _stemmer_module().Stemmer(self.name, 100_000)
        return [s or w for s, w in zip(stemmer.stemWords(words), words)]

    def analyze(self, text: str) -> list[str]:
        """The terms of `text`, in order; a term's index in the list is its position."""
        return self.stem(analyze(text))

    @classmethod
    def of_manifest(cls, analyzer_id: object, where: str) -> "Analyzer":
        """The analyzer a manifest names; an error naming `where` for one this sieve does not know."""
        if analyzer_id == ANALYZER_ID:
            return PLAIN
        if isinstance(analyzer_id, str) and analyzer_id.startswith(ANALYZER_ID + _SNOWBALL):
            name = analyzer_id[len(ANALYZER_ID + _SNOWBALL):]
            try:
                return get_analyzer(name)
            except InvalidArgumentError:
                pass
        raise UnknownAnalyzerError(where, analyzer_id, analyzer_names())


_BY_NAME: dict[str, Analyzer] = {}


def get_analyzer(name: str) -> Analyzer:
    """The analyzer called `name` (`plain`, `english`, or another Snowball algorithm's name).
    Raises InvalidArgumentError listing the known names."""
    if not isinstance(name, str):
        raise InvalidArgumentError(f"an analyzer is named by a string, got {type(name).__name__}; known: {', '.join(analyzer_names())}")
    found = _BY_NAME.get(name)
    return found if found is not None else _BY_NAME.setdefault(name, Analyzer(name))


PLAIN = get_analyzer("plain")
