"""sieve for LlamaIndex (the `llama-index` extra): a retriever.

    from sieve import open_index
    from sieve.adapters.llama_index import SieveRetriever

    retriever = SieveRetriever(open_index("my-index"), k=5)
    nodes = retriever.retrieve("which schools closed in the 2022 heatwave?")

One `NodeWithScore` per hit: a `TextNode` holding the section its card's snippet comes from (id
`DOC_ID#SECTION`), with the document id, title, heading, section number, rank and matched fields
as metadata, and sieve's score (sieve.tools.fetch.passages). Plain language by default, BQL with
`bql=True`.
"""

from __future__ import annotations

from typing import Any

from sieve.errors import extra_hint

try:
    from llama_index.core.retrievers import BaseRetriever
    from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode
except ImportError as e:  # pragma: no cover - the extra's message
    raise ImportError(
        f"sieve.adapters.llama_index needs llama-index-core ({e}): " + extra_hint("llama-index")
    ) from None

from sieve.tools.fetch.passages import Passage, retrieve


def to_node(p: Passage) -> NodeWithScore:
    return NodeWithScore(
        node=TextNode(id_=f"{p.doc_id}#{p.section}", text=p.text, metadata=p.to_dict()),
        score=p.score,
    )


class SieveRetriever(BaseRetriever):
    """Sections of a sieve index for a query."""

    def __init__(
        self,
        index: Any,
        k: int = 5,
        ranker: str = "bm25",
        bql: bool = False,
        max_chars: int | None = None,
        **kwargs: Any,
    ) -> None:
        self.index, self.k, self.ranker, self.bql, self.max_chars = index, k, ranker, bql, max_chars
        super().__init__(**kwargs)

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return [
            to_node(p)
            for p in retrieve(
                self.index, query_bundle.query_str, self.k, self.ranker, self.bql, self.max_chars
            )
        ]
