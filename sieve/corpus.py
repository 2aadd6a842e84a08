"""Reading corpora: JSON Lines files, BEIR folders and iterables of records, with every bad record named."""

from __future__ import annotations

import gzip
import json
import os
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Iterable, Iterator, Literal, Union

from sieve.documents import Document, checked_document
from sieve.errors import CorpusError, InvalidArgumentError

Source = Union[str, os.PathLike, Iterable[Any]]
OnError = Literal["raise", "skip"]


@dataclass
class CorpusReport:
    """What reading a corpus found: documents read, records skipped and why (first few kept)."""

    documents: int = 0
    skipped: int = 0
    errors: list[str] = field(default_factory=list)
    source: str = ""

    def note(self, err: CorpusError) -> None:
        self.skipped += 1
        if len(self.errors) < 20:
            self.errors.append(str(err))


def corpus_file(path: str | os.PathLike) -> Path:
    """The JSONL file of a corpus path: the file itself, or `corpus.jsonl[.gz]` of a BEIR folder."""
    p = Path(path)
    if p.is_dir():
        for name in ("corpus.jsonl", "corpus.jsonl.gz"):
            if (p / name).is_file():
                return p / name
        raise CorpusError("a folder corpus needs a corpus.jsonl (BEIR layout)", str(p))
    if not p.exists():
        raise CorpusError("no such file or folder", str(p))
    return p


def _open_bytes(path: Path) -> IO[bytes]:
    return gzip.open(path, "rb") if path.suffix == ".gz" else open(path, "rb")


_BOM = b"\xef\xbb\xbf"
# What a damaged or cut-short gzip stream raises while it is read.
_STREAM_ERRORS = (EOFError, OSError, zlib.error)


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
                yield lineno + 1, CorpusError(f"the compressed file is cut short or damaged here ({e}); the records before this line were read", name, lineno + 1)
                return
            if not raw:
                return
            lineno += 1
            if lineno == 1 and raw.startswith(_BOM):
                raw = raw[len(_BOM):]
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as e:
                yield lineno, CorpusError(f"not UTF-8 text ({e.reason} at byte {e.start + 1} of the line)", name, lineno)
                continue
            if line.strip():
                yield lineno, line


def parse_line(name: str, lineno: int, line: str) -> Any:
    """The JSON record of one line, or a CorpusError naming the line. Raw control characters inside
    strings (a tab, a lone `\r`) are accepted and kept: many crawls have them."""
    try:
        return json.loads(line, strict=False)
    except json.JSONDecodeError as e:
        return CorpusError(f"invalid JSON: {e.msg} (column {e.colno})", name, lineno)
    except RecursionError:
        return CorpusError("invalid JSON: nested too deeply", name, lineno)
    except ValueError:  # Python refuses to read an integer of more than 4,300 digits
        return CorpusError("invalid JSON: a number too long to read (more than 4,300 digits)", name, lineno)


def records(source: Source) -> Iterator[tuple[str | None, int, Any]]:
    """(file, 1-based line or record number, parsed record or a CorpusError)."""
    if isinstance(source, (str, os.PathLike)):
        path = corpus_file(source)
        name = str(path)
        for lineno, line in raw_lines(path):
            yield name, lineno, line if isinstance(line, CorpusError) else parse_line(name, lineno, line)
    else:
        for i, rec in enumerate(source, 1):
            yield None, i, rec


class IdRegistry:
    """Remembers where each id was first seen, to name both lines of a duplicate."""

    def __init__(self) -> None:
        self.seen: dict[str, int] = {}

    def duplicate(self, doc_id: str, file: str | None, line: int) -> CorpusError | None:
        first = self.seen.setdefault(doc_id, line)
        if first == line:
            return None
        return CorpusError(f"duplicate id {doc_id!r} (first seen at line {first})", file, line)


def read_documents(source: Source, on_error: OnError = "raise", report: CorpusReport | None = None) -> Iterator[Document]:
    """Yield the documents of `source`. A bad record raises CorpusError, or is counted in `report` when skipping."""
    if on_error not in ("raise", "skip"):
        raise InvalidArgumentError(f"on_error must be 'raise' or 'skip', not {on_error!r}")
    report = report if report is not None else CorpusReport()
    report.source = str(source) if isinstance(source, (str, os.PathLike)) else "<iterable>"
    ids = IdRegistry()
    for name, line, rec in records(source):
        try:
            if isinstance(rec, CorpusError):
                raise rec
            doc = rec if isinstance(rec, Document) else checked_document(rec, name, line)
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
