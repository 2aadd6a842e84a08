"""sieve inside LangChain and LlamaIndex, with the real frameworks: retrievers return sections with
their metadata, the LangChain tools are sieve's own."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import sieve
from sieve.tools.toolset import Toolset

DOCS = [
    {"id": "heat", "title": "Heatwave of 2022", "date": "2022-07", "author": "A. Writer",
     "sections": [{"heading": "(intro)", "text": "A long hot summer."}, {"heading": "School closures", "text": "Schools closed early in the heatwave."},
                  {"heading": "Deaths", "text": "Hospitals filled."}]},
    {"id": "cold", "title": "Cold snap", "sections": [{"heading": "(intro)", "text": "Snow in spring; schools stayed open."}]},
    {"id": "rain", "title": "Floods", "text": "Rain and rivers."},
]


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> Any:
    return sieve.build_index(DOCS, tmp_path_factory.mktemp("fw") / "ix")


def test_langchain_retriever(index: Any) -> None:
    pytest.importorskip("langchain_core", reason="needs the langchain extra: pip install -e '.[langchain]'")
    from langchain_core.documents import Document
    from langchain_core.retrievers import BaseRetriever

    from sieve.adapters.langchain import SieveRetriever

    retriever = SieveRetriever(index=index, k=3)
    assert isinstance(retriever, BaseRetriever)
    docs = retriever.invoke("why did schools close in the heatwave")
    want = index.ranked_search("why did schools close in the heatwave", k=3)
    assert [d.metadata["doc_id"] for d in docs] == [h.doc_id for h in want.hits]
    top = docs[0]
    assert isinstance(top, Document) and top.id == "heat#1"
    assert top.page_content == "Schools closed early in the heatwave." and top.metadata["heading"] == "School closures"
    assert top.metadata["title"] == "Heatwave of 2022" and top.metadata["date"] == "2022-07" and top.metadata["author"] == "A. Writer"
    assert top.metadata["score"] == pytest.approx(want.hits[0].score) and top.metadata["rank"] == 1
    bql = SieveRetriever(index=index, k=5, bql=True).invoke("schools[body] NOT heatwave")
    assert [d.metadata["doc_id"] for d in bql] == ["cold"]


def test_langchain_tools_are_sieves_own(index: Any) -> None:
    pytest.importorskip("langchain_core", reason="needs the langchain extra: pip install -e '.[langchain]'")
    from langchain_core.tools import BaseTool

    from sieve.adapters.langchain import sieve_tools

    tools = {t.name: t for t in sieve_tools(index)}
    assert set(tools) == {"search", "fetch"} and all(isinstance(t, BaseTool) for t in tools.values())
    assert "BQL" in tools["search"].description or "query" in tools["search"].description
    ref = Toolset(index, ("search", "fetch"))
    args = {"query": "schools AND heatwave[title]", "k": 2}
    assert tools["search"].invoke(args) == ref.call("search", args).text
    fetched = tools["fetch"].invoke({"sections": [{"doc": 1, "section": "School closures"}]})  # rank 1 of the tools' own last search
    assert fetched == ref.call("fetch", {"sections": [{"doc": 1, "section": "School closures"}]}).text and "closed early" in fetched
    bad = tools["search"].invoke({"query": "schools AND ("})
    assert bad.startswith("search error:")


def test_llama_index_retriever(index: Any) -> None:
    pytest.importorskip("llama_index.core", reason="needs the llama-index extra: pip install -e '.[llama-index]'")
    from llama_index.core.retrievers import BaseRetriever
    from llama_index.core.schema import NodeWithScore, TextNode

    from sieve.adapters.llama_index import SieveRetriever

    retriever = SieveRetriever(index, k=2)
    assert isinstance(retriever, BaseRetriever)
    nodes = retriever.retrieve("schools closed in the heatwave")
    assert all(isinstance(n, NodeWithScore) and isinstance(n.node, TextNode) for n in nodes)
    assert nodes[0].node.node_id == "heat#1" and nodes[0].node.get_content() == "Schools closed early in the heatwave."
    assert nodes[0].node.metadata["heading"] == "School closures" and nodes[0].score == pytest.approx(
        index.ranked_search("schools closed in the heatwave", k=2).hits[0].score)
    assert len(nodes) == 2


def test_passages_fall_back_to_a_section_with_text(index: Any, tmp_path: Path) -> None:
    from sieve.tools.fetch.passages import retrieve

    got = retrieve(index, "Floods[title]", bql=True)  # matched in the title only: the first section
    assert [(p.doc_id, p.section, p.text) for p in got] == [("rain", 0, "Rain and rivers.")]
    assert retrieve(index, "rivers", max_chars=4)[0].text == "Rain"
