"""sieve: search, inspect, fetch. A pure-Python fielded Boolean search engine for research agents."""

from sieve.corpus import CorpusReport, read_documents
from sieve.documents import Document, Section
from sieve.errors import (
    BQLError,
    BQLLimitError,
    BQLSyntaxError,
    CorpusError,
    DeadlineExceededError,
    DuplicateIdError,
    IndexDamagedError,
    IndexDirectoryError,
    IndexExistsError,
    IndexFormatError,
    IndexLockedError,
    IndexNotFoundError,
    InvalidArgumentError,
    SieveError,
    UnknownDocumentError,
)
from sieve.engine.search import Hit, Results
from sieve.index import Index, Match, build_index, open_index

__version__ = "0.1.0"

__all__ = [
    "BQLError", "BQLLimitError", "BQLSyntaxError", "CorpusError", "CorpusReport", "DeadlineExceededError", "Document", "DuplicateIdError", "Index",
    "IndexDamagedError", "IndexDirectoryError", "IndexExistsError", "IndexFormatError", "IndexLockedError", "IndexNotFoundError", "InvalidArgumentError", "Match", "Hit", "Results", "Section", "SieveError",
    "UnknownDocumentError", "build_index", "open_index", "read_documents",
]
