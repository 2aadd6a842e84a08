"""Search results as passages: for each hit, the one section a reader should see, with its metadata.

What framework retrievers (sieve.adapters: LangChain, LlamaIndex) hand to an LLM: not whole pages
but the section that the result card's snippet comes from (the best window of the sections the
query matched, else the first section with text), with the document's id, title, heading, section
number, rank, score, matched fields, date and author.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sieve.engine.rank.results import Results
from sieve.index.index import Index
from sieve.tools import cards
from sieve.tools.fetch.snippets import Matcher


@dataclass(frozen=True)
class Passage:
    doc_id: str
    title: str
    section: int  # its number in the document (0-based)
    heading: str
    text: str
    rank: int
    score: float
    # fields, date, author, query, ranker, ...
    metadata: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "doc_id": self.doc_id,
            "title": self.title,
            "section": self.section,
            "heading": self.heading,
            "rank": self.rank,
            "score": self.score,
            **self.metadata,
        }


def passages(index: Index, r: Results, max_chars: int | None = None) -> list[Passage]:
    """One passage per hit, in rank order; `max_chars` cuts long sections (None: whole)."""
    matcher = Matcher.of(r)
    out = []
    for h in r.hits:
        meta = index.reader.meta(h.doc)
        headings = list(meta["headings"])
        snip = cards.hit_snippet(index, h, headings, matcher) if matcher else None
        j = snip.section if snip is not None else next((s for s in h.matched_sections(headings)), 0)
        text = index.reader.section_text(h.doc, j) if headings else ""
        extra: dict[str, Any] = {
            "fields": list(h.fields),
            "matched_sections": list(h.sections),
            "query": r.query,
            "ranker": r.ranker,
        }
        for key in ("date", "author"):
            if meta.get(key):
                extra[key] = meta[key]
        out.append(
            Passage(
                h.doc_id,
                meta["title"],
                j,
                headings[j] if headings else "",
                text if max_chars is None else text[:max_chars],
                h.rank,
                float(h.score),
                extra,
            )
        )
    return out


def retrieve(
    index: Index,
    query: str,
    k: int = 5,
    ranker: str = "bm25",
    bql: bool = False,
    max_chars: int | None = None,
) -> list[Passage]:
    """The top `k` passages for `query`: plain language (`Index.ranked_search`), or with `bql` a BQL
    query (`Index.search`, zero-hit fallback on)."""
    r = (
        index.search(query, k=k, ranker=ranker)
        if bql
        else index.ranked_search(query, k=k, ranker=ranker)
    )
    return passages(index, r, max_chars)
