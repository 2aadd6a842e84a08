"""The tools of one or more indexes for many clients at once: sessions, the index argument, limits.

This is the protocol-free half of `sieve serve`: it knows nothing of MCP. Every call goes to the
calling session's own `Toolset` (one per index), so rank numbers refer to that client's last
listing and no other. Nothing here writes: tools read documents of the served indexes by id, and
no argument names a file.
"""

from __future__ import annotations

import copy
import json
import math
import re
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from sieve.engine.analysis.fields import Field
from sieve.engine.query.bql.parser import MAX_QUERY_CHARS
from sieve.errors import InvalidArgumentError
from sieve.index.index import Index, Limits, open_index
from sieve.tools.conditions import check_tools
from sieve.tools.manual import field_counts
from sieve.tools.toolset import ToolConfig, ToolResult, Toolset

SERVED_TOOLS = ("search", "fetch", "visit", "show")
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")


@dataclass(frozen=True)
class ServeLimits:
    """What one call may ask of the server. Each violation comes back as an error text."""

    k_max: int = 50  # results per search
    max_sections: int = 8  # (doc, section) pairs per fetch
    # the engine's default; the language allows MAX_QUERY_CHARS
    max_query_chars: int = Limits.max_query_chars
    max_phrase_words: int = Limits.max_phrase_words  # words of one phrase (the engine's default)
    max_argument_chars: int = 50_000  # the JSON arguments of one call
    call_seconds: float = 10.0  # wall time of one call, waiting for a free worker included
    workers: int = 4  # calls computed at the same time (threads)
    # Streamable HTTP: sessions open at once (each holds its listings and the SDK's transport), the
    # time one may go without a request before it is closed, and the largest request body.
    max_sessions: int = 100
    session_idle_seconds: float = 600.0
    max_request_bytes: int = 1 << 20

    def __post_init__(self) -> None:
        for name in (
            "k_max",
            "max_sections",
            "max_query_chars",
            "max_argument_chars",
            "workers",
            "max_sessions",
            "max_request_bytes",
        ):
            if getattr(self, name) < 1:
                raise InvalidArgumentError(
                    f"{name.replace('_', '-')} must be at least 1, got {getattr(self, name)}"
                )
        if self.max_phrase_words < 2:
            raise InvalidArgumentError(
                f"max-phrase-words must be at least 2, got {self.max_phrase_words}"
            )
        if not 1 <= self.max_query_chars <= MAX_QUERY_CHARS:
            raise InvalidArgumentError(
                f"max-query-chars must be between 1 and {MAX_QUERY_CHARS:,}, got "
                f"{self.max_query_chars:,}"
            )
        for name in ("call_seconds", "session_idle_seconds"):
            value = getattr(self, name)
            if not (value > 0 and math.isfinite(value)):
                raise InvalidArgumentError(
                    f"{name.replace('_', '-')} must be "
                    f"{'finite' if value > 0 else 'positive'}, got {value}"
                )


def index_names(specs: Sequence[str]) -> dict[str, Path]:
    """`PATH` or `NAME=PATH` for each index to serve -> {name: path}; a name defaults to the
    folder's."""
    named: dict[str, Path] = {}
    for spec in specs:
        name, sep, path = spec.partition("=")
        if not sep or not name or "/" in name:
            name, path = Path(spec).resolve().name, spec
        if not _NAME.match(name):
            raise InvalidArgumentError(
                f"index name {name!r} (from {spec!r}): use letters, "
                "digits, '.', '_' or '-', at most 64, as NAME=PATH"
            )
        if name in named:
            raise InvalidArgumentError(
                f"two indexes are named {name!r}: name them apart with NAME=PATH"
            )
        named[name] = Path(path)
    if not named:
        raise InvalidArgumentError("no index to serve")
    return named


def without_paths(text: str, places: Mapping[str, Path]) -> str:
    """`text` with each folder of `places` ({name: folder}) written as its name: a client is shown
    the names the server gives its indexes and runs, never where they live on the server."""
    forms: dict[str, str] = {}
    for name, folder in places.items():
        for form in (folder, folder.absolute(), folder.resolve()):
            # a bare relative name would match ordinary words
            if form.is_absolute() or len(form.parts) > 1:
                forms.setdefault(str(form), name)
    for shown in sorted(forms, key=len, reverse=True):  # a folder before its parent
        text = text.replace(shown, forms[shown])
    return text


@dataclass
class Session:
    """One client's state: a Toolset per index, used by one call at a time."""

    keeps_listing: bool = True
    toolsets: dict[str, Toolset] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)


@dataclass(frozen=True)
class ServedTool:
    name: str
    description: str
    input_schema: dict[str, Any]


class Service:
    """The served indexes, their tools as schemas and texts, and calls run for a session."""

    def __init__(
        self,
        indexes: Mapping[str, Index],
        tools: Sequence[str] = SERVED_TOOLS,
        limits: ServeLimits = ServeLimits(),
        config: ToolConfig = ToolConfig(),
    ) -> None:
        tools = check_tools(tools)
        if not indexes:
            raise InvalidArgumentError("no index to serve")
        self.indexes = dict(indexes)
        self.tool_names = tuple(tools)
        self.limits = limits
        self.config = replace(
            config,
            k_max=limits.k_max,
            k=min(config.k, limits.k_max),
            max_sections=limits.max_sections,
            max_query_chars=limits.max_query_chars,
        )
        # The templates every session's Toolsets share: schemas and manuals are the same for all
        # sessions of a kind (keeping a listing or not), so each kind has its own.
        self._templates = {
            keeps: {
                name: Toolset(index, self.tool_names, self.config, keeps_listing=keeps)
                for name, index in self.indexes.items()
            }
            for keeps in (True, False)
        }
        self.tools = self._served_tools(keeps_listing=True)
        self.stateless_tools = self._served_tools(keeps_listing=False)
        self._places = {
            name: Path(index.path)
            for name, index in self.indexes.items()
            if getattr(index, "path", None) is not None
        }

    @classmethod
    def open(cls, specs: Sequence[str], ray: str | None = None, **kwargs: Any) -> Service:
        """Open each `PATH` or `NAME=PATH` read-only and serve them (`ray`: sharded indexes, each
        answered by its shards' actors on that Ray cluster). The indexes take the server's caps on
        a query and its time per call as their own (`sieve.Limits`)."""
        served = kwargs.get("limits", ServeLimits())
        engine = Limits(
            max_query_chars=served.max_query_chars,
            max_phrase_words=served.max_phrase_words,
            seconds=served.call_seconds,
        )
        return cls(
            {
                # a RayIndex answers the same calls (sieve serve --ray)
                name: open_index(path, ray=ray, limits=engine)  # type: ignore[misc]
                for name, path in index_names(specs).items()
            },
            **kwargs,
        )

    @property
    def several(self) -> bool:
        return len(self.indexes) > 1

    def manual(self, name: str, keeps_listing: bool = True) -> str:
        """The tool manual of one index (generated from its fields, as the built-in agent reads it),
        for a session that keeps its listing (ranks work) or not (documents are named by id)."""
        return self._templates[keeps_listing][name].manual()

    def tools_for(self, keeps_listing: bool) -> list[ServedTool]:
        """The tools a session is offered: where calls share nothing, no parameter takes a rank."""
        return self.tools if keeps_listing else self.stateless_tools

    def overview(self) -> str:
        """One line per served index: its name, size and fields."""
        lines = []
        for name, index in self.indexes.items():
            counts = field_counts(index)
            fields = ", ".join(f.label for f in Field if counts[f])
            dated = int(index.stats.get("dated", 0))
            lines.append(
                f"- `{name}`: {len(index):,} documents; fields {fields}"
                + (f"; {dated:,} dated" if dated else "")
            )
        return "\n".join(lines)

    def instructions(self) -> str:
        """What the server says about itself when a client connects."""
        which = "Pass `index` to every tool to choose one." if self.several else ""
        return (
            "Search-inspect-fetch over "
            f"{'these indexes' if self.several else 'this index'}:\n{self.overview()}\n{which}\n"
            "Search with the query language, read the result cards, then fetch only the sections "
            "you need. "
            "The `search` tool's description is the full manual (also the resources "
            "sieve://<index>/manual)."
        ).replace("\n\n", "\n")

    def _served_tools(self, keeps_listing: bool) -> list[ServedTool]:
        first = next(iter(self._templates[keeps_listing].values()))
        out = []
        for tool in first.tools.values():
            schema = copy.deepcopy(tool.parameters)
            description = tool.description
            if self.several:
                schema["properties"] = {
                    "index": {
                        "type": "string",
                        "enum": list(self.indexes),
                        "description": "which index to use",
                    },
                    **schema["properties"],
                }
                schema["required"] = ["index", *schema["required"]]
                if keeps_listing:
                    description += " Ranks refer to the last search of the same index."
            if tool.name in ("search", "ranked_search"):
                if self.several:
                    name = next(iter(self.indexes))
                    description += (
                        f"\n\nServed indexes:\n{self.overview()}\n\nThe manual below is "
                        f"`{name}`'s; the others differ only in "
                        "their fields and sizes (each index's own manual: resource "
                        "sieve://<index>/manual)."
                    )
                description += "\n\n" + self.manual(next(iter(self.indexes)), keeps_listing)
            out.append(ServedTool(tool.name, description, schema))
        return out

    def new_session(self, keeps_listing: bool = True) -> Session:
        return Session(keeps_listing=keeps_listing)

    def call(self, session: Session, name: str, arguments: Mapping[str, Any] | None) -> ToolResult:
        """Run one tool for one session: its text and whether all went well. Never raises for bad
        input."""
        size = len(json.dumps(arguments, ensure_ascii=False, default=str)) if arguments else 0
        if size > self.limits.max_argument_chars:
            return ToolResult(
                name,
                f"{name} error: the arguments are {size:,} characters of JSON; this "
                f"server accepts at most {self.limits.max_argument_chars:,} per call",
                0,
                False,
            )
        args = dict(arguments or {})
        target = next(iter(self.indexes))
        if self.several and name in self.tool_names:
            target = args.pop("index", None)
            if target not in self.indexes:
                got = (
                    "no index"
                    if target is None
                    else f"index {json.dumps(target, ensure_ascii=False)[:80]}"
                )
                return ToolResult(
                    name,
                    f'{name} error: {got}; pass "index" as one of {", ".join(self.indexes)}',
                    0,
                    False,
                )
        with session.lock:
            toolset = session.toolsets.get(target)
            if toolset is None:
                toolset = session.toolsets[target] = Toolset(
                    self.indexes[target],
                    self.tool_names,
                    self.config,
                    keeps_listing=session.keeps_listing,
                )
            result = toolset.call(name, args)
            # What a Toolset notes for an eval (every id
            # surfaced and opened) grows with each call and
            # no client reads it: a session keeps its last listing and nothing more.
            toolset.surfaced.clear()
            toolset.opened.clear()
        # An engine error may name a file of the index
        # (damage, missing embeddings): show its name instead.
        return (
            result if result.ok else replace(result, text=without_paths(result.text, self._places))
        )
