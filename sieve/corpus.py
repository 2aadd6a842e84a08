"""Reading corpora: JSON Lines files, BEIR folders and iterables of records, with every bad record named."""

from __future__ import annotations

import gzip
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Iterable, Iterator, Literal, Union

from sieve.documents import Document, checked_document
from sieve.errors import CorpusError

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


def _open_text(path: Path) -> IO[str]:
    if path.suffix == ".gz":
        return gzip.open(path, "rt", encoding="utf-8")
    return open(path, encoding="utf-8")


def _records(source: Source) -> Iterator[tuple[str | None, int, Any]]:
    """(file, 1-based line or record number, parsed record or a CorpusError)."""
    if isinstance(source, (str, os.PathLike)):
        path = corpus_file(source)
        name = str(path)
        with _open_text(path) as fh:
            lineno = 0
            while True:
                try:
                    line = fh.readline()
                except UnicodeDecodeError as e:
                    yield name, lineno + 1, CorpusError(f"not UTF-8 text ({e.reason})", name, lineno + 1)
                    return
                if not line:
                    return
                lineno += 1
                if not line.strip():
                    continue
                try:
                    yield name, lineno, json.loads(line)
                except json.JSONDecodeError as e:
                    yield name, lineno, CorpusError(f"invalid JSON: {e.msg} (column {e.colno})", name, lineno)
    else:
        for i, rec in enumerate(source, 1):
            yield None, i, rec


def read_documents(source: Source, on_error: OnError = "raise", report: CorpusReport | None = None) -> Iterator[Document]:
    """Yield the documents of `source`. A bad record raises CorpusError, or is counted in `report` when skipping."""
    if on_error not in ("raise", "skip"):
        raise ValueError(f"on_error must be 'raise' or 'skip', not {on_error!r}")
    report = report if report is not None else CorpusReport()
    report.source = str(source) if isinstance(source, (str, os.PathLike)) else "<iterable>"
    seen: dict[str, int] = {}
    for name, line, rec in _records(source):
        try:
            if isinstance(rec, CorpusError):
                raise rec
            doc = rec if isinstance(rec, Document) else checked_document(rec, name, line)
            if doc.id in seen:
                raise CorpusError(f"duplicate id {doc.id!r} (first seen at line {seen[doc.id]})", name, line)
        except CorpusError as err:
            if on_error == "raise":
                raise
            report.note(err)
            continue
        seen[doc.id] = line
        report.documents += 1
        yield doc
