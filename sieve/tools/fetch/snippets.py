"""Query-focused snippets: the window of a document's text that holds most of the query's terms.

The query's syntax never shows: a snippet is a run of the document's own words. Windows of
`width` whitespace words are scored by the distinct positive terms they contain (then by how many
occurrences); words are compared after the same analysis the index uses, so `Zürich` in the text
matches `zurich` in the query and `O_RDONLY` matches its terms.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import numpy as np

from sieve.engine.analysis.analyzers import PLAIN, Analyzer, fold
from sieve.engine.rank.results import Results
from sieve.tools.shell.safe import inline

_WORD = re.compile(r"\S+")
MAX_WORD_CHARS = 40  # a base64 blob or a URL is one "word" but floods a card
# Every character `str.split()` and the regex `\S` treat as space (a test checks the list).
SPACES = np.array(
    [
        9,
        10,
        11,
        12,
        13,
        28,
        29,
        30,
        31,
        32,
        0x85,
        0xA0,
        0x1680,
        *range(0x2000, 0x200B),
        0x2028,
        0x2029,
        0x202F,
        0x205F,
        0x3000,
    ],
    dtype=np.uint32,
)


@dataclass(frozen=True)
class Matcher:
    """The positive terms and prefix stems of a query, as analysed terms, and the analyzer that
    made them (the index's): a word of a text hits when it analyses to one of them."""

    terms: frozenset[str]
    stems: tuple[str, ...] = ()
    analyzer: Analyzer = PLAIN

    @classmethod
    def of(cls, results: Results) -> Matcher:
        """The matcher of a search's query (its terms come analysed with the results: no second
        parse)."""
        return cls(frozenset(results.terms), results.stems, results.analyzer)

    def __bool__(self) -> bool:
        return bool(self.terms or self.stems)

    def hits(self, word: str) -> frozenset[str]:
        """The query terms (or stems) one whitespace word contains."""
        found = set()
        for t in self.analyzer.analyze(word):
            if t in self.terms:
                found.add(t)
            found.update(s for s in self.stems if t.startswith(s))
        return frozenset(found)

    def may_occur(self, text: str) -> bool:
        """A cheap test that rules a text out before scanning its words. A stem need not be a
        substring of the words it comes from (`happi` from `happy`, `die` from `dying`), so with a
        stemming analyzer only a text without any word rules itself out."""
        if self.analyzer.stems:
            return bool(self) and any(c.isalnum() for c in text)
        folded = fold(text)
        return any(t in folded for t in self.terms) or any(s in folded for s in self.stems)


@dataclass(frozen=True)
class Snippet:
    section: int  # the section it was taken from
    text: str
    hits: frozenset[str]  # query terms it shows


Hits = list[tuple[int, frozenset[str]]]  # (word number, query terms in that word), ascending


_IS_SPACE = np.zeros(int(SPACES.max()) + 1, dtype=bool)
_IS_SPACE[SPACES] = True


def _spans(text: str) -> tuple[np.ndarray, np.ndarray]:
    """(starts, ends) of the whitespace-separated words of `text`, by numpy over code points."""
    if text.isascii():
        space = _IS_SPACE[np.frombuffer(text.encode("ascii"), dtype=np.uint8)]
    else:
        cps = np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32)
        space = _IS_SPACE[np.minimum(cps, len(_IS_SPACE) - 1)] & (cps < len(_IS_SPACE))
    word = ~space
    starts = np.flatnonzero(word & np.concatenate(([True], space[:-1])))
    ends = np.flatnonzero(word & np.concatenate((space[1:], [True]))) + 1
    return starts, ends


def _term_starts(lower: str, needles: Iterable[str]) -> list[int]:
    """Offsets of an ASCII text where a needle starts at a word boundary (no letter or digit before
    it). `str.find` runs at memchr speed; a regex alternation tried at every offset is several times
    slower."""
    at = []
    for t in needles:
        i = lower.find(t)
        while i >= 0:
            if i == 0 or not lower[i - 1].isalnum():  # `lower` is ASCII
                at.append(i)
            i = lower.find(t, i + 1)
    return at


def word_hits(text: str, matcher: Matcher) -> tuple[Hits, np.ndarray, np.ndarray]:
    """(hits, word starts, word ends) of a text, the same as analysing every word, but vectorised.

    Candidates are the words where the ASCII pattern matches (non-ASCII characters blanked, so
    offsets stay put) and every word that holds a non-ASCII character; only those are analysed.
    """
    starts, ends = _spans(text)
    if matcher.analyzer.stems:
        return _stemmed_hits(text, matcher, starts, ends), starts, ends
    view = text if text.isascii() else text.encode("ascii", "replace").decode("ascii")
    at = _term_starts(view.lower(), matcher.terms | set(matcher.stems))
    candidates = set(
        (np.searchsorted(starts, np.asarray(at, dtype=np.int64), side="right") - 1).tolist()
    )
    if not text.isascii():
        wide = np.flatnonzero(np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32) > 127)
        candidates.update((np.searchsorted(starts, wide, side="right") - 1).tolist())
    cache: dict[str, frozenset[str]] = {}
    hits: Hits = []
    for w in sorted(c for c in candidates if c >= 0):
        word = text[starts[w] : ends[w]]
        hs = cache[word] if word in cache else cache.setdefault(word, matcher.hits(word))
        if hs:
            hits.append((w, hs))
    return hits, starts, ends


def _stemmed_hits(text: str, matcher: Matcher, starts: np.ndarray, ends: np.ndarray) -> Hits:
    """`word_hits` under a stemming analyzer: every distinct word is analysed (stems cannot be
    found by substring search), each once, its words stemmed in one call."""
    words = [text[a:b] for a, b in zip(starts.tolist(), ends.tolist())]
    distinct = list(dict.fromkeys(words))
    pieces = [Analyzer.words(w) for w in distinct]
    flat = matcher.analyzer.stem([p for ws in pieces for p in ws])
    stems = set(matcher.stems)
    by_word: dict[str, frozenset[str]] = {}
    at = 0
    for w, ws in zip(distinct, pieces):
        terms = flat[at : at + len(ws)]
        at += len(ws)
        found = {t for t in terms if t in matcher.terms}
        if stems:
            found.update(s for t in terms for s in stems if t.startswith(s))
        by_word[w] = frozenset(found)
    return [(i, by_word[w]) for i, w in enumerate(words) if by_word[w]]


def best_window(hits: Hits, n: int, width: int) -> tuple[tuple[int, int], int]:
    """((distinct terms, occurrences), first word) of the best window of `width` words; windows
    start at a hit (a best window can always be moved to one); the earliest among equals. Then the
    window is moved so that its hits sit in the middle, with context on both sides."""
    best, best_at = (0, 0), -1
    counts: dict[str, int] = {}
    total = j = 0
    for i, (w, _) in enumerate(hits):
        while j < len(hits) and hits[j][0] < w + width:
            for t in hits[j][1]:
                counts[t] = counts.get(t, 0) + 1
            total += len(hits[j][1])
            j += 1
        if (len(counts), total) > best:
            best, best_at = (len(counts), total), i
        for t in hits[i][1]:
            counts[t] -= 1
            if not counts[t]:
                del counts[t]
        total -= len(hits[i][1])
    if best_at < 0:
        return best, 0
    first = hits[best_at][0]
    last = max(w for w, _ in hits[best_at:] if w < first + width)
    slack = width - (last - first + 1)
    return best, max(0, min(first - slack // 2, n - width))


def _short(word: str) -> str:
    word = inline(word)  # a control character inside a word (ESC, NUL) never reaches the reader
    return word if len(word) <= MAX_WORD_CHARS else word[:MAX_WORD_CHARS] + "…"


def window_text(
    words: list[str], start: int, n: int, marked: set[int], mark: Callable[[str], str] | None = None
) -> str:
    """`words` (the words start.. of a text of n words) joined by single spaces, with `…` where
    the text goes on; `mark` decorates the words whose number is in `marked`."""
    shown = [_short(w) for w in words]
    if mark is not None:
        shown = [mark(w) if start + i in marked else w for i, w in enumerate(shown)]
    return ("…" if start > 0 else "") + " ".join(shown) + ("…" if start + len(words) < n else "")


def _words_at(text: str, offset: int, count: int) -> list[str]:
    return [m.group() for m, _ in zip(_WORD.finditer(text, offset), range(count))]


def best_snippet(
    sections: Iterable[tuple[int, str]],
    matcher: Matcher,
    width: int = 25,
    mark: Callable[[str], str] | None = None,
    screen: bool = True,
) -> Snippet | None:
    """The best window over `(section number, text)` pairs; the lead of the first non-empty
    section when no window holds a query term; None when every text is empty. `mark` decorates
    the words that hold a query term (colour on a terminal). `screen=False` skips the cheap test
    that rules a text out, for texts known to hold a query term."""
    best: tuple[tuple[int, int], Snippet] | None = None
    lead: Snippet | None = None
    for j, text in sections:
        if lead is None and text.strip():
            words = _words_at(text, 0, width + 1)
            lead = Snippet(j, window_text(words[:width], 0, len(words), set()), frozenset())
        if not matcher or not text.strip() or (screen and not matcher.may_occur(text)):
            continue
        hits, starts, ends = word_hits(text, matcher)
        score, start = best_window(hits, len(starts), width)
        if score[0] > 0 and (best is None or score > best[0]):
            words = [
                text[a:b]
                for a, b in zip(
                    starts[start : start + width].tolist(), ends[start : start + width].tolist()
                )
            ]
            inside = [(w, hs) for w, hs in hits if start <= w < start + width]
            shown = frozenset().union(*(hs for _, hs in inside))
            best = (
                score,
                Snippet(
                    j, window_text(words, start, len(starts), {w for w, _ in inside}, mark), shown
                ),
            )
    return best[1] if best else lead
