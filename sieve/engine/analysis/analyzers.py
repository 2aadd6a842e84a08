"""Analyzers: how text becomes terms, the same for indexing and querying.

Every analyzer first folds and splits text (`words`): NFKC, full Unicode case folding
(`str.casefold`, so `ß` = `ss`), combining marks removed (so `zurich` matches `Zürich`), then split
on every character that is not a letter or digit (`O_RDONLY` -> `o`, `rdonly`), numbers kept. The
`plain` analyzer (the default) stops there; the others then stem each word with a Snowball stemmer
(PyStemmer): `english` maps `compressing`, `compressed` and `compresses` to `compress`. Any analyzer
may also drop stop words (a list named `english`, Lucene's and tantivy's 33 words, or the user's
own): a stop word keeps its position but is not indexed, as in Lucene. An index records its analyzer
and stop words in its manifest and every query is analysed with them (`Analyzer.of_manifest`).

Every step runs in CPython's C code (`unicodedata`, `str.translate`, `re.findall`): on this
project's machines that measured faster than the `tokenizers` Rust normalizers and pre-tokenizers
called from Python (20 MB of text: 1.2 s for `re.findall` against 11.6 s for
`pre_tokenize_str`), and pure-ASCII text, the common case, skips the Unicode steps entirely.
"""

from __future__ import annotations

import hashlib
import re
import threading
import unicodedata
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np

from sieve.errors import IndexDamagedError, InvalidArgumentError, UnknownAnalyzerError

# Version of the folding and splitting rules; stored in the manifest so an index built with other
# rules is refused. A stemmed analyzer's id appends the algorithm: "sieve-fold-1+snowball-english".
ANALYZER_ID = "sieve-fold-1"
_SNOWBALL = "+snowball-"
_STOP_ID = "+stop-"  # then the first 8 hex digits of the stop list's SHA-256

# The term a stop word becomes: never a real term (no letter or digit), so it never matches a query
# term; the index keeps its position and nothing else.
STOP = "\x01"

# Built-in stop lists by name. `english` is the list Lucene's EnglishAnalyzer and tantivy's English
# stop-word filter use, so rankings compare with theirs under the same analysis.
STOP_LISTS: dict[str, frozenset[str]] = {
    "english": frozenset(
        [
            "a",
            "an",
            "and",
            "are",
            "as",
            "at",
            "be",
            "but",
            "by",
            "for",
            "if",
            "in",
            "into",
            "is",
            "it",
            "no",
            "not",
            "of",
            "on",
            "or",
            "such",
            "that",
            "the",
            "their",
            "then",
            "there",
            "these",
            "they",
            "this",
            "to",
            "was",
            "will",
            "with",
        ]
    ),
}

_ASCII_WORD = re.compile(r"[a-z0-9]+")
_WORD = re.compile(r"[^\W_]+")


class _MarkTable(dict):
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


def _no_nul(text: str) -> str:
    return text.replace(SEPARATOR, " ") if SEPARATOR in text else text


# Splitting a batch without the regex: every ASCII byte that is not a letter, digit or SEPARATOR
# becomes a space (one C pass over the UTF-8 bytes, which also lowers ASCII letters). Those bytes
# are never part of a term, so each term lies inside one chunk (a run of other bytes); a chunk of
# ASCII bytes is a term (on ASCII, [^\W_] is [A-Za-z0-9]), and only the few chunks with other
# characters need folding and the regex. The same terms as the regex finds, 3-4x faster on
# mostly-ASCII text.
_TERM_BYTES = bytes(
    c + 32 if 65 <= c <= 90 else c if 97 <= c <= 122 or 48 <= c <= 57 or c == 0 or c >= 128 else 32
    for c in range(256)
)


# What folding and the regex make of a chunk with other characters than ASCII (its bytes as the
# batch has them -> its words, as bytes apart by spaces): the same few chunks (typographic quotes,
# dashes, accented names) recur throughout a corpus, and folding one costs about 2 us.
_CHUNK_WORDS: dict[bytes, bytes] = {}
_CHUNKS_KEPT = 1 << 16


def _chunk_words(chunk: bytes) -> bytes:
    words = _CHUNK_WORDS.get(chunk)
    if words is None:
        if len(_CHUNK_WORDS) >= _CHUNKS_KEPT:
            _CHUNK_WORDS.clear()
        words = _CHUNK_WORDS[chunk] = " ".join(
            _WORD.findall(fold(chunk.decode("utf-8", "surrogatepass")))
        ).encode("utf-8", "surrogatepass")
    return words


def joined_bytes(texts: list[str]) -> bytes:
    """The terms of many texts as one UTF-8 byte string: terms apart by runs of spaces, each
    text's terms followed by a NUL (SEPARATOR). What indexing reads: its terms are
    `analyze_joined`'s, and a vocabulary can number them without making a string of each
    (sieve.engine.analysis.vocabulary).

    Folding commutes with the split: a chunk ends at an ASCII byte that is not a letter or digit,
    or at Unicode white space, which folding leaves a separator and which starts no composition
    that folding keeps. So only chunks with other characters than ASCII are folded, each alone
    (`_CHUNK_WORDS`), in text in another script too: folding such a text whole, then one regex
    pass, measured 5% faster on Cyrillic words drawn by a Zipf law, but 1.5x slower on man pages'
    texts with other characters and 2x on texts half Cyrillic, half ASCII.
    """
    if not texts:
        return b""
    joined = SEPARATOR.join(texts) + SEPARATOR
    if joined.count(SEPARATOR) != len(texts):
        # A NUL inside a text would read as the end of a unit: it separates words, like a space.
        texts = [_no_nul(t) for t in texts]
        joined = SEPARATOR.join(texts) + SEPARATOR
    if joined.isascii():  # most batches: one C pass
        return joined.encode("ascii").translate(_TERM_BYTES)
    raw = joined.encode("utf-8", "surrogatepass").translate(_TERM_BYTES)
    b = np.frombuffer(raw, dtype=np.uint8)
    high = np.flatnonzero(b >= 128)
    # The chunks holding those bytes: from the separator byte before a run of them to the one after.
    apart = np.flatnonzero(b <= 32)  # spaces and NULs; the last byte is a NUL
    # ascending: one per run, repeats adjacent
    after = apart.searchsorted(high[np.diff(high, prepend=-2) > 1])
    after = after[np.diff(after, prepend=-1) > 0]
    ends = apart[after]
    starts = np.where(after > 0, apart[after - 1] + 1, 0)
    pieces: list[bytes] = []
    at = 0
    for s, e in zip(starts.tolist(), ends.tolist()):
        pieces.append(raw[at:s])
        pieces.append(_chunk_words(raw[s:e]))
        at = e
    pieces.append(raw[at:])
    return b"".join(pieces)


def analyze_joined(texts: list[str]) -> list[str]:
    """The terms of many texts in one pass, each text's terms followed by SEPARATOR.

    Equal to concatenating `analyze(t) + [SEPARATOR]` for each text, but one pass per batch
    instead of one per text (`joined_bytes`, whose terms these are).
    """
    return joined_bytes(texts).decode("utf-8", "surrogatepass").replace(SEPARATOR, " \x00 ").split()


def _stemmer_module() -> Any:
    try:
        import Stemmer  # PyStemmer: Snowball's C stemmers
    except ImportError:  # pragma: no cover - a core dependency
        raise InvalidArgumentError(
            "stemming analyzers need PyStemmer: pip install PyStemmer"
        ) from None
    return Stemmer


def analyzer_names() -> list[str]:
    """Every analyzer name `build_index(analyzer=...)` and `sieve index --analyzer` accept."""
    return ["plain", *sorted(_stemmer_module().algorithms())]


def stop_list(spec: str | Iterable[str] | None) -> frozenset[str]:
    """The stop words `spec` names: None (none), a built-in list's name (`english`), a file of one
    word per line (`#` starts a comment), or the words themselves. Words are folded as text is."""
    if spec is None:
        return frozenset()
    if isinstance(spec, str):
        if spec in STOP_LISTS:
            return STOP_LISTS[spec]
        path = Path(spec)
        if not path.is_file():
            raise InvalidArgumentError(
                f"unknown stop-word list {spec!r}: name a built-in one "
                f"({', '.join(sorted(STOP_LISTS))}) or a file of one word per line"
            )
        try:
            lines = path.read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError) as e:
            raise InvalidArgumentError(f"cannot read the stop-word list {spec}: {e}") from None
        spec = [line.split("#", 1)[0].strip() for line in lines]
        spec = [w for w in spec if w]
    words: set[str] = set()
    for w in spec:
        if not isinstance(w, str):
            raise InvalidArgumentError(f"a stop word is a string, got {type(w).__name__}")
        folded = analyze(w)
        if len(folded) != 1:
            raise InvalidArgumentError(
                f"stop word {w!r} is not one word (it analyses to {folded or 'nothing'})"
            )
        words.add(folded[0])
    return frozenset(words)


class Analyzer:
    """Fold and split (`words`), drop stop words (if it has any), then stem each word unless the
    analyzer is `plain`.

    Safe to share between threads: a Snowball stemmer object is not, so each thread gets its own.
    Each word becomes one term (a stop word the STOP placeholder), so a text has as many positions
    as words, and positions are the same under every analyzer.
    """

    def __init__(self, name: str, stopwords: str | Iterable[str] | None = None) -> None:
        if name != "plain" and name not in _stemmer_module().algorithms():
            raise InvalidArgumentError(
                f"unknown analyzer {name!r}; known: {', '.join(analyzer_names())}"
            )
        self.name = name
        self.stopwords = stop_list(stopwords)
        self.id = ANALYZER_ID if name == "plain" else ANALYZER_ID + _SNOWBALL + name
        if self.stopwords:
            digest = hashlib.sha256("\n".join(sorted(self.stopwords)).encode()).hexdigest()[:8]
            self.id += _STOP_ID + digest
        self.stems = name != "plain"
        # a word's term is not always the word itself
        self.maps_words = self.stems or bool(self.stopwords)
        self._local = threading.local()

    def __repr__(self) -> str:
        extra = f", stopwords=<{len(self.stopwords)} words>" if self.stopwords else ""
        return f"Analyzer({self.name!r}{extra})"

    @property
    def label(self) -> str:
        """How people see it: the name, and how many stop words it drops."""
        return self.name + (f" with {len(self.stopwords)} stop words" if self.stopwords else "")

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, Analyzer)
            and other.id == self.id
            and other.stopwords == self.stopwords
        )

    def __hash__(self) -> int:
        return hash(self.id)

    # worker processes get the name and list, and make their own stemmer
    def __reduce__(self) -> tuple[Any, ...]:
        return (get_analyzer, (self.name, sorted(self.stopwords) or None))

    @staticmethod
    def words(text: str) -> list[str]:
        """The folded words of `text`, in order, before stemming."""
        return analyze(text)

    def stem(self, words: list[str], stop: bool = True) -> list[str]:
        """`words` (already folded) as terms, one each: a stop word is STOP (unless `stop` is
        False), the rest stemmed. A stem is never empty: a word the stemmer would erase stays."""
        if not words or not self.maps_words:
            return words
        if self.stems:
            stemmer = getattr(self._local, "stemmer", None)
            if stemmer is None:
                # Its cache keeps the frequent words' stems: most calls are dictionary hits.
                stemmer = self._local.stemmer = _stemmer_module().Stemmer(self.name, 100_000)
            terms = [s or w for s, w in zip(stemmer.stemWords(words), words)]
        else:
            terms = words
        if stop and self.stopwords:
            # Stop words are matched before stemming, as Lucene and tantivy do.
            terms = [STOP if w in self.stopwords else t for w, t in zip(words, terms)]
        return terms

    def analyze(self, text: str) -> list[str]:
        """The terms of `text`, in order; a term's index in the list is its position (a stop word
        holds its place as STOP)."""
        return self.stem(analyze(text))

    def manifest_fields(self) -> dict[str, Any]:
        """What a manifest records of this analyzer (`of_manifest` reads it back)."""
        return {
            "analyzer": self.id,
            **({"stopwords": sorted(self.stopwords)} if self.stopwords else {}),
        }

    @classmethod
    def of_manifest(cls, manifest: dict[str, Any], where: str) -> Analyzer:
        """The analyzer a manifest names; an error naming `where` for one this sieve does not know
        (or whose stop list does not match its id: damage)."""
        analyzer_id = manifest.get("analyzer")
        if not isinstance(analyzer_id, str) or not analyzer_id.startswith(ANALYZER_ID):
            raise UnknownAnalyzerError(where, analyzer_id, analyzer_names())
        base, _, _ = analyzer_id.partition(_STOP_ID)
        if base == ANALYZER_ID:
            name = "plain"
        elif base.startswith(ANALYZER_ID + _SNOWBALL):
            name = base[len(ANALYZER_ID + _SNOWBALL) :]
        else:
            raise UnknownAnalyzerError(where, analyzer_id, analyzer_names())
        stopwords = manifest.get("stopwords")
        if stopwords is not None and not (
            isinstance(stopwords, list) and all(isinstance(w, str) for w in stopwords)
        ):
            raise UnknownAnalyzerError(where, analyzer_id, analyzer_names())
        try:
            found = get_analyzer(name, stopwords or None)
        except InvalidArgumentError:
            raise UnknownAnalyzerError(where, analyzer_id, analyzer_names()) from None
        if found.id != analyzer_id:  # a stop list that is not the one the id was made from
            raise IndexDamagedError(
                f"{where}/manifest.json", f"its stop words do not match analyzer {analyzer_id!r}"
            )
        return found


_BY_NAME: dict[tuple[str, frozenset[str]], Analyzer] = {}


def get_analyzer(name: str, stopwords: str | Iterable[str] | None = None) -> Analyzer:
    """The analyzer called `name` (`plain`, `english`, or another Snowball algorithm's name), with
    the stop words `stopwords` names (see `stop_list`). Raises InvalidArgumentError listing the
    known names."""
    if not isinstance(name, str):
        raise InvalidArgumentError(
            f"an analyzer is named by a string, got {type(name).__name__}; known: "
            f"{', '.join(analyzer_names())}"
        )
    key = (name, stop_list(stopwords))
    found = _BY_NAME.get(key)
    return found if found is not None else _BY_NAME.setdefault(key, Analyzer(name, key[1]))


PLAIN = get_analyzer("plain")
