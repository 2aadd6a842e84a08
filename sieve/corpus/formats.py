"""Reading corpora: JSON Lines files, BEIR folders and iterables of records, with every bad record
named."""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import zlib
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Literal

import numpy as np

from sieve.common import files, jsonio
from sieve.corpus import folders
from sieve.corpus.documents import Document, checked_document, unknown_keys
from sieve.errors import CorpusError, InvalidArgumentError

Source = str | os.PathLike | Iterable[Any]
OnError = Literal["raise", "skip"]


MAX_ERRORS = 20  # bad records a report quotes (it counts them all)


@dataclass
class CorpusReport:
    """What reading a corpus found: documents read, records skipped and why (first few kept)."""

    documents: int = 0
    skipped: int = 0
    errors: list[str] = field(default_factory=list)
    source: str = ""
    kept: int = 0  # documents whose text under unknown keys was kept as metadata (lenient reads)
    # A folder's files passed over, by why (folders.UNREAD: links, special, oversized, unreadable),
    # and the first few of them, "file: why".
    unread: dict[str, int] = field(default_factory=dict)
    unread_files: list[str] = field(default_factory=list)

    def note(self, err: CorpusError) -> None:
        self.skipped += 1
        if len(self.errors) < MAX_ERRORS:
            self.errors.append(str(err))

    def pass_over(self, why: str, note: str) -> None:
        """Count a folder's file that is not read (`why`: one of folders.UNREAD)."""
        self.unread[why] = self.unread.get(why, 0) + 1
        if len(self.unread_files) < MAX_ERRORS:
            self.unread_files.append(note)


def corpus_file(path: str | os.PathLike) -> Path:
    """The JSONL file of a corpus path: the file itself, or `corpus.jsonl[.gz]` of a BEIR folder.
    (A folder without one is a folder of documents: sieve.corpus.folders reads it.) It must be a
    regular file: a FIFO or a device (`/dev/stdin`, `<(zcat ...)`) is refused, as the file is
    read more than once."""
    p = Path(path)
    if p.is_dir():
        found = [p / n for n in ("corpus.jsonl", "corpus.jsonl.gz") if os.path.lexists(p / n)]
        if not found:
            raise CorpusError("a folder corpus needs a corpus.jsonl (BEIR layout)", str(p))
        p = found[0]
    elif not os.path.lexists(p):
        raise CorpusError("no such file or folder", str(p))
    try:
        files.regular_file(p)
    except OSError as e:
        hint = (
            ": write the corpus to a file first"
            if isinstance(e, files.NotRegularFileError) and "FIFO" in e.what
            else ""
        )
        raise CorpusError(f"the corpus {files.reason(e)}{hint}", str(p)) from None
    return p


def _opened(path: Path) -> IO[bytes]:
    """The corpus file opened (never blocking on what was swapped in since `corpus_file`), or a
    CorpusError naming it."""
    try:
        return files.open_binary(path)
    except OSError as e:
        raise CorpusError(f"the corpus {files.reason(e)}", str(path)) from None


@contextmanager
def _open_bytes(path: Path) -> Iterator[IO[bytes]]:
    with _opened(path) as raw:
        if path.suffix != ".gz":
            yield raw
            return
        with gzip.open(raw, "rb") as fh:
            yield fh  # type: ignore[misc]  # a GzipFile is the binary IO the others are


_BOM = b"\xef\xbb\xbf"
# What a damaged or cut-short gzip stream raises while it is read.
_STREAM_ERRORS = (EOFError, OSError, zlib.error)


def _line(name: str, lineno: int, raw: bytes) -> str | CorpusError | None:
    """One line as `raw_lines` gives it: its text (a first line's byte-order mark dropped), a
    CorpusError if it is not UTF-8, None if blank."""
    if lineno == 1 and raw.startswith(_BOM):
        raw = raw[len(_BOM) :]
    try:
        line = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        return CorpusError(
            f"not UTF-8 text ({e.reason} at byte {e.start + 1} of the line)", name, lineno
        )
    return line if line.strip() else None


def raw_lines(path: Path) -> Iterator[tuple[int, str | CorpusError]]:
    """(1-based line number, text) of each non-blank line, or a CorpusError for a line that is not
    UTF-8 (the lines after it are still read).

    Lines end at `\n` only: a `\r` inside a record (raw, in a JSON string) does not split it. A
    UTF-8 byte-order mark at the start of the file is dropped. A compressed file that ends early
    or is damaged gives one CorpusError at the line where reading stopped."""
    name = str(path)
    with _open_bytes(path) as fh:
        lineno = 0
        while True:
            try:
                raw = fh.readline()
            except _STREAM_ERRORS as e:
                yield (
                    lineno + 1,
                    CorpusError(
                        f"the compressed file is cut short or damaged here ({e}); the records "
                        "before this line were read",
                        name,
                        lineno + 1,
                    ),
                )
                return
            if not raw:
                return
            lineno += 1
            item = _line(name, lineno, raw)
            if item is not None:
                yield lineno, item


SPAN_READ = 8 << 20  # bytes `line_spans` reads at a time


def line_spans(
    path: Path, lines: int, read_size: int = SPAN_READ
) -> Iterator[tuple[int, int, int]]:
    """(byte offset, byte length, number of its first line) of consecutive pieces of a plain
    (uncompressed) file of `lines` lines each, the last maybe fewer: what `span_lines` reads.
    Lines end at \n, as readline's do; the file is read `read_size` bytes at a time and its
    newlines found by numpy (a Python loop over 100,000 lines took 0.17 s of the builder's time,
    beside the workers)."""
    with _opened(path) as fh:
        start = at = 0  # where the piece being counted starts; where the next read starts
        first, count = 1, 0  # the piece's first line; its lines so far
        while chunk := fh.read(read_size):
            ends = np.flatnonzero(np.frombuffer(chunk, dtype=np.uint8) == 10)  # each line's newline
            i = lines - count - 1  # the newline that completes the piece
            while i < len(ends):
                end = at + int(ends[i]) + 1
                yield start, end - start, first
                start, first = end, first + lines
                i += lines
            count = len(ends) - (i - lines + 1)  # lines of the piece after the last one yielded
            at += len(chunk)
        if at > start:  # the last piece, maybe ending in a line without a newline
            yield start, at - start, first


def span_lines(
    path: Path, offset: int, length: int, first: int
) -> list[tuple[int, str | CorpusError]]:
    """What `raw_lines` gives for the lines of one `line_spans` piece: a worker reads its own piece
    of the file instead of being sent the text."""
    name = str(path)
    with _opened(path) as fh:
        fh.seek(offset)
        data = fh.read(length)
    # the file was cut short after it was split: never index part of it silently
    if len(data) != length:
        raise CorpusError(
            f"the file changed while it was read (line {first} onward is gone)", name, first
        )
    pieces = data.split(b"\n")
    if pieces[-1] == b"":  # the piece ends with its last line's newline
        pieces.pop()
    out: list[tuple[int, str | CorpusError]] = []
    for lineno, raw in enumerate(pieces, first):
        item = _line(name, lineno, raw)
        if item is not None:
            out.append((lineno, item))
    return out


def parse_line(name: str, lineno: int, line: str) -> Any:
    """The JSON record of one line, or a CorpusError naming the line. Raw control characters inside
    strings (a tab, a lone `\r`) are accepted and kept: many crawls have them."""
    try:
        return jsonio.loads(line)
    except json.JSONDecodeError as e:
        return CorpusError(f"invalid JSON: {e.msg} (column {e.colno})", name, lineno)
    except RecursionError:
        return CorpusError("invalid JSON: nested too deeply", name, lineno)
    except ValueError:  # Python refuses to read an integer of more than 4,300 digits
        return CorpusError(
            "invalid JSON: a number too long to read (more than 4,300 digits)", name, lineno
        )


UNREAD = object()  # a record `records` was told to pass over unparsed


def records(
    source: Source, unread: Callable[[str], bool] | None = None, report: CorpusReport | None = None
) -> Iterator[tuple[str | None, int, Any]]:
    """(file, 1-based line or record number, parsed record or a CorpusError). `unread(line)`: True
    for a JSON line certainly not wanted, given as UNREAD without being parsed (one shard's build
    passing over the others' lines). `report`: where a folder's files passed over are counted."""
    if isinstance(source, (str, os.PathLike)) and folders.is_document_folder(source):
        yield from folders.records(source, None if report is None else report.pass_over)
    elif isinstance(source, (str, os.PathLike)):
        path = corpus_file(source)
        name = str(path)
        for lineno, line in raw_lines(path):
            if isinstance(line, CorpusError):
                yield name, lineno, line
            elif unread is not None and unread(line):
                yield name, lineno, UNREAD
            else:
                yield name, lineno, parse_line(name, lineno, line)
    else:
        for i, rec in enumerate(source, 1):
            yield None, i, rec


def count_records(source: Source) -> int | None:
    """About how many records `source` holds, cheaply, for a progress total: the lines of a JSONL
    file (blank ones too: an upper bound), the files of a document folder; None for what cannot be
    counted without reading it all (a gzipped file, an iterable)."""
    if not isinstance(source, (str, os.PathLike)):
        return None
    try:
        if folders.is_document_folder(source):
            folder = source if isinstance(source, folders.Folder) else folders.Folder(source)  # type: ignore[arg-type]  # any path
            return len(folders.document_files(Path(folder.path), folder.max_file_bytes))
        path = corpus_file(source)
        if path.suffix == ".gz":
            return None
        lines = 0
        last = b"\n"
        with _opened(path) as fh:
            while chunk := fh.read(1 << 24):
                lines += chunk.count(b"\n")
                last = chunk[-1:]
        return lines + (last != b"\n")
    except (OSError, CorpusError):
        return None  # the build itself will say what is wrong


def id_key(doc_id: str) -> bytes:
    """What `IdRegistry` keeps of an id: its 128-bit blake2b digest."""
    return hashlib.blake2b(doc_id.encode("utf-8", "surrogatepass"), digest_size=16).digest()


def duplicate_id(doc_id: str, first: int, file: str | None, line: int) -> CorpusError:
    """The error of a record whose id `doc_id` was first seen at line `first`."""
    return CorpusError(f"duplicate id {doc_id!r} (first seen at line {first})", file, line)


class IdRegistry:
    """Remembers where each id was first seen, to name both lines of a duplicate, in bounded memory.

    A dict of 10M id strings took over a gigabyte. Here each id is a 128-bit blake2b digest (a
    collision is about one in 10^24 at that size) with its line, about 24 bytes an id: the newest in
    a dict, the rest in sorted numpy arrays merged as they grow, which a lookup binary-searches.
    Once the arrays exist, a bitmap of hashed digests answers "never seen" for most new ids (at 10M
    ids about 4% of new ids reach the arrays).
    """

    RECENT = 1 << 16  # digests kept in the dict before they join the sorted arrays
    BITS = 1 << 28  # the bitmap (32 MiB), made with the first sorted array

    def __init__(self) -> None:
        self._recent: dict[bytes, int] = {}
        # (sorted digests 'S16', their lines), largest first
        self._levels: list[tuple[np.ndarray, np.ndarray]] = []
        self._bitmap: bytearray | None = None

    def _first_line(self, key: bytes) -> int | None:
        line = self._recent.get(key)
        if line is not None or not self._levels:
            return line
        probe = np.array([key], dtype="S16")
        for keys, lines in self._levels:
            i = int(np.searchsorted(keys, probe)[0])
            if i < len(keys) and keys[i] == probe[0]:  # both as numpy strips them (trailing NULs)
                return int(lines[i])
        return None

    def _spill(self) -> None:
        keys = np.array(list(self._recent), dtype="S16")
        lines = np.fromiter(self._recent.values(), dtype=np.int64, count=len(self._recent))
        self._recent = {}
        if self._bitmap is None:
            self._bitmap = bytearray(self.BITS >> 3)
        bits = keys.view(np.uint64)[::2] & np.uint64(self.BITS - 1)  # the digest's first 8 bytes
        np.bitwise_or.at(
            np.frombuffer(self._bitmap, dtype=np.uint8),
            (bits >> np.uint64(3)).astype(np.int64),
            (np.uint8(1) << (bits & np.uint64(7)).astype(np.uint8)),
        )
        order = np.argsort(keys, kind="stable")
        self._levels.append((keys[order], lines[order]))
        while len(self._levels) > 1 and len(self._levels[-1][0]) >= len(self._levels[-2][0]):
            (k2, l2), (k1, l1) = self._levels.pop(), self._levels.pop()
            keys, lines = np.concatenate([k1, k2]), np.concatenate([l1, l2])
            order = np.argsort(keys, kind="stable")
            self._levels.append((keys[order], lines[order]))

    def duplicate(self, doc_id: str, file: str | None, line: int) -> CorpusError | None:
        """A CorpusError naming `doc_id`'s first line if it was seen at another line before, else
        None (and `doc_id` is remembered at `line`)."""
        for _, first in self.first_lines([doc_id], [line]):
            return duplicate_id(doc_id, first, file, line)
        return None

    def first_lines(
        self, doc_ids: list[str], lines: list[int], keys: bytes | None = None
    ) -> list[tuple[int, int]]:
        """`duplicate` of each id in turn, as (its index, the line it was first seen at) for each
        seen before at another line. `keys`: the ids' `id_key`s, joined, when they were made
        already."""
        out: list[tuple[int, int]] = []
        recent, bitmap, wrap = self._recent, self._bitmap, self.BITS - 1
        for i, (doc_id, line) in enumerate(zip(doc_ids, lines)):
            key = id_key(doc_id) if keys is None else keys[16 * i : 16 * i + 16]
            first = None
            if bitmap is not None:
                bit = int.from_bytes(key[:8], "little") & wrap
                byte, flag = bitmap[bit >> 3], 1 << (bit & 7)
                if byte & flag:  # perhaps seen: look it up
                    first = self._first_line(key)
                else:
                    bitmap[bit >> 3] = byte | flag
            if first is None:
                first = recent.setdefault(key, line)
            if first != line:
                out.append((i, first))
        if len(recent) >= self.RECENT:
            self._spill()
        return out


def read_documents(
    source: Source,
    on_error: OnError = "raise",
    report: CorpusReport | None = None,
    lenient: bool = False,
    check: Callable[[Document, str | None, int], None] | None = None,
    select: Callable[[int, Any], bool] | None = None,
) -> Iterator[Document]:
    """Yield the documents of `source`. A bad record raises CorpusError, or is counted in `report`
    when skipping. Text under keys the format does not know is an error unless `lenient` (then kept
    as metadata, and counted). `check(document, file, line)`: more rules (a build's declared
    fields), raising CorpusError. `select(position, record)`: the records to read at all (position:
    1-based, over the whole source), before any check; the others are passed over unread and
    uncounted (one shard's share). A `select` with an `unread(line)` method lets JSON lines it can
    rule out go unparsed."""
    if on_error not in ("raise", "skip"):
        raise InvalidArgumentError(f"on_error must be 'raise' or 'skip', not {on_error!r}")
    report = report if report is not None else CorpusReport()
    report.source = str(source) if isinstance(source, (str, os.PathLike)) else "<iterable>"
    ids = IdRegistry()
    for position, (name, line, rec) in enumerate(
        records(source, getattr(select, "unread", None), report), 1
    ):
        if rec is UNREAD or (select is not None and not select(position, rec)):
            continue
        try:
            if isinstance(rec, CorpusError):
                raise rec
            doc = rec if isinstance(rec, Document) else checked_document(rec, name, line, lenient)
            if check is not None:
                check(doc, name, line)
            if lenient and isinstance(rec, dict) and unknown_keys(rec):
                report.kept += 1
            dup = ids.duplicate(doc.id, name, line)
            if dup is not None:
                raise dup
        except CorpusError as err:
            if on_error == "raise":
                raise
            report.note(err)
            continue
        report.documents += 1
        yield doc
