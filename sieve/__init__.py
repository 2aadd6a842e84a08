"""sieve: search, inspect, fetch. A pure-Python fielded Boolean search engine for research
agents."""

from sieve.corpus.documents import Document, Section
from sieve.corpus.folders import Folder
from sieve.corpus.formats import CorpusReport, read_documents
from sieve.engine.analysis.analyzers import Analyzer, analyzer_names
from sieve.engine.query.plan import Limits
from sieve.engine.rank.bm25 import BM25Params
from sieve.engine.rank.results import Hit, Results
from sieve.errors import (
    BQLError,
    BQLLimitError,
    BQLSyntaxError,
    ClusterError,
    CorpusError,
    DeadlineExceededError,
    DuplicateIdError,
    IndexDamagedError,
    IndexDirectoryError,
    IndexExistsError,
    IndexFormatError,
    IndexLockedError,
    IndexNotFoundError,
    IndexPathError,
    InvalidArgumentError,
    SandboxError,
    SieveError,
    UnknownAnalyzerError,
    UnknownDocumentError,
)
from sieve.index.index import Index, Match, build_index, open_index

__version__ = "0.2.0"  # the one version source (pyproject.toml reads it)

__all__ = [
    "Analyzer",
    "BM25Params",
    "BQLError",
    "BQLLimitError",
    "BQLSyntaxError",
    "ClusterError",
    "CorpusError",
    "CorpusReport",
    "DeadlineExceededError",
    "Document",
    "DuplicateIdError",
    "Folder",
    "Hit",
    "Index",
    "IndexDamagedError",
    "IndexDirectoryError",
    "IndexExistsError",
    "IndexFormatError",
    "IndexLockedError",
    "IndexNotFoundError",
    "IndexPathError",
    "InvalidArgumentError",
    "Limits",
    "Match",
    "Results",
    "SandboxError",
    "Section",
    "SieveError",
    "UnknownAnalyzerError",
    "UnknownDocumentError",
    "analyzer_names",
    "build_index",
    "open_index",
    "read_documents",
]
