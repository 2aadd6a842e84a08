"""Plain language as a query: what `Index.ranked_search` and the baselines' `ranked_search` tool
run."""

from __future__ import annotations

import re

from sieve.engine.analysis.analyzers import STOP, Analyzer, fold


def free_text_query(text: str, analyzer: Analyzer | None = None) -> str | None:
    """Plain words as a BQL query that has no BQL semantics: an OR of each distinct word, quoted so
    that operators and special characters are inert, over title and body. Words keep the user's
    spelling (a dense ranker reads them); the stop words of `analyzer` (the index's) are left out,
    as they are not indexed. None when the text has no other word."""
    seen: dict[str, str] = {}
    for w in re.findall(r"[^\W_]+", text):
        if (
            analyzer is not None
            and analyzer.stopwords
            and all(t == STOP for t in analyzer.analyze(w))
        ):
            continue
        seen.setdefault(fold(w), w)
    if not seen:
        return None
    return "(" + " OR ".join(f'"{w}"' for w in seen.values()) + ")[tiab]"
