"""sieve for LangChain (the `langchain` extra): a retriever and the agent tools.

    from sieve import open_index
    from sieve.adapters.langchain import SieveRetriever, sieve_tools

    retriever = SieveRetriever(index=open_index("my-index"), k=5)  # plain-language questions
    docs = retriever.invoke("which schools closed in the 2022 heatwave?")
    tools = sieve_tools(open_index("my-index"))  # search (BQL) and fetch, for an agent

The retriever returns one LangChain `Document` per hit: the section its card's snippet comes from,
with the document id, title, heading, section number, rank, score and matched fields as metadata
(sieve.tools.fetch.passages). The tools are sieve's own (`Toolset`): the same texts, the manual as
the search tool's description, result cards with ids that `fetch` takes.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sieve.errors import extra_hint

try:
    from langchain_core.callbacks import CallbackManagerForRetrieverRun
    from langchain_core.documents import Document
    from langchain_core.retrievers import BaseRetriever
    from langchain_core.tools import BaseTool, StructuredTool
except ImportError as e:  # pragma: no cover - the extra's message
    raise ImportError(
        f"sieve.adapters.langchain needs langchain-core ({e}): " + extra_hint("langchain")
    ) from None

from sieve.tools.fetch.passages import Passage, retrieve
from sieve.tools.toolset import ToolConfig, Toolset


def to_document(p: Passage) -> Document:
    return Document(page_content=p.text, metadata=p.to_dict(), id=f"{p.doc_id}#{p.section}")


class SieveRetriever(BaseRetriever):
    """Sections of a sieve index for a query: plain language by default, BQL with `bql=True`."""

    index: Any  # a sieve.Index
    k: int = 5
    ranker: str = "bm25"
    bql: bool = False
    max_chars: int | None = None  # cut long sections (None: whole)

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun
    ) -> list[Document]:
        return [
            to_document(p)
            for p in retrieve(self.index, query, self.k, self.ranker, self.bql, self.max_chars)
        ]


def sieve_tools(
    index: Any, tools: Sequence[str] = ("search", "fetch"), config: ToolConfig = ToolConfig()
) -> list[BaseTool]:
    """sieve's agent tools as LangChain tools, sharing one session (ranks refer to its last search).
    A call returns the tool's text; a bad call returns the error text the model can act on."""
    session = Toolset(index, tools, config)
    out: list[BaseTool] = []
    for spec in session.tools.values():

        def run(_name: str = spec.name, **arguments: Any) -> str:
            return session.call(_name, arguments).text

        description = session.manual() if spec.name == "search" else spec.description
        out.append(
            StructuredTool.from_function(
                func=run, name=spec.name, description=description, args_schema=spec.parameters
            )
        )
    return out
