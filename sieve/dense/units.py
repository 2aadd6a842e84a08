"""What is embedded for each document: its text (`document_text`) or its passages (`passages`),
each row's key (`row_layout`), and the index as the dense layer sees it (`IndexView`)."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Protocol

import numpy as np

from sieve.corpus.documents import INTRO
from sieve.engine.segment.snapshot import Snapshot
from sieve.errors import InvalidArgumentError

DOC_CHARS = 2000  # the model reads about 256 word pieces; more text only costs time
# with its title and heading, a passage stays within the model's 256 word pieces (English prose:
# ~1.3 a word)
PASSAGE_WORDS = 128
# in the order an index holding both is opened: passages exist only where they were asked for
UNITS = ("passage", "document")
# What `sieve embed` makes unless told: on the NAME-line task the document unit ranks as well or
# better at a eighteenth of the rows (benchmarks/bench_dense_units.py, docs/ranking.md).
DEFAULT_UNIT = "document"


class IndexView(Protocol):
    """The opened index as the dense layer reads it (`sieve.Index` is one): its folder, the
    commit point it reads, its documents, and their order."""

    path: Path
    commit_dir: Path
    reader: Snapshot  # document-level reads by internal number
    snapshot: Snapshot  # the same: `order`, `dense`

    def __len__(self) -> int: ...

    def doc_numbers(self) -> np.ndarray: ...


def first_rows(owner: np.ndarray) -> np.ndarray:
    """Where each document's rows start, and the end: document row r has rows [out[r], out[r + 1])
    (owner ascends from 0 by steps of 0 or 1, so every document has a row)."""
    return np.append(np.flatnonzero(np.diff(owner, prepend=-1)), len(owner))


def document_text(index: IndexView, d: int) -> str:
    """What the encoder reads for a document: its title, then its sections' text."""
    r = index.reader
    parts = [r.meta(d)["title"]]
    size = len(parts[0])
    for j in range(r.section_count(d)):
        if size >= DOC_CHARS:
            break
        text = r.section_text(d, j)
        parts.append(text)
        size += len(text)
    return "\n".join(parts)[:DOC_CHARS]


def _section_words(index: IndexView, d: int) -> Iterator[tuple[int, list[str]]]:
    """Each section of a document that has words: (its number, its words)."""
    r = index.reader
    for j in range(r.section_count(d)):
        words = r.section_text(d, j).split()
        if words:
            yield j, words


def passages(index: IndexView, d: int) -> list[str]:
    """What the encoder reads for a document, passage by passage: each section's text in pieces of
    at most PASSAGE_WORDS words, each headed by the title and the section's heading (a piece of
    a long section is about what its heading says). A document without text is its title."""
    title = index.reader.meta(d)["title"]
    headings = index.reader.headings(d)
    out = []
    for j, words in _section_words(index, d):
        head = title if headings[j] == INTRO else f"{title} \u2014 {headings[j]}"
        for a in range(0, len(words), PASSAGE_WORDS):
            out.append(head + "\n" + " ".join(words[a : a + PASSAGE_WORDS]))
    return out or [title]


def passage_section(index: IndexView, d: int, p: int) -> int | None:
    """The number of the section that passage `p` (0-based, as `passages` lists them) of document
    `d` comes from; None for the title-only passage of a document without text."""
    for j, words in _section_words(index, d):
        count = -(-len(words) // PASSAGE_WORDS)
        if p < count:
            return j
        p -= count
    return None


def pieces_of(unit: str) -> Callable[[IndexView, int], list[str]]:
    if unit not in UNITS:
        raise InvalidArgumentError(f"unknown embedding unit {unit!r}; known: {', '.join(UNITS)}")
    return passages if unit == "passage" else lambda index, d: [document_text(index, d)]


def row_layout(
    index: IndexView, docs: list[int], pieces: Callable[[IndexView, int], list[str]]
) -> tuple[np.ndarray, np.ndarray]:
    """(owner, keys): the document row of every row to embed, and one 64-bit key per row, from the
    document's id and the row's text. A vector computed for a key can be reused by any later
    commit point that has a document with the same id and text."""
    owner: list[int] = []
    keys: list[int] = []
    for row, d in enumerate(docs):
        prefix = index.reader.doc_id(d).encode() + b"\0"
        for text in pieces(index, d):
            owner.append(row)
            keys.append(
                int.from_bytes(
                    hashlib.blake2b(prefix + text.encode(), digest_size=8).digest(), "little"
                )
            )
    return np.asarray(owner, dtype=np.int32), np.asarray(keys, dtype=np.uint64)


class RowTexts:
    """The texts of rows [a, b) of an embedding, recomputed a document at a time."""

    def __init__(
        self,
        index: IndexView,
        docs: np.ndarray,
        owner: np.ndarray,
        pieces: Callable[[IndexView, int], list[str]],
    ) -> None:
        self.index, self.docs, self.owner, self.pieces = index, docs, owner, pieces
        self.first = first_rows(owner)
        self._cached: tuple[int, list[str]] = (-1, [])

    def __call__(self, row: int) -> str:
        doc_row = int(self.owner[row])
        if self._cached[0] != doc_row:
            self._cached = (doc_row, self.pieces(self.index, int(self.docs[doc_row])))
        return self._cached[1][row - int(self.first[doc_row])]
