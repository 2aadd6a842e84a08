"""The tools of one episode of a condition: a Toolset over the index, or file tools over a folder.

`make_tools` is the one place a condition's name becomes tools (the CLI's `ask`, `eval run` and the
grid all come here). A session is per episode: ranks, surfaced and opened documents are its own.
"""

from __future__ import annotations

import weakref
from dataclasses import replace
from pathlib import Path
from typing import Any

from sieve.engine.rank.rankers import SOFT_RANKERS
from sieve.errors import InvalidArgumentError
from sieve.index.index import Index
from sieve.tools.cards import CardConfig
from sieve.tools.conditions import BOUNDED_TOOL_NAMES, FILE_TOOL_NAMES, Condition, condition
from sieve.tools.fetch.reading import ReadConfig
from sieve.tools.shell.files import (
    FileToolConfig,
    FileTools,
    Staged,
    add_to_stage,
    remove_stage,
    stage_bounded,
    stage_collection,
)
from sieve.tools.shell.safe import inline
from sieve.tools.shell.sandbox import choose
from sieve.tools.tool import Tool
from sieve.tools.toolset import ToolConfig, Toolset, free_text_query


def stage_root(index: Index) -> Path:
    """Where a collection's DCI files live by default: beside its index (`NAME.dci`)."""
    return index.path.parent / f"{index.path.name}.dci"


class BoundedFiles(FileTools):
    """BM25-bounded DCI (RISE-style): at the start of an episode BM25 retrieves `bound` documents
    for the question; the shell and reader see the episode's own folder holding only those, removed
    by `close` (or when the tools are dropped). As the paper gives it, the agent also has a live
    `bm25_search` over the whole collection whose top `k` files join the folder."""

    def __init__(
        self,
        index: Index,
        whole: Staged,
        config: FileToolConfig,
        bound: int,
        k: int = 5,
        tools: tuple[str, ...] = BOUNDED_TOOL_NAMES,
    ) -> None:
        super().__init__(
            Staged(whole.root, {}), config, tuple(t for t in tools if t in FILE_TOOL_NAMES)
        )
        self.index, self.whole, self.bound = index, whole, bound
        self._cleanup: weakref.finalize | None = None
        self._search_k = k
        if "bm25_search" in tools:
            self.tools["bm25_search"] = Tool(
                "bm25_search",
                "Rank the whole collection by BM25 for plain words; lists the "
                f"top {k} files and copies those not in the folder yet into it.",
                {
                    "type": "object",
                    "properties": {
                        "query": {
                            "type": "string",
                            "minLength": 1,
                            "description": "plain words, e.g. fort santiago spanish",
                        }
                    },
                    "required": ["query"],
                    "additionalProperties": False,
                },
                run=lambda args, facts: self._search(args["query"]),
                example='{"query": "fort santiago spanish"}',
            )

    def _search(self, words: str) -> tuple[str, bool]:
        # before begin, the folder is the whole collection's: never written
        if self._cleanup is None:
            raise InvalidArgumentError(
                "bm25_search: the episode has not begun (no folder of its own yet)"
            )
        query = free_text_query(words, self.index.analyzer)
        if query is None:
            return "bm25_search: no word to search for (stop words alone are not indexed)", False
        hits = self.index.search(query, k=self._search_k, ranker="bm25", fallback=False).hits
        if not hits:
            return f"bm25_search: no document has any of the words {inline(words)!r}", True
        ids = [h.doc_id for h in hits]
        added = set(add_to_stage(self.staged, self.whole, ids))
        self._note(ids, self.surfaced)
        names = {doc_id: name for name, doc_id in self.staged.ids.items()}
        new = "  (new in the folder)"
        lines = [
            f"{names[i]}  {inline(self.index.document(i).title)}{new if names[i] in added else ''}"
            for i in ids
            if i in names
        ]
        return (
            f"{len(lines)} files for {inline(words)!r}, "
            f"best first ({len(added)} new in the folder):\n" + "\n".join(lines),
            True,
        )

    def begin(self, question: str) -> list[dict[str, Any]]:
        query = free_text_query(question, self.index.analyzer)
        hits = (
            self.index.search(query, k=self.bound, ranker="bm25", fallback=False).hits
            if query
            else []
        )
        ids = [h.doc_id for h in hits]
        self.close()
        self.staged = stage_bounded(self.index, self.whole, ids)
        self._cleanup = weakref.finalize(self, remove_stage, self.staged)
        self.surfaced = list(ids)
        return [
            {
                "name": "bm25_bound",
                "arguments": {"query": question, "k": self.bound},
                "result_tokens": 0,
                "result": "\n".join(ids),
                "admitted": len(ids),
            }
        ]

    def close(self) -> None:
        if self._cleanup is not None:
            self._cleanup()
            self._cleanup = None


def make_tools(
    index: Index,
    condition_name: str,
    ranker: str = "bm25",
    k: int = 5,
    read_cap: int = 12_000,
    k_max: int | None = None,
    read_parts: bool = True,
    fallback: bool = True,
    snippet: str | None = None,
    diagnose: bool | None = None,
    files: Path | None = None,
    shell_sandbox: str = "auto",
    as_paper: bool = False,
    fields: bool = True,
    manual: str | None = None,
) -> Toolset | FileTools:
    """A fresh tool session for one episode of the condition `condition_name`.

    `as_paper=True` is the condition as `eval` runs it, the paper's method: the registry's
    diagnosis, fallback ranker and manual (`sieve` has no diagnosis, a BM25 fallback, the paper's
    manual), and the read ceiling per document read. False (`sieve ask`) keeps sieve's defaults:
    diagnosis on, the fallback ranked by `ranker`, the manual generated from the index, the ceiling
    per call. `diagnose` and `manual` override either. `k_max` caps what an agent may ask a search
    for (default 50); `read_parts=False` truncates reads at the cap; `fallback=False` is strict
    Boolean search (no zero-hit recovery); `snippet` overrides the condition's card text (query,
    lead, none); `fields=False` leaves the matched fields off the cards; `files` is the DCI staging
    folder (default beside the index), built on first use; `shell_sandbox` the DCI shell's sandbox
    (auto, bwrap, landlock, none: `sieve.tools.shell.sandbox.choose`, which raises SandboxError
    where none works)."""
    c: Condition = condition(condition_name)
    read = ReadConfig(cap=read_cap, parts=read_parts)
    if c.corpus != "index":
        whole = stage_collection(index, files or stage_root(index))
        config = FileToolConfig(read=replace(read, parts=False), sandbox=choose(shell_sandbox))
        return (
            FileTools(whole, config, c.tools)
            if c.corpus == "files"
            else BoundedFiles(index, whole, config, c.bound, k, c.tools)
        )
    if "indri_search" in c.tools and ranker not in SOFT_RANKERS:
        raise InvalidArgumentError(
            f"condition {c.name!r} ranks with {' or '.join(SOFT_RANKERS)} (Indri's query "
            f"language), not {ranker!r}"
        )
    paper = {
        "diagnose": c.diagnose,
        "fallback_ranker": c.fallback_ranker,
        "manual": c.manual,
        "cap_scope": "document",
    }
    own = {"diagnose": True, "fallback_ranker": None, "manual": "generated", "cap_scope": "call"}
    chosen: dict[str, Any] = {
        **(paper if as_paper else own),
        **({"diagnose": diagnose} if diagnose is not None else {}),
        **({"manual": manual} if manual is not None else {}),
    }
    tool_config = ToolConfig(
        k=k,
        k_max=k_max if k_max is not None else ToolConfig.k_max,
        ranker=ranker,
        read=read,
        fallback=fallback,
        autoread=c.autoread,
        cards=CardConfig(snippet=snippet or c.snippet, fields=fields),
        **chosen,
    )
    return Toolset(index, c.tools, tool_config)
