"""The tools an agent calls: `search`, `fetch`, `visit`, the BQL-free `ranked_search`, and
`indri_search` (Indri's own query language, the paper's Table 6 control).

A `Toolset` holds one agent's session (the last listing, so that ranks mean something) and turns
every call into text: results, or an error the agent can act on. Bad arguments, unknown names,
syntax errors and out-of-range ranks are observations, never exceptions.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from sieve.corpus.documents import Document
from sieve.engine import deadline
from sieve.engine.query.bql.free_text import free_text_query
from sieve.engine.rank.results import Results
from sieve.errors import BQLSyntaxError, InvalidArgumentError, SieveError, UnknownDocumentError
from sieve.index.index import Index, Limits
from sieve.tools import cards
from sieve.tools.cards import plural
from sieve.tools.conditions import CONDITIONS, check_tools, condition
from sieve.tools.config import ToolConfig
from sieve.tools.fetch.reading import Read, ReadConfig, outline_text, read_document, read_section
from sieve.tools.fetch.snippets import Matcher
from sieve.tools.schema import decode_arguments, describe_params
from sieve.tools.tool import DOC, DOC_ID, PART, Tool, ToolFailure, ToolResult, _caret


class Toolset:
    """The tools of one agent session over one index."""

    def __init__(
        self,
        index: Index,
        tools: Sequence[str] = CONDITIONS["sieve"].tools,
        config: ToolConfig = ToolConfig(),
        keeps_listing: bool = True,
    ) -> None:
        """`keeps_listing=False` is a session whose calls share nothing (a stateless server
        connection): ranks then mean nothing, and saying so beats answering from a stranger's
        listing."""
        tools = check_tools(tools)
        self.index = index
        self.config = config
        self.keeps_listing = keeps_listing
        self.listing: list[str] | None = None  # ids of the last search, by rank; None before any
        self.surfaced: list[str] = []  # every id a listing showed, first time first
        self.opened: list[str] = []  # every id fetched or visited, first time first
        self.tokens = 0  # returned so far
        specs = self._specs()
        self.tools: dict[str, Tool] = {t: specs[t] for t in tools}

    @classmethod
    def for_condition(cls, index: Index, name: str, config: ToolConfig = ToolConfig()) -> Toolset:
        """The tools of the condition `name` (sieve.tools.conditions); InvalidArgumentError if
        unknown or if the condition's tools act on files, not on an index
        (`sieve.tools.shell.episode.make_tools`)."""
        c = condition(name)
        if not c.retriever:
            raise InvalidArgumentError(
                f"condition {c.name!r} works on the collection as files, not through a Toolset; "
                "use sieve.tools.shell.episode.make_tools"
            )
        return cls(index, c.tools, config)

    # ------------------------------------------------------------ the surface

    def begin(self, question: str) -> list[dict[str, Any]]:
        """Called once before an episode; returns the calls made for it (none: the agent
        searches)."""
        return []

    def schemas(self) -> list[dict[str, Any]]:
        return [t.schema() for t in self.tools.values()]

    def call(self, name: str, arguments: str | Mapping[str, Any] | None) -> ToolResult:
        """Run a tool on JSON arguments (a string, as models send them, or a decoded object)."""
        tool = self.tools.get(name)
        if tool is None:
            return self._result(
                name,
                f"error: there is no tool named {json.dumps(name)}; "
                f"the tools are {', '.join(self.tools)}",
                False,
            )
        facts: dict[str, Any] = {}
        try:
            args = self._arguments(tool, arguments)
            # The index's time budget holds for the whole call, the cards after the search included;
            # past it, the call ends with a DeadlineExceededError the agent reads below.
            with deadline.within(self.limits.seconds):
                text, ok = tool.run(args, facts)
        except ToolFailure as e:
            text, ok = f"{name} error: {e}", False
        except SieveError as e:  # anything the engine rejects is the agent's to read
            text, ok = f"{name} error: {e}", False
        return self._result(name, text, ok, facts)

    @property
    def limits(self) -> Limits:
        """The index's caps on one query (`sieve.engine.query.plan.Limits`)."""
        return getattr(self.index, "limits", None) or Limits()

    def describe(self) -> str:
        """Each tool with its arguments, in words: for prompts whose model gets no native
        schemas."""
        return "\n".join(
            f"- `{t.name}`: {t.description} Arguments: "
            f"{describe_params(t.parameters)}. Example: {t.example}"
            for t in self.tools.values()
        )

    def manual(self) -> str:
        """What the agent reads on how to use the tools: the paper's BQL manual for the collection
        (`ToolConfig.manual == "paper"`, when `search` is offered), else the manual generated from
        the index."""
        if self.config.manual.startswith("paper") and "search" in self.tools:
            from sieve.tools.paper_manual import render_paper_manual

            return render_paper_manual(self, self.config.manual.partition("-")[2] or None)
        from sieve.tools.manual import render_manual

        return render_manual(self)

    def _result(
        self, name: str, text: str, ok: bool, facts: Mapping[str, Any] | None = None
    ) -> ToolResult:
        tokens = self.config.read.counter.count(text)
        self.tokens += tokens
        return ToolResult(name, text, tokens, ok, facts or {})

    def _arguments(self, tool: Tool, arguments: str | Mapping[str, Any] | None) -> dict[str, Any]:
        args, problem = decode_arguments(tool.parameters, arguments, tool.example)
        if problem is not None:
            raise ToolFailure(problem)
        return args  # type: ignore[return-value]

    # ------------------------------------------------------------ the tools

    def _specs(self) -> dict[str, Tool]:
        c = self.config
        k = {
            "type": "integer",
            "minimum": 1,
            "maximum": c.k_max,
            "description": f"how many results (default {c.k}, at most {c.k_max})",
        }
        query = {
            "type": "string",
            "minLength": 1,
            "maxLength": min(c.max_query_chars, self.limits.max_query_chars),
        }
        doc, ref = (DOC, "1") if self.keeps_listing else (DOC_ID, '"an-id"')
        return {
            "search": Tool(
                "search",
                "Search the collection with the query language in the manual: the query decides "
                "exactly which documents are eligible, the best k are shown as cards (headings, "
                "matched sections, snippet).",
                {
                    "type": "object",
                    "properties": {
                        "query": {**query, "description": "a query in the manual's query language"},
                        "k": k,
                    },
                    "required": ["query"],
                    "additionalProperties": False,
                },
                self._search,
                '{"query": "heatwave[title] \\"school closure\\"", "k": 5}',
            ),
            "ranked_search": Tool(
                "ranked_search",
                "Rank the documents that contain words of a "
                "plain-text query (no operators, no fields)"
                + (
                    "; each result shows the document's whole "
                    f"text, up to {c.read.cap:,} {self.unit}."
                    if c.autoread
                    else "."
                ),
                {
                    "type": "object",
                    "properties": {"query": {**query, "description": "plain words"}, "k": k},
                    "required": ["query"],
                    "additionalProperties": False,
                },
                self._ranked_search,
                '{"query": "school closures during the 2022 heatwave"}',
            ),
            "fetch": Tool(
                "fetch",
                f"Read named sections of documents (up to {c.max_sections} per call, "
                f"{c.read.cap:,} {self.unit} per {c.cap_scope}).",
                {
                    "type": "object",
                    "properties": {
                        "sections": {
                            "type": "array",
                            "minItems": 1,
                            "maxItems": c.max_sections,
                            "description": "what to read: (document, section name) pairs",
                            "items": {
                                "type": "object",
                                "properties": {
                                    "doc": doc,
                                    "section": {
                                        "type": "string",
                                        "minLength": 1,
                                        "description": "a heading as shown on the "
                                        "card, or intro, facts, infobox, contents",
                                    },
                                    "part": PART,
                                },
                                "required": ["doc", "section"],
                                "additionalProperties": False,
                            },
                        }
                    },
                    "required": ["sections"],
                    "additionalProperties": False,
                },
                self._fetch,
                '{"sections": [{"doc": %s, "section": "Usage"}]}' % ref,  # noqa: UP031 - as above
            ),
            "visit": Tool(
                "visit",
                f"Read a whole document, every section ({c.read.cap:,} {self.unit} per call; "
                + (
                    "longer documents come in parts)."
                    if c.read.parts
                    else "longer documents are cut at that ceiling)."
                ),
                {
                    "type": "object",
                    "properties": {"doc": doc, "part": PART},
                    "required": ["doc"],
                    "additionalProperties": False,
                },
                self._visit,
                '{"doc": %s}' % ref,  # noqa: UP031 - JSON's braces read better than doubled ones
            ),
            "indri_search": Tool(
                "indri_search",
                "Search the collection with Indri's query language as the manual gives it "
                "(#combine, #band, #1, #uwN, "
                "word.title): the documents the query matches are ranked by Indri's query "
                "likelihood, the best k shown as cards.",
                {
                    "type": "object",
                    "properties": {
                        "query": {**query, "description": "a query in Indri's query language"},
                        "k": k,
                    },
                    "required": ["query"],
                    "additionalProperties": False,
                },
                self._indri_search,
                '{"query": "#combine(#1(school closure) heatwave.title)", "k": 5}',
            ),
            "show": Tool(
                "show",
                "List a document's facts (title, author, date, infobox) and every section heading "
                "with its length, without reading the texts.",
                {
                    "type": "object",
                    "properties": {"doc": doc},
                    "required": ["doc"],
                    "additionalProperties": False,
                },
                self._show,
                '{"doc": %s}' % ref,  # noqa: UP031 - JSON's braces read better than doubled ones
            ),
        }

    @property
    def unit(self) -> str:
        return "words" if self.config.read.counter.name == "words" else "tokens"

    def _remember(self, r: Results, facts: dict[str, Any]) -> None:
        """A search's listing (what ranks mean next), its surfaced ids and its facts."""
        self.listing = [h.doc_id for h in r.hits]
        facts.update(fallback=r.fallback, admitted=r.count)
        for i in self.listing:
            if i not in self.surfaced:
                self.surfaced.append(i)

    def _list(
        self, r: Results, header: str, structured: bool, facts: dict[str, Any]
    ) -> tuple[str, bool]:
        self._remember(r, facts)
        text = cards.listing(
            self.index, r, header, Matcher.of(r), self.config.cards, structured=structured
        )
        if not self.keeps_listing and r.hits:
            text += (
                "\n(this connection keeps no listing between calls: to read a result, give its "
                "document id, not its rank)"
            )
        return text, True

    def _search(self, args: dict[str, Any], facts: dict[str, Any]) -> tuple[str, bool]:
        query: str = args["query"]
        try:
            r = self.index.search(
                query,
                k=args.get("k", self.config.k),
                ranker=self.config.ranker,
                fallback=self.config.fallback,
                diagnose=self.config.diagnose,
                fallback_ranker=self.config.fallback_ranker,
            )
        except BQLSyntaxError as e:
            raise ToolFailure(f"{e}\n{_caret(query, e.pos)}") from None
        return self._list(r, cards.search_header(r), True, facts)

    def _indri_search(self, args: dict[str, Any], facts: dict[str, Any]) -> tuple[str, bool]:
        query: str = args["query"]
        try:
            r = self.index.indri_search(
                query, k=args.get("k", self.config.k), ranker=self.config.ranker
            )
        except BQLSyntaxError as e:  # IndriSyntaxError, and a stop word's error from the planner
            raise ToolFailure(f"{e}\n{_caret(query, e.pos)}") from None
        return self._list(r, cards.indri_header(r), True, facts)

    def _ranked_search(self, args: dict[str, Any], facts: dict[str, Any]) -> tuple[str, bool]:
        if free_text_query(args["query"], self.index.analyzer) is None:
            stop = ", not only stop words" if self.index.analyzer.stopwords else ""
            raise ToolFailure(f"the query has no word to search for (letters or digits{stop})")
        r = self.index.ranked_search(
            args["query"], k=args.get("k", self.config.k), ranker=self.config.ranker
        )
        structured = (
            self.config.ranked_cards
            if self.config.ranked_cards is not None
            else "fetch" in self.tools
        )
        if self.config.autoread:
            return self._autoread(r, facts)
        return self._list(r, cards.ranked_header(r), structured, facts)

    def _autoread(self, r: Results, facts: dict[str, Any]) -> tuple[str, bool]:
        """Search-AutoRead: each hit's whole document, cut at the read ceiling, instead of a
        card."""
        self._remember(r, facts)
        read = replace(self.config.read, parts=False)
        texts = [cards.ranked_header(r)]
        for rank, doc_id in enumerate(self.listing or [], 1):
            got = read_document(self.index.document(doc_id), 1, read)
            self._opened(got)
            texts.append(f"[{rank}] {got.text}")
        return "\n\n".join(texts), True

    def passages(
        self, question: str, k: int | None = None
    ) -> tuple[list[tuple[str, str]], dict[str, Any]]:
        """One-shot retrieval: the top `k` documents for `question` as free text, each as (id, the
        whole text a visit shows, uncut), and the search's facts. They count as surfaced and
        opened."""
        facts: dict[str, Any] = {}
        r = self.index.ranked_search(question, k=k or self.config.k, ranker=self.config.ranker)
        self._remember(r, facts)
        read = ReadConfig(cap=1 << 62, counter=self.config.read.counter, parts=False)
        out = []
        for doc_id in self.listing or []:
            got = read_document(self.index.document(doc_id), 1, read)
            self._opened(got)
            out.append((doc_id, got.text))
        return out, facts

    def _document(self, ref: int | str) -> Document:
        if isinstance(ref, int):
            if not self.keeps_listing:
                raise ToolFailure(
                    f"this connection keeps no listing between calls, so rank {ref} means "
                    "nothing here; give the document id shown on the card (a string) instead"
                )
            if self.listing is None:
                raise ToolFailure(
                    f"there is no earlier search, so rank {ref} means nothing; search first, or "
                    "give a document id (a string)"
                )
            if not self.listing:
                raise ToolFailure(f"the last search listed no documents, so there is no rank {ref}")
            if not 1 <= ref <= len(self.listing):
                raise ToolFailure(
                    f"rank {ref} is not in the last search (it listed ranks 1-{len(self.listing)})"
                )
            return self.index.document(self.listing[ref - 1])
        try:
            return self.index.document(ref)
        except UnknownDocumentError:
            hint = ""
            if ref.strip().isdigit() and self.listing and 1 <= int(ref) <= len(self.listing):
                hint = f"; to read rank {int(ref)} of the last search, pass {int(ref)} as a number"
            raise ToolFailure(
                f"no document with id {json.dumps(ref, ensure_ascii=False)}{hint}"
            ) from None

    def _opened(self, read: Read) -> None:
        if read.doc_id not in self.opened:
            self.opened.append(read.doc_id)

    def _fetch(self, args: dict[str, Any], facts: dict[str, Any]) -> tuple[str, bool]:
        # (text, what it is: named in a note if it must be left out)
        blocks: list[tuple[str, str]] = []
        reads: list[Read | None] = []
        for item in args["sections"]:
            try:
                doc = self._document(item["doc"])
                read = read_section(doc, item["section"], item.get("part", 1), self.config.read)
            except (ToolFailure, SieveError) as e:
                blocks.append((f"fetch error: {e}", "an error message"))
                reads.append(None)
                continue
            part = f" (part {read.part} of {read.parts})" if read.parts > 1 else ""
            blocks.append((read.text, f"{read.doc_id} § {read.name}{part}"))
            reads.append(read)
        keep, compact = self._fit(blocks, [r.doc_id if r is not None else None for r in reads])
        for got, k in zip(reads, keep):
            if got is not None and k:
                self._opened(got)
        return self._compose(blocks, keep, compact), all(r is not None for r in reads)

    def _compose(
        self, blocks: list[tuple[str, str]], keep: list[bool], compact: bool = False
    ) -> str:
        text = "\n\n".join(b for (b, _), k in zip(blocks, keep) if k)
        left = [what for (_, what), k in zip(blocks, keep) if not k]
        if left:
            them = "it" if len(left) == 1 else "them"
            cap = f"over the {self.config.read.cap:,}-{self.unit[:-1]} cap of one read" + (
                " of a document" if self.config.cap_scope == "document" else ""
            )
            what = plural(len(left), "more item") if compact else "; ".join(left)
            text += f"\n\n[not shown, {cap}: {what}. Fetch {them} in another call.]"
        return text

    def _fit(
        self, blocks: list[tuple[str, str]], docs: list[str | None]
    ) -> tuple[list[bool], bool]:
        """Which blocks one read holds, and whether the note on the others must be the short one.
        Each block in order if it still fits; then drop from the end while the note naming the
        left-out ones pushes the text over the cap. The first block always stays: every part is cut
        to leave room for the short note (`ReadConfig.reserve`). With `cap_scope="document"` the cap
        bounds each document's blocks (`docs`: each block's document, None for an error) instead."""
        counter, cap = self.config.read.counter, self.config.read.cap
        if self.config.cap_scope == "document":
            keep = [True] * len(blocks)
            for doc in dict.fromkeys(d for d in docs if d is not None):
                held: list[str] = []
                for i in (i for i, d in enumerate(docs) if d == doc):
                    if held and counter.count("\n\n".join([*held, blocks[i][0]])) > cap:
                        keep[i] = False
                    else:
                        held.append(blocks[i][0])
            return keep, False
        keep = [False] * len(blocks)
        for i in range(len(blocks)):
            keep[i] = True
            if i and counter.count(self._compose(blocks, keep)) > cap:
                keep[i] = False
        while sum(keep) > 1 and counter.count(self._compose(blocks, keep)) > cap:
            keep[max(i for i, k in enumerate(keep) if k)] = False
        return keep, counter.count(self._compose(blocks, keep)) > cap

    def _visit(self, args: dict[str, Any], facts: dict[str, Any]) -> tuple[str, bool]:
        doc = self._document(args["doc"])
        read = read_document(doc, args.get("part", 1), self.config.read)
        self._opened(read)
        return read.text, True

    def _show(self, args: dict[str, Any], facts: dict[str, Any]) -> tuple[str, bool]:
        return outline_text(
            self._document(args["doc"]), self.config.read.counter, self.config.read.cap
        ), True
