"""sieve: search, inspect, fetch. A pure-Python fielded Boolean search engine for research agents."""

from sieve.corpus import CorpusReport, read_documents
from sieve.documents import Document, Section
from sieve.errors import (
    BQLError,
    BQLLimitError,
    BQLSyntaxError,
    CorpusError,
    IndexDamagedError,
    IndexFormatError,
    IndexNotFoundError,
    SieveError,
    UnknownDocumentError,
)
from sieve.index import Index, Match, build_index, open_index

__version__ = "0.1.0"

__all__ = [
    "BQLError", "BQLLimitError", "BQLSyntaxError", "CorpusError", "CorpusReport", "Document", "Index",
    "IndexDamagedError", "IndexFormatError", "IndexNotFoundError", "Match", "Section", "SieveError",
    "UnknownDocumentError", "build_index", "open_index", "read_documents",
]
